//! The Pyroscope uploader's hooks into the core ([`crate::feature`]): a
//! recording with an upload target starts its uploader (and its samples
//! carry labels), each finished chunk is offered to the uploaders of the
//! recordings it belongs to, and a stop settles and ends its uploader.

use std::io;

use crate::config::builder::{RecordingConfig, StartError};
use crate::feature::Feature;

use super::uploaders;

/// The Pyroscope uploader feature.
pub(crate) struct Pyroscope;

impl Feature for Pyroscope {
    fn labels_in_samples(&self, config: &RecordingConfig) -> bool {
        config.pyroscope.is_some()
    }

    fn start_member(&self, id: u64, config: &RecordingConfig) -> Result<(), StartError> {
        uploaders::start(id, config.pyroscope.as_ref()).map_err(StartError::Pyroscope)
    }

    fn member_gone(&self, id: u64) {
        uploaders::finish(id);
    }

    fn before_last_chunk(&self, id: u64) {
        uploaders::before_last_chunk(id);
    }

    fn wants_finished_chunks(&self) -> bool {
        true
    }

    fn chunk_finished(
        &self,
        members: &[u64],
        start: i64,
        end: i64,
        bytes: &mut dyn FnMut() -> io::Result<Vec<u8>>,
    ) {
        uploaders::chunk_finished(members, start, end, bytes);
    }
}

impl crate::lifecycle::handle::Recording {
    /// What this recording's Pyroscope uploader has done so far (`None`
    /// without one). See [`crate::pyroscope`].
    pub fn pyroscope_totals(&self) -> Option<super::upload::UploadTotals> {
        uploaders::totals(self.id())
    }
}
