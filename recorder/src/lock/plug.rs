//! Lock contention's hooks into the core ([`crate::feature`]): the wrapped
//! locks follow the settings, and each chunk defines the lock classes its
//! events name.

use jfr_format::Checkpoint;

use crate::config::settings::Settings;
use crate::feature::{ChunkPart, Feature};

/// The lock contention feature.
pub(crate) struct Locks;

impl Feature for Locks {
    fn apply(&self, settings: &Settings, recording: bool) {
        super::record::apply(settings, recording);
    }

    fn chunk_part(&self) -> Option<Box<dyn ChunkPart>> {
        Some(Box::new(LockPart { classes_written: 0 }))
    }
}

/// A chunk's lock classes: how many it defines so far.
#[derive(Debug)]
struct LockPart {
    classes_written: usize,
}

impl ChunkPart for LockPart {
    fn write_constants(&mut self, cp: &mut Checkpoint) {
        self.classes_written = super::record::write_class_constants(cp, self.classes_written);
    }
}
