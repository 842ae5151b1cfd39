//! The feature table: how the producers beyond the core (method timing,
//! lock contention, allocation sampling, CPU-time sampling, periodic
//! events, the Pyroscope uploader) plug into it.
//!
//! The core — the registry, the constant pools, the recording lifecycle,
//! the recorder thread — calls every feature through one interface,
//! [`Feature`], and never names one. Each feature implements the hooks it
//! needs (every hook has a default that does nothing) in a `plug.rs` of its
//! own folder; `crate::feature_table` lists them. `Recording::start`
//! installs that list here before anything calls a hook, and the core
//! iterates it with [`each`] and [`any`].
//!
//! Who calls what, and on which thread:
//!
//! | hook | caller | thread, locks held |
//! |---|---|---|
//! | [`apply`](Feature::apply) | settings change | any; the registry's lock |
//! | [`stop_in_child`](Feature::stop_in_child) | `fork()` | the forked child's only thread; the registry's lock |
//! | [`labels_in_samples`](Feature::labels_in_samples), [`start_member`](Feature::start_member), [`started`](Feature::started), [`member_started`](Feature::member_started) | `Recording::start` | the caller; the start's turn |
//! | [`settings_changed`](Feature::settings_changed) | `set`, `apply_settings`, a recording joins or leaves | the caller, no lock |
//! | [`busy_at_chunk_edge`](Feature::busy_at_chunk_edge) | a dump or rotation request | the caller, no lock |
//! | [`before_last_chunk`](Feature::before_last_chunk), [`member_leaving`](Feature::member_leaving), [`shutdown`](Feature::shutdown), [`stopped`](Feature::stopped), [`member_gone`](Feature::member_gone) | `Recording::stop` | the caller; `shutdown` and `stopped` under the stop's turn |
//! | [`chunk_opened`](Feature::chunk_opened), [`chunk_start_events`](Feature::chunk_start_events), [`chunk_ending`](Feature::chunk_ending), [`chunk_finished`](Feature::chunk_finished), [`chunk_part`](Feature::chunk_part) | the recorder thread | the recorder thread |
//! | [`stack_marker`](Feature::stack_marker) | resolving stacks for a chunk's constants | the recorder thread |
//! | [`own_thread`](Feature::own_thread) | a thread of flightrec's own starts | that thread |
//!
//! Invariant: no hook blocks on a user thread or on the hot path; the table
//! is installed once and never changes (a `OnceLock`), so iterating it takes
//! no lock.

use std::io;

use jfr_format::Checkpoint;

use crate::base::sync::OnceLock;
use crate::config::builder::{RecordingConfig, StartError};
use crate::config::settings::Settings;
use crate::runtime::Runtime;
use crate::stack::ResolvedFrame;

/// One feature's hooks into the core. Every hook does nothing by default.
pub(crate) trait Feature: Sync {
    /// The recording's settings changed (or recording started or stopped:
    /// `recording`). Called under the registry's lock, before the types'
    /// words are republished.
    fn apply(&self, _settings: &Settings, _recording: bool) {}

    /// In a forked child, with one thread and the registry's lock held for
    /// it: stop whatever the parent's recording left running.
    fn stop_in_child(&self) {}

    /// Whether the samples of a recording with `config` carry labels
    /// (`contextId`), decided once for the recorder's life.
    fn labels_in_samples(&self, _config: &RecordingConfig) -> bool {
        false
    }

    /// A recording `id` with `config` joins; an error refuses its start
    /// (and [`member_gone`](Self::member_gone) follows for every feature).
    fn start_member(&self, _id: u64, _config: &RecordingConfig) -> Result<(), StartError> {
        Ok(())
    }

    /// Recording `id` with `config` runs (the recorder thread serves it).
    fn member_started(&self, _id: u64, _config: &RecordingConfig) {}

    /// Recording `id` is stopping: it is no longer one to act on.
    fn member_leaving(&self, _id: u64) {}

    /// Recording `id` has stopped (its last chunk queued) or failed to
    /// start.
    fn member_gone(&self, _id: u64) {}

