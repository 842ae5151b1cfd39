//! The flightrec runtime: event types, thread-local buffers, the global
//! buffer pool, constant pools, the recorder thread and chunk rotation,
//! and the features that plug into them.
//!
//! The core, from the bottom up:
//!
//! * `base`: what everything uses — the `sync` module every atomic, cell
//!   and thread-local goes through (swapped for loom's under
//!   `cfg(flightrec_loom)`), the [`clock`], the packed settings word the
//!   hot path reads, and loss causes and counters.
//! * `buffer`: thread-owned blocks (the state machine is in its docs), the
//!   bounded pool and the huge-page slabs it cuts them from, and the write
//!   section of the rotation protocol.
//! * `epoch`: the safepoint that closes an epoch, the drains, the
//!   asymmetric fence.
//! * [`event`]: declaring event types (static descriptors or the run-time
//!   builder), the type registry, and committing events.
//! * `cpool`: threads, stack traces, and the class/method model they become.
//! * `feature`: the one interface through which the core calls every
//!   feature; `feature_table` lists them.
//! * `lifecycle`: the [`Recording`] a program holds, starting, joining and
//!   stopping it, the physical recorder every recording shares.
//! * `output`: the recorder thread, the assembly of one chunk, the chunk
//!   file.
//! * [`repository`]: the disk repository, file names, stale repositories,
//!   assembling a repository into one file.
//! * [`config`]: the configuration, the per-type settings and the
//!   `FLIGHTREC`/`.jfc` options.
//! * `process`: `FLIGHTREC` at start-up, the automatic recordings, exit and
//!   terminating signals, `fork()`, panics, the program's signal
//!   dispositions.
//!
//! The features:
//!
//! * [`sampler`]: CPU-time and wall-clock sampling with per-thread timer
//!   signals; [`stack`]: unwinding and symbolizing.
//! * [`timing`]: method timing and tracing of instrumented functions
//!   (`jdk.MethodTiming`, `jdk.MethodTrace`).
//! * [`lock`]: lock contention of the program's locks.
//! * [`alloc`]: sampled allocation and leak profiling through a global
//!   allocator wrapper (`jdk.ObjectAllocationSample`, `jdk.OldObjectSample`,
//!   `jdk.ThreadAllocationStatistics`).
//! * [`periodic`]: periodic events, built-in and the program's own.
//! * [`labels`]: per-request labels on samples (Pyroscope's `contextId`).
//! * [`attach`]: answering `jcmd`.
//! * `pyroscope` (feature `pyroscope`): pushing each period's chunk to
//!   Grafana Pyroscope.
//! * [`stream`]: following a recording (or reading a file) from inside the
//!   process, with callbacks per event type.
#![deny(unsafe_op_in_unsafe_fn)]
// The engine modules' docs describe their mechanism for the people who work
// on it and link to the private items that implement it: those links
// resolve in `cargo doc --document-private-items`, the maintainers' view.
#![allow(rustdoc::private_intra_doc_links)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod alloc;
pub mod attach;
pub(crate) mod base;
pub(crate) mod buffer;
pub mod config;
pub(crate) mod cpool;
pub(crate) mod epoch;
pub mod event;
pub(crate) mod feature;
pub(crate) mod feature_table;
pub mod labels;
pub(crate) mod lifecycle;
pub mod lock;
#[cfg(flightrec_loom)]
#[doc(hidden)]
pub mod loom_api;
pub(crate) mod output;
pub mod periodic;
pub(crate) mod process;
#[cfg(feature = "pyroscope")]
pub mod pyroscope;
pub mod repository;
mod runtime;
pub mod sampler;
#[doc(hidden)]
pub mod stack;
pub mod stream;
pub mod timing;

pub use base::clock;
pub use config::{options, settings};
#[doc(hidden)]
pub use process::{autostart, panic_guard};

pub use base::loss::{LossCause, LossCounts};
pub use config::settings::{SettingError, Settings, TypeSettings};
pub use config::{Attach, RecordingConfig, StartError};
pub use event::commit::{DurationGuard, Event, StackTrace, ThreadRef, Timer};
pub use event::descriptor::{DefaultSettings, EventKind, EventType, EventTypeInfo, FieldInfo};
pub use event::dynamic::{EventTypeBuilder, Value, ValueSource};
pub use event::field::{ContentType, FieldKind, FieldValue, FieldWriter};
pub use lifecycle::handle::{MemoryUse, Recording};
pub use lifecycle::outcome::{RecordingError, RecordingSummary};
pub use lifecycle::statistics::RecorderStatistics;
pub use periodic::{add_periodic_event, remove_periodic_event};
pub use process::autostart::{AutoStartError, start_from_env};
pub use repository::{
    AssembleError, Assembled, RepositoryProblem, SkipReason, SkippedChunk, assemble, recover_chunk,
};

/// The wrapped `pthread_create` behind the `thread-hook` feature, for the
/// C library to export as its own `pthread_create` (see
/// `sampler::birth`'s docs).
#[doc(hidden)]
pub mod __thread_hook {
    pub use crate::sampler::birth::{Start, create};
}

/// The program's `sigaction` family, for the C library's interposers (see
/// `sampler::claim`'s docs): claim a signal before the C library's own
/// function sets it.
#[doc(hidden)]
pub mod __signal_hook {
    pub use crate::process::forwarded::forward;
    pub use crate::process::relay::{is_relayed, sigaction};
    pub use crate::process::signals::{Sigaction, real_sigaction};
    pub use crate::sampler::claim::{sampler_previous, take};
}

/// Paths used by `#[derive(Event)]`'s generated code.
#[doc(hidden)]
pub mod __private {
    pub use crate::event::field::BuiltinEncoder;
    pub use crate::{
        ContentType, DefaultSettings, Event, EventKind, EventType, EventTypeInfo, FieldInfo,
        FieldKind, FieldValue, FieldWriter,
    };
    pub use std::time::Duration;
}
