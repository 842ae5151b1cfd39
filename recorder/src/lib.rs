//! The flightrec runtime: event types, thread-local buffers, the global
//! buffer pool, constant pools, the recorder thread and chunk rotation.
//!
//! * [`event`]: declaring event types (static descriptors or the run-time
//!   builder) and committing events.
//! * `buffer`: thread-owned blocks ([`buffer`] docs give the state machine),
//!   the bounded pool, and the write section of the rotation protocol.
//! * `cpool`: threads, stack traces, and the class/method model they become.
//! * [`recording`]: the lifecycle, the recorder thread, rotation and dumps.
//! * [`timing`]: method timing and tracing of instrumented functions
//!   (`jdk.MethodTiming`, `jdk.MethodTrace`).
//! * [`alloc`]: sampled allocation and leak profiling through a global
//!   allocator wrapper (`jdk.ObjectAllocationSample`, `jdk.OldObjectSample`,
//!   `jdk.ThreadAllocationStatistics`).
//! * [`stream`]: following a recording (or reading a file) from inside the
//!   process, with callbacks per event type.
//! * `sync`: every atomic, cell and thread-local, swapped for loom's under
//!   `cfg(flightrec_loom)`.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
// Under loom only the protocol's pieces are driven (by `loom_api`); the rest
// is built but idle.
#![cfg_attr(flightrec_loom, allow(dead_code, unused_imports))]

#[cfg(not(flightrec_loom))]
mod active_recording;
#[cfg(not(flightrec_loom))]
pub mod alloc;
mod assemble;
#[cfg(not(flightrec_loom))]
pub mod attach;
#[cfg(not(flightrec_loom))]
pub mod autostart;
pub(crate) mod buffer;
mod chunk;
pub mod clock;
pub mod config;
pub(crate) mod cpool;
pub mod event;
#[cfg(not(flightrec_loom))]
mod fork;
mod local;
#[cfg(flightrec_loom)]
#[doc(hidden)]
pub mod loom_api;
mod loss;
mod membarrier;
#[cfg(not(flightrec_loom))]
mod member;
pub mod options;
#[cfg(not(flightrec_loom))]
#[doc(hidden)]
pub mod panic_guard;
#[cfg(not(flightrec_loom))]
mod panics;
#[cfg(not(flightrec_loom))]
pub mod periodic;
#[cfg(not(flightrec_loom))]
mod physical;
#[cfg(not(flightrec_loom))]
mod recorder_thread;
#[cfg(not(flightrec_loom))]
pub mod recording;
pub mod repository;
mod rotation;
mod runtime;
pub mod sampler;
pub mod settings;
#[doc(hidden)]
pub mod stack;
mod stale;
#[cfg(not(flightrec_loom))]
mod statistics;
pub mod stream;
pub(crate) mod sync;
pub mod timing;
mod union;

#[cfg(not(flightrec_loom))]
pub use autostart::{AutoStartError, start_from_env};
pub use config::{Attach, RecordingConfig, StartError};
pub use event::commit::{DurationGuard, Event, StackTrace, ThreadRef, Timer};
pub use event::descriptor::{DefaultSettings, EventKind, EventType, EventTypeInfo, FieldInfo};
pub use event::dynamic::{EventTypeBuilder, Value, ValueSource};
pub use event::field::{ContentType, FieldKind, FieldValue, FieldWriter};
pub use loss::{LossCause, LossCounts};
#[cfg(not(flightrec_loom))]
pub use periodic::{add_periodic_event, remove_periodic_event};
#[cfg(not(flightrec_loom))]
pub use recording::{MemoryUse, Recording, RecordingError, RecordingSummary};
pub use repository::{
    AssembleError, Assembled, RepositoryProblem, SkipReason, SkippedChunk, assemble, recover_chunk,
};
pub use settings::{SettingError, Settings, TypeSettings};
#[cfg(not(flightrec_loom))]
pub use statistics::RecorderStatistics;

/// Paths used by `#[derive(Event)]`'s generated code.
#[doc(hidden)]
pub mod __private {
    pub use crate::{
        ContentType, DefaultSettings, Event, EventKind, EventType, EventTypeInfo, FieldInfo,
        FieldKind, FieldValue, FieldWriter,
    };
    pub use std::time::Duration;
}
