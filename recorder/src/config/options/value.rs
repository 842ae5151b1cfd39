//! Option values (times, sizes, booleans), event settings, and the
//! "did you mean" for misspelt keys.

use std::time::Duration;

use super::error::OptionError;
use crate::config::settings::{self, SettingError, Settings};

/// The start-up keys, in the order the docs list them.
pub(super) const KEYS: &[&str] = &[
    "filename",
    "duration",
    "delay",
    "name",
    "settings",
    "disk",
    "dumponexit",
    "maxage",
    "maxsize",
    "maxchunksize",
    "maxchunkage",
    "flush-interval",
    "repository",
    "preserve-repository",
    "signal",
    "sample-own-threads",
    "children",
    "report",
    "method-timing",
    "method-trace",
    "attach",
    "warn-stale",
    "pyroscope",
    "pyroscope.app",
    "pyroscope.period",
    "pyroscope.auth-env",
];

/// The settings an `event#setting` key may name.
pub(super) const EVENT_SETTINGS: &[&str] = &[
    "enabled",
    "threshold",
    "stackTrace",
    "throttle",
    "period",
    "filter",
];

/// A time in the forms of [`settings::parse_duration`] (`0`, `10ms`, `1 s`, `5m`, `2h`, `1d`).
pub(super) fn time(key: &str, value: &str) -> Result<Duration, OptionError> {
    settings::parse_duration(key, value).map_err(|_| OptionError::BadTime {
        key: key.to_owned(),
        value: value.to_owned(),
    })
}

/// A size in bytes: digits, then optionally (after optional blanks) `k`, `m`
/// or `g` in either case, for KiB, MiB, GiB.
pub(super) fn size(key: &str, value: &str) -> Result<u64, OptionError> {
    let bad = || OptionError::BadSize {
        key: key.to_owned(),
        value: value.to_owned(),
    };
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (digits, unit) = value.split_at(split);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let unit: u64 = match unit.trim_start() {
        "" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(unit).ok_or_else(bad)
}

/// `true` or `false`.
pub(super) fn boolean(key: &str, value: &str) -> Result<bool, OptionError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(OptionError::BadBool {
            key: key.to_owned(),
            value: value.to_owned(),
        }),
    }
}

/// Applies `[+]event#setting=value` to `settings`; later calls win.
///
/// Checks, in this order, the event name, the setting name, that the value
/// is not empty, and the value, so the error names the first problem.
pub(super) fn event_setting(
    settings: &mut Settings,
    key: &str,
    value: &str,
) -> Result<(), OptionError> {
    // The JDK writes `+event#setting` for a setting its .jfc lacks; every
    // setting is "new" to flightrec, so the `+` changes nothing.
    let name = key.strip_prefix('+').unwrap_or(key);
    let (event, setting) = name.split_once('#').unwrap_or((name, ""));
    if jfr_format::write::metadata::validate_name(event, true).is_err() {
        return Err(OptionError::InvalidEventName {
            key: key.to_owned(),
            event: event.to_owned(),
        });
    }
    if !EVENT_SETTINGS.contains(&setting) {
        return Err(OptionError::UnknownEventSetting {
            key: key.to_owned(),
            setting: setting.to_owned(),
            suggestion: suggest(setting, EVENT_SETTINGS),
        });
    }
    if value.is_empty() {
        return Err(OptionError::EmptyValue {
            key: key.to_owned(),
        });
    }
    let bad_value = || {
        let (key, value) = (key.to_owned(), value.to_owned());
        match setting {
            "enabled" | "stackTrace" => OptionError::BadBool { key, value },
            "throttle" => OptionError::BadRate { key, value },
            "period" => OptionError::BadPeriod { key, value },
            _ => OptionError::BadTime { key, value },
        }
    };
    match settings.set(event, setting, value) {
        Ok(_) => Ok(()),
        Err(SettingError::InvalidFilter { part, reason, .. }) => Err(OptionError::BadFilter {
            key: key.to_owned(),
            value: value.to_owned(),
            part,
            reason,
        }),
        // `Settings::set` on a value never reports a fork.
        Err(
            SettingError::InvalidValue { .. }
            | SettingError::InForkedChild
            | SettingError::Unsupported { .. },
        ) => Err(bad_value()),
        Err(SettingError::InvalidEventName(event)) => Err(OptionError::InvalidEventName {
            key: key.to_owned(),
            event,
        }),
        Err(SettingError::UnknownSetting { setting, .. }) => {
            Err(OptionError::UnknownEventSetting {
                key: key.to_owned(),
                setting,
                suggestion: None,
            })
        }
    }
}

