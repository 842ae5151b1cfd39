//! Which event types take which settings, with the defaults of the
//! built-in ones, and the checks `Recording::start`, `set` and `.jfc` files
//! run against them, so a setting that would do nothing is refused with the
//! reason instead of ignored.
//!
//! # Built-in types
//!
//! The format crate's type table ([`jfr_format::builtin`]) is the one
//! source. Each event type's `settings` there are the settings it takes,
//! and their `defaultValue`s its defaults, read once by the settings' own
//! parser ([`Settings::set`]) into a [`BuiltinType`]. A built-in type takes
//! its settings only if a feature writes it as the settings say
//! ([`Feature::writes`](crate::feature::Feature::writes)); the others are
//! written whenever they apply (`jdk.ActiveSetting`, `jdk.DataLoss`, ...)
//! or never (`jdk.SocketRead`, ...), and take no setting. Besides its
//! table's settings, `jdk.MethodTiming` and `jdk.MethodTrace` take a method
//! `filter` ([`Settings::method_filter`]), and `jdk.CPUTimeSample` always
//! carries a stack trace (`stackTrace=false` is refused).
//!
//! # Other types
//!
//! A registered type takes `enabled`, `stackTrace` and, if it has a
//! duration, `threshold`; a type given to `add_periodic_event` also takes
//! `period`; `throttle` only the built-in samplers implement. A type not
//! registered yet is held to what is known: `throttle` and `period` are
//! refused, the rest waits for its registration.
//!
//! Invariant: a setting passes only if the type it names honours it, as
//! far as is known when it is checked (the built-in types, the types
//! registered so far), and a built-in type's defaults are its table's.

use std::collections::HashMap;

use jfr_format::TypeDesc;

use super::settings::{FILTER_EVENTS, SettingError, Settings, TypeSettings};
use crate::base::sync::OnceLock;

/// One built-in event type's settings, as the type table gives them.
#[derive(Debug)]
pub(crate) struct BuiltinType {
    /// The settings it takes, in the table's order (none if no feature
    /// writes it as its settings say).
    takes: Vec<String>,
    /// The table's defaults (`Some` for every setting the table gives).
    defaults: TypeSettings,
    /// Why a setting it does not take is refused.
    refusal: String,
}

impl BuiltinType {
    /// True if the type takes `setting` (`filter` aside).
    pub(crate) fn takes(&self, setting: &str) -> bool {
        self.takes.iter().any(|s| s == setting)
    }

    /// The settings the type takes, in the table's order (`filter` aside).
    #[cfg(test)]
    pub(crate) fn settings(&self) -> impl Iterator<Item = &str> {
        self.takes.iter().map(String::as_str)
    }
}

/// The built-in types, read from the type table, and the refusal of
/// `throttle` for the other types (it names the types that take it).
#[derive(Debug)]
struct Table {
    types: HashMap<String, BuiltinType>,
    throttle_refusal: String,
}

static TABLE: OnceLock<Table> = OnceLock::new();

/// The table, read on first use (`Settings::check_supported` reads it at
/// every start, so the panic hook and the periodic thread find it read).
fn table() -> &'static Table {
    TABLE.get_or_init(|| {
        let types: HashMap<String, BuiltinType> = jfr_format::builtin::builtin_types()
            .iter()
            .filter(|t| t.is_event())
            .map(|t| (t.name.to_string(), read(t)))
            .collect();
        let mut throttled: Vec<&str> = types
            .iter()
            .filter(|(_, t)| t.takes("throttle"))
            .map(|(name, _)| name.as_str())
            .collect();
        throttled.sort_unstable();
        let throttle_refusal = format!("only {} take throttle", and_list(&throttled));
        Table {
            types,
            throttle_refusal,
        }
    })
}

