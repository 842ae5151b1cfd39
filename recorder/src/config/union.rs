//! The settings in force while several recordings run: the union of their
//! settings, as the JDK combines them.
//!
//! Per event type, over the live recordings:
//!
//! ```text
//! enabled      true if any recording enables it
//! stackTrace   true if any recording asks for it
//! threshold    the smallest
//! period       the shortest interval; else everyChunk, or the one chunk edge
//! throttle     the most permissive (off, then the highest rate)
//! filter       the union of the method filters (jdk.MethodTiming/Trace)
//! ```
//!
//! A recording that gives no value for a setting records with the type's
//! default, so the default takes part in the union: `defaults` supplies it
//! for the types whose defaults are known (registered types, flightrec's
//! built-in JDK types). When a default is unknown (a type not registered
//! yet) and one recording leaves the setting unset, the union leaves it
//! unset too: the default applies, and the registry recomputes the union
//! when the type registers.
//!
//! Invariant: with one live recording the union is that recording's
//! settings, unchanged (the single-recording behaviour is exactly as
//! before); the union never selects less than any one recording does.

use std::time::Duration;

use crate::config::settings::{Period, Settings, Throttle, TypeSettings};

/// The union of `live` (see the module docs). `defaults(name)` is the
/// type's default settings where known (`None` fields: unknown).
pub(crate) fn union(live: &[&Settings], defaults: impl Fn(&str) -> TypeSettings) -> Settings {
    if let [one] = live {
        return Settings::clone(one);
    }
    let mut out = Settings::new();
    let mut names: Vec<&String> = live.iter().flat_map(|s| s.types.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let d = defaults(name);
        let each: Vec<Option<&TypeSettings>> = live.iter().map(|s| s.get(name)).collect();
        let t = TypeSettings {
            enabled: any(&field(&each, |t| t.enabled), d.enabled),
            stack_trace: any(&field(&each, |t| t.stack_trace), d.stack_trace),
            threshold: pick(&field(&each, |t| t.threshold), d.threshold, |a, b| a.min(b)),
            period: pick(&field(&each, |t| t.period), d.period, shortest),
            throttle: pick(&field(&each, |t| t.throttle), d.throttle, most_permissive),
        };
        out.types.insert(name.clone(), t);
    }
    for (at, slot) in out.method_filters.iter_mut().enumerate() {
        for s in live {
            if let Some(f) = &s.method_filters[at] {
                match slot {
                    Some(u) => u.union(f),
                    None => *slot = Some(f.clone()),
                }
            }
        }
    }
    out
}

/// One setting's value in each recording.
fn field<T>(each: &[Option<&TypeSettings>], get: fn(&TypeSettings) -> Option<T>) -> Vec<Option<T>> {
    each.iter().map(|t| t.and_then(get)).collect()
}

/// A boolean OR where `None` is the default: exact even when the default
/// is unknown (`None` wins only where it may be `true` and nothing is).
fn any(values: &[Option<bool>], default: Option<bool>) -> Option<bool> {
    let values: Vec<Option<bool>> = values.iter().map(|v| v.or(default)).collect();
    if values.contains(&Some(true)) {
        Some(true)
    } else if values.iter().all(|v| *v == Some(false)) {
        Some(false)
    } else {
        None
    }
}

/// The best of `values` by `better`, `None` standing for `default`; stays
/// `None` (the default) when a recording relies on an unknown default.
fn pick<T: Copy>(values: &[Option<T>], default: Option<T>, better: fn(T, T) -> T) -> Option<T> {
    if values.iter().all(Option::is_none) {
        return None;
    }
    let mut best: Option<T> = None;
    for v in values {
        let v = (*v).or(default)?;
        best = Some(best.map_or(v, |b| better(b, v)));
    }
    best
}

/// The shorter period: intervals beat chunk edges; both edges make
/// `everyChunk`.
fn shortest(a: Period, b: Period) -> Period {
    match (a, b) {
        (Period::Interval(x), Period::Interval(y)) => Period::Interval(x.min(y)),
        (p @ Period::Interval(_), _) | (_, p @ Period::Interval(_)) => p,
        (x, y) if x == y => x,
        _ => Period::EveryChunk,
    }
}

/// The throttle that lets more events through: `off`, then the higher
/// rate (an interval is one event per interval).
fn most_permissive(a: Throttle, b: Throttle) -> Throttle {
    /// Events per second.
    fn rate(t: Throttle) -> f64 {
        match t {
            Throttle::Off => f64::INFINITY,
            Throttle::Rate { count, per } => count as f64 / secs(per),
            Throttle::Interval(d) => 1.0 / secs(d),
        }
    }
    fn secs(d: Duration) -> f64 {
        d.as_secs_f64().max(1e-9)
    }
    if rate(b) > rate(a) { b } else { a }
}

