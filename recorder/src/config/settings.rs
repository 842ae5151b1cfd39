//! Per-event-type settings (`enabled`, `threshold`, `stackTrace`, and the
//! samplers' `throttle` and `period`) and their textual forms; they are
//! folded into each type's packed word (`base::enabled`).
//!
//! The recording's settings are a map from event name to [`TypeSettings`]
//! held in an `ArcSwap`: changed while recording by swapping in a new map,
//! then folded into every registered type's word.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// Settings given for one event type; `None` keeps the type's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeSettings {
    /// `enabled`
    pub enabled: Option<bool>,
    /// `threshold`
    pub threshold: Option<Duration>,
    /// `stackTrace`
    pub stack_trace: Option<bool>,
    /// `throttle` (samplers; not part of the settings word)
    pub throttle: Option<Throttle>,
    /// `period` (periodic events and samplers; not part of the settings word)
    pub period: Option<Period>,
}

/// The settings of a recording: per event-type name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub(crate) types: HashMap<String, TypeSettings>,
    /// The `filter` of `jdk.MethodTiming` and of `jdk.MethodTrace` (see
    /// [`crate::timing`]); `None`: not given.
    pub(crate) method_filters: [Option<crate::timing::filter::Filter>; 2],
}

/// The event types that take a method `filter`, in `method_filters` order.
pub(crate) const FILTER_EVENTS: [&str; 2] = ["jdk.MethodTiming", "jdk.MethodTrace"];

/// A setting that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingError {
    /// The setting name is not one of `enabled`, `threshold`, `stackTrace`,
    /// `throttle`, `period`.
    UnknownSetting {
        /// The event type.
        event: String,
        /// The unknown setting.
        setting: String,
    },
    /// The value does not parse for the setting.
    InvalidValue {
        /// The setting.
        setting: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// The event-type name is not a valid dotted identifier.
    InvalidEventName(String),
    /// The recording belongs to the parent process (called in a forked
    /// child, where recording is off).
    InForkedChild,
    /// A malformed method filter (`jdk.MethodTiming#filter`,
    /// `jdk.MethodTrace#filter`, `method-timing=`, `method-trace=`).
    InvalidFilter {
        /// The whole filter as given.
        filter: String,
        /// The malformed part.
        part: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The event type does not do what the setting asks (`throttle` on a
    /// type that is not sampled, `threshold` on an instant event, ...).
    Unsupported {
        /// The event type.
        event: String,
        /// The setting.
        setting: String,
        /// Why, and where the setting is supported.
        reason: &'static str,
    },
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownSetting { event, setting } => write!(
                f,
                "unknown setting `{setting}` for `{event}` (expected enabled, threshold, stackTrace, throttle or period)"
            ),
            Self::InvalidValue {
                setting,
                value,
                expected,
            } => {
                write!(
                    f,
                    "invalid value `{value}` for `{setting}`: expected {expected}"
                )
            }
            Self::InvalidEventName(n) => write!(f, "invalid event type name `{n}`"),
            Self::Unsupported {
                event,
                setting,
                reason,
            } => write!(f, "`{event}#{setting}` is not supported: {reason}"),
            Self::InForkedChild => {
                f.write_str("this recording belongs to the parent process (called after fork)")
            }
            Self::InvalidFilter {
                filter,
                part,
                reason,
            } => write!(f, "invalid method filter `{filter}`: `{part}`: {reason}"),
        }
    }
}

impl std::error::Error for SettingError {}

impl Settings {
    /// No overrides: every type uses its defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `setting` (`enabled`, `threshold`, `stackTrace`, `throttle` or
    /// `period`) of event type `event` from its textual form (`true`/`false`,
    /// `20 ms`, `1s`, `0`, `500/s`, `everyChunk`).
    pub fn set(
        &mut self,
        event: &str,
        setting: &str,
        value: &str,
    ) -> Result<&mut Self, SettingError> {
        jfr_format::write::metadata::validate_name(event, true)
            .map_err(|_| SettingError::InvalidEventName(event.to_owned()))?;
        if setting == "filter" {
            return self.method_filter(event, value);
        }
        let entry = self.types.entry(event.to_owned()).or_default();
        match setting {
            "enabled" => entry.enabled = Some(parse_bool(setting, value)?),
            "stackTrace" => entry.stack_trace = Some(parse_bool(setting, value)?),
            "threshold" => entry.threshold = Some(parse_duration(setting, value)?),
            "throttle" => entry.throttle = Some(parse_throttle(setting, value)?),
            "period" => entry.period = Some(parse_period(setting, value)?),
            _ => {
                return Err(SettingError::UnknownSetting {
                    event: event.to_owned(),
                    setting: setting.to_owned(),
                });
            }
        }
        Ok(self)
    }

