//! The event clock: TSC ticks where the TSC is invariant and the kernel
//! trusts it, `CLOCK_MONOTONIC` nanoseconds otherwise.
//!
//! # Choice
//!
//! The TSC is used when the CPU reports an invariant TSC (CPUID
//! 0x8000_0007 EDX bit 8) *and* the kernel's current clocksource is `tsc` (the
//! kernel demotes it when it sees it drift between CPUs or across suspend).
//! `FLIGHTREC_CLOCK=monotonic` forces the fallback, whose nanosecond ticks JDK
//! Mission Control reads exactly (with TSC ticks it miscounts duration events:
//! docs/jfr-format.md §9.1).
//!
//! # Calibration
//!
//! The tick frequency is measured against `CLOCK_MONOTONIC` once, when the
//! clock is first used, over `CALIBRATION`. Every chunk of a file must use
//! the same origin and frequency (the JDK converts all chunks with the first
//! chunk's header), so the frequency is fixed for the life of the process.
//!
//! Invariant: [`ticks`] is monotonic per thread and shares one origin and one
//! frequency across threads for the life of the process.

use crate::base::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the TSC frequency is measured for.
const CALIBRATION: Duration = Duration::from_millis(20);

/// Which source [`ticks`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The CPU's time-stamp counter.
    Tsc,
    /// `CLOCK_MONOTONIC` in nanoseconds.
    Monotonic,
}

#[derive(Debug)]
struct Calibration {
    source: ClockSource,
    ticks_per_second: i64,
}

static CLOCK: OnceLock<Calibration> = OnceLock::new();

/// Selects and calibrates the clock if that has not happened yet. Called at
/// recording start so the hot path never calibrates.
#[cold]
pub fn init() {
    calibration();
}

fn calibration() -> &'static Calibration {
    CLOCK.get_or_init(|| {
        let source = if tsc_usable() {
            ClockSource::Tsc
        } else {
            ClockSource::Monotonic
        };
        let ticks_per_second = match source {
            ClockSource::Tsc => measure_tsc_frequency(),
            ClockSource::Monotonic => 1_000_000_000,
        };
        Calibration {
            source,
            ticks_per_second,
        }
    })
}

/// The clock source in use.
pub fn source() -> ClockSource {
    calibration().source
}

/// True if [`ticks`] reads the TSC, so a caller that knows it may call
/// [`read_tsc`] itself (never under loom, whose ticks are all 0).
pub(crate) fn reads_tsc() -> bool {
    !cfg!(flightrec_loom) && source() == ClockSource::Tsc
}

/// Ticks per second of [`ticks`].
pub fn ticks_per_second() -> i64 {
    calibration().ticks_per_second
}

/// The current tick count.
#[inline]
pub fn ticks() -> i64 {
    if cfg!(flightrec_loom) {
        // Deterministic under loom: a per-model counter would be better, but
        // no model depends on the values, only on their presence.
        return 0;
    }
    match CLOCK.get() {
        Some(Calibration {
            source: ClockSource::Tsc,
            ..
        }) => read_tsc(),
        Some(_) => monotonic_nanos(),
        None => ticks_cold(),
    }
}

#[cold]
#[inline(never)]
fn ticks_cold() -> i64 {
    init();
    ticks()
}

/// Converts a duration to ticks of [`ticks`], saturating.
pub fn duration_to_ticks(d: Duration) -> i64 {
    let t = d.as_nanos() as i128 * ticks_per_second() as i128 / 1_000_000_000;
    t.min(i64::MAX as i128) as i64
}

/// Converts ticks to nanoseconds.
pub fn ticks_to_nanos(t: i64) -> i64 {
    (t as i128 * 1_000_000_000 / ticks_per_second() as i128) as i64
}

/// Wall-clock nanoseconds since the Unix epoch.
pub fn wall_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A pair of readings taken together: wall clock and ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    /// Wall clock, ns since the Unix epoch.
    pub wall_nanos: i64,
    /// Ticks at the same moment.
    pub ticks: i64,
}

/// Reads the wall clock and the tick clock as close together as possible.
pub fn now() -> Instant {
    let (ticks, wall_nanos) = bracketed(ticks, wall_nanos);
    Instant { wall_nanos, ticks }
}

/// Reads `other` between two reads of `counter`, [`BRACKETS`] times, and
/// returns the tightest bracket's midpoint with its reading of `other`. A
/// single bracket is as wide as whatever interrupted it (a preemption, a
/// slow clock call), and both ends of a rate measurement, and each chunk's
/// tick-to-wall anchor, carry that error into every timestamp of a file.
fn bracketed(counter: impl Fn() -> i64, other: impl Fn() -> i64) -> (i64, i64) {
    let mut best = (i64::MAX, 0, 0);
    for _ in 0..BRACKETS {
        let before = counter();
        let value = other();
        let after = counter();
        if after - before < best.0 {
            best = (after - before, before + (after - before) / 2, value);
        }
    }
    (best.1, best.2)
}

/// Brackets read per paired reading (each costs two counter reads and one
/// clock call: about 0.1 µs).
const BRACKETS: usize = 16;

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_nanos() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// The TSC, read directly: [`ticks`] when [`reads_tsc`] is true.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn read_tsc() -> i64 {
    // SAFETY: rdtsc is available on every x86_64 CPU and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() as i64 }
}

/// No TSC here: [`reads_tsc`] is never true.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn read_tsc() -> i64 {
    monotonic_nanos()
}

#[cfg(target_arch = "x86_64")]
fn tsc_usable() -> bool {
    if std::env::var("FLIGHTREC_CLOCK").is_ok_and(|v| v == "monotonic") {
        return false;
    }
    // Leaf 0x8000_0000 reports the highest extended leaf, checked before
    // reading 0x8000_0007.
    let invariant = {
        use core::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    };
    let kernel_trusts_it =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    invariant && kernel_trusts_it
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_usable() -> bool {
    false
}

fn measure_tsc_frequency() -> i64 {
    let (t0, n0) = bracketed(read_tsc, monotonic_nanos);
    std::thread::sleep(CALIBRATION);
    let (t1, n1) = bracketed(read_tsc, monotonic_nanos);
    let nanos = (n1 - n0).max(1) as i128;
    ((t1 - t0) as i128 * 1_000_000_000 / nanos) as i64
}

/// CPU time (user and system) thread `tid` of this process has used, in
/// ns, from its per-thread CPU clock (`MAKE_THREAD_CPUCLOCK(tid,
/// CPUCLOCK_SCHED)`, as the timers use); `None` once it exited.
pub(crate) fn thread_cpu_time_ns(tid: u64) -> Option<u64> {
    let clock = (!(tid as libc::clockid_t) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a per-thread CPU clock id and a valid out-pointer; an exited
    // thread's clock fails with EINVAL, reported as `None`.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_advance_at_the_calibrated_rate() {
        init();
        let (t0, n0) = (ticks(), monotonic_nanos());
        std::thread::sleep(Duration::from_millis(50));
        let (t1, n1) = (ticks(), monotonic_nanos());
        let measured = ticks_to_nanos(t1 - t0) as f64;
        let real = (n1 - n0) as f64;
        assert!(
            (measured / real - 1.0).abs() < 0.05,
            "{measured} ns by ticks vs {real} ns"
        );
        assert_eq!(
            duration_to_ticks(Duration::from_secs(1)),
            ticks_per_second()
        );
    }
}
