//! Ports of the Java `toString` formats `jfr print --json` uses for
//! annotated values, so tests can state the exact text they expect.
//!
//! * `@Timespan` values become `java.time.Duration` (`PT1M30S`);
//! * `@Timestamp` values become `java.time.OffsetDateTime` in the
//!   recording's zone (UTC here: `2025-06-01T12:00:00.123456789Z`).

/// `java.time.Duration`: seconds (floor) and nanos in `0..1e9`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JavaDuration {
    pub(crate) seconds: i64,
    pub(crate) nanos: u32,
}

const NANOS_PER_SECOND: i64 = 1_000_000_000;

impl JavaDuration {
    /// `Duration.ofNanos(n)`.
    pub(crate) fn of_nanos(n: i64) -> Self {
        Self {
            seconds: n.div_euclid(NANOS_PER_SECOND),
            nanos: n.rem_euclid(NANOS_PER_SECOND) as u32,
        }
    }

    /// `Duration.ofMillis(ms)`.
    pub(crate) fn of_millis(ms: i64) -> Self {
        Self {
            seconds: ms.div_euclid(1000),
            nanos: (ms.rem_euclid(1000) * 1_000_000) as u32,
        }
    }

    /// `Duration.ofSeconds(s)`.
    pub(crate) fn of_seconds(s: i64) -> Self {
        Self {
            seconds: s,
            nanos: 0,
        }
    }

    /// `Duration.toString()`.
    pub(crate) fn to_java_string(self) -> String {
        if self.seconds == 0 && self.nanos == 0 {
            return "PT0S".to_owned();
        }
        let (seconds, nanos) = (self.seconds, i64::from(self.nanos));
        let effective = if seconds < 0 && nanos > 0 {
            seconds + 1
        } else {
            seconds
        };
        let hours = effective / 3600;
        let minutes = (effective % 3600) / 60;
        let secs = effective % 60;
        let mut buf = String::from("PT");
        if hours != 0 {
            buf += &format!("{hours}H");
        }
        if minutes != 0 {
            buf += &format!("{minutes}M");
        }
        if secs == 0 && nanos == 0 && buf.len() > 2 {
            return buf;
        }
        if seconds < 0 && nanos > 0 && secs == 0 {
            buf += "-0";
        } else {
            buf += &secs.to_string();
        }
        if nanos > 0 {
            let pos = buf.len();
            let digits = if seconds < 0 {
                2 * NANOS_PER_SECOND - nanos
            } else {
                nanos + NANOS_PER_SECOND
            };
            buf += &digits.to_string();
            while buf.ends_with('0') {
                buf.pop();
            }
            buf.replace_range(pos..pos + 1, ".");
        }
        buf.push('S');
        buf
    }
}

/// `OffsetDateTime.ofInstant(Instant.ofEpochSecond(0, nanos), UTC).toString()`
/// for years 0..=9999.
pub(crate) fn offset_date_time_utc(epoch_nanos: i128) -> String {
    let secs = epoch_nanos.div_euclid(1_000_000_000);
    let nano = epoch_nanos.rem_euclid(1_000_000_000) as u32;
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    assert!(
        (0..=9999).contains(&y),
        "year {y} is outside what this port formats"
    );
    let (hh, mm, ss) = (sod / 3600, (sod % 3600) / 60, sod % 60);
    let mut s = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}");
    if ss > 0 || nano > 0 {
        s += &format!(":{ss:02}");
        if nano > 0 {
            if nano.is_multiple_of(1_000_000) {
                s += &format!(".{:03}", nano / 1_000_000);
            } else if nano.is_multiple_of(1000) {
                s += &format!(".{:06}", nano / 1000);
            } else {
                s += &format!(".{nano:09}");
            }
        }
    }
    s.push('Z');
    s
}

/// `OffsetDateTime.MIN.toString()`, what a `Long.MIN_VALUE` timestamp prints as.
pub(crate) const OFFSET_DATE_TIME_MIN: &str = "-999999999-01-01T00:00+18:00";

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}
