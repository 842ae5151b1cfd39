//! The features the core calls through [`crate::feature::Feature`], in the
//! order their hooks run: periodic events first (their last round lands
//! before the samplers stop), then the samplers, allocation sampling,
//! method timing, lock contention, the `jcmd` listener and the Pyroscope
//! uploader.
//!
//! The one place that names them all: `Recording::start` installs this
//! table, and nothing in the core names a feature.

use crate::feature::Feature;

/// Every feature built into this build of the recorder (under loom too:
/// only `Recording::start` installs it, which no model calls).
pub(crate) static TABLE: &[&dyn Feature] = &[
    &crate::periodic::PeriodicEvents,
    &crate::sampler::Sampling,
    &crate::alloc::Allocations,
    &crate::timing::Timing,
    &crate::lock::Locks,
    &crate::attach::Jcmd,
    #[cfg(feature = "pyroscope")]
    &crate::pyroscope::Pyroscope,
];