/// The candidate `word` is most likely a misspelling of: equal ignoring
/// case and `_`/`-`, or within edit distance 1 (words up to 4 characters)
/// or 2 (longer words) of it.
pub(super) fn suggest(word: &str, candidates: &[&'static str]) -> Option<&'static str> {
    // Edit distance is quadratic; nobody misspells a 64-character key.
    if word.is_empty() || word.len() > 64 {
        return None;
    }
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| {
                if c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    };
    let w = norm(word);
    let limit = if w.len() <= 4 { 1 } else { 2 };
    candidates
        .iter()
        .map(|&c| (edit_distance(&w, &norm(c)), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let replace = prev[j] + usize::from(ca != cb);
            cur.push(replace.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_a_unit_in_either_case() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("0", 0),
            ("512k", 512 << 10),
            ("512K", 512 << 10),
            ("100M", 100 << 20),
            ("100 m", 100 << 20),
            ("1g", 1 << 30),
            ("3G", 3 << 30),
        ] {
            assert_eq!(size("maxsize", text).ok(), Some(bytes), "{text}");
        }
        for bad in [
            "",
            "12q",
            "k",
            "1kb",
            "1.5g",
            "-1",
            "+1",
            "1 k b",
            "99999999999999999999",
            "17179869184g",
        ] {
            assert!(
                matches!(size("maxsize", bad), Err(OptionError::BadSize { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn times_take_every_unit_with_or_without_a_blank() {
        for (text, d) in [
            ("0", Duration::ZERO),
            ("10ms", Duration::from_millis(10)),
            ("20 ms", Duration::from_millis(20)),
            ("1s", Duration::from_secs(1)),
            ("5m", Duration::from_secs(300)),
            ("2h", Duration::from_secs(7200)),
            ("1d", Duration::from_secs(86400)),
            ("1 d", Duration::from_secs(86400)),
            ("500us", Duration::from_micros(500)),
            ("7ns", Duration::from_nanos(7)),
        ] {
            assert_eq!(time("duration", text).ok(), Some(d), "{text}");
        }
        for bad in ["5", "1w", "ms", "1.5s", "-1s", "99999999999999999999d"] {
            assert!(
                matches!(time("duration", bad), Err(OptionError::BadTime { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn booleans_are_exactly_true_or_false() {
        assert_eq!(boolean("disk", "true").ok(), Some(true));
        assert_eq!(boolean("disk", "false").ok(), Some(false));
        for bad in ["TRUE", "yes", "1", "on"] {
            assert!(matches!(
                boolean("disk", bad),
                Err(OptionError::BadBool { .. })
            ));
        }
    }

    #[test]
    fn suggestions_catch_case_separators_and_typos_only() {
        assert_eq!(suggest("maxSize", KEYS), Some("maxsize"));
        assert_eq!(suggest("flush_interval", KEYS), Some("flush-interval"));
        assert_eq!(suggest("flushinterval", KEYS), Some("flush-interval"));
        assert_eq!(suggest("dump-on-exit", KEYS), Some("dumponexit"));
        assert_eq!(suggest("filname", KEYS), Some("filename"));
        assert_eq!(suggest("stacktrace", EVENT_SETTINGS), Some("stackTrace"));
        assert_eq!(suggest("treshold", EVENT_SETTINGS), Some("threshold"));
        assert_eq!(suggest("colour", KEYS), None);
        assert_eq!(suggest("", KEYS), None);
        assert_eq!(suggest(&"x".repeat(100), KEYS), None);
        assert_eq!(suggest("nam", KEYS), Some("name"));
        assert_eq!(suggest("ab", KEYS), None);
    }

    #[test]
    fn event_settings_report_the_first_problem() {
        let mut s = Settings::new();
        let err = |k: &str, v: &str| event_setting(&mut Settings::new(), k, v).unwrap_err();
        assert!(matches!(
            err("jdk..X#enabled", ""),
            OptionError::InvalidEventName { .. }
        ));
        assert!(matches!(
            err("jdk.X#colour", ""),
            OptionError::UnknownEventSetting {
                suggestion: None,
                ..
            }
        ));
        assert!(matches!(
            err("jdk.X#enabled", ""),
            OptionError::EmptyValue { .. }
        ));
        assert!(matches!(
            err("jdk.X#enabled", "yes"),
            OptionError::BadBool { .. }
        ));
        assert!(matches!(
            err("jdk.X#stackTrace", "1"),
            OptionError::BadBool { .. }
        ));
        assert!(matches!(
            err("jdk.X#threshold", "fast"),
            OptionError::BadTime { .. }
        ));
        assert!(matches!(
            err("jdk.X#throttle", "5/fortnight"),
            OptionError::BadRate { .. }
        ));
        assert!(matches!(
            err("jdk.X#period", "everyTuesday"),
            OptionError::BadPeriod { .. }
        ));
        event_setting(&mut s, "+jdk.X#enabled", "true").unwrap();
        assert_eq!(s.get("jdk.X").and_then(|t| t.enabled), Some(true));
    }
}
