//! Commit latency while chunks rotate: emitters must never wait for a
//! rotation. Each emitter times every commit with the event clock; the run is
//! done without rotation and with a rotation every 5 ms, alternating, and the
//! bench prints p50/p99/p99.9/max for both and their ratios.
//!
//! `cargo bench --bench rotation_latency` (a plain `harness = false` bench:
//! criterion has no percentile report). Targets: p99 and max ratio ≤ 1.1.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec::{Event, Recording, RecordingConfig, clock};

#[derive(Event)]
#[event(name = "bench.Latency", label = "Latency")]
struct Latency {
    a: u64,
    b: i32,
    c: f64,
}

const EMITTERS: usize = 1;
const COMMITS: usize = 2_000_000;
const ROUNDS: usize = 3;

/// Commit latencies (ticks) of every emitter, with or without rotations.
fn run(rec: &Recording, rotate: bool) -> Vec<i64> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let rotator = s.spawn(|| {
            let mut n = 0u64;
            while rotate && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                rec.rotate().expect("rotate");
                n += 1;
            }
            n
        });
        let emitters: Vec<_> = (0..EMITTERS)
            .map(|_| {
                s.spawn(|| {
                    let mut lat = Vec::with_capacity(COMMITS);
                    for i in 0..COMMITS {
                        let t0 = clock::ticks();
                        Latency {
                            a: black_box(i as u64),
                            b: 7,
                            c: 0.5,
                        }
                        .commit();
                        lat.push(clock::ticks() - t0);
                    }
                    lat
                })
            })
            .collect();
        let mut all: Vec<i64> = emitters
            .into_iter()
            .flat_map(|h| h.join().expect("emitter"))
            .collect();
        stop.store(true, Ordering::Relaxed);
        let rotations = rotator.join().expect("rotator");
        if rotate {
            eprintln!("  {rotations} rotations");
        }
        all.sort_unstable();
        all
    })
}

fn percentile(sorted: &[i64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    clock::ticks_to_nanos(sorted[i]) as f64
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` / listing: nothing to run
    }
    let dir = std::env::temp_dir().join(format!("flightrec-latency-{}", std::process::id()));
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(&dir)
            .max_memory(512 << 20)
            .max_size(Some(64 << 20)),
    )
    .expect("start recording");
    run(&rec, false); // warm up: buffers, type registration, symbolizer
    let (mut base, mut rot) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        eprintln!("round {round}");
        base.push(run(&rec, false));
        rot.push(run(&rec, true));
    }
    let stats = |runs: &[Vec<i64>]| {
        // Median over rounds of each statistic (max is the noisiest).
        let mut per: Vec<[f64; 4]> = runs
            .iter()
            .map(|r| {
                [
                    percentile(r, 0.5),
                    percentile(r, 0.99),
                    percentile(r, 0.999),
                    percentile(r, 1.0),
                ]
            })
            .collect();
        let mut out = [0.0; 4];
        for (k, slot) in out.iter_mut().enumerate() {
            per.sort_by(|a, b| a[k].total_cmp(&b[k]));
            *slot = per[per.len() / 2][k];
        }
        out
    };
    let (b, r) = (stats(&base), stats(&rot));
    println!("commit latency, ns (median of {ROUNDS} rounds of {COMMITS} commits)");
    println!("                 p50      p99    p99.9        max");
    println!(
        "no rotation  {:>7.0}  {:>7.0}  {:>7.0}  {:>9.0}",
        b[0], b[1], b[2], b[3]
    );
    println!(
        "rotate 5 ms  {:>7.0}  {:>7.0}  {:>7.0}  {:>9.0}",
        r[0], r[1], r[2], r[3]
    );
    println!(
        "ratio        {:>7.2}  {:>7.2}  {:>7.2}  {:>9.2}",
        r[0] / b[0],
        r[1] / b[1],
        r[2] / b[2],
        r[3] / b[3]
    );
    let s = rec.stop().expect("stop");
    eprintln!("losses: {:?}", s.losses);
    let _ = std::fs::remove_dir_all(dir);
}
