//! The cost of an instrumented (`#[flightrec::timed]`) call, against the
//! plain call and one clock read.
//!
//! * `plain`: an `#[inline(never)]` function; `unselected`: the same with
//!   `#[timed]`, registered but selected by no filter (one relaxed load and
//!   a branch);
//! * `timing`: selected for timing (two clock reads and a per-thread
//!   accumulator update);
//! * `trace_no_stack`: selected for tracing with `stackTrace=false` (two
//!   clock reads and one `jdk.MethodTrace` written to the thread's buffer);
//! * `clock`: one read of the event clock.
//!
//! The last line, `timing summary`, gives the targets as quartiles
//! of per-round values, the variants timed back to back in each round:
//! `unselected_minus_plain_ns` (target ≤ 1), `timing_extra_over_clock` and
//! `trace_extra_over_clock` (the extra cost over the plain call, in clock
//! reads; targets ≤ 2 and ≤ 3), and `two_threads_cpu_over_one`: the
//! thread CPU time (`CLOCK_THREAD_CPUTIME_ID`) per timed call of each of two
//! threads calling the same function over that of one thread alone, in
//! paired rounds (target ≤ 1.10).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use flightrec::{Recording, RecordingConfig, Settings};

#[inline(never)]
fn plain(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

#[flightrec::timed]
#[inline(never)]
fn unselected(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

#[flightrec::timed]
#[inline(never)]
fn timed(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

#[flightrec::timed]
#[inline(never)]
fn traced(x: u64) -> u64 {
    black_box(x).wrapping_mul(3)
}

const BATCH: u64 = 1000;

macro_rules! batch {
    ($f:ident, $n:expr) => {{
        let mut acc = 0u64;
        for i in 0..$n {
            acc = acc.wrapping_add($f(black_box(i)));
        }
        black_box(acc);
    }};
}

fn clock_batch(n: u64) {
    let mut acc = 0i64;
    for _ in 0..n {
        acc = acc.wrapping_add(flightrec::clock::ticks());
    }
    black_box(acc);
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("flightrec-timing-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut s = Settings::new();
    s.method_filter("jdk.MethodTiming", "::timed").unwrap();
    s.method_filter("jdk.MethodTrace", "::traced").unwrap();
    s.set("jdk.MethodTrace", "stackTrace", "false").unwrap();
    let config = RecordingConfig::repository_only()
        .repository(dir.join("repo"))
        .max_memory(1 << 30)
        .max_size(Some(256 << 20))
        .settings(s);
    let rec = Recording::start(config).expect("start recording");
    // Registers every site.
    batch!(unselected, 1);
    batch!(timed, 1);
    batch!(traced, 1);

    let mut g = c.benchmark_group("timing");
    g.throughput(criterion::Throughput::Elements(BATCH));
    g.bench_function("plain", |b| b.iter(|| batch!(plain, BATCH)));
    g.bench_function("unselected", |b| b.iter(|| batch!(unselected, BATCH)));
    g.bench_function("timing", |b| b.iter(|| batch!(timed, BATCH)));
    g.bench_function("trace_no_stack", |b| b.iter(|| batch!(traced, BATCH)));
    g.bench_function("clock", |b| b.iter(|| clock_batch(BATCH)));
    g.finish();

    paired_summary();
    rec.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Nanoseconds per call of `f` over `n` calls.
fn per_call(n: u64, f: impl Fn(u64)) -> f64 {
    let t = Instant::now();
    f(n);
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// Thread CPU ns per timed call of each of `threads` threads.
fn cpu_round(threads: usize, n: u64) -> f64 {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                batch!(timed, 1000); // the thread's first call allocates
                let t = thread_cpu_ns();
                batch!(timed, n);
                (thread_cpu_ns() - t) / n as f64
            })
        })
        .collect();
    let v: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn paired_summary() {
    let rounds = if std::env::args().any(|a| a == "--bench") {
        41
    } else {
        3
    };
    const N: u64 = 200_000;
    let (mut off, mut timing, mut trace, mut scaling) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let p = per_call(N, |n| batch!(plain, n));
        let u = per_call(N, |n| batch!(unselected, n));
        let t = per_call(N, |n| batch!(timed, n));
        let r = per_call(N / 4, |n| batch!(traced, n));
        let c = per_call(N, clock_batch);
        off.push(u - p);
        timing.push((t - p) / c);
        trace.push((r - p) / c);
        let one_before = cpu_round(1, N);
        let two = cpu_round(2, N);
        let one_after = cpu_round(1, N);
        scaling.push(two / ((one_before + one_after) / 2.0));
    }
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        format!("[{:.3}, {:.3}, {:.3}]", at(0.25), at(0.5), at(0.75))
    };
    println!(
        "timing summary ({rounds} paired rounds): {{\"unselected_minus_plain_ns\": {}, \"timing_extra_over_clock\": {}, \"trace_extra_over_clock\": {}, \"two_threads_cpu_over_one\": {}}}",
        quartiles(&mut off),
        quartiles(&mut timing),
        quartiles(&mut trace),
        quartiles(&mut scaling)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
