//! Allocation sampling's hooks into the core ([`crate::feature`]): the
//! wrapped allocator follows the settings; the last stop drains the queue
//! into the last chunk and then forgets the tracked blocks; a forked child
//! and flightrec's own threads do not sample; each chunk defines the
//! allocation classes its events name and ends with the leak candidates
//! (`jdk.OldObjectSample`); an allocation stack's marker frame cuts the
//! allocator's own frames from its top.

use jfr_format::Checkpoint;

use crate::config::settings::Settings;
use crate::feature::{ChunkPart, Feature, TopCut};
use crate::runtime::Runtime;
use crate::stack::ResolvedFrame;

use super::control as state;
use super::emit::{self, OldObjects};

/// The allocation sampling feature.
pub(crate) struct Allocations;

impl Feature for Allocations {
    fn apply(&self, settings: &Settings, recording: bool) {
        state::apply(settings, recording);
    }

    fn stop_in_child(&self) {
        state::stop_in_child();
    }

    fn shutdown(&self, _reason: &str) {
        state::shutdown();
    }

    fn stopped(&self) {
        state::stopped();
    }

    fn own_thread(&self) {
        state::never_sample_this_thread();
    }

    fn chunk_part(&self) -> Option<Box<dyn ChunkPart>> {
        Some(Box::new(AllocPart {
            classes_written: 0,
            old_objects: OldObjects::default(),
        }))
    }

    fn stack_marker(&self, frame: u64) -> Option<TopCut> {
        emit::alloc_stack_marker(frame).then_some(TopCut::While(allocation_machinery))
    }
}

/// A frame of the allocation machinery, above the function that asked for
/// memory in an allocation stack.
fn allocation_machinery(f: &ResolvedFrame) -> bool {
    const CLASSES: [&str; 5] = ["recorder/", "alloc/", "core/", "std/", "hashbrown/"];
    CLASSES.iter().any(|c| f.class.starts_with(c))
        || f.method.starts_with("__rust")
        || f.method.starts_with("__rdl")
        || f.class.contains("SamplingAllocator")
}

/// A chunk's allocation classes (how many it defines so far) and, at its
/// end, the leak candidates it writes.
#[derive(Debug)]
struct AllocPart {
    classes_written: usize,
    old_objects: OldObjects,
}

impl ChunkPart for AllocPart {
    fn prepare_end(&mut self, rt: &Runtime, epoch: u64) {
        self.old_objects = emit::prepare_old_objects(rt, epoch);
    }

    fn write_constants(&mut self, cp: &mut Checkpoint) {
        self.classes_written = emit::write_class_constants(cp, self.classes_written);
        self.old_objects.write_constants(cp);
    }

    fn end_events(&mut self, out: &mut Vec<u8>, ticks: i64) {
        emit::write_old_object_events(out, ticks, &self.old_objects);
    }
}
