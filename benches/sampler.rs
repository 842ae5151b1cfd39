//! The cost of CPU-time sampling: one multi-threaded, malloc-heavy workload
//! run unsampled, sampled by flightrec every 10 ms and 1 ms of each
//! thread's CPU time, and sampled by pprof-rs (process-wide `ITIMER_PROF`)
//! at 100 Hz and 1000 Hz, interleaved in one run. Criterion reports each
//! variant; the last lines give each variant's slowdown against the
//! unsampled runs (medians over the same rounds), in wall time and in the
//! process's CPU time (all threads, the samplers' own included), which a
//! shared machine disturbs less.
//!
//! Both samplers are limited by the kernel's tick for CPU timers
//! (`CONFIG_HZ`, often 250: 4 ms): faster settings arrive as timer overruns
//! (flightrec weights such a sample's `samplingPeriod` by them).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use flightrec::{Recording, RecordingConfig, Settings};

const THREADS: u64 = 2;

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

/// The workload: `THREADS` threads, each `churn(ROUNDS)`.
fn workload() -> Duration {
    const ROUNDS: usize = 40_000;
    let start = Instant::now();
    let handles: Vec<_> = (0..THREADS)
        .map(|t| std::thread::spawn(move || churn(ROUNDS, t + 11)))
        .collect();
    for h in handles {
        black_box(h.join().unwrap());
    }
    start.elapsed()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

/// Per variant: (wall, process CPU) per workload, one entry per sample.
static TIMES: Mutex<BTreeMap<Variant, Vec<(Duration, Duration)>>> = Mutex::new(BTreeMap::new());

/// User + system CPU time of the whole process.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `iters` workloads under `v` and returns their total time.
fn run(rec: &Recording, v: Variant, iters: u64) -> Duration {
    let sampling = |on: bool, throttle: &str| {
        rec.set("jdk.CPUTimeSample", "throttle", throttle).unwrap();
        rec.set(
            "jdk.CPUTimeSample",
            "enabled",
            if on { "true" } else { "false" },
        )
        .unwrap();
        // The sampler thread applies settings at its next pass.
        std::thread::sleep(Duration::from_millis(30));
    };
    let pprof = |hz| {
        pprof::ProfilerGuardBuilder::default()
            .frequency(hz)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
            .unwrap()
    };
    let mut guard = None;
    match v {
        Variant::Unsampled => sampling(false, "10ms"),
        Variant::Flightrec10ms => sampling(true, "10ms"),
        Variant::Flightrec1ms => sampling(true, "1ms"),
        Variant::Pprof100Hz => {
            sampling(false, "10ms");
            guard = Some(pprof(100));
        }
        Variant::Pprof1000Hz => {
            sampling(false, "10ms");
            guard = Some(pprof(1000));
        }
    }
    let cpu_before = process_cpu();
    let total: Duration = (0..iters).map(|_| workload()).sum();
    let cpu = process_cpu() - cpu_before;
    drop(guard);
    TIMES
        .lock()
        .unwrap()
        .entry(v)
        .or_default()
        .push((total / iters as u32, cpu / iters as u32));
    total
}

fn sampler(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("flightrec-bench-sampler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = RecordingConfig::new(dir.join("sampler.jfr")).settings(Settings::new());
    let rec = Recording::start(config).expect("start recording");
    let mut g = c.benchmark_group("sampler");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(4));
    g.warm_up_time(Duration::from_millis(500));
    // Interleave: every variant runs three rounds, so drift of a shared
    // machine hits all of them.
    for round in 0..3 {
        for v in VARIANTS {
            g.bench_function(format!("{v:?}/round{round}"), |b| {
                b.iter_custom(|iters| run(&rec, v, iters))
            });
        }
    }
    g.finish();
    let _ = rec.stop();
    let _ = std::fs::remove_dir_all(&dir);

    let times = TIMES.lock().unwrap();
    let median = |v: Variant, cpu: bool| {
        let mut t: Vec<Duration> = times
            .get(&v)
            .map(|t| t.iter().map(|&(w, c)| if cpu { c } else { w }).collect())
            .unwrap_or_default();
        t.sort();
        t.get(t.len() / 2)
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
    };
    let base_wall = median(Variant::Unsampled, false);
    let base_cpu = median(Variant::Unsampled, true);
    println!(
        "workload: {THREADS} threads, unsampled median {:.2} ms wall, {:.2} ms process CPU",
        base_wall * 1e3,
        base_cpu * 1e3
    );
    for v in VARIANTS.into_iter().skip(1) {
        let (w, c) = (median(v, false), median(v, true));
        println!(
            "slowdown {v:?}: wall {:+.2} %, process CPU {:+.2} %",
            100.0 * (w - base_wall) / base_wall,
            100.0 * (c - base_cpu) / base_cpu
        );
    }
}

criterion_group!(benches, sampler);
criterion_main!(benches);
