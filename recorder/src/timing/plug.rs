//! Method timing's hooks into the core ([`crate::feature`]): its sites
//! follow the settings, a forked child stops timing, each chunk defines the
//! sites its events name and ends with one `jdk.MethodTiming` per selected
//! site, and a `jdk.MethodTrace` stack's marker frame names the timed
//! function, cut from the stack with everything above it.

use jfr_format::Checkpoint;

use crate::config::settings::Settings;
use crate::feature::{ChunkPart, Feature, TopCut};

/// The timing feature.
pub(crate) struct Timing;

impl Feature for Timing {
    fn apply(&self, settings: &Settings, recording: bool) {
        super::sites::apply(settings, recording);
    }

    fn stop_in_child(&self) {
        super::sites::stop_in_child();
    }

    fn chunk_part(&self) -> Option<Box<dyn ChunkPart>> {
        Some(Box::new(TimingPart { sites_written: 0 }))
    }

    fn stack_marker(&self, frame: u64) -> Option<TopCut> {
        let site = super::emit::trace_marker_site(frame)?;
        Some(match super::sites::site_method(site) {
            Some(callee) => TopCut::Through(callee),
            None => TopCut::Nothing,
        })
    }
}

/// A chunk's timed sites: how many of them it defines so far.
#[derive(Debug)]
struct TimingPart {
    sites_written: usize,
}

impl ChunkPart for TimingPart {
    fn write_constants(&mut self, cp: &mut Checkpoint) {
        self.sites_written = super::emit::write_site_constants(cp, self.sites_written);
    }

    fn end_events(&mut self, out: &mut Vec<u8>, ticks: i64) {
        super::emit::write_timing_events(out, ticks);
    }
}
