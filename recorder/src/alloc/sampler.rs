//! The per-thread byte countdown, its random intervals, and the weight of a
//! sample (see the [module docs](super) for why the weight is unbiased).
//!
//! The countdown runs only while a recording asks for allocation samples,
//! old object samples or allocation statistics: a process-wide [`Mode`]
//! word, read (Relaxed) first by every allocation, says so. While it is off
//! an allocation costs that load and a branch, and touches no thread-local.
//!
//! Everything else here is the calling thread's own: const-initialised
//! thread-locals without destructors (no lazy registration, no allocation,
//! valid until the thread is gone) and a plain function of them.
//!
//! Invariant: while the mode is [`Mode::Counting`], `LEFT` is decremented
//! by every byte the thread allocates through the wrapper, and `TOTAL +
//! (ARMED - LEFT)` is the thread's byte count over the time it counted; a
//! sample is taken exactly when `LEFT` goes below zero, and `LEFT` is
//! then re-armed with a fresh draw. (Pausing the countdown while off keeps
//! the sampling points a Poisson process over the bytes counted.)

use std::cell::Cell;

use crate::base::sync::global::{AtomicU64, AtomicUsize, Ordering};

/// What the wrapper's fast path does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(super) enum Mode {
    /// A wrapper has allocated; nothing is counted. (Zero: the off path is
    /// a compare with zero and a branch.)
    Idle = 0,
    /// Every allocation runs the countdown.
    Counting = 1,
    /// No wrapper has allocated yet, nothing is counted.
    Unseen = 2,
}

/// The mode word, on a cache line of its own: every allocation reads it,
/// so no written data may share its line.
#[repr(align(64))]
struct ModeWord(AtomicUsize);

static MODE: ModeWord = ModeWord(AtomicUsize::new(Mode::Unseen as usize));

/// Sets the mode (control path); true if a wrapper has allocated before
/// (the mode was `Idle` or a countdown's slow path ran since).
pub(super) fn set_mode(counting: bool, installed: bool) -> bool {
    let next = if counting {
        Mode::Counting
    } else if installed {
        Mode::Idle
    } else {
        Mode::Unseen
    };
    let was = MODE.0.swap(next as usize, Ordering::Relaxed);
    if was == Mode::Idle as usize && next == Mode::Unseen {
        // A wrapper allocated between the caller's look and the swap.
        MODE.0.store(Mode::Idle as usize, Ordering::Relaxed);
    }
    installed || was == Mode::Idle as usize
}

crate::base::sync::global::thread_local! {
    /// Bytes left before the next sample (or the next look at the
    /// settings while sampling is off). 0 at thread start: the first
    /// allocation takes the slow path, which arms it.
    static LEFT: Cell<i64> = const { Cell::new(0) };
    /// What `LEFT` was armed with.
    static ARMED: Cell<i64> = const { Cell::new(0) };
    /// Bytes counted before the current interval.
    static TOTAL: Cell<u64> = const { Cell::new(0) };
    /// The mean the current interval was drawn with; 0: not drawn (off).
    static MEAN: Cell<u64> = const { Cell::new(0) };
    /// The thread's generator state (0: not seeded yet).
    static RNG: Cell<u64> = const { Cell::new(0) };
    /// Set while the thread runs the sampled path (or is a recorder thread
    /// that must not sample itself): its own allocations are counted, never
    /// sampled.
    static IN_SAMPLER: Cell<bool> = const { Cell::new(false) };
}

/// While the countdown runs without sampling (allocation statistics only),
/// the slow path looks at the settings once per this many bytes per thread.
pub(super) const OFF_CHECK_BYTES: i64 = 256 * 1024;

/// The fast path's first look: false while nothing is counted (the mode
/// is `Idle`), and the wrapper then calls the inner allocator and nothing
/// else. One relaxed load of the mode word and a compare with zero.
#[inline(always)]
pub(super) fn counting() -> bool {
    MODE.0.load(Ordering::Relaxed) != Mode::Idle as usize
}