/// The default settings of the JDK event types flightrec writes itself,
/// where known (`None` fields: unknown).
pub(crate) fn builtin_default(name: &str) -> TypeSettings {
    use crate::sampler::config::{CPU_EVENT, DEFAULT_THROTTLE, DEFAULT_WALL_PERIOD, WALL_EVENT};
    let mut t = TypeSettings::default();
    if let Some(b) = crate::periodic::table::BUILTIN
        .iter()
        .find(|b| b.name == name)
    {
        t.enabled = Some(b.enabled);
        t.period = b.period;
    } else if let Some(e) = crate::periodic::table::EVENTS.iter().find(|e| e.0 == name) {
        t.enabled = Some(e.1);
    }
    match name {
        CPU_EVENT => {
            t.enabled = Some(false);
            t.throttle = Some(Throttle::Interval(DEFAULT_THROTTLE));
        }
        WALL_EVENT => {
            t.enabled = Some(false);
            t.period = Some(Period::Interval(DEFAULT_WALL_PERIOD));
        }
        "jdk.MethodTiming" => t.enabled = Some(true),
        "jdk.MethodTrace" => {
            t.enabled = Some(true);
            t.stack_trace = Some(true);
            t.threshold = Some(Duration::ZERO);
        }
        "jdk.JavaMonitorEnter" | "jdk.ThreadPark" => {
            t.enabled = Some(true);
            t.stack_trace = Some(true);
            t.threshold = Some(Duration::from_millis(20));
        }
        _ => {}
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> TypeSettings {
        TypeSettings::default()
    }

    #[test]
    fn one_recording_is_its_own_union() {
        let mut a = Settings::new();
        a.set("x.A", "threshold", "5 ms").unwrap();
        a.method_filter("jdk.MethodTiming", "::f").unwrap();
        assert_eq!(union(&[&a], none), a);
    }

    #[test]
    fn booleans_or_thresholds_min_and_filters_join() {
        let mut a = Settings::new();
        a.set("x.A", "enabled", "true").unwrap();
        a.set("x.A", "threshold", "20 ms").unwrap();
        a.set("x.B", "enabled", "false").unwrap();
        a.method_filter("jdk.MethodTiming", "::f").unwrap();
        let mut b = Settings::new();
        b.set("x.A", "enabled", "false").unwrap();
        b.set("x.A", "threshold", "5 ms").unwrap();
        b.set("x.B", "enabled", "false").unwrap();
        b.set("x.B", "stackTrace", "true").unwrap();
        b.method_filter("jdk.MethodTiming", "::g").unwrap();
        let u = union(&[&a, &b], none);
        let x = u.get("x.A").unwrap();
        assert_eq!(x.enabled, Some(true));
        assert_eq!(x.threshold, Some(Duration::from_millis(5)));
        let y = u.get("x.B").unwrap();
        assert_eq!((y.enabled, y.stack_trace), (Some(false), Some(true)));
        assert_eq!(
            u.get_method_filter("jdk.MethodTiming").as_deref(),
            Some("::f;::g")
        );
    }

    #[test]
    fn an_unset_value_counts_with_the_default() {
        let mut a = Settings::new();
        a.set("x.A", "threshold", "20 ms").unwrap();
        a.set("x.A", "enabled", "false").unwrap();
        let b = Settings::new();
        let known = |_: &str| TypeSettings {
            enabled: Some(true),
            threshold: Some(Duration::from_millis(1)),
            ..TypeSettings::default()
        };
        let u = union(&[&a, &b], known);
        let x = u.get("x.A").unwrap();
        assert_eq!(x.threshold, Some(Duration::from_millis(1)));
        assert_eq!(x.enabled, Some(true));
        // Unknown defaults: left to the default.
        let u = union(&[&a, &b], none);
        assert_eq!(u.get("x.A").unwrap().threshold, None);
        assert_eq!(u.get("x.A").unwrap().enabled, None);
    }

    #[test]
    fn periods_take_the_shortest_and_throttles_the_most_permissive() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(
            shortest(Period::Interval(ms(20)), Period::Interval(ms(10))),
            Period::Interval(ms(10))
        );
        assert_eq!(
            shortest(Period::BeginChunk, Period::Interval(ms(10))),
            Period::Interval(ms(10))
        );
        assert_eq!(
            shortest(Period::BeginChunk, Period::EndChunk),
            Period::EveryChunk
        );
        let rate = |count, per| Throttle::Rate { count, per };
        assert_eq!(
            most_permissive(rate(100, ms(1000)), Throttle::Interval(ms(5))),
            Throttle::Interval(ms(5))
        );
        assert_eq!(
            most_permissive(Throttle::Off, rate(1, ms(1))),
            Throttle::Off
        );
    }
}
