//! Times as the JDK's tools show them: tick conversion with the JDK's own
//! arithmetic, `java.time`'s ISO forms for instants and durations, and
//! civil dates without a time-zone database (offsets are fixed numbers).

/// Ticks to nanoseconds for one chunk, with the JDK's `TimeConverter`
/// arithmetic (a `double` divisor, the quotient cut toward zero), so every
/// converted time equals the one `jfr` prints.
#[derive(Debug, Clone, Copy)]
pub struct Ticks {
    start_ticks: i64,
    start_nanos: i64,
    divisor: f64,
}

impl Ticks {
    /// The converter for a chunk with this header.
    pub fn new(header: &jfr_format::write::header::ChunkHeader) -> Self {
        Self {
            start_ticks: header.start_ticks,
            start_nanos: header.start_nanos,
            divisor: header.ticks_per_second as f64 / 1e9,
        }
    }

    /// Nanoseconds since the epoch of a tick timestamp.
    pub fn instant(&self, ticks: i64) -> i64 {
        self.start_nanos
            .wrapping_add((ticks.wrapping_sub(self.start_ticks) as f64 / self.divisor) as i64)
    }

    /// Nanoseconds of a tick duration.
    pub fn span(&self, ticks: i64) -> i64 {
        (ticks as f64 / self.divisor) as i64
    }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The parts of an instant at a fixed offset from UTC.
#[derive(Debug, Clone, Copy)]
pub struct Civil {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Nanosecond of the second.
    pub nano: u32,
}

impl Civil {
    /// `nanos` since the epoch, shifted by `offset_seconds`.
    pub fn at(nanos: i64, offset_seconds: i64) -> Self {
        let secs = nanos.div_euclid(1_000_000_000) + offset_seconds;
        let nano = nanos.rem_euclid(1_000_000_000) as u32;
        let (year, month, day) = civil(secs.div_euclid(86_400));
        let tod = secs.rem_euclid(86_400) as u32;
        Self {
            year,
            month,
            day,
            hour: tod / 3600,
            minute: tod / 60 % 60,
            second: tod % 60,
            nano,
        }
    }

    /// `yyyy-MM-dd HH:mm:ss`, as `jfr summary` prints a start.
    pub fn date_time(&self) -> String {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `yyyy-MM-dd`.
    pub fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// `java.time.LocalTime::toString`'s fraction: none, 3, 6 or 9 digits.
fn fraction(nano: u32) -> String {
    if nano == 0 {
        String::new()
    } else if nano.is_multiple_of(1_000_000) {
        format!(".{:03}", nano / 1_000_000)
    } else if nano.is_multiple_of(1000) {
        format!(".{:06}", nano / 1000)
    } else {
        format!(".{nano:09}")
    }
}

/// `java.time.OffsetDateTime::toString` of `nanos` since the epoch at
/// `offset_seconds` from UTC, e.g. `2026-12-03T16:53:24.327478890Z`.
pub fn iso_instant(nanos: i64, offset_seconds: i64) -> String {
    let c = Civil::at(nanos, offset_seconds);
    let mut s = format!("{}T{:02}:{:02}", c.date(), c.hour, c.minute);
    if c.second != 0 || c.nano != 0 {
        s.push_str(&format!(":{:02}{}", c.second, fraction(c.nano)));
    }
    s.push_str(&iso_offset(offset_seconds));
    s
}

/// `java.time.ZoneOffset::toString`: `Z`, `+01:00`, `-05:30:15`.
fn iso_offset(seconds: i64) -> String {
    if seconds == 0 {
        return "Z".into();
    }
    let sign = if seconds < 0 { '-' } else { '+' };
    let a = seconds.unsigned_abs();
    let mut s = format!("{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
    if !a.is_multiple_of(60) {
        s.push_str(&format!(":{:02}", a % 60));
    }
    s
}

/// `java.time.Duration::toString` of `nanos`, e.g. `PT0.000123S`,
/// `PT1M3.5S`, `PT0S`.
pub fn iso_duration(nanos: i64) -> String {
    iso_duration_parts(
        nanos.div_euclid(1_000_000_000),
        nanos.rem_euclid(1_000_000_000),
    )
}

/// `java.time.Duration::toString` of `seconds` plus `nano` (0 to
/// 999,999,999) nanoseconds.
pub fn iso_duration_parts(seconds: i64, nano: i64) -> String {
    if seconds == 0 && nano == 0 {
        return "PT0S".into();
    }
    let mut total = seconds;
    if seconds < 0 && nano > 0 {
        total += 1;
    }
    let hours = total / 3600;
    let minutes = (total % 3600) / 60;
    let secs = total % 60;
    let mut s = String::from("PT");
    if hours != 0 {
        s.push_str(&format!("{hours}H"));
    }
    if minutes != 0 {
        s.push_str(&format!("{minutes}M"));
    }
    if secs == 0 && nano == 0 && s.len() > 2 {
        return s;
    }
    if seconds < 0 && nano > 0 && secs == 0 {
        s.push_str("-0");
    } else {
        s.push_str(&secs.to_string());
    }
    if nano > 0 {
        let digits = if seconds < 0 {
            2 * 1_000_000_000 - nano
        } else {
            nano + 1_000_000_000
        }
        .to_string();
        let digits = digits.trim_end_matches('0');
        s.push('.');
        s.push_str(&digits[1..]);
    }
    s.push('S');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_durations_read_as_java_time_writes_them() {
        // 2026-12-03T16:53:24.327478890Z
        let n = 1_796_316_804_327_478_890;
        assert_eq!(iso_instant(n, 0), "2026-12-03T16:53:24.327478890Z");
        assert_eq!(iso_instant(n - 478_890, 0), "2026-12-03T16:53:24.327Z");
        assert_eq!(
            iso_instant(n - 327_478_890 - 24_000_000_000, 0),
            "2026-12-03T16:53Z"
        );
        assert_eq!(iso_instant(0, 3600), "1970-01-01T01:00+01:00");
        assert_eq!(Civil::at(n, 0).date_time(), "2026-12-03 16:53:24");
        assert_eq!(iso_duration(0), "PT0S");
        assert_eq!(iso_duration(123_000), "PT0.000123S");
        assert_eq!(iso_duration(63_500_000_000), "PT1M3.5S");
        assert_eq!(iso_duration(7_200_000_000_000), "PT2H");
        assert_eq!(iso_duration(-500_000_000), "PT-0.5S");
        assert_eq!(iso_duration(-1_500_000_000), "PT-1.5S");
        // The JDK's "forever" and its most negative duration.
        assert_eq!(
            iso_duration_parts(i64::MAX, 999_999_999),
            "PT2562047788015215H30M7.999999999S"
        );
        assert_eq!(
            iso_duration_parts(i64::MIN, 0),
            "PT-2562047788015215H-30M-8S"
        );
    }
}