/// The countdown, once [`counting`] said yes: counts `size` bytes; true if
/// this allocation is to be sampled (or the settings looked at): the
/// caller then calls [`first_use`] and [`slow_path`]. A subtraction from
/// a thread-local and a branch on its sign. (Also taken while no wrapper
/// has allocated yet: then `LEFT` is still 0 and the slow path, through
/// `first_use`, sets the mode to `Idle`.)
#[inline(always)]
pub(super) fn count_down(size: usize) -> bool {
    LEFT.with(|l| {
        let left = l.get().wrapping_sub(size as i64);
        l.set(left);
        // Below zero, not "at or below": the subtraction's sign flag, so
        // the compiler can subtract in memory and branch on it.
        left < 0
    })
}

/// The start of the slow path: true if the countdown really counts now.
/// The first allocation through any wrapper while nothing counts tells
/// the recorder that one is installed (so a recording starts the
/// allocation thread).
pub(super) fn first_use() -> bool {
    match MODE.0.load(Ordering::Relaxed) {
        m if m == Mode::Counting as usize => true,
        m => {
            if m == Mode::Unseen as usize {
                let _ = MODE.0.compare_exchange(
                    Mode::Unseen as usize,
                    Mode::Idle as usize,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            // `LEFT` stays below 0: when counting starts, this
            // thread's first allocation arms it.
            false
        }
    }
}

/// What the slow path decided for the allocation that reached zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Decision {
    /// Not sampled (sampling off, or inside the sampler).
    Skip,
    /// Sampled: the allocation stands for `weight` bytes.
    Sample {
        /// The unbiased weight of the sample (bytes).
        weight: u64,
    },
}

/// The slow path of [`count_down`]: publishes the thread's byte count, re-arms
/// the countdown (a fresh exponential draw of mean `mean`, or
/// [`OFF_CHECK_BYTES`] if `mean` is 0, i.e. sampling is off), and decides
/// whether the allocation of `size` bytes is a sample. Never allocates.
#[cold]
#[inline(never)]
pub(super) fn slow_path(size: usize, mean: u64, published: Option<&AtomicU64>) -> Decision {
    if IN_SAMPLER.with(Cell::get) {
        // Counted (LEFT stays below zero), looked at again by the
        // next allocation outside the sampler.
        return Decision::Skip;
    }
    let left = LEFT.with(Cell::get);
    let consumed = ARMED.with(Cell::get).saturating_sub(left).max(0) as u64;
    let total = TOTAL.with(Cell::get).saturating_add(consumed);
    TOTAL.with(|t| t.set(total));
    if let Some(p) = published {
        p.store(total, Ordering::Relaxed);
    }
    let drawn_with = MEAN.with(Cell::get);
    let decision = if drawn_with != 0 && left < 0 {
        Decision::Sample {
            weight: weight(size as u64, drawn_with),
        }
    } else {
        Decision::Skip
    };
    let next = if mean == 0 {
        OFF_CHECK_BYTES
    } else {
        RNG.with(|r| {
            let mut s = r.get();
            if s == 0 {
                s = seed(r as *const Cell<u64> as u64);
            }
            let x = draw(mean, &mut s);
            r.set(s);
            x
        })
    };
    MEAN.with(|m| m.set(mean));
    ARMED.with(|a| a.set(next));
    LEFT.with(|l| l.set(next));
    decision
}

/// Bytes this thread allocated through the wrapper while counting (as of
/// its last slow path plus the current interval).
pub(super) fn allocated_now() -> u64 {
    let consumed = ARMED
        .with(Cell::get)
        .saturating_sub(LEFT.with(Cell::get))
        .max(0) as u64;
    TOTAL.with(Cell::get).saturating_add(consumed)
}

/// Runs `f` with the calling thread's sampling suspended (its allocations
/// counted, never sampled); restored even if `f` unwinds.
pub(super) fn suspended<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_SAMPLER.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(IN_SAMPLER.with(|g| g.replace(true)));
    f()
}

/// Marks the calling thread as one whose allocations are never sampled
/// (the recorder's own allocation thread).
pub(super) fn never_sample_this_thread() {
    IN_SAMPLER.with(|g| g.set(true));
}

/// True while the calling thread is inside the sampler.
#[cfg(test)]
pub(super) fn in_sampler() -> bool {
    IN_SAMPLER.with(Cell::get)
}

