//! Which event types support which settings: the table for the JDK types
//! flightrec writes itself, the periodic events' own lists (beside their
//! producers in [`crate::periodic`]), and the checks `Recording::start`,
//! `set` and `.jfc` files run against them, so a setting that would do
//! nothing is refused with the reason instead of ignored.
//!
//! Invariant: a setting passes only if the type it names honours it, as
//! far as is known when it is checked (the built-in types, the types
//! registered so far).

use super::settings::{SettingError, Settings, TypeSettings, is_builtin_event};

/// The settings flightrec honours for the JDK event types it writes
/// itself; the other built-in types (`jdk.ActiveSetting`, ...) are written
/// whenever they apply and take no setting.
const BUILTIN_SUPPORT: &[(&str, &[&str], &str)] = &[
    (
        "jdk.CPUTimeSample",
        &["enabled", "throttle", "stackTrace"],
        "jdk.CPUTimeSample takes enabled, throttle and stackTrace",
    ),
    (
        "jdk.ExecutionSample",
        &["enabled", "period"],
        "jdk.ExecutionSample takes enabled and period",
    ),
    (
        "jdk.MethodTiming",
        &["enabled"],
        "jdk.MethodTiming takes enabled and filter (emitted at the end of every chunk)",
    ),
    (
        "jdk.MethodTrace",
        &["enabled", "threshold", "stackTrace"],
        "jdk.MethodTrace takes enabled, threshold, stackTrace and filter",
    ),
    (
        "jdk.JavaMonitorEnter",
        &["enabled", "threshold", "stackTrace"],
        "jdk.JavaMonitorEnter takes enabled, threshold and stackTrace",
    ),
    (
        "jdk.ThreadPark",
        &["enabled", "threshold", "stackTrace"],
        "jdk.ThreadPark takes enabled, threshold and stackTrace",
    ),
    (
        "jdk.ObjectAllocationSample",
        &["enabled", "throttle", "stackTrace"],
        "jdk.ObjectAllocationSample takes enabled, throttle and stackTrace",
    ),
    (
        "jdk.OldObjectSample",
        &["enabled", "stackTrace"],
        "jdk.OldObjectSample takes enabled and stackTrace (written at the end of every chunk)",
    ),
    (
        "jdk.ThreadAllocationStatistics",
        &["enabled", "period"],
        "jdk.ThreadAllocationStatistics takes enabled and period",
    ),
];

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
    if let Some((_, supported, reason)) = BUILTIN_SUPPORT.iter().find(|(e, _, _)| *e == event) {
        if !supported.contains(&setting) {
            return unsupported(reason);
        }
        if event == "jdk.CPUTimeSample"
            && setting == "stackTrace"
            && value.stack_trace == Some(false)
        {
            return unsupported("CPU-time samples always carry a stack trace");
        }
        return Ok(());
    }
    if let Some(supported) = crate::periodic::table::supported_settings(event) {
        if !supported.contains(&setting) {
            return unsupported(if supported.contains(&"period") {
                "this periodic event takes enabled and period"
            } else {
                "this event takes enabled (and stackTrace where it has a stack trace)"
            });
        }
        return Ok(());
    }
    if is_builtin_event(event) {
        return unsupported("flightrec writes this type whenever it applies; it takes no setting");
    }
    if setting == "period" && crate::periodic::user::is_periodic(event) {
        return Ok(());
    }
    match setting {
        "throttle" => unsupported("only jdk.CPUTimeSample takes throttle"),
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
    /// Checks that every event type named here supports every setting it
    /// is given, as far as is known now: the built-in types, the types
    /// registered so far, and `throttle`/`period`, which only flightrec's
    /// samplers implement. Called by `Recording::start` and `set`.
    pub fn check_supported(&self) -> Result<(), SettingError> {
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
