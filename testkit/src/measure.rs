//! Measuring on a shared, noisy machine (benches): each thread's own CPU
//! time, the process's CPU time, the median of paired rounds (and a runner
//! of them, [`paired`]), and a start line that threads spin at so a timed
//! window holds their work and not a sleeping barrier's wake-up.

use std::sync::atomic::{AtomicUsize, Ordering};

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(r, 0, "clock_gettime({clock})");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), ns: what it
/// ran, not what a neighbour stole from it.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The process's CPU time over all its threads (`CLOCK_PROCESS_CPUTIME_ID`), ns.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time, ns, of this process's threads whose name starts with
/// `prefix` (e.g. `"flightrec"`: the recorder's threads), from each
/// thread's CPU-time clock. A thread that exited is no longer counted, so
/// compare two readings over a window in which the threads live on.
pub fn threads_cpu_ns(prefix: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !name.starts_with(prefix) {
            continue;
        }
        // The kernel's CPU-time clock of thread `tid` (what
        // `pthread_getcpuclockid` returns): CPUCLOCK_SCHED (2) with the
        // per-thread bit (4), the id complemented above them.
        let clock = ((!tid) << 3) | 6;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a clock id (an invalid one fails with EINVAL, e.g. if the
        // thread just exited) and a valid out-pointer.
        if unsafe { libc::clock_gettime(clock, &mut ts) } == 0 {
            total += ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        }
    }
    total
}

/// The median (the upper one of an even count); sorts `v`.
///
/// # Panics
///
/// If `v` is empty.
pub fn median(v: &mut [f64]) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// What [`paired`] measured: the medians of each side, and of the per-round
/// ratios `b / a` with their quartiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    /// The median of `a`'s measurements.
    pub a: f64,
    /// The median of `b`'s measurements.
    pub b: f64,
    /// The median of the per-round ratios `b / a`.
    pub ratio: f64,
    /// The first and third quartile of the per-round ratios.
    pub quartiles: (f64, f64),
}

/// Paired rounds of two variants of one measurement (each closure runs its
/// variant once and returns what it measured, e.g. thread CPU ns): one run
/// of each first as a warm-up, not kept; then `rounds` rounds of one run
/// each, which goes first alternating, the ratio `b / a` taken per round.
/// A neighbour's burst then slows both sides of a round alike, and the
/// median of the ratios is what is compared.
///
/// # Panics
///
/// If `rounds` is 0.
pub fn paired(rounds: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> Paired {
    assert!(rounds > 0, "paired rounds: none asked for");
    a();
    b();
    let (mut xs, mut ys, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (x, y) = if r % 2 == 0 {
            let x = a();
            (x, b())
        } else {
            let y = b();
            (a(), y)
        };
        xs.push(x);
        ys.push(y);
        ratios.push(y / x);
    }
    let ratio = median(&mut ratios);
    let n = ratios.len();
    Paired {
        a: median(&mut xs),
        b: median(&mut ys),
        ratio,
        quartiles: (ratios[n / 4], ratios[(3 * n) / 4]),
    }
}

/// A start line for `n` threads: each calls [`StartLine::wait`], which
/// returns once all `n` have arrived (spinning, not sleeping).
#[derive(Debug)]
pub struct StartLine {
    n: usize,
    arrived: AtomicUsize,
}

impl StartLine {
    /// A line for `n` threads.
    pub fn new(n: usize) -> Self {
        Self {
            n,
            arrived: AtomicUsize::new(0),
        }
    }

    /// Arrives and spins until all `n` threads have.
    pub fn wait(&self) {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        while self.arrived.load(Ordering::Acquire) < self.n {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_rounds_alternate_after_a_warm_up() {
        use std::cell::RefCell;
        // Each side's n-th run measures n (its own count); `b` costs twice
        // as much, so every round's ratio is 2.
        let calls = RefCell::new(Vec::new());
        let (mut na, mut nb) = (0.0, 0.0);
        let p = paired(
            4,
            || {
                calls.borrow_mut().push('a');
                na += 1.0;
                na
            },
            || {
                calls.borrow_mut().push('b');
                nb += 2.0;
                nb
            },
        );
        assert_eq!(calls.into_inner().iter().collect::<String>(), "ababbaabba");
        assert_eq!(p.ratio, 2.0);
        assert_eq!(p.quartiles, (2.0, 2.0));
        // Runs 2..=5 of `a` measured 2..=5: the warm-up (1) is not kept.
        assert_eq!((p.a, p.b), (4.0, 8.0));
    }

    #[test]
    fn medians_and_clocks() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        let t0 = thread_cpu_ns();
        let mut x = 1u64;
        while thread_cpu_ns() - t0 < 1_000_000 {
            x = std::hint::black_box(x.wrapping_mul(3));
        }
        assert!(process_cpu_ns() >= thread_cpu_ns());
        // A named thread, found by its name, has spent at least what it
        // spun; no thread has a made-up name.
        let seen = std::thread::Builder::new()
            .name("measure-spin".into())
            .spawn(|| {
                let t0 = thread_cpu_ns();
                let mut x = 1u64;
                while thread_cpu_ns() - t0 < 2_000_000 {
                    x = std::hint::black_box(x.wrapping_mul(3));
                }
                threads_cpu_ns("measure-spin")
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(seen >= 2_000_000, "{seen} ns");
        assert_eq!(threads_cpu_ns("no thread has this name"), 0);
        let line = StartLine::new(2);
        std::thread::scope(|s| {
            s.spawn(|| line.wait());
            line.wait();
        });
    }
}
