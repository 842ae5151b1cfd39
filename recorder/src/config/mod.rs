//! How recordings are configured: the [`RecordingConfig`] builder, the
//! per-event-type settings and the word the hot path reads, the union of
//! the live recordings' settings, and the textual options (`FLIGHTREC`,
//! `.jfc` files).

pub(crate) mod builder;
pub mod options;
pub mod settings;
pub(crate) mod supported;
pub(crate) mod union;

pub use builder::{
    Attach, MAX_THREAD_BUFFER, MIN_CHUNK_SIZE, MIN_THREAD_BUFFER, RecordingConfig, StartError,
};
