//! The cost of CPU-time sampling: one multi-threaded, malloc-heavy workload
//! run unsampled, sampled by flightrec every 10 ms and 1 ms of each
//! thread's CPU time, and sampled by pprof-rs (process-wide `ITIMER_PROF`)
//! at 100 Hz and 1000 Hz (the same rates on a process whose threads all
//! run).
//!
//! # Method
//!
//! A shared 2-core VM drifts by more than the effect measured (another
//! build starting slows every run by 10 % or more), so the variants are not
//! measured one after the other but *interleaved round-robin*: each round
//! runs every sampled variant once (in an order rotated by one per round,
//! so no variant always follows the same one), each between two unsampled
//! runs (`U A U B U C U D U`), and each run's cost is its ratio to the mean
//! of the unsampled runs just before and after it (which cancels drift
//! slower than a run). The report gives, over all rounds, the median of
//! those ratios and their interquartile range (25th–75th percentile), for:
//!
//! * wall time of the workload, and
//! * the process's CPU time over it (`CLOCK_PROCESS_CPUTIME_ID`: every
//!   thread, the sampler's own thread and the recorder's included), which
//!   a busy neighbour disturbs less than wall time;
//!
//! and flightrec's sampler thread's own CPU time, as a share of the
//! unsampled run's process CPU time (what the sampler costs beyond the
//! signal handlers, which run on the workload's threads; for the pprof
//! variants, the idle flightrec sampler thread's wakeups). Interference only
//! ever adds time, so the report also gives the ratio of each variant's
//! 10th-percentile run to the unsampled 10th percentile ("p10"), the runs
//! least disturbed.
//!
//! A last line gives flightrec's own account of its cost for the 10 ms and
//! 1 ms variants (`Recording::statistics`, the figures
//! `flightrec.RecorderStatistics` records): the CPU time of its recorder,
//! sampler and periodic threads plus the time its signal handler spent on
//! the workload's threads, over the process's CPU time in the same run,
//! against the targets of < 0.5 % at 10 ms and < 3 % at 1 ms. Both figures
//! come from the same run, so they need no unsampled neighbour.
//!
//! The workload runs on a pool of [`threads`] persistent threads, one per
//! core but one (1 on this 2-core VM; `FLIGHTREC_BENCH_THREADS` overrides).
//! The spare core takes the sampler and recorder threads and the machine's
//! other load, so wall time measures what sampling costs the workload's own
//! threads (signal delivery, handler, unwinding, cache disturbance) rather
//! than time-slicing against whatever else runs; the process CPU time adds
//! the sampler thread's CPU, wherever it ran. (With one thread per core,
//! any neighbour's load time-slices the workload and its wall time varies
//! by ±10 % from run to run here, ten times the effect measured.) Each
//! thread is signalled at the sampling rate of its own CPU time, so the
//! per-thread cost, the ratio measured, does not depend on the count; the
//! sampler thread's work grows with it. The threads live across runs, so
//! flightrec's per-thread timers are created once, as in a long-running
//! program (a thread shorter than one sampler pass would be sampled only
//! in part, and look cheaper). Every variant runs with the same recording open;
//! "unsampled" has CPU-time sampling disabled in it (its sampler thread
//! then sleeps until the settings change rings it, or 250 ms).
//!
//! Both samplers are limited by the kernel's tick for CPU timers
//! (`CONFIG_HZ`, often 250: 4 ms): faster settings arrive as timer overruns
//! (flightrec weights such a sample's `samplingPeriod` by them), so "1 ms"
//! takes at most `CONFIG_HZ` signals per second and thread.
//!
//! `cargo bench --bench sampler` runs [`ROUNDS`] rounds of nine ~0.1 s runs
//! (about 70 s; `FLIGHTREC_BENCH_ROUNDS` overrides the count); without
//! `--bench` (`cargo test --benches`) it runs one short round as a smoke
//! test. Criterion measures the unsampled workload alone, for its history.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use flightrec::{Recording, RecordingConfig, Settings};

/// Rounds of the interleaved measurement.
const ROUNDS: usize = 50;

/// Wall time one unsampled run of the workload aims at.
const RUN: Duration = Duration::from_millis(100);

