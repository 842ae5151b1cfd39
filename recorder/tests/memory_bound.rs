//! Issue 11: memory stays bounded in a long-running sampled service whose
//! stacks never repeat.
//!
//! One thread walks a new path through a binary tree of functions every
//! millisecond (the path is the bits of a counter, so every stack is new),
//! burns about a millisecond of CPU at the leaf and commits a stack-traced
//! event there, while the CPU sampler takes a sample every millisecond of
//! CPU. Chunks rotate every 5 s, so stacks no chunk needs are released;
//! within a chunk the constant pools reach their share of `max_memory` and
//! further new stacks are dropped and counted. The test checks, for 60 s
//! (`FLIGHTREC_SOAK_SECONDS` shortens it for a local run):
//!
//! * the recorder's own accounting: constants and buffers never over their
//!   limits;
//! * the process: resident memory grows by less than twice the bound after
//!   the first seconds (without the bound it grows by about 2.4 MB a
//!   second);
//! * the file: every event is there (an event whose stack was dropped is
//!   kept without it), events late in the run still have stacks (released
//!   stacks made room), and the dropped stacks are counted in
//!   `flightrec.EventsLost` exactly as the recording counted them.
#![cfg(not(flightrec_loom))]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use recorder::{Event, LossCause, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.soak.Leaf", stack_trace)]
struct Leaf {
    path: u64,
}

const DEPTH: u32 = 22;
const MAX_MEMORY: usize = 4 << 20;

fn burn(until: Instant) -> u64 {
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..64 {
            x = black_box(
                x.wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407),
            );
        }
    }
    x
}

#[inline(never)]
fn left(path: u64, level: u32) -> u64 {
    black_box(step(path, level + 1)) + 1
}

#[inline(never)]
fn right(path: u64, level: u32) -> u64 {
    black_box(step(path, level + 1)) + 2
}

/// Goes down one level, left or right by bit `level` of `path`; at the
/// bottom, commits and burns.
#[inline(never)]
fn step(path: u64, level: u32) -> u64 {
    if level == DEPTH {
        Leaf { path }.commit();
        return burn(Instant::now() + Duration::from_micros(900));
    }
    if path >> level & 1 == 0 {
        left(path, level)
    } else {
        right(path, level)
    }
}

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

#[test]
fn constant_pools_stay_bounded_under_endless_new_stacks() {
    let seconds: u64 = std::env::var("FLIGHTREC_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = flightrec_testkit::temp_dir("memory-bound");
    let out = dir.join("soak.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "1 ms")
        .unwrap();
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .repository(dir.join("repo"))
            .max_memory(MAX_MEMORY)
            .max_chunk_age(Some(Duration::from_secs(5)))
            .settings(settings),
    )
    .expect("start");

    let done = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let (mut rss_warm, mut rss_max, mut peak_constants, mut samples) = (0, 0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut path = 0u64;
            while !done.load(Ordering::Relaxed) {
                black_box(step(path, 0));
                path += 1;
                committed.fetch_add(1, Ordering::Relaxed);
            }
        });
        let started = Instant::now();
        // The first flush loads the debug info (tens of MB, once): after it.
        let warm_up = Duration::from_secs((seconds / 6).clamp(3, 10));
        while started.elapsed() < Duration::from_secs(seconds) {
            std::thread::sleep(Duration::from_millis(100));
            let m = rec.memory();
            assert!(m.buffers <= m.buffers_limit, "{m:?}");
            assert!(m.constants <= m.constants_limit, "{m:?}");
            assert!(m.buffers_limit + m.constants_limit <= MAX_MEMORY, "{m:?}");
            peak_constants = peak_constants.max(m.constants);
            samples += 1;
            let rss = rss_bytes();
            if samples % 10 == 0 && std::env::var_os("FLIGHTREC_SOAK_TRACE").is_some() {
                eprintln!("t={:?} rss={rss} {m:?}", started.elapsed());
            }
            if started.elapsed() < warm_up {
                rss_warm = rss;
            } else {
                rss_max = rss_max.max(rss);
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    let summary = rec.stop().expect("stop");
    let dropped = summary.losses.events(LossCause::StackDropped);
    let committed = committed.into_inner();
    eprintln!(
        "soak: {seconds} s, {committed} leaves, {dropped} stacks dropped, peak constants {peak_constants} \
         B of {} B, rss after warm-up {rss_warm} B, max {rss_max} B ({samples} checks)",
        MAX_MEMORY / 4
    );
    assert!(
        peak_constants > MAX_MEMORY / 8,
        "the workload fills the pools"
    );
    assert!(dropped > 0, "new stacks past the bound are dropped");
    // Without the bound, the pools would grow by about 2.4 MB a second;
    // the allowance covers the allocator's own slack and the symbolizer's
    // per-address cache, which is bounded by the code size.
    assert!(
        rss_max.saturating_sub(rss_warm) < 2 * MAX_MEMORY,
        "resident memory grew by {} B",
        rss_max - rss_warm
    );

    let jfr = flightrec_testkit::summary(&out);
    assert_eq!(jfr.counts["test.soak.Leaf"], committed);
    assert!(jfr.counts["jdk.CPUTimeSample"] > 0);
    let events = flightrec_testkit::print_json(&out);
    let events = events.as_array().unwrap();
    // Stacks are released as chunks finish, so the pools take new stacks
    // to the end: leaves of the last quarter of the run have stack traces.
    let late = committed - committed / 4;
    let late_with_stack = events
        .iter()
        .filter(|e| e["type"] == "test.soak.Leaf")
        .filter(|e| e["values"]["path"].as_u64().unwrap() >= late)
        .filter(|e| !e["values"]["stackTrace"].is_null())
        .count();
    assert!(late_with_stack > 0, "no stack admitted late in the run");
    let in_file: u64 = events
        .iter()
        .filter(|e| {
            e["type"] == "flightrec.EventsLost"
                && e["values"]["cause"] == LossCause::StackDropped.name()
        })
        .map(|e| e["values"]["events"].as_u64().unwrap())
        .sum();
    assert_eq!(in_file, dropped, "dropped stacks counted in the file");
}