/// A per-thread seed without allocating: the thread-local's address, the
/// thread id, the clock and a process-wide counter, mixed.
fn seed(addr: u64) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let n = NEXT.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let s = splitmix(addr ^ splitmix(n ^ t ^ (crate::base::sync::os_thread_id() as u64)));
    if s == 0 { 1 } else { s }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xorshift64*: one step of the thread's generator.
pub(super) fn next_u64(s: &mut u64) -> u64 {
    let mut x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// An exponential draw of mean `mean` bytes (at least 1): the distance to
/// the next point of a Poisson process over the bytes allocated.
pub(super) fn draw(mean: u64, s: &mut u64) -> i64 {
    // Uniform in (0, 1]: never ln(0).
    let u = ((next_u64(s) >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
    let x = -u.ln() * mean as f64;
    x.clamp(1.0, (i64::MAX / 4) as f64) as i64
}

/// The unbiased weight of a sampled allocation of `size` bytes when the
/// sampling points are a Poisson process of mean spacing `mean` bytes: the
/// allocation was sampled with probability `1 - exp(-size/mean)`, so
/// `size / (1 - exp(-size/mean))` has expectation `size` over the
/// allocations of that size (pprof's and tcmalloc's estimator).
pub(super) fn weight(size: u64, mean: u64) -> u64 {
    if mean == 0 {
        return size;
    }
    let r = size as f64 / mean as f64;
    let p = -(-r).exp_m1();
    if p <= 0.0 {
        return mean;
    }
    (size as f64 / p).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decision function alone, over a synthetic workload of mixed
    /// sizes at mixed rates: per site, the mean over many runs of the
    /// summed weights is within 5 % of the bytes allocated.
    #[test]
    fn weights_are_unbiased_per_site() {
        // (size, allocations per round) of four sites, interleaved.
        let sites: [(u64, u64); 4] = [(24, 40), (1000, 6), (16 << 10, 1), (300 << 10, 1)];
        let mean = 64 << 10;
        // Seeds are fixed: each site gets thousands of samples in all, so
        // the bound is several standard errors wide.
        let rounds = 2000;
        let runs = 200;
        let mut err = [0.0f64; 4];
        for run in 0..runs {
            let mut rng = splitmix(run + 1);
            let mut left = draw(mean, &mut rng);
            let mut est = [0u64; 4];
            let mut truth = [0u64; 4];
            for _ in 0..rounds {
                for (i, &(size, n)) in sites.iter().enumerate() {
                    for _ in 0..n {
                        truth[i] += size;
                        left -= size as i64;
                        if left <= 0 {
                            est[i] += weight(size, mean);
                            left = draw(mean, &mut rng);
                        }
                    }
                }
            }
            for i in 0..4 {
                err[i] += est[i] as f64 / truth[i] as f64 - 1.0;
            }
        }
        for (i, e) in err.iter().enumerate() {
            let mean_err = e / runs as f64;
            assert!(
                mean_err.abs() < 0.05,
                "site {i} (size {}): mean relative error {mean_err:.4}",
                sites[i].0
            );
        }
    }

    /// A negative control: the naive weight (the mean interval for every
    /// sample) over-counts large allocations, which the test above would
    /// catch.
    #[test]
    fn naive_weight_is_biased_for_large_allocations() {
        let mean = 64 << 10;
        let size = 300u64 << 10;
        let mut rng = 7;
        let (mut est, mut truth, mut left) = (0u64, 0u64, draw(mean, &mut 7));
        for _ in 0..20_000 {
            truth += size;
            left -= size as i64;
            if left <= 0 {
                est += mean;
                left = draw(mean, &mut rng);
            }
        }
        let err = est as f64 / truth as f64 - 1.0;
        assert!(err < -0.5, "naive weights should under-count: {err}");
    }

    #[test]
    fn draws_have_the_requested_mean() {
        let mut s = 12345;
        let n = 200_000;
        let sum: f64 = (0..n).map(|_| draw(1000, &mut s) as f64).sum();
        let m = sum / n as f64;
        assert!((m / 1000.0 - 1.0).abs() < 0.02, "mean {m}");
    }

    #[test]
    fn suspended_restores_the_flag_on_unwind() {
        assert!(!in_sampler());
        let r = std::panic::catch_unwind(|| suspended(|| panic!("inner")));
        assert!(r.is_err());
        assert!(!in_sampler());
    }
}
