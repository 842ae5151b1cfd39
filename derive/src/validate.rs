//! Checks on attribute values that need no syntax tree: Java names and
//! threshold strings.
//!
//! Each function returns the message a `compile_error!` shows, without a
//! span; the caller attaches the span of the literal it came from.
//!
//! Invariant: every string these functions accept is one the recorder writes
//! into metadata unchanged, and the JDK's `jfr` tool and JMC read it as the
//! user meant it.

/// Field names the recorder writes itself on every event (`duration` only on
/// duration events, but reserved on all so a type can change kind freely).
pub(crate) const RESERVED_FIELDS: [&str; 4] =
    ["startTime", "duration", "eventThread", "stackTrace"];

/// True if `s` is one Java identifier segment: `[A-Za-z_$][A-Za-z0-9_$]*`.
pub(crate) fn is_java_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Checks an event type name: dot-separated Java identifiers, such as
/// `com.example.Request`.
pub(crate) fn event_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(
            "event name is empty; expected a fully qualified name such as \"com.example.Request\""
                .into(),
        );
    }
    match name.split('.').find(|seg| !is_java_identifier(seg)) {
        None => Ok(()),
        Some("") => Err(format!(
            "invalid event name \"{name}\": empty segment; expected dot-separated Java identifiers such as \"com.example.Request\""
        )),
        Some(seg) => Err(format!(
            "invalid event name \"{name}\": `{seg}` is not a Java identifier (letters, digits, `_` or `$`, not starting with a digit); expected a name such as \"com.example.Request\""
        )),
    }
}

/// Checks a field name: one Java identifier, not one the recorder writes
/// itself. `from_rust` says whether it came from the Rust field name (the
/// hint is then to add `rename`).
pub(crate) fn field_name(name: &str, from_rust: bool) -> Result<(), String> {
    let hint = if from_rust {
        "; add #[event(rename = \"...\")]"
    } else {
        ""
    };
    if !is_java_identifier(name) {
        return Err(format!(
            "field name `{name}` is not a Java identifier (ASCII letters, digits, `_` or `$`, not starting with a digit){hint}"
        ));
    }
    if RESERVED_FIELDS.contains(&name) {
        return Err(format!(
            "field name `{name}` is reserved: every event carries startTime, duration, eventThread and stackTrace{hint}"
        ));
    }
    Ok(())
}

/// A threshold parsed to whole seconds and the nanoseconds beyond them
/// (always below 10^9), the arguments of `Duration::new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Threshold {
    /// Whole seconds.
    pub(crate) secs: u64,
    /// Nanoseconds past `secs`, `< 1_000_000_000`.
    pub(crate) nanos: u32,
}

const THRESHOLD_SYNTAX: &str =
    "expected \"<integer> <unit>\" with unit ns, us, ms, s, m or h (e.g. \"10 ms\"), or \"0\"";

