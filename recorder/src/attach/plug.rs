//! The `jcmd` listener's hooks into the core ([`crate::feature`]): each
//! recording that starts is listed for `JFR.check`, `JFR.dump` and
//! `JFR.stop` (and the listener starts if its configuration asks for it);
//! a stopping recording leaves the list.

use crate::config::builder::RecordingConfig;
use crate::feature::Feature;

/// The `jcmd` attach feature.
pub(crate) struct Jcmd;

impl Feature for Jcmd {
    fn member_started(&self, id: u64, config: &RecordingConfig) {
        super::control::started(id, config);
        if let Err(e) = super::start::start(config.attach) {
            eprintln!("flightrec: attach: {e}");
        }
    }

    fn member_leaving(&self, id: u64) {
        super::control::stopped(id);
    }
}