/// `t`'s settings and defaults, and whether flightrec honours them.
fn read(t: &TypeDesc) -> BuiltinType {
    let name: &str = &t.name;
    let mut parsed = Settings::new();
    for d in t.settings.iter() {
        let r = parsed.set(name, &d.name, &d.default_value);
        debug_assert!(r.is_ok(), "{name}#{}={}: {r:?}", d.name, d.default_value);
    }
    let defaults = parsed.types.remove(name).unwrap_or_default();
    if !written_by_settings(name) {
        return BuiltinType {
            takes: Vec::new(),
            defaults,
            refusal: "flightrec writes this type whenever it applies; it takes no setting"
                .to_owned(),
        };
    }
    let takes: Vec<String> = t.settings.iter().map(|d| d.name.to_string()).collect();
    let mut listed: Vec<&str> = takes.iter().map(String::as_str).collect();
    if FILTER_EVENTS.contains(&name) {
        listed.push("filter");
    }
    BuiltinType {
        refusal: format!("{name} takes {}", and_list(&listed)),
        takes,
        defaults,
    }
}

/// True if a feature of this build writes `event` as the settings say.
/// The features' table itself, not the one `Recording::start` installs:
/// settings are checked before any recording starts (a `.jfc` file read
/// by `FLIGHTREC`'s parser).
fn written_by_settings(event: &str) -> bool {
    crate::feature_table::TABLE.iter().any(|f| f.writes(event))
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The built-in event type `event`, if it is one.
pub(crate) fn builtin(event: &str) -> Option<&'static BuiltinType> {
    table().types.get(event)
}

/// The type table's defaults of `event`, a built-in type (all `None` for
/// any other type: its defaults are its registration's).
pub(crate) fn builtin_defaults(event: &str) -> &'static TypeSettings {
    static NONE: TypeSettings = TypeSettings {
        enabled: None,
        threshold: None,
        stack_trace: None,
        throttle: None,
        period: None,
    };
    builtin(event).map_or(&NONE, |t| &t.defaults)
}

/// Whether `event` (`kind`: registered with that kind, `None`: not
/// registered, or built in) does what `setting` asks; the error says why.
pub(crate) fn check_supported(
    event: &str,
    setting: &str,
    value: &TypeSettings,
    kind: Option<crate::event::descriptor::EventKind>,
) -> Result<(), SettingError> {
    let unsupported = |reason| {
        Err(SettingError::Unsupported {
            event: event.to_owned(),
            setting: setting.to_owned(),
            reason,
        })
    };
    let table = table();
    if let Some(t) = table.types.get(event) {
        if !t.takes(setting) {
            return unsupported(&t.refusal);
        }
        if event == crate::sampler::config::CPU_EVENT
            && setting == "stackTrace"
            && value.stack_trace == Some(false)
        {
            return unsupported("CPU-time samples always carry a stack trace");
        }
        return Ok(());
    }
    #[cfg(not(flightrec_loom))]
    if setting == "period" && crate::periodic::user::is_periodic(event) {
        return Ok(());
    }
    match setting {
        "throttle" => unsupported(&table.throttle_refusal),
        "period" => unsupported(
            "only periodic events take period (built-in ones, jdk.ExecutionSample, and types given to add_periodic_event)",
        ),
        "threshold" if kind == Some(crate::event::descriptor::EventKind::Instant) => {
            unsupported("an instant event has no duration to compare with a threshold")
        }
        _ => Ok(()),
    }
}

impl Settings {
    /// `event`'s settings in force: each value given here, else, for a
    /// built-in type, the type table's default (`None`: neither). What the
    /// built-in types' writers read, so their defaults are the table's.
    pub(crate) fn in_force(&self, event: &str) -> TypeSettings {
        let d = builtin_defaults(event);
        let Some(g) = self.get(event) else {
            return d.clone();
        };
        TypeSettings {
            enabled: g.enabled.or(d.enabled),
            threshold: g.threshold.or(d.threshold),
            stack_trace: g.stack_trace.or(d.stack_trace),
            throttle: g.throttle.or(d.throttle),
            period: g.period.or(d.period),
        }
    }

