//! The built-in periodic and per-chunk event types the periodic thread
//! writes, with their default `enabled` and `period` (JDK 25's
//! `default.jfc`, except where said) and the settings each takes: the
//! table that the settings' union, the settings checks and the scheduler
//! read, kept apart from the tasks so that reading it pulls in nothing of
//! the periodic thread.
//!
//! Invariant: [`BUILTIN`]'s order is the task index the scheduler and
//! [`super::system::SystemEvents::run`] share.

use crate::config::settings::{Period, Settings};

/// One built-in periodic event type and its defaults (JDK 25's
/// `default.jfc`, except where said).
#[derive(Debug)]
pub(crate) struct Builtin {
    pub(crate) name: &'static str,
    pub(crate) enabled: bool,
    pub(crate) period: Option<Period>,
}

impl Builtin {
    /// The period in force, or `None` if the type is disabled.
    pub(crate) fn effective_period(&self, settings: &Settings) -> Option<Period> {
        let s = settings.get(self.name);
        let on = s.and_then(|s| s.enabled).unwrap_or(self.enabled);
        if !on {
            return None;
        }
        s.and_then(|s| s.period).or(self.period)
    }
}

const fn every(ms: u64) -> Option<Period> {
    Some(Period::Interval(std::time::Duration::from_millis(ms)))
}

const fn task(name: &'static str, enabled: bool, period: Option<Period>) -> Builtin {
    Builtin {
        name,
        enabled,
        period,
    }
}

const BEGIN: Option<Period> = Some(Period::BeginChunk);
const EVERY: Option<Period> = Some(Period::EveryChunk);

/// The built-in periodic tasks, by index (the order of [`SystemEvents::run`](super::system::SystemEvents::run)).
/// `jdk.InitialEnvironmentVariable` and `flightrec.ProcessInformation` are
/// off by default: environment variables and command lines carry secrets.
pub(crate) const BUILTIN: &[Builtin] = &[
    task("jdk.OSInformation", true, BEGIN),
    task("jdk.CPUInformation", true, BEGIN),
    task("jdk.PhysicalMemory", true, EVERY),
    task("jdk.VirtualizationInformation", true, BEGIN),
    task("jdk.ContainerConfiguration", true, BEGIN),
    task("jdk.NativeLibrary", true, EVERY),
    task("jdk.InitialEnvironmentVariable", false, BEGIN),
    task("flightrec.ProcessInformation", false, BEGIN),
    task("jdk.CPUTimeStampCounter", true, BEGIN),
    task("jdk.CPULoad", true, every(1000)),
    task("jdk.ThreadCPULoad", true, every(10_000)),
    task("jdk.ResidentSetSize", true, every(1000)),
    task("jdk.ContainerCPUUsage", true, every(30_000)),
    task("jdk.ContainerMemoryUsage", true, every(30_000)),
    task("jdk.ContainerCPUThrottling", true, every(30_000)),
    task("jdk.ContainerIOUsage", true, every(30_000)),
    task("jdk.NetworkUtilization", true, every(5000)),
    task("jdk.JavaThreadStatistics", true, every(1000)),
    task("jdk.ExceptionStatistics", true, every(1000)),
    task("flightrec.RecorderStatistics", true, every(1000)),
];

/// The non-periodic built-in types this module writes, their default
/// `enabled`, and the settings they take.
pub(crate) const EVENTS: &[(&str, bool, &[&str])] = &[
    ("jdk.ThreadStart", true, &["enabled", "stackTrace"]),
    ("jdk.ThreadEnd", true, &["enabled"]),
    ("jdk.Shutdown", true, &["enabled", "stackTrace"]),
    ("jdk.JavaErrorThrow", true, &["enabled", "stackTrace"]),
];

/// The settings a built-in type of this module takes, if it is one.
pub(crate) fn supported_settings(event: &str) -> Option<&'static [&'static str]> {
    if BUILTIN.iter().any(|b| b.name == event) {
        return Some(&["enabled", "period"]);
    }
    EVENTS.iter().find(|e| e.0 == event).map(|e| e.2)
}

/// `enabled` of a non-periodic type of [`EVENTS`].
pub(crate) fn enabled(settings: &Settings, event: &str) -> bool {
    let default = EVENTS.iter().find(|e| e.0 == event).is_some_and(|e| e.1);
    settings
        .get(event)
        .and_then(|s| s.enabled)
        .unwrap_or(default)
}
