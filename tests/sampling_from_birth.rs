//! Sampling from birth (issue 14): 500 short-lived threads, each burning
//! about 3 ms of CPU and exiting, beside one long-lived burning thread,
//! with CPU-time sampling at 1 ms. With the `thread-hook` feature every
//! short thread has its timer before it runs, so the short threads' share
//! of the `jdk.CPUTimeSample`s is their share of the measured CPU time
//! (within 3 percentage points). Without it a thread is found by the
//! sampler's listing, up to a pass (20 ms) after it started: most short
//! threads would be over by then.
//!
//! `cargo test --release --features thread-hook --test sampling_from_birth`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec::{Recording, RecordingConfig, Settings};

const SHORT_THREADS: usize = 500;
const SHORT_BURN_NS: u64 = 3_000_000;

/// CPU time of the calling thread (user + system), in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Burns CPU until `done` says stop; returns the thread's CPU time.
fn burn(done: impl Fn(u64) -> bool) -> u64 {
    let mut x = 1u64;
    loop {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let cpu = thread_cpu_ns();
        if done(cpu) {
            return cpu;
        }
    }
}

#[test]
fn short_lived_threads_are_sampled_in_proportion_to_their_cpu() {
    let dir = flightrec_testkit::temp_dir("sampling_from_birth");
    let out = dir.join("birth.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "1 ms")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    // The sampler thread is running and armed before the first short thread.
    std::thread::sleep(Duration::from_millis(300));

    let stop = Arc::new(AtomicBool::new(false));
    let long = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("long-burner".into())
            .spawn(move || burn(|_| stop.load(Ordering::Relaxed)))
            .unwrap()
    };
    let mut short_cpu = 0u64;
    for _ in 0..SHORT_THREADS {
        short_cpu += std::thread::Builder::new()
            .name("short".into())
            .spawn(|| burn(|cpu| cpu >= SHORT_BURN_NS))
            .unwrap()
            .join()
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let long_cpu = long.join().unwrap();
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0, "{:?}", summary.losses);

    // A short thread that exited before its samples were written is named
    // by its kernel id ("thread-TID"); the long one is alive throughout.
    let (mut short_samples, mut long_samples) = (0u64, 0u64);
    let mut short_tids = std::collections::HashSet::new();
    for e in flightrec_testkit::print_json(&out).as_array().unwrap() {
        if e["type"] != "jdk.CPUTimeSample" {
            continue;
        }
        let t = &e["values"]["eventThread"];
        let name = t["javaName"]
            .as_str()
            .or(t["osName"].as_str())
            .unwrap_or("");
        if name == "long-burner" {
            long_samples += 1;
        } else if name == "short" || name.starts_with("thread-") {
            short_samples += 1;
            short_tids.insert(t["osThreadId"].as_i64());
        }
    }
    let cpu_share = short_cpu as f64 / (short_cpu + long_cpu) as f64;
    let sample_share = short_samples as f64 / (short_samples + long_samples) as f64;
    let report = format!(
        "short threads: {:.1} ms CPU, {short_samples} samples from {} threads; \
         long thread: {:.1} ms CPU, {long_samples} samples; \
         CPU share {:.3}, sample share {:.3}",
        short_cpu as f64 / 1e6,
        short_tids.len(),
        long_cpu as f64 / 1e6,
        cpu_share,
        sample_share
    );
    eprintln!("{report}");
    // Enough samples that 3 points is more than noise (about 1 per tick of
    // CPU: hundreds on each side).
    assert!(long_samples >= 100 && short_samples >= 100, "{report}");
    assert!((sample_share - cpu_share).abs() <= 0.03, "{report}");
}
