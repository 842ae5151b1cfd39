//! The uncontended path of `flightrec::lock::Mutex` against
//! `parking_lot::Mutex`, in paired rounds on one thread (thread CPU time,
//! `CLOCK_THREAD_CPUTIME_ID`; the ratio taken per round, the median
//! reported): a batch of lock / increment / unlock on a free lock, the two
//! variants back to back in each round, in alternating order.
//!
//! * `idle`: no recording runs;
//! * `recording`: a recording runs with `jdk.JavaMonitorEnter` on (the
//!   free lock never reads the clock, so the cost must be the same).
//!
//! Target: wrapped / parking_lot ≤ 1.1 in both. The wrapper's unlock adds
//! one relaxed load (the waiter count, for `previousOwner`).
//!
//! Prints one line per phase and a last line `lock summary: {json}`.
//! Under `cargo test --benches` it runs a small smoke version.

use std::hint::black_box;

use flightrec::{Recording, RecordingConfig};
use flightrec_testkit::measure::{median, thread_cpu_ns};

#[inline(never)]
fn batch_parking_lot(m: &parking_lot::Mutex<u64>, n: u64) {
    for _ in 0..n {
        let mut g = m.lock();
        *g = black_box(*g + 1);
    }
}

#[inline(never)]
fn batch_wrapped(m: &flightrec::lock::Mutex<u64>, n: u64) {
    for _ in 0..n {
        let mut g = m.lock();
        *g = black_box(*g + 1);
    }
}

/// ns per lock/unlock of each variant, and the median of the per-round
/// ratios wrapped / parking_lot.
fn rounds(rounds: usize, n: u64) -> (f64, f64, f64) {
    let pl = parking_lot::Mutex::new(0u64);
    let fr = flightrec::lock::Mutex::named("bench", 0u64);
    // Warm both.
    batch_parking_lot(&pl, n);
    batch_wrapped(&fr, n);
    let (mut a, mut b, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let time = |f: &dyn Fn()| {
            let t0 = thread_cpu_ns();
            f();
            (thread_cpu_ns() - t0) as f64 / n as f64
        };
        let run_pl = || batch_parking_lot(&pl, n);
        let run_fr = || batch_wrapped(&fr, n);
        let (x, y) = if r % 2 == 0 {
            let x = time(&run_pl);
            (x, time(&run_fr))
        } else {
            let y = time(&run_fr);
            (time(&run_pl), y)
        };
        a.push(x);
        b.push(y);
        ratio.push(y / x);
    }
    (median(&mut a), median(&mut b), median(&mut ratio))
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n_rounds, n) = if full { (41, 2_000_000) } else { (3, 10_000) };

    let (pl, fr, idle) = rounds(n_rounds, n);
    println!("idle: parking_lot {pl:.2} ns, wrapped {fr:.2} ns, ratio {idle:.3}");

    let dir = std::env::temp_dir().join(format!("flightrec-bench-lock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recording = Recording::start(RecordingConfig::new(dir.join("lock.jfr"))).unwrap();
    let (pl_r, fr_r, rec) = rounds(n_rounds, n);
    recording.stop().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    println!("recording: parking_lot {pl_r:.2} ns, wrapped {fr_r:.2} ns, ratio {rec:.3}");

    println!(
        "lock summary: {{\"rounds\": {n_rounds}, \"ops_per_round\": {n}, \
         \"idle_ratio\": {idle:.3}, \"recording_ratio\": {rec:.3}, \
         \"parking_lot_ns\": {pl:.2}, \"wrapped_ns\": {fr:.2}, \"target\": 1.1}}"
    );
}