/// Time each variant's sampler gets to (re)configure before its run: the
/// flightrec sampler thread applies settings at its next pass (≤ 10 ms).
const SETTLE: Duration = Duration::from_millis(40);

/// Workload threads: one per core but one (module docs), or
/// `FLIGHTREC_BENCH_THREADS`.
fn threads() -> usize {
    std::env::var("FLIGHTREC_BENCH_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
        })
}

/// Allocates, touches and frees blocks of many sizes, with some arithmetic.
#[inline(never)]
fn churn(rounds: usize, seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut keep: Vec<Vec<u8>> = Vec::with_capacity(64);
    let mut sum = 0u64;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 16 + (x % 4096) as usize;
        let mut v = vec![x as u8; size];
        v[size / 2] ^= 1;
        sum = sum.wrapping_add(v.iter().step_by(64).map(|&b| b as u64).sum::<u64>());
        if keep.len() == 64 {
            keep.swap_remove((x % 64) as usize);
        }
        keep.push(v);
    }
    sum
}

/// Persistent workload threads, each running `churn(work)` per run.
struct Pool {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    work: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Pool {
    fn new(n: usize) -> Self {
        let start = Arc::new(Barrier::new(n + 1));
        let done = Arc::new(Barrier::new(n + 1));
        let work = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..n)
            .map(|t| {
                let (start, done, work, stop) =
                    (start.clone(), done.clone(), work.clone(), stop.clone());
                std::thread::Builder::new()
                    .name(format!("workload-{t}"))
                    .spawn(move || {
                        loop {
                            start.wait();
                            if stop.load(Ordering::Acquire) {
                                break;
                            }
                            black_box(churn(work.load(Ordering::Relaxed), t as u64 + 11));
                            done.wait();
                        }
                    })
                    .unwrap()
            })
            .collect();
        Self {
            start,
            done,
            work,
            stop,
            handles,
        }
    }

