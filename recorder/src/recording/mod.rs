//! Recordings: the handle a program holds, the recorder thread and the
//! chunks it assembles, the repository of chunk files, loss accounting,
//! and the process hooks (autostart, shutdown, fork, panics) around them.

#[cfg(not(flightrec_loom))]
mod active_recording;
pub(crate) mod assemble;
#[cfg(not(flightrec_loom))]
pub mod autostart;
pub(crate) mod chunk;
pub(crate) mod chunk_out;
pub mod config;
#[cfg(not(flightrec_loom))]
pub(crate) mod exec_child;
pub(crate) mod files;
#[cfg(not(flightrec_loom))]
pub(crate) mod fork;
#[cfg(not(flightrec_loom))]
pub(crate) mod handle;
pub(crate) mod loss;
#[cfg(not(flightrec_loom))]
pub(crate) mod member;
#[cfg(not(flightrec_loom))]
pub(crate) mod outcome;
#[cfg(not(flightrec_loom))]
#[doc(hidden)]
pub mod panic_guard;
#[cfg(not(flightrec_loom))]
pub(crate) mod panics;
#[cfg(not(flightrec_loom))]
pub(crate) mod physical;
#[cfg(not(flightrec_loom))]
pub(crate) mod recorder_thread;
pub mod repository;
#[cfg(not(flightrec_loom))]
pub(crate) mod shutdown;
pub(crate) mod stale;
#[cfg(not(flightrec_loom))]
pub(crate) mod statistics;

#[cfg(not(flightrec_loom))]
pub use handle::{MemoryUse, Recording};
#[cfg(not(flightrec_loom))]
pub use outcome::{RecordingError, RecordingSummary};
