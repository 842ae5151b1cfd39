//! The sampling mechanism's interface, after async-profiler's `Engine`: a
//! way to make one thread's samples arrive (a per-thread CPU-time timer,
//! [`super::cpu_timer_linux`]) until it is detached.

/// A sampling mechanism: makes samples of one thread arrive (as the
/// sampling signal carrying `value`) until detached. After async-profiler's
/// `Engine`.
pub(crate) trait Sampler {
    /// Starts sampling thread `tid`; its signals carry `value`.
    fn attach(&mut self, tid: u64, value: u64) -> std::io::Result<()>;
    /// Stops sampling thread `tid`.
    fn detach(&mut self, tid: u64);
}
