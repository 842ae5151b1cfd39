//! CPU-time sampling of every thread (JEP 509 for native code), and
//! wall-clock sampling.
//!
//! * `cpu_timer_linux`: per-thread POSIX timers on each thread's CPU clock
//!   (or the wall clock), signalling that thread.
//! * `signal`: the async-signal-safe handler and handler chaining.
//! * `unwind`: DWARF CFI unwinding in the handler (framehop), over tables
//!   built outside it, with validated stack reads.
//! * `queue`: preallocated per-thread sample rings and the slot table.
//! * `threads`: finding every thread of the process.
//! * `claim`: leaving a signal the program sets a disposition for.
//! * `birth`: attaching a thread as it starts (`pthread_create` hook,
//!   feature `thread-hook`).
//! * `consumer`: the sampler thread, from queues to `jdk.CPUTimeSample`,
//!   `jdk.CPUTimeSamplesLost`, `jdk.ExecutionSample`, `jdk.ActiveSetting`.
//! * `control`: start, re-configure and stop with the recording.
//! * `config`: settings (`enabled`, `throttle`).
//! * `pyroscope`: the optional shape of the samples Pyroscope's ingest reads.
//!
//! Under `cfg(flightrec_loom)` everything is built, and the loom model of
//! the queue drives the handler's part of it (see `loom_api`); the signal,
//! timer and unwinding code needs the real kernel and is never run there.

pub(crate) mod birth;
pub(crate) mod claim;
pub(crate) mod config;
mod consumer;
mod control;
mod cpu_timer_linux;
mod engine;
pub(crate) mod handler;
mod plug;
pub(crate) mod pyroscope;
mod signal;
pub(crate) mod slots;
pub(crate) mod threads;
mod unwind;
mod wake;

pub use config::{
    CPU_EVENT, DEFAULT_THROTTLE, DEFAULT_WALL_PERIOD, MIN_PERIOD, WALL_EVENT, parse_signal,
    signal_allowed,
};
pub(crate) use control::{fork_lock, fork_unlock};
pub use control::{set_sample_own_threads, set_signal};
pub(crate) use plug::Sampling;
pub use pyroscope::{pyroscope_events, pyroscope_sample_rate, set_pyroscope_events};
