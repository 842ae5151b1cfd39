//! Issue 6: CPU-time sampling at 1 ms of a malloc-heavy workload whose
//! threads start and exit throughout, with no deadlock and no crash (the
//! failure modes of unwinding with libgcc in a signal handler: pprof-rs#36,
//! #152). It runs the full 60 s in CI (`FLIGHTREC_STRESS_SECS`
//! overrides the length for quicker local runs).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recorder::{Recording, RecordingConfig, Settings};

/// Allocates and frees blocks of many sizes, and touches them.
#[inline(never)]
fn churn(rounds: usize, seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut keep: Vec<Vec<u8>> = Vec::with_capacity(64);
    let mut sum = 0u64;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 16 + (x % 8192) as usize;
        let mut v = vec![x as u8; size];
        v[size / 2] ^= 1;
        sum = sum.wrapping_add(v[size - 1] as u64);
        if keep.len() == 64 {
            keep.swap_remove((x % 64) as usize);
        }
        keep.push(v);
        let s = format!("{x:x}");
        sum = sum.wrapping_add(s.len() as u64);
    }
    sum
}

/// Runs the workload for `secs` while sampling every `throttle`, with a
/// watchdog that aborts the process if it does not finish (a deadlock).
fn stress(secs: f64, throttle: &str) {
    let dir = std::env::temp_dir().join(format!("flightrec-sampler-stress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("stress.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", throttle)
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let limit = Duration::from_secs_f64(secs) + Duration::from_secs(60);
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if start.elapsed() > limit {
                    eprintln!("sampler stress: no progress after {limit:?}: deadlock");
                    std::process::abort();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let recording = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spawned = Arc::new(AtomicU64::new(0));
    // Two long-lived churners, plus a spawner that keeps short-lived
    // churners (1–30 ms) starting and exiting.
    let mut long = Vec::new();
    for i in 0..2 {
        let stop = stop.clone();
        long.push(std::thread::spawn(move || {
            let mut s = 0;
            while !stop.load(Ordering::Relaxed) {
                s += churn(2000, i + 7);
            }
            s
        }));
    }
    let spawner = {
        let stop = stop.clone();
        let spawned = spawned.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            let mut live = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let rounds = 200 + (n * 7919 % 3000) as usize;
                live.push(std::thread::spawn(move || churn(rounds, n)));
                spawned.fetch_add(1, Ordering::Relaxed);
                if live.len() >= 4 {
                    let _ = live.remove(0).join();
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            for h in live {
                let _ = h.join();
            }
        })
    };
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    spawner.join().unwrap();
    for h in long {
        h.join().unwrap();
    }
    let summary = recording.stop().unwrap();
    done.store(true, Ordering::Relaxed);
    watchdog.join().unwrap();

    let counts = flightrec_testkit::summary(&out).counts;
    let samples = counts.get("jdk.CPUTimeSample").copied().unwrap_or(0);
    eprintln!(
        "{secs} s at {throttle}: {} threads spawned, {samples} samples, {:?} lost events",
        spawned.load(Ordering::Relaxed),
        summary.losses
    );
    assert!(spawned.load(Ordering::Relaxed) > 100);
    // Two busy threads sampled every 1 ms of CPU (in practice every kernel
    // tick, 4 ms at HZ=250) give hundreds of samples per second; a loaded
    // 2-CPU machine gives them far less CPU, hence the low bar.
    assert!(samples as f64 > secs * 50.0, "only {samples} samples");
    if std::env::var_os("FLIGHTREC_STRESS_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn secs_from_env(default: f64) -> f64 {
    std::env::var("FLIGHTREC_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn sampling_at_1ms_survives_a_minute_of_malloc_and_thread_churn() {
    stress(secs_from_env(60.0), "1ms");
}