    /// Sets the method filter of `event` (`jdk.MethodTiming` or
    /// `jdk.MethodTrace`), replacing the one it had: JEP 520's grammar over
    /// Rust paths (see [`crate::timing`]). The error names the malformed part.
    pub fn method_filter(&mut self, event: &str, filter: &str) -> Result<&mut Self, SettingError> {
        let Some(at) = FILTER_EVENTS.iter().position(|e| *e == event) else {
            return Err(SettingError::Unsupported {
                event: event.to_owned(),
                setting: "filter".to_owned(),
                reason: "only jdk.MethodTiming and jdk.MethodTrace take a filter",
            });
        };
        let parsed =
            crate::timing::filter::parse(filter).map_err(|bad| SettingError::InvalidFilter {
                filter: filter.to_owned(),
                part: bad.part,
                reason: bad.reason,
            })?;
        self.method_filters[at] = Some(parsed);
        Ok(self)
    }

    /// Adds `filter` to the method filter of `event` (the union of both).
    pub fn add_method_filter(
        &mut self,
        event: &str,
        filter: &str,
    ) -> Result<&mut Self, SettingError> {
        let at = FILTER_EVENTS.iter().position(|e| *e == event);
        let old = at.and_then(|at| self.method_filters[at].clone());
        self.method_filter(event, filter)?;
        if let (Some(at), Some(old)) = (at, old)
            && let Some(new) = &mut self.method_filters[at]
        {
            let added = std::mem::replace(new, old);
            new.union(&added);
        }
        Ok(self)
    }

    /// The method filter of `event`, as text, if one is given.
    pub fn get_method_filter(&self, event: &str) -> Option<String> {
        let at = FILTER_EVENTS.iter().position(|e| *e == event)?;
        self.method_filters[at].as_ref().map(|f| f.to_string())
    }

    /// Enables or disables `event`.
    pub fn enable(&mut self, event: &str, enabled: bool) -> &mut Self {
        self.types.entry(event.to_owned()).or_default().enabled = Some(enabled);
        self
    }

    /// Sets the threshold of `event`.
    pub fn threshold(&mut self, event: &str, threshold: Duration) -> &mut Self {
        self.types.entry(event.to_owned()).or_default().threshold = Some(threshold);
        self
    }

    /// Turns stack traces of `event` on or off.
    pub fn stack_trace(&mut self, event: &str, on: bool) -> &mut Self {
        self.types.entry(event.to_owned()).or_default().stack_trace = Some(on);
        self
    }

    /// The overrides for `event`.
    pub fn get(&self, event: &str) -> Option<&TypeSettings> {
        self.types.get(event)
    }
}

fn parse_bool(setting: &str, value: &str) -> Result<bool, SettingError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(SettingError::InvalidValue {
            setting: setting.to_owned(),
            value: value.to_owned(),
            expected: "`true` or `false`",
        }),
    }
}

/// Parses `0`, `20 ms`, `20ms`, `1 s`, `500 us`, `10 ns`, `2 m`, `1 h`.
pub fn parse_duration(setting: &str, value: &str) -> Result<Duration, SettingError> {
    let bad = || SettingError::InvalidValue {
        setting: setting.to_owned(),
        value: value.to_owned(),
        expected: "a duration such as `0`, `10 ms`, `1s`, `500 us`, `20 ns`",
    };
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let d = match unit.trim() {
        "" if n == 0 => Duration::ZERO,
        "ns" => Duration::from_nanos(n),
        "us" | "µs" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" | "min" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
        "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
        "d" => Duration::from_secs(n.checked_mul(86400).ok_or_else(bad)?),
        _ => return Err(bad()),
    };
    Ok(d)
}

/// The JDK's textual form of a duration, in the largest unit that states
/// it exactly (`0 ns`, `2 us`, `20 ms`, `1 s`, `5 m`, `2 h`, `1 d`), so a
/// setting prints as it was written whenever it was written exactly.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0 ns".to_owned();
    }
    const UNITS: [(u128, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    let (per, unit) = UNITS
        .into_iter()
        .find(|&(per, _)| ns.is_multiple_of(per))
        .unwrap_or((1, "ns"));
    format!("{} {unit}", ns / per)
}

/// True if `event` is one of the JDK event types in flightrec's built-in
/// table (never registered: they exist in every chunk's metadata).
pub(crate) fn is_builtin_event(event: &str) -> bool {
    jfr_format::builtin::builtin_types()
        .iter()
        .any(|t| t.is_event() && t.name == event)
}

// === throttle and period ===

/// The `throttle` setting: how often a sampler may emit (JDK 25's
/// `jdk.CPUTimeSample` takes both forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Throttle {
    /// `off`: no limit.
    Off,
    /// `500/s`, `10/ms`: at most `count` events per `per`.
    Rate {
        /// Events allowed per `per`.
        count: u64,
        /// The unit of the rate (1 ns, 1 us, 1 ms, 1 s, 1 min, 1 h or 1 d).
        per: Duration,
    },
    /// `10ms`, `20 ms`: one event per this much time (for the CPU-time
    /// sampler: per this much CPU time of each thread).
    Interval(Duration),
}