    /// Runs `churn(work)` on every thread; returns the wall time.
    fn run(&self, work: usize) -> Duration {
        self.work.store(work, Ordering::Relaxed);
        let t = Instant::now();
        self.start.wait();
        self.done.wait();
        t.elapsed()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.start.wait();
        for h in self.handles.drain(..) {
            h.join().unwrap();
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Unsampled,
    Flightrec10ms,
    Flightrec1ms,
    Pprof100Hz,
    Pprof1000Hz,
}

const VARIANTS: [Variant; 5] = [
    Variant::Unsampled,
    Variant::Flightrec10ms,
    Variant::Flightrec1ms,
    Variant::Pprof100Hz,
    Variant::Pprof1000Hz,
];

/// CPU time of the clock `id` (a process or thread CPU clock).
fn cpu_time(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an invalid clock leaves it 0.
    unsafe { libc::clock_gettime(id, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The CPU clock of thread `tid` of this process (the kernel's
/// `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`).
fn thread_clock(tid: i32) -> libc::clockid_t {
    (!tid << 3) | 6
}

/// The kernel id of the thread named `name`, if any.
fn find_thread(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| {
            std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })?
        .file_name()
        .to_str()?
        .parse()
        .ok()
}

/// One run's measurements.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    wall: Duration,
    cpu: Duration,
    sampler_cpu: Duration,
    /// The recorder's own CPU over the run by its own account
    /// (`Recording::statistics`, as `flightrec.RecorderStatistics`
    /// records it): recorder, sampler and periodic threads plus the
    /// signal handler's time on the workload's threads.
    own_cpu: Duration,
    /// The process's CPU over the run, by the same account.
    stats_cpu: Duration,
}

/// Sets flightrec's CPU-time sampling.
fn flightrec_sampling(rec: &Recording, on: bool, throttle: &str) {
    rec.set("jdk.CPUTimeSample", "throttle", throttle).unwrap();
    rec.set(
        "jdk.CPUTimeSample",
        "enabled",
        if on { "true" } else { "false" },
    )
    .unwrap();
}

impl Sample {
    /// The mean of two runs.
    fn mean(self, other: Sample) -> Sample {
        Sample {
            wall: (self.wall + other.wall) / 2,
            cpu: (self.cpu + other.cpu) / 2,
            sampler_cpu: (self.sampler_cpu + other.sampler_cpu) / 2,
            own_cpu: (self.own_cpu + other.own_cpu) / 2,
            stats_cpu: (self.stats_cpu + other.stats_cpu) / 2,
        }
    }
}

/// Configures `v`, lets it settle, and measures one run of `work`.
fn measure(rec: &Recording, pool: &Pool, work: usize, v: Variant, sampler: Option<i32>) -> Sample {
    let pprof = |hz| {
        pprof::ProfilerGuardBuilder::default()
            .frequency(hz)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
            .unwrap()
    };
    let guard = match v {
        Variant::Unsampled | Variant::Pprof100Hz | Variant::Pprof1000Hz => {
            flightrec_sampling(rec, false, "10ms");
            match v {
                Variant::Pprof100Hz => Some(pprof(100)),
                Variant::Pprof1000Hz => Some(pprof(1000)),
                _ => None,
            }
        }
        Variant::Flightrec10ms => {
            flightrec_sampling(rec, true, "10ms");
            None
        }
        Variant::Flightrec1ms => {
            flightrec_sampling(rec, true, "1ms");
            None
        }
    };
    std::thread::sleep(SETTLE);
    let sampler_clock = sampler.map(thread_clock);
    let s0 = sampler_clock.map(cpu_time).unwrap_or_default();
    let st0 = rec.statistics();
    let c0 = cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID);
    let wall = pool.run(work);
    let cpu = cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID) - c0;
    let st1 = rec.statistics();
    let sampler_cpu = sampler_clock.map(cpu_time).unwrap_or_default() - s0;
    drop(guard);
    Sample {
        wall,
        cpu,
        sampler_cpu,
        own_cpu: st1.own_cpu().saturating_sub(st0.own_cpu()),
        stats_cpu: st1.process_cpu.saturating_sub(st0.process_cpu),
    }
}

/// The `q` quantile of `x` (sorted in place), linearly interpolated.
fn quantile(x: &mut [f64], q: f64) -> f64 {
    x.sort_by(f64::total_cmp);
    if x.is_empty() {
        return f64::NAN;
    }
    let pos = q * (x.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    x[lo] + (x[hi] - x[lo]) * (pos - lo as f64)
}

/// "median [p25, p75]" of `x`, in percent.
fn summary(mut x: Vec<f64>) -> String {
    let (p25, p50, p75) = (
        quantile(&mut x, 0.25),
        quantile(&mut x, 0.5),
        quantile(&mut x, 0.75),
    );
    format!("{p50:+6.2} % [{p25:+6.2}, {p75:+6.2}]")
}

fn sampler(c: &mut Criterion) {
    let quick = !std::env::args().any(|a| a == "--bench");
    let rounds = std::env::var("FLIGHTREC_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 1 } else { ROUNDS });
    let n = threads();
    let pool = Pool::new(n);

    // Calibrate the work per thread so an unsampled run takes about `RUN`.
    let probe = 20_000;
    pool.run(probe);
    let took = pool.run(probe);
    let run = if quick { RUN / 10 } else { RUN };
    let work = ((probe as f64) * run.as_secs_f64() / took.as_secs_f64().max(1e-6)) as usize;

    let dir = std::env::temp_dir().join(format!("flightrec-bench-sampler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = RecordingConfig::new(dir.join("sampler.jfr")).settings(Settings::new());
    let rec = Recording::start(config).expect("start recording");
    // Start the sampler thread (it then stays, following the settings).
    flightrec_sampling(&rec, true, "10ms");
    std::thread::sleep(SETTLE);
    let sampler_tid = find_thread("flightrec-sampl");

    // Warm-up: one untimed round.
    for v in VARIANTS {
        measure(&rec, &pool, work, v, sampler_tid);
    }
    // Per variant: each run with the mean of the unsampled runs just
    // before and after it.
    let mut paired: Vec<Vec<(Sample, Sample)>> = vec![Vec::new(); VARIANTS.len()];
    let mut unsampled = Vec::with_capacity(rounds * VARIANTS.len());
    let sampled = VARIANTS.len() - 1;
    for round in 0..rounds {
        let mut before = measure(&rec, &pool, work, Variant::Unsampled, sampler_tid);
        unsampled.push(before);
        for k in 0..sampled {
            let i = 1 + (round + k) % sampled;
            let run = measure(&rec, &pool, work, VARIANTS[i], sampler_tid);
            let after = measure(&rec, &pool, work, Variant::Unsampled, sampler_tid);
            unsampled.push(after);
            paired[i].push((run, before.mean(after)));
            before = after;
        }
    }

    let mut g = c.benchmark_group("sampler");
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(200));
    g.measurement_time(Duration::from_secs(if quick { 1 } else { 3 }));
    flightrec_sampling(&rec, false, "10ms");
    std::thread::sleep(SETTLE);
    g.bench_function("unsampled_workload", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| pool.run(work)).sum())
    });
    g.finish();
    let _ = rec.stop();
    drop(pool);
    let _ = std::fs::remove_dir_all(&dir);

    let base = |f: fn(&Sample) -> Duration| {
        let mut x: Vec<f64> = unsampled.iter().map(|s| f(s).as_secs_f64() * 1e3).collect();
        quantile(&mut x, 0.5)
    };
    println!(
        "workload: {n} threads x {work} churn rounds; {rounds} rounds; \
         unsampled median {:.1} ms wall, {:.1} ms process CPU",
        base(|s| s.wall),
        base(|s| s.cpu),
    );
    println!(
        "slowdown vs. the unsampled runs before and after: median [25th, 75th percentile] \
         (p10: 10th percentile vs. unsampled 10th percentile); \
         sampler thread: its CPU / unsampled process CPU"
    );
    for (i, v) in VARIANTS.iter().enumerate().skip(1) {
        let runs = &paired[i];
        let ratio = |f: fn(&Sample) -> f64| -> Vec<f64> {
            runs.iter()
                .map(|(r, b)| 100.0 * (f(r) / f(b) - 1.0))
                .collect()
        };
        let p10 = |f: fn(&Sample) -> f64| {
            let mut x: Vec<f64> = runs.iter().map(|(r, _)| f(r)).collect();
            let mut b: Vec<f64> = unsampled.iter().map(f).collect();
            100.0 * (quantile(&mut x, 0.1) / quantile(&mut b, 0.1) - 1.0)
        };
        let wall = |s: &Sample| s.wall.as_secs_f64();
        let cpu = |s: &Sample| s.cpu.as_secs_f64();
        let own: Vec<f64> = runs
            .iter()
            .map(|(r, b)| 100.0 * r.sampler_cpu.as_secs_f64() / b.cpu.as_secs_f64())
            .collect();
        println!(
            "{:<14} wall {} (p10 {:+.2} %)   process CPU {} (p10 {:+.2} %)   sampler thread {}",
            format!("{v:?}:"),
            summary(ratio(wall)),
            p10(wall),
            summary(ratio(cpu)),
            p10(cpu),
            summary(own),
        );
    }
    // The recorder's own account of its cost (flightrec.RecorderStatistics:
    // its threads and signal handler over the process's CPU time, both over
    // the same run), which a busy neighbour does not distort.
    let own = |i: usize| {
        let mut x: Vec<f64> = paired[i]
            .iter()
            .map(|(r, _)| 100.0 * r.own_cpu.as_secs_f64() / r.stats_cpu.as_secs_f64().max(1e-9))
            .collect();
        (
            quantile(&mut x, 0.25),
            quantile(&mut x, 0.5),
            quantile(&mut x, 0.75),
        )
    };
    let (a25, a50, a75) = own(1);
    let (b25, b50, b75) = own(2);
    let verdict = |m: f64, target: f64| if m < target { "met" } else { "MISSED" };
    println!(
        "recorder statistics (own CPU / process CPU, median [25th, 75th]): \
         10 ms {a50:.2} % [{a25:.2}, {a75:.2}] (target < 0.5 %: {}), \
         1 ms {b50:.2} % [{b25:.2}, {b75:.2}] (target < 3 %: {})",
        verdict(a50, 0.5),
        verdict(b50, 3.0),
    );
}

criterion_group!(benches, sampler);
criterion_main!(benches);
