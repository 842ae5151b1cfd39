//! The built-in periodic and per-chunk event types the periodic thread
//! writes: the list that the settings checks ([`writes`]), the scheduler
//! and [`super::system::SystemEvents::run`] read, kept apart from the
//! tasks so that reading it pulls in nothing of the periodic thread. Their
//! settings and defaults (JDK 25's `default.jfc` periods; environment
//! variables and the command line off) are the type table's
//! (`jfr_format::builtin`, read by `config::supported`).
//!
//! Invariant: [`BUILTIN`]'s order is the task index the scheduler and
//! [`super::system::SystemEvents::run`] share.

use crate::config::settings::{Period, Settings};
use crate::config::supported::builtin_defaults;

/// One built-in periodic event type.
#[derive(Debug)]
pub(crate) struct Builtin {
    pub(crate) name: &'static str,
}

impl Builtin {
    /// The period in force, or `None` if the type is disabled.
    pub(crate) fn effective_period(&self, settings: &Settings) -> Option<Period> {
        let s = settings.in_force(self.name);
        if s.enabled != Some(true) {
            return None;
        }
        s.period
    }

    /// The type table's period.
    pub(crate) fn default_period(&self) -> Option<Period> {
        builtin_defaults(self.name).period
    }
}

const fn task(name: &'static str) -> Builtin {
    Builtin { name }
}

/// The built-in periodic tasks, by index (the order of [`SystemEvents::run`](super::system::SystemEvents::run)).
pub(crate) const BUILTIN: &[Builtin] = &[
    task("jdk.OSInformation"),
    task("jdk.CPUInformation"),
    task("jdk.PhysicalMemory"),
    task("jdk.VirtualizationInformation"),
    task("jdk.ContainerConfiguration"),
    task("jdk.NativeLibrary"),
    task("jdk.InitialEnvironmentVariable"),
    task("flightrec.ProcessInformation"),
    task("jdk.CPUTimeStampCounter"),
    task("jdk.CPULoad"),
    task("jdk.ThreadCPULoad"),
    task("jdk.ResidentSetSize"),
    task("jdk.ContainerCPUUsage"),
    task("jdk.ContainerMemoryUsage"),
    task("jdk.ContainerCPUThrottling"),
    task("jdk.ContainerIOUsage"),
    task("jdk.NetworkUtilization"),
    task("jdk.JavaThreadStatistics"),
    task("jdk.ExceptionStatistics"),
    task("flightrec.RecorderStatistics"),
];

/// The non-periodic built-in types this module writes (panics, in
/// `process::panics`, as `jdk.JavaErrorThrow`).
pub(crate) const EVENTS: &[&str] = &[
    "jdk.ThreadStart",
    "jdk.ThreadEnd",
    "jdk.Shutdown",
    "jdk.JavaErrorThrow",
];

/// True if `event` is a built-in type of this module.
pub(crate) fn writes(event: &str) -> bool {
    BUILTIN.iter().any(|b| b.name == event) || EVENTS.contains(&event)
}

/// `enabled` of a non-periodic type of [`EVENTS`].
pub(crate) fn enabled(settings: &Settings, event: &str) -> bool {
    settings.in_force(event).enabled == Some(true)
}