/// Parses a threshold as JFR writes it: `"<integer> <unit>"` (the space is
/// optional) with unit `ns`, `us`, `ms`, `s`, `m` (minutes) or `h`, or a bare
/// `"0"`.
pub(crate) fn threshold(s: &str) -> Result<Threshold, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = (&t[..digits], t[digits..].trim_start());
    if number.is_empty() {
        return Err(format!("invalid threshold \"{s}\": {THRESHOLD_SYNTAX}"));
    }
    let overflow = || format!("threshold \"{s}\" is too large");
    let n: u64 = number.parse().map_err(|_| overflow())?;
    const NANOS: u64 = 1_000_000_000;
    let (secs, nanos) = match unit {
        "" if n == 0 => (0, 0),
        "" => return Err(format!("threshold \"{s}\" has no unit: {THRESHOLD_SYNTAX}")),
        "ns" => (n / NANOS, n % NANOS),
        "us" => (n / 1_000_000, n % 1_000_000 * 1_000),
        "ms" => (n / 1_000, n % 1_000 * 1_000_000),
        "s" => (n, 0),
        "m" => (n.checked_mul(60).ok_or_else(overflow)?, 0),
        "h" => (n.checked_mul(3_600).ok_or_else(overflow)?, 0),
        other => {
            return Err(format!(
                "threshold \"{s}\" has unknown unit `{other}`: {THRESHOLD_SYNTAX}"
            ));
        }
    };
    // `nanos < NANOS` by construction of every arm above.
    Ok(Threshold {
        secs,
        nanos: nanos as u32,
    })
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    fn t(secs: u64, nanos: u32) -> Result<Threshold, String> {
        Ok(Threshold { secs, nanos })
    }

    #[test]
    fn java_identifiers() {
        for ok in ["a", "A", "_", "$", "a1", "bytesRead", "$x_9"] {
            assert!(is_java_identifier(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a.b", "a b", "é", "naïve"] {
            assert!(!is_java_identifier(bad), "{bad}");
        }
    }

    #[test]
    fn event_names() {
        assert_eq!(event_name("com.example.Request"), Ok(()));
        assert_eq!(event_name("Request"), Ok(()));
        assert_eq!(event_name("jdk.ExecutionSample"), Ok(()));
        assert!(event_name("").unwrap_err().contains("empty"));
        assert!(
            event_name("com..Request")
                .unwrap_err()
                .contains("empty segment")
        );
        assert!(
            event_name(".Request")
                .unwrap_err()
                .contains("empty segment")
        );
        assert!(
            event_name("com.example.")
                .unwrap_err()
                .contains("empty segment")
        );
        let e = event_name("com.example.my-request").unwrap_err();
        assert!(e.contains("`my-request` is not a Java identifier"), "{e}");
        assert!(
            event_name("com.1example.X")
                .unwrap_err()
                .contains("`1example`")
        );
    }

    #[test]
    fn field_names() {
        assert_eq!(field_name("path", true), Ok(()));
        assert_eq!(field_name("bytes_read", true), Ok(()));
        for reserved in RESERVED_FIELDS {
            let e = field_name(reserved, true).unwrap_err();
            assert!(e.contains("is reserved") && e.contains("rename"), "{e}");
        }
        let e = field_name("duration", false).unwrap_err();
        assert!(e.contains("is reserved") && !e.contains("rename"), "{e}");
        assert!(
            field_name("größe", true)
                .unwrap_err()
                .contains("not a Java identifier")
        );
        assert!(
            field_name("a-b", false)
                .unwrap_err()
                .contains("not a Java identifier")
        );
    }

    #[test]
    fn thresholds() {
        assert_eq!(threshold("0"), t(0, 0));
        assert_eq!(threshold("0 ns"), t(0, 0));
        assert_eq!(threshold("10 ms"), t(0, 10_000_000));
        assert_eq!(threshold("10ms"), t(0, 10_000_000));
        assert_eq!(threshold(" 1500 ms "), t(1, 500_000_000));
        assert_eq!(threshold("2500000001 ns"), t(2, 500_000_001));
        assert_eq!(threshold("1234567 us"), t(1, 234_567_000));
        assert_eq!(threshold("3 s"), t(3, 0));
        assert_eq!(threshold("2 m"), t(120, 0));
        assert_eq!(threshold("1 h"), t(3_600, 0));
        assert_eq!(threshold(&format!("{} s", u64::MAX)), t(u64::MAX, 0));
    }

    #[test]
    fn bad_thresholds() {
        for (input, want) in [
            ("", "invalid threshold"),
            ("ms", "invalid threshold"),
            ("-1 ms", "invalid threshold"),
            ("1.5 s", "unknown unit `.5 s`"),
            ("10", "has no unit"),
            ("10 sec", "unknown unit `sec`"),
            ("10 MS", "unknown unit `MS`"),
            ("99999999999999999999 ns", "too large"),
            ("5124095576030432 h", "too large"),
            ("307445734561825861 m", "too large"),
        ] {
            let e = threshold(input).unwrap_err();
            assert!(e.contains(want), "{input:?}: {e}");
        }
    }
}
