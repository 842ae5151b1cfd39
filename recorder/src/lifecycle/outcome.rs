//! What the recording calls give back: [`RecordingError`] (the control
//! path's typed error: what failed and the OS error behind it) and
//! [`RecordingSummary`] (what a stopped recording wrote). The handle, the
//! recorder thread that answers it and `jcmd`'s control share these types.
//!
//! Invariant: every failure a recording call reports is one of these
//! variants, with the file or step it concerns; none is a panic.

use std::io;
use std::path::PathBuf;

use crate::base::loss::LossCounts;

/// An error while recording.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordingError {
    /// Writing the recording failed; the recording stopped then.
    Failed {
        /// What failed (e.g. "writing chunk /tmp/…/x.jfr").
        context: String,
        /// The OS error.
        source: io::Error,
    },
    /// A dump or destination file could not be written (the recording goes on).
    Dump {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Chunk data could not be written (disk full, an I/O error). The
    /// recording went on in memory, up to its `max_memory`, and wrote again
    /// once it could; what it could not write is counted lost
    /// ([`LossCause::WriteError`](crate::base::loss::LossCause::WriteError), and
    /// [`LossCause::PoolExhausted`](crate::LossCause::PoolExhausted) for
    /// events that found no buffer meanwhile) in `lost` and in the file's
    /// `flightrec.EventsLost` and `jdk.DataLoss` events. Returned by
    /// `stop()` of a recording that met such an error (with what it wrote
    /// in `summary`), and by calls made while writing is failing.
    WriteFailed {
        /// The chunk file whose write failed first.
        path: PathBuf,
        /// The first OS error.
        source: io::Error,
        /// Events dropped over the recording so far, by cause.
        lost: Box<LossCounts>,
        /// What the stop wrote, if it got that far (`None` for other calls,
        /// or if the destination could not be written either).
        summary: Option<Box<RecordingSummary>>,
    },
    /// The recorder thread is gone (it could not be reached).
    RecorderGone,
    /// Called in a forked child on a recording of the parent: recording is
    /// off in a child (see the crate's `fork` notes); the child may start
    /// a recording of its own.
    InForkedChild,
    /// Called from a periodic event's closure that the recorder thread runs
    /// at a chunk's edge (an `endChunk`, `beginChunk` or `everyChunk`
    /// period): the request would wait for the recorder thread itself.
    FromChunkEdge,
}

impl std::fmt::Display for RecordingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Failed { context, source } => write!(f, "recording stopped: {context}: {source}"),
            Self::Dump { path, source } => write!(f, "cannot write {}: {source}", path.display()),
            Self::WriteFailed {
                path,
                source,
                lost,
                summary,
            } => {
                write!(
                    f,
                    "cannot write {}: {source}; {} events lost ({} unwritten), counted in the file",
                    path.display(),
                    lost.total_events(),
                    lost.events(crate::base::loss::LossCause::WriteError),
                )?;
                match summary.as_ref().and_then(|s| s.destination.as_ref()) {
                    Some(d) => write!(f, "; the recording was written to {}", d.display()),
                    None => Ok(()),
                }
            }
            Self::RecorderGone => f.write_str("the recorder thread has stopped"),
            Self::InForkedChild => {
                f.write_str("this recording belongs to the parent process (called after fork)")
            }
            Self::FromChunkEdge => f.write_str(
                "called from a chunk-edge periodic event, which the recorder thread itself runs",
            ),
        }
    }
}

impl std::error::Error for RecordingError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Failed { source, .. }
            | Self::Dump { source, .. }
            | Self::WriteFailed { source, .. } => Some(source),
            Self::RecorderGone | Self::InForkedChild | Self::FromChunkEdge => None,
        }
    }
}

/// What a stopped recording wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingSummary {
    /// The file written at stop, if one was configured.
    pub destination: Option<PathBuf>,
    /// Chunks in it.
    pub chunks: u64,
    /// Bytes in it.
    pub bytes: u64,
    /// Events dropped, by cause, over the recording.
    pub losses: LossCounts,
}
