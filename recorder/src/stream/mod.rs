//! In-process streaming: follow a recording's repository (or read a
//! finished file) and call user callbacks per event type, as the JDK's
//! `EventStream` does, with stack traces resolved to named frames.
//!
//! # Mechanism
//!
//! The stream polls the repository directory (every
//! [`poll_interval`](EventStream::poll_interval), 100 ms by default: below
//! the recorder's flush interval, so events reach callbacks within about
//! one flush interval of being written); a recording kept in memory
//! (`disk(false)`) is followed the same way through its in-memory chunk
//! files, each handed to the stream when it is created (see `memory`). Chunk files are taken in name order, which is
//! start-time order. For each chunk not yet done it reads the header and
//! checks its state byte (255: being updated, try at the next poll), then
//! reads only the bytes between what it holds and the header's
//! `chunk_size` (the part the last flush made complete; the whole chunk
//! once the state is 0, finished), re-reads the header to be sure it did
//! not change meanwhile, and hands the new part to the project's reader
//! (`jfr_format::read::ChunkFollower`), which decodes only the
//! records and constants added since the last poll. Those events go to
//! the callbacks. A finished chunk is then done. So each byte of a chunk
//! is read and decoded once, however many flushes it takes
//! ([`StreamSummary::bytes_read`] counts them).
//!
//! * **Rotation**: a new chunk file simply appears; its events follow.
//! * **Retention** deleting a chunk under the reader: a chunk file that
//!   vanishes before it was read to its end is reported to `on_error`
//!   ([`StreamError::ChunkRemoved`]), never silently skipped. A chunk in
//!   memory is read to its end through the stream's own descriptor, so
//!   nothing of it is lost (the stream holds its memory meanwhile).
//! * **Stop**: a stream ends once it has delivered the recording's final
//!   chunk (the header flag the stop sets). If the directory disappears
//!   first, or the recording has stopped (or, for a directory not of this
//!   process's recording, nothing changed for
//!   [`idle_end`](EventStream::idle_end)) with no final chunk in sight, the
//!   stream reports [`StreamError::FinalChunkUnread`] and ends: the stop's
//!   clean-up removed chunks it never saw. A stream that must see every
//!   event of a recording on disk keeps the repository
//!   (`keep_repository(true)`).
//! * **A writer that is gone**: on a repository of another process, the
//!   stream reads the chunks' names for the writer's pid (see `writer`);
//!   once that process no longer exists (killed, crashed), the stream reads
//!   what the chunks hold up to their last flush and ends with
//!   [`StreamError::WriterGone`]. Nothing new written for
//!   [`idle_end`](EventStream::idle_end) with a chunk unfinished ends it
//!   too ([`StreamError::Idle`]): a recorder flushes every second, even
//!   when no event comes.
//! * **Not a file**: [`EventStream::open_file`] and the chunk files of a
//!   repository are opened without blocking and read only if they are
//!   regular files, never past their size ([`StreamError::NotAFile`] for a
//!   FIFO, a device, a directory; see `files`).
//! * **Callbacks** run on the streaming thread; one that panics is caught,
//!   reported to `on_error` ([`StreamError::CallbackPanicked`]) and the
//!   stream goes on.
//!
//! # Memory
//!
//! The bytes and constants of the chunks being read (the chunk being
//! written and any finished ones not yet read to their end; the recorder
//! bounds a chunk's size, `max_chunk_size`), the events decoded by one
//! poll, and the names of the chunk files present.
//!
//! Invariant: each event of a chunk is delivered at most once, in file
//! order, and a chunk whose remaining events can no longer be read is
//! reported.

mod error;
mod event;
mod files;
mod follow;
pub(crate) mod memory;
mod writer;

pub use error::StreamError;
pub use event::{Frame, RecordedEvent};
pub use files::FileKind;
pub use follow::{EventStream, StreamCloser, StreamHandle, StreamSummary};
