//! The cost of committing an event, against the cost of reading the clock.
//!
//! * `tsc_read`: a bare read of the event clock, `rdtsc` itself where the
//!   recorder runs on the TSC (the floor: every event reads it);
//! * `instant_3_fields`: committing an enabled 3-field instant event (the
//!   committing thread's cost; the recorder's drain is kept out of the timed
//!   batches and measured by `emit_threads/drain`);
//! * `disabled`: the same event with its type disabled (one load);
//! * `threads/1` vs `threads/2`: throughput of 1 and 2 threads each committing
//!   `N` events (ratio = scaling), with the recorder's drain kept out of the
//!   timed window;
//! * `drain`: the recorder writing a 2-thread round out (flush), per event.
//!
//! The paired rounds also take the recorder thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID` of that thread, read from this one) across
//! each round's enabled batch and the flush that writes it out, per event:
//! the `emit recorder` line gives it beside the commit's own cost and the
//! clock read, and the end-to-end CPU per event (commit + recorder) over
//! the clock read (targets: recorder ≤ 5 ns, end to end ≤ 2).
//!
//! The last line printed, `emit summary`, gives the three targets as ratios
//! of variants timed side by side in each of 41 rounds (quartiles):
//! enabled commit over clock read (target ≤ 1.5), disabled commit in ns
//! (≤ 1), and two threads' throughput over one's (≥ 1.9).

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::hint::black_box;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flightrec::{Event, Recording, RecordingConfig, Settings};
use flightrec_testkit::measure::StartLine;

#[derive(Event)]
#[event(name = "bench.Emit", label = "Emit")]
struct Emit {
    a: u64,
    b: i32,
    c: f64,
}

#[derive(Event)]
#[event(name = "bench.Off", label = "Off", enabled = false)]
struct Off {
    a: u64,
    b: i32,
    c: f64,
}

fn emit(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("flightrec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut settings = Settings::new();
    settings.enable("bench.Off", false);
    // Enough buffer memory that the recorder keeps up without drops, and a
    // bounded repository on disk.
    let config = RecordingConfig::repository_only()
        .repository(dir.join("repo"))
        .max_memory(1 << 30)
        .max_size(Some(256 << 20))
        .settings(settings);
    let rec = Recording::start(config).expect("start recording");

    // Each iteration runs BATCH operations, so criterion's per-iteration
    // overhead does not count against a sub-nanosecond operation; the
    // throughput is per operation.
    const BATCH: u64 = 1000;
    let mut g = c.benchmark_group("emit");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("tsc_read", |b| b.iter(|| clock_reads(BATCH)));
    // The committing thread's cost. The recorder is flushed outside the
    // timed batches every FLUSH_EVERY events (2.4 MB, under its 4 MiB drain
    // batch), so no drain runs during a batch; `emit_threads/drain` gives
    // the drain's own cost per event.
    const FLUSH_EVERY: u64 = 100_000;
    g.bench_function("instant_3_fields", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for it in 0..iters {
                if it % (FLUSH_EVERY / BATCH) == 0 {
                    rec.flush().expect("flush");
                }
                let start = Instant::now();
                commit_batch(BATCH);
                timed += start.elapsed();
            }
            timed
        })
    });
    g.bench_function("disabled", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                Off { a: i, b: 7, c: 0.5 }.commit();
            }
        })
    });
    g.finish();

    // Emitting threads only: the recorder is flushed before each timed round
    // (outside the window), and a round's events (2 × N × ~24 bytes) stay
    // below the recorder's 4 MiB drain batch, so the window holds the
    // threads' own work and nothing else. The drain's cost is measured on
    // its own by `drain` (the flush after a 2-thread round, per event).
    let mut g = c.benchmark_group("emit_threads");
    const N: u64 = 50_000;
    for threads in [1u64, 2] {
        g.throughput(Throughput::Elements(N * threads));
        g.bench_function(format!("threads/{threads}"), |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        rec.flush().expect("flush");
                        emit_round(threads as usize, N)
                    })
                    .sum()
            })
        });
    }
    g.throughput(Throughput::Elements(N * 2));
    g.bench_function("drain", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    rec.flush().expect("flush");
                    emit_round(2, N);
                    let start = Instant::now();
                    rec.flush().expect("flush");
                    start.elapsed()
                })
                .sum()
        })
    });
    g.finish();
    paired_summary(&rec);
    let summary = rec.stop().expect("stop");
    // Drops would mean the numbers include the drop path: say so.
    eprintln!("emit bench: events dropped: {:?}", summary.losses);
    let _ = std::fs::remove_dir_all(dir);
}

