//! Sampling from birth (issue 14): 500 short-lived threads, each burning
//! about 3 ms of CPU and exiting, beside one long-lived burning thread,
//! with CPU-time sampling at 1 ms. With the `thread-hook` feature every
//! short thread has its timer before it runs, so the short threads' share
//! of the `jdk.CPUTimeSample`s is their share of the measured CPU time
//! (within 3 percentage points). Without it a thread is found by the
//! sampler's listing, up to a pass (20 ms) after it started: most short
//! threads would be over by then.
//!
//! The same hook gives each such thread's `jdk.ThreadStart` its creator:
//! `parentThread` and the creator's stack at the creation.
//!
//! `cargo test --release --features thread-hook --test sampling_from_birth`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use flightrec::{Recording, RecordingConfig, Settings};
use flightrec_testkit::measure::thread_cpu_ns;
use flightrec_testkit::samples;

const SHORT_THREADS: usize = 500;
const SHORT_BURN_NS: u64 = 3_000_000;

/// One recording at a time: the proportion test wants the CPU to itself.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
    let counts = samples::per_thread(&flightrec_testkit::print_json(&out), "jdk.CPUTimeSample");
    let (long_samples, _) = samples::total_of(&counts, |n| n == "long-burner");
    let (short_samples, short_threads) =
        samples::total_of(&counts, |n| n == "short" || n.starts_with("thread-"));
    let cpu_share = short_cpu as f64 / (short_cpu + long_cpu) as f64;
    let sample_share = short_samples as f64 / (short_samples + long_samples) as f64;
    let report = format!(
        "short threads: {:.1} ms CPU, {short_samples} samples from {} threads; \
         long thread: {:.1} ms CPU, {long_samples} samples; \
         CPU share {:.3}, sample share {:.3}",
        short_cpu as f64 / 1e6,
        short_threads,
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

/// Children named `child-N` that live 300 ms (long enough for the
/// thread-start poll to see them named), created here: this function's
/// frame is in each one's `jdk.ThreadStart` stack.
#[inline(never)]
fn spawn_three_children() -> Vec<JoinHandle<()>> {
    let mut children = Vec::new();
    for i in 0..3 {
        let child = std::thread::Builder::new()
            .name(format!("child-{i}"))
            .spawn(|| std::thread::sleep(Duration::from_millis(300)))
            .unwrap();
        children.push(child);
    }
    // Not a tail call: this frame stays on the stack.
    std::hint::black_box(children)
}

#[test]
fn thread_start_has_the_creators_stack_and_parent() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("thread_start_parent");
    let out = dir.join("starts.jfr");
    let rec = Recording::start(RecordingConfig::new(&out)).unwrap();
    // The periodic thread's first poll tells the hook `jdk.ThreadStart` is on.
    std::thread::sleep(Duration::from_millis(300));
    let creator = std::thread::Builder::new()
        .name("creator".into())
        .spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = i64::from(unsafe { libc::gettid() });
            for child in spawn_three_children() {
                child.join().unwrap();
            }
            tid
        })
        .unwrap();
    let creator_tid = creator.join().unwrap();
    // Every child's end is polled before the stop.
    std::thread::sleep(Duration::from_millis(200));
    rec.stop().unwrap();

    let events = flightrec_testkit::print_json(&out);
    let starts: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.ThreadStart")
        .map(|e| &e["values"])
        .collect();
    let children: Vec<_> = starts
        .iter()
        .filter(|v| samples::thread_name(&v["thread"]).starts_with("child-"))
        .collect();
    assert_eq!(children.len(), 3, "{starts:#?}");
    for v in children {
        let parent = &v["parentThread"];
        assert_eq!(samples::thread_name(parent), "creator", "{v:#}");
        assert_eq!(parent["osThreadId"].as_i64(), Some(creator_tid), "{v:#}");
        // As the JDK writes it: the event is the new thread's.
        assert_eq!(v["eventThread"], v["thread"], "{v:#}");
        let frames = samples::method_names(v);
        assert!(
            frames.contains(&"spawn_three_children"),
            "the creator's frames are missing: {frames:?}"
        );
        // The hook's own frames are cut.
        assert!(
            !frames
                .iter()
                .any(|f| ["creator", "creator_stack", "pthread_create"].contains(f)),
            "{frames:?}"
        );
    }
    // The creator was made by this test's thread: its parent is known too.
    let creator_start = starts
        .iter()
        .find(|v| samples::thread_name(&v["thread"]) == "creator")
        .expect("the creator's jdk.ThreadStart");
    assert!(
        creator_start["parentThread"]["osThreadId"]
            .as_i64()
            .is_some(),
        "{creator_start:#}"
    );
}