/// The `period` setting of a periodic event or sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    /// `20 ms`, `1s`: every this long.
    Interval(Duration),
    /// `everyChunk`: at the start and the end of every chunk.
    EveryChunk,
    /// `beginChunk`: at the start of every chunk.
    BeginChunk,
    /// `endChunk`: at the end of every chunk.
    EndChunk,
}

/// Parses a throttle: `off`, a rate `N/unit` (unit `ns`, `us`, `ms`, `s`,
/// `m`/`min`, `h`, `d`) or an interval in the forms of [`parse_duration`].
pub fn parse_throttle(setting: &str, value: &str) -> Result<Throttle, SettingError> {
    let bad = || SettingError::InvalidValue {
        setting: setting.to_owned(),
        value: value.to_owned(),
        expected: "a rate such as `500/s` or `10/ms`, an interval such as `10 ms`, or `off`",
    };
    let v = value.trim();
    if v == "off" {
        return Ok(Throttle::Off);
    }
    let Some((count, unit)) = v.split_once('/') else {
        return parse_duration(setting, v)
            .map(Throttle::Interval)
            .map_err(|_| bad());
    };
    let count = count.trim();
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let count: u64 = count.parse().map_err(|_| bad())?;
    let per = match unit.trim() {
        "ns" => Duration::from_nanos(1),
        "us" | "µs" => Duration::from_micros(1),
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" | "min" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        "d" => Duration::from_secs(86400),
        _ => return Err(bad()),
    };
    Ok(Throttle::Rate { count, per })
}

/// Parses a period: `everyChunk`, `beginChunk`, `endChunk` or an interval in
/// the forms of [`parse_duration`].
pub fn parse_period(setting: &str, value: &str) -> Result<Period, SettingError> {
    match value.trim() {
        "everyChunk" => Ok(Period::EveryChunk),
        "beginChunk" => Ok(Period::BeginChunk),
        "endChunk" => Ok(Period::EndChunk),
        v => parse_duration(setting, v)
            .map(Period::Interval)
            .map_err(|_| SettingError::InvalidValue {
                setting: setting.to_owned(),
                value: value.to_owned(),
                expected: "an interval such as `20 ms`, or `everyChunk`, `beginChunk`, `endChunk`",
            }),
    }
}

impl Settings {
    /// Sets the throttle of `event`.
    pub fn throttle(&mut self, event: &str, throttle: Throttle) -> &mut Self {
        self.types.entry(event.to_owned()).or_default().throttle = Some(throttle);
        self
    }

    /// Sets the period of `event`.
    pub fn period(&mut self, event: &str, period: Period) -> &mut Self {
        self.types.entry(event.to_owned()).or_default().period = Some(period);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip() {
        for (text, d) in [
            ("0", Duration::ZERO),
            ("20 ms", Duration::from_millis(20)),
            ("20ms", Duration::from_millis(20)),
            ("1s", Duration::from_secs(1)),
            ("500 us", Duration::from_micros(500)),
            ("7 ns", Duration::from_nanos(7)),
            ("5m", Duration::from_secs(300)),
            ("1d", Duration::from_secs(86400)),
        ] {
            assert_eq!(parse_duration("threshold", text), Ok(d), "{text}");
            assert_eq!(parse_duration("threshold", &format_duration(d)), Ok(d));
        }
        for (d, text) in [
            (Duration::from_micros(2), "2 us"),
            (Duration::from_millis(20), "20 ms"),
            (Duration::from_millis(1500), "1500 ms"),
            (Duration::from_secs(90), "90 s"),
            (Duration::from_secs(7200), "2 h"),
            (Duration::from_nanos(1999), "1999 ns"),
        ] {
            assert_eq!(format_duration(d), text);
        }
        for bad in ["", "ms", "-1 ms", "1 fortnight", "5"] {
            assert!(parse_duration("threshold", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_reject_unknown_names_and_values() {
        let mut s = Settings::new();
        assert!(s.set("com.example.Request", "threshold", "1 ms").is_ok());
        assert!(matches!(
            s.set("com.example.Request", "colour", "red"),
            Err(SettingError::UnknownSetting { .. })
        ));
        assert!(matches!(
            s.set("com.example.Request", "enabled", "yes"),
            Err(SettingError::InvalidValue { .. })
        ));
        assert!(matches!(
            s.set("com..Request", "enabled", "true"),
            Err(SettingError::InvalidEventName(_))
        ));
    }
}