/// The targets as ratios measured side by side: each round times a batch of
/// clock reads, of enabled commits and of disabled commits, then a 2-thread
/// round between two 1-thread rounds, back to back, and the summary gives
/// the quartiles of the per-round ratios. A shared machine slows whole
/// seconds at a time (another tenant on the core's sibling); pairing within
/// a round keeps such a slow spell from skewing one variant against another,
/// which criterion's separate groups cannot.
fn paired_summary(rec: &Recording) {
    const BATCH: u64 = 50_000;
    const N: u64 = 50_000;
    let rounds = if std::env::args().any(|a| a == "--bench") {
        41
    } else {
        2 // `cargo test --benches`: a smoke run
    };
    let per_op = |f: &dyn Fn()| {
        let start = Instant::now();
        f();
        start.elapsed().as_secs_f64() * 1e9 / BATCH as f64
    };
    let (mut enabled, mut disabled, mut scaling) = (Vec::new(), Vec::new(), Vec::new());
    let recorder = RecorderClock::find();
    let (mut rec_ns, mut commit_ns, mut tsc_ns, mut end_to_end) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        rec.flush().expect("flush");
        let tsc = per_op(&|| clock_reads(BATCH));
        let cpu_before = recorder.as_ref().map(RecorderClock::nanos);
        let on = per_op(&|| commit_batch(BATCH));
        rec.flush().expect("flush");
        if let (Some(clock), Some(before)) = (&recorder, cpu_before) {
            let per_event = (clock.nanos() - before) as f64 / BATCH as f64;
            rec_ns.push(per_event);
            commit_ns.push(on);
            tsc_ns.push(tsc);
            end_to_end.push((on + per_event) / tsc);
        }
        let off = per_op(&|| {
            for i in 0..BATCH {
                Off { a: i, b: 7, c: 0.5 }.commit();
            }
        });
        // The two-thread round sits between two one-thread rounds and is
        // compared with their mean, so a machine that speeds up or slows
        // down across the three does not favour either side.
        let round = |threads| {
            rec.flush().expect("flush");
            emit_round(threads, N).as_secs_f64()
        };
        let before = round(1);
        let two = round(2);
        let after = round(1);
        enabled.push(on / tsc);
        disabled.push(off);
        scaling.push((before + after) / two);
    }
    let quartiles = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        format!(
            "{{\"p25\": {:.3}, \"median\": {:.3}, \"p75\": {:.3}}}",
            at(0.25),
            at(0.5),
            at(0.75)
        )
    };
    if recorder.is_some() {
        println!(
            "emit recorder ({rounds} paired rounds): {{\"recorder_cpu_ns_per_event\": {}, \"commit_ns\": {}, \"tsc_read_ns\": {}, \"end_to_end_cpu_over_tsc\": {}}}",
            quartiles(&mut rec_ns),
            quartiles(&mut commit_ns),
            quartiles(&mut tsc_ns),
            quartiles(&mut end_to_end)
        );
    } else {
        println!("emit recorder: the recorder thread was not found in /proc/self/task");
    }
    println!(
        "emit summary ({rounds} paired rounds): {{\"enabled_over_tsc\": {}, \"disabled_ns\": {}, \"two_threads_over_one\": {}}}",
        quartiles(&mut enabled),
        quartiles(&mut disabled),
        quartiles(&mut scaling)
    );
}

/// The recorder thread's CPU clock: the kernel's per-thread
/// `CLOCK_THREAD_CPUTIME_ID` of another thread of this process, named by
/// its id (what `pthread_getcpuclockid` returns: `(!tid << 3) | 6`,
/// CPUCLOCK_SCHED with the per-thread bit).
struct RecorderClock(libc::clockid_t);

impl RecorderClock {
    /// The thread named `flightrec-recor…` (the kernel keeps 15 bytes);
    /// else, where the name did not reach the kernel, the one thread of
    /// the process besides this one (the bench starts no other before the
    /// paired rounds).
    fn find() -> Option<Self> {
        let me = std::process::id() as libc::pid_t;
        let mut others = Vec::new();
        for t in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let Some(tid) = t
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == "flightrec-recor" {
                return Some(Self((!tid << 3) | 6));
            }
            if tid != me {
                others.push(tid);
            }
        }
        match others[..] {
            [tid] => Some(Self((!tid << 3) | 6)),
            _ => None,
        }
    }

    /// CPU time the thread has used, ns.
    fn nanos(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer; an invalid clock id fails
        // with EINVAL and leaves it zero.
        unsafe { libc::clock_gettime(self.0, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// `n` bare reads of the event clock: `rdtsc` where the recorder reads the
/// TSC (the recording has started, so the clock is chosen), else the
/// recorder's own clock read.
#[inline(always)]
fn clock_reads(n: u64) {
    #[cfg(target_arch = "x86_64")]
    if flightrec::clock::source() == flightrec::clock::ClockSource::Tsc {
        for _ in 0..n {
            // SAFETY: rdtsc exists on every x86-64 CPU and touches no memory.
            black_box(unsafe { core::arch::x86_64::_rdtsc() });
        }
        return;
    }
    for _ in 0..n {
        black_box(flightrec::clock::ticks());
    }
}

/// Commits `n` enabled 3-field events: the operation every enabled
/// variant times. Inlined, like a commit in a caller's own loop.
#[inline(always)]
fn commit_batch(n: u64) {
    for i in 0..n {
        Emit {
            a: black_box(i),
            b: 7,
            c: 0.5,
        }
        .commit();
    }
}

/// One round: `threads` threads, each attached to the recorder by a first
/// event, start together and commit `n` events each; the time from the
/// first one's start until the last one finishes. The threads meet at a
/// spinning start line and read the clock themselves, so the window holds
/// their commits and not the wake-up latency of a sleeping barrier (tens of
/// microseconds, a few percent of a round, and more for two threads than
/// for one); the main thread sleeps in the scope's join meanwhile.
fn emit_round(threads: usize, n: u64) -> Duration {
    let start_line = StartLine::new(threads);
    let spans = Mutex::new(Vec::with_capacity(threads));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                Emit { a: 0, b: 1, c: 2.0 }.commit();
                start_line.wait();
                let start = Instant::now();
                commit_batch(n);
                let end = Instant::now();
                spans.lock().unwrap().push((start, end));
            });
        }
    });
    let spans = spans.into_inner().unwrap();
    let first = spans.iter().map(|s| s.0).min().expect("a thread ran");
    let last = spans.iter().map(|s| s.1).max().expect("a thread ran");
    last - first
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = emit
}
criterion_main!(benches);