    /// Checks that every event type named here supports every setting it
    /// is given, as far as is known now: the built-in types, the types
    /// registered so far, and `throttle`/`period`, which only flightrec's
    /// samplers implement. Called by `Recording::start` and `set`.
    pub fn check_supported(&self) -> Result<(), SettingError> {
        table();
        let types = crate::event::registry::registry().types();
        let mut names: Vec<&String> = self.types.keys().collect();
        names.sort();
        for event in names {
            let t = &self.types[event];
            let kind = types
                .iter()
                .find(|ty| ty.info.name == event.as_str())
                .map(|ty| ty.info.kind);
            let given = [
                ("enabled", t.enabled.is_some()),
                ("threshold", t.threshold.is_some()),
                ("stackTrace", t.stack_trace.is_some()),
                ("throttle", t.throttle.is_some()),
                ("period", t.period.is_some()),
            ];
            for (setting, _) in given.iter().filter(|(_, g)| *g) {
                check_supported(event, setting, t, kind)?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::settings::{Period, Throttle};
    use crate::config::union::union;

    fn registry_defaults(name: &str) -> TypeSettings {
        builtin_defaults(name).clone()
    }

    #[test]
    fn every_default_of_the_table_parses_and_is_kept() {
        let mut written = 0;
        for t in jfr_format::builtin::builtin_types() {
            if !t.is_event() {
                continue;
            }
            let b = builtin(&t.name).unwrap();
            let d = builtin_defaults(&t.name);
            for s in t.settings.iter() {
                let mut one = Settings::new();
                one.set(&t.name, &s.name, &s.default_value)
                    .unwrap_or_else(|e| panic!("{}#{}={}: {e}", t.name, s.name, s.default_value));
                let want = &one.types[&*t.name];
                let kept = match &*s.name {
                    "enabled" => want.enabled == d.enabled,
                    "threshold" => want.threshold == d.threshold,
                    "stackTrace" => want.stack_trace == d.stack_trace,
                    "throttle" => want.throttle == d.throttle,
                    "period" => want.period == d.period,
                    other => panic!("{}: unknown setting {other}", t.name),
                };
                assert!(kept, "{}#{}: {d:?}", t.name, s.name);
            }
            if b.settings().next().is_some() {
                written += 1;
                let listed: Vec<&str> = t.settings.iter().map(|s| &*s.name).collect();
                assert_eq!(b.settings().collect::<Vec<_>>(), listed, "{}", t.name);
            }
        }
        assert!(written >= 30, "only {written} built-in types take settings");
    }

    #[test]
    fn the_writers_defaults_are_the_tables() {
        let none = Settings::new();
        // The samplers' constants (public, documented) agree with the table.
        use crate::sampler::config::{
            CPU_EVENT, DEFAULT_THROTTLE, DEFAULT_WALL_PERIOD, WALL_EVENT,
        };
        assert_eq!(
            none.in_force(CPU_EVENT).throttle,
            Some(Throttle::Interval(DEFAULT_THROTTLE))
        );
        assert_eq!(
            none.in_force(WALL_EVENT).period,
            Some(Period::Interval(DEFAULT_WALL_PERIOD))
        );
        // One period, written once: the table's.
        let cpu_load = crate::periodic::table::BUILTIN
            .iter()
            .find(|b| b.name == "jdk.ThreadCPULoad")
            .unwrap();
        assert_eq!(
            cpu_load.effective_period(&none),
            Some(Period::Interval(Duration::from_secs(10)))
        );
        // Secrets are off unless asked for.
        for name in [
            "jdk.InitialEnvironmentVariable",
            "flightrec.ProcessInformation",
        ] {
            let b = crate::periodic::table::BUILTIN
                .iter()
                .find(|b| b.name == name);
            assert_eq!(b.unwrap().effective_period(&none), None, "{name}");
        }
        for b in crate::periodic::table::BUILTIN {
            assert!(b.default_period().is_some(), "{}", b.name);
            assert!(builtin(b.name).unwrap().takes("period"), "{}", b.name);
        }
        for e in crate::periodic::table::EVENTS {
            assert!(crate::periodic::table::enabled(&none, e), "{e}");
        }
        let lock = none.in_force("jdk.JavaMonitorEnter");
        assert_eq!(lock.threshold, Some(Duration::from_millis(20)));
        assert_eq!(
            none.in_force("jdk.MethodTrace").threshold,
            Some(Duration::ZERO)
        );
        // A given value wins over the default; another type has none.
        let mut given = Settings::new();
        given
            .set("jdk.JavaMonitorEnter", "threshold", "5 ms")
            .unwrap();
        let lock = given.in_force("jdk.JavaMonitorEnter");
        assert_eq!(lock.threshold, Some(Duration::from_millis(5)));
        assert_eq!(lock.enabled, Some(true));
        assert_eq!(none.in_force("com.example.X"), TypeSettings::default());
    }

    /// The allocation types' defaults take part in the union as the lock
    /// types' do: a recording that asks for more allocation samples or
    /// statistics than the default gets them while another runs with the
    /// defaults (before, their defaults were unknown to the union, which
    /// then fell back to the default and gave the first one less).
    #[test]
    fn allocation_defaults_take_part_in_the_union() {
        let mut a = Settings::new();
        a.set("jdk.ObjectAllocationSample", "throttle", "off")
            .unwrap();
        a.set("jdk.ThreadAllocationStatistics", "period", "100 ms")
            .unwrap();
        a.set("jdk.OldObjectSample", "enabled", "false").unwrap();
        a.set("jdk.JavaMonitorEnter", "threshold", "50 ms").unwrap();
        let b = Settings::new();
        let u = union(&[&a, &b], registry_defaults);
        let sample = u.get("jdk.ObjectAllocationSample").unwrap();
        assert_eq!(sample.throttle, Some(Throttle::Off));
        let stats = u.get("jdk.ThreadAllocationStatistics").unwrap();
        assert_eq!(
            stats.period,
            Some(Period::Interval(Duration::from_millis(100)))
        );
        // The other recording records leaks (the default): so does the union.
        assert_eq!(u.get("jdk.OldObjectSample").unwrap().enabled, Some(true));
        // The lock type's default threshold is the smaller one.
        let lock = u.get("jdk.JavaMonitorEnter").unwrap();
        assert_eq!(lock.threshold, Some(Duration::from_millis(20)));
        // A throttle above the default wins; one below it gives the default.
        let mut c = Settings::new();
        c.set("jdk.ObjectAllocationSample", "throttle", "10/s")
            .unwrap();
        let u = union(&[&c, &b], registry_defaults);
        assert_eq!(
            u.get("jdk.ObjectAllocationSample").unwrap().throttle,
            Some(Throttle::Rate {
                count: 150,
                per: Duration::from_secs(1)
            })
        );
    }

    #[test]
    fn refusals_name_what_the_type_takes() {
        let refusal = |event: &str, setting: &str| {
            let mut s = Settings::new();
            s.set(event, setting, "1 s").unwrap();
            match s.check_supported() {
                Err(SettingError::Unsupported { reason, .. }) => reason,
                other => panic!("{event}#{setting}: {other:?}"),
            }
        };
        assert_eq!(
            refusal("jdk.MethodTrace", "period"),
            "jdk.MethodTrace takes enabled, threshold, stackTrace and filter"
        );
        assert_eq!(
            refusal("jdk.ThreadCPULoad", "threshold"),
            "jdk.ThreadCPULoad takes enabled and period"
        );
        assert_eq!(
            refusal("com.example.X", "throttle"),
            "only jdk.CPUTimeSample and jdk.ObjectAllocationSample take throttle"
        );
        assert_eq!(
            refusal("jdk.DataLoss", "period"),
            "flightrec writes this type whenever it applies; it takes no setting"
        );
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
    }
}
