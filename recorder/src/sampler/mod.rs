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
//! * `consumer`: the sampler thread, from queues to `jdk.CPUTimeSample`,
//!   `jdk.CPUTimeSamplesLost`, `jdk.ExecutionSample`, `jdk.ActiveSetting`.
//! * `control`: start, re-configure and stop with the recording.
//! * `config`: settings (`enabled`, `throttle`).

mod config;
mod consumer;
mod control;
mod cpu_timer_linux;
mod queue;
mod signal;
mod threads;
mod unwind;

pub use config::{CPU_EVENT, DEFAULT_THROTTLE, DEFAULT_WALL_PERIOD, MIN_PERIOD, WALL_EVENT};
pub use control::set_signal;
pub(crate) use control::{reconcile, shutdown};

/// A sampling mechanism: makes samples of one thread arrive (as the
/// sampling signal carrying `value`) until detached. After async-profiler's
/// `Engine`.
pub(crate) trait Sampler {
    /// Starts sampling thread `tid`; its signals carry `value`.
    fn attach(&mut self, tid: u64, value: u64) -> std::io::Result<()>;
    /// Stops sampling thread `tid`.
    fn detach(&mut self, tid: u64);
}