    /// The recorder thread runs for the first recording, on `rt`.
    fn started(&self, _rt: &'static Runtime) {}

    /// The settings in force changed while recording.
    fn settings_changed(&self) {}

    /// True while the feature is writing the events of a chunk's edge on
    /// the calling thread (a request from there would wait for itself).
    fn busy_at_chunk_edge(&self) -> bool {
        false
    }

    /// Recording `id` is about to stop; its last chunk is still open.
    fn before_last_chunk(&self, _id: u64) {}

    /// The last recording stops (`reason` goes into `jdk.Shutdown`): stop
    /// producing, with what is queued landing in the last chunk. Called in
    /// the table's order, before the recorder thread is told to stop.
    fn shutdown(&self, _reason: &str) {}

    /// The recorder thread has ended after the last stop.
    fn stopped(&self) {}

    /// A thread of flightrec's own begins (its work is not the program's).
    fn own_thread(&self) {}

    /// The recorder thread opened a chunk.
    fn chunk_opened(&self) {}

    /// Events every chunk starts with, before any drained event.
    fn chunk_start_events(&self, _out: &mut Vec<u8>, _ticks: i64) {}

    /// The recorder thread is about to finish its chunk: the end-of-chunk
    /// events the feature produces on threads of its own belong to it.
    fn chunk_ending(&self) {}

    /// What the feature adds to each chunk as the recorder thread
    /// assembles it (`None`: nothing).
    fn chunk_part(&self) -> Option<Box<dyn ChunkPart>> {
        None
    }

    /// True if the feature wants [`chunk_finished`](Self::chunk_finished).
    fn wants_finished_chunks(&self) -> bool {
        false
    }

    /// A chunk of the recordings `members` from `start` to `end` (wall
    /// nanoseconds) is finished; `bytes` reads it (before retention may
    /// delete it).
    fn chunk_finished(
        &self,
        _members: &[u64],
        _start: i64,
        _end: i64,
        _bytes: &mut dyn FnMut() -> io::Result<Vec<u8>>,
    ) {
    }

    /// If `frame`, the first of a captured stack, is the feature's marker:
    /// what to cut from the top of the resolved stack below it.
    fn stack_marker(&self, _frame: u64) -> Option<TopCut> {
        None
    }
}

/// What a feature adds to one chunk, made when the chunk begins and
/// called on the recorder thread only, in this order: constants at every
/// flush ([`write_constants`](Self::write_constants)); at the end
/// [`prepare_end`](Self::prepare_end), the last constants, then
/// [`end_events`](Self::end_events).
pub(crate) trait ChunkPart: Send + std::fmt::Debug {
    /// Before the chunk's last constants are collected: tag the stacks and
    /// threads the end events refer to (epoch `epoch`).
    fn prepare_end(&mut self, _rt: &Runtime, _epoch: u64) {}

    /// The constants defined since the last call.
    fn write_constants(&mut self, _cp: &mut Checkpoint) {}

    /// The end-of-chunk events.
    fn end_events(&mut self, _out: &mut Vec<u8>, _ticks: i64) {}
}

/// What a stack marker asks to cut from the top of the resolved stack.
#[derive(Debug, Clone)]
pub(crate) enum TopCut {
    /// Nothing: the marker only goes.
    Nothing,
    /// The leading frames this predicate accepts (while one stays below).
    While(fn(&ResolvedFrame) -> bool),
    /// Through the first of the top eight frames in this method (while one
    /// stays below).
    Through(String),
}

/// The installed table.
static TABLE: OnceLock<&'static [&'static dyn Feature]> = OnceLock::new();

/// Installs `table` (the first call wins; the table never changes).
pub(crate) fn install(table: &'static [&'static dyn Feature]) {
    let _ = TABLE.get_or_init(|| table);
}

/// The installed features, in the table's order (none before the first
/// recording starts).
#[inline]
pub(crate) fn all() -> &'static [&'static dyn Feature] {
    TABLE.get().copied().unwrap_or(&[])
}

/// Calls `f` on every feature, in the table's order.
pub(crate) fn each(mut f: impl FnMut(&'static dyn Feature)) {
    for &feature in all() {
        f(feature);
    }
}

/// True if `f` is true of some feature.
pub(crate) fn any(mut f: impl FnMut(&'static dyn Feature) -> bool) -> bool {
    all().iter().any(|&feature| f(feature))
}
