//! What can go wrong while following a recording, handed to `on_error`
//! (or returned by the constructors): each error names what failed and
//! what was lost with it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use jfr_format::read::ReadError;

use super::files::FileKind;

/// Why a stream could not deliver something; passed to `on_error`.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError {
    /// A chunk file vanished (retention, or the stop's clean-up) before its
    /// events were all delivered.
    ChunkRemoved {
        /// The chunk file.
        path: PathBuf,
        /// Events of it delivered before it vanished.
        delivered: u64,
    },
    /// A chunk could not be decoded (a finished one is then skipped).
    Read {
        /// The chunk file.
        path: PathBuf,
        /// What the reader found.
        error: ReadError,
    },
    /// Reading the repository or a file failed.
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// A callback panicked; the stream went on with the next event.
    CallbackPanicked {
        /// The type of the event being handled (`None` in `on_flush`).
        event_type: Option<String>,
        /// The panic's message.
        message: String,
    },
    /// The recording ended (its directory is gone, or it stopped and went
    /// quiet) before the stream read its final chunk: chunks the stream
    /// never saw were removed (the stop's clean-up, or retention).
    FinalChunkUnread {
        /// The repository.
        dir: PathBuf,
    },
    /// The file given to [`EventStream::open_file`](super::EventStream::open_file), or a `.jfr` entry of a
    /// repository, is not a regular file (a FIFO, a device, a directory):
    /// it is not read (see `stream::files`).
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// The process writing the followed repository is gone (killed, or
    /// crashed) with its recording unfinished: the stream delivered what
    /// the chunks held up to their last flush and ended.
    WriterGone {
        /// The repository.
        dir: PathBuf,
        /// The writer's process id (from its chunk files' names).
        pid: u32,
    },
    /// Nothing new was written to the followed repository for
    /// [`idle_end`](super::EventStream::idle_end) while a chunk was still
    /// unfinished: the stream ended.
    Idle {
        /// The repository.
        dir: PathBuf,
        /// How long it waited.
        idle: Duration,
    },
    /// The recording keeps its chunks in memory (`disk(false)`): nothing to
    /// follow on disk. (No longer returned: such a recording is followed
    /// through its in-memory chunks.)
    InMemoryRecording,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ChunkRemoved { path, delivered } => write!(
                f,
                "chunk {} was removed after {delivered} of its events were delivered",
                path.display()
            ),
            Self::Read { path, error } => write!(f, "chunk {}: {error}", path.display()),
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::CallbackPanicked {
                event_type,
                message,
            } => match event_type {
                Some(t) => write!(f, "callback for {t} panicked: {message}"),
                None => write!(f, "on_flush callback panicked: {message}"),
            },
            Self::FinalChunkUnread { dir } => write!(
                f,
                "the recording in {} ended before the stream read its final chunk: chunks it never saw were removed",
                dir.display()
            ),
            Self::NotAFile { path, kind } => {
                write!(f, "{} is {kind}, not a regular file: not read", path.display())
            }
            Self::WriterGone { dir, pid } => write!(
                f,
                "the process writing {} (pid {pid}) is gone with its recording unfinished; \
                 its chunks were read up to their last flush",
                dir.display()
            ),
            Self::Idle { dir, idle } => write!(
                f,
                "nothing new in {} for {idle:?} with a chunk unfinished: the stream ended",
                dir.display()
            ),
            Self::InMemoryRecording => f.write_str(
                "the recording keeps its chunks in memory (disk(false)); stream a recording with a repository",
            ),
        }
    }
}

impl std::error::Error for StreamError {}
