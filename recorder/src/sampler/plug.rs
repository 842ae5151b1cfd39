//! CPU-time and wall-clock sampling's hooks into the core
//! ([`crate::feature`]): the per-thread timers follow the settings and the
//! recordings' comings and goings, the last stop ends the sampler, and each
//! chunk starts with the `jdk.ActiveSetting` that tells Pyroscope which
//! samples it holds.

use crate::config::builder::RecordingConfig;
use crate::feature::Feature;
use crate::runtime::Runtime;

/// The sampling feature.
pub(crate) struct Sampling;

impl Feature for Sampling {
    fn labels_in_samples(&self, _config: &RecordingConfig) -> bool {
        super::pyroscope::pyroscope_events()
    }

    fn started(&self, _rt: &'static Runtime) {
        super::control::reconcile();
    }

    fn settings_changed(&self) {
        super::control::reconcile();
    }

    fn shutdown(&self, _reason: &str) {
        super::control::shutdown();
    }

    fn chunk_start_events(&self, out: &mut Vec<u8>, ticks: i64) {
        super::pyroscope::write_event_setting(out, ticks);
    }
}
