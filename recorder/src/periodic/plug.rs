//! Periodic events' hooks into the core ([`crate::feature`]): the periodic
//! thread starts with the first recording and looks again when settings
//! change; the recorder thread runs the chunk edges' tasks here, so their
//! events land in the chunk that ends or begins; the last stop runs the
//! last round (with `jdk.Shutdown`) before the recorder thread is told to
//! stop.

use crate::feature::Feature;
use crate::runtime::Runtime;

/// The periodic events feature.
pub(crate) struct PeriodicEvents;

impl Feature for PeriodicEvents {
    fn started(&self, rt: &'static Runtime) {
        super::thread::start(rt);
    }

    fn settings_changed(&self) {
        super::control::wake();
    }

    fn busy_at_chunk_edge(&self) -> bool {
        super::edge::at_chunk_edge()
    }

    fn shutdown(&self, reason: &str) {
        super::thread::shutdown(reason);
    }

    fn chunk_opened(&self) {
        super::thread::begin_chunk();
    }

    fn chunk_ending(&self) {
        super::thread::end_chunk();
    }
}
