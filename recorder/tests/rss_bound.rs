//! Issue 31: `max_memory` bounds what recording makes resident.
//!
//! The same workload runs twice, each time in a child process of its own
//! (so no other test's memory counts): once without a recording (the
//! baseline) and once recording with `max_memory` 4 MiB, CPU-time samples
//! every millisecond, stack traces on every event, 8 threads flooding
//! events and a storm of 1,000 threads. The test asserts that the
//! recording child's peak resident memory (`VmHWM`) exceeds the baseline's
//! by at most `max_memory` plus the overhead docs/memory.md documents:
//! a fixed part and the sampler's slots (one per thread sampled at once).
//! The symbolizer's debug info has an allowance as large as `max_memory`:
//! with 4 MiB the test binary's does not fit, so its frames are named from
//! its ELF symbols.
#![cfg(not(flightrec_loom))]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use flightrec_testkit::child;
use recorder::{Event, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.rss.Flood", stack_trace)]
struct Flood {
    n: u64,
    text: &'static str,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.rss.Storm", stack_trace)]
struct Storm {
    thread: u64,
}

const MAX_MEMORY: usize = 4 << 20;
const FLOODERS: usize = 8;
const STORM: usize = 1000;
const SECONDS: u64 = 6;

/// A field of `/proc/self/status` in bytes (`VmHWM`, `VmRSS`).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Resident bytes per mapping of `/proc/self/smaps`, largest first.
fn smaps_top(n: usize) -> Vec<(u64, String)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut out = Vec::new();
    let mut name = String::new();
    for line in smaps.lines() {
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            name = line
                .split_whitespace()
                .skip(5)
                .collect::<Vec<_>>()
                .join(" ");
            name = format!("{first} {name}");
        } else if first == "Rss:" {
            let kib: u64 = words.next().unwrap().parse().unwrap();
            out.push((kib << 10, name.clone()));
        }
    }
    out.sort_by(|a, b| b.cmp(a));
    out.truncate(n);
    out
}

/// Calls down `depth` frames, then commits: stacks of a few shapes.
#[inline(never)]
fn deep(depth: u32, n: u64) -> u64 {
    if depth == 0 {
        Flood {
            n,
            text: "a flood of small events",
        }
        .commit();
        return n;
    }
    black_box(deep(depth - 1, n)) + 1
}

/// The workload: 8 threads flooding events (CPU-sampled as they burn),
/// and, meanwhile, 1,000 threads started at once that each commit a few
/// events and wait for the storm to end.
fn workload() -> u64 {
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = (0..FLOODERS)
        .map(|i| {
            let (stop, committed) = (stop.clone(), committed.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    black_box(deep((n % 16) as u32 + i as u32, n));
                    n += 1;
                }
                committed.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    let storm_end = Arc::new(AtomicBool::new(false));
    let storm_n = if std::env::var_os("RSS_NO_STORM").is_some() {
        0
    } else {
        STORM as u64
    };
    let storm: Vec<_> = (0..storm_n)
        .map(|t| {
            let end = storm_end.clone();
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    for _ in 0..10 {
                        Storm { thread: t }.commit();
                    }
                    while !end.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
                .expect("spawn a storm thread")
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    storm_end.store(true, Ordering::Relaxed);
    for t in storm {
        t.join().unwrap();
    }
    while started.elapsed() < Duration::from_secs(SECONDS) {
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for t in flooders {
        t.join().unwrap();
    }
    committed.load(Ordering::Relaxed) + STORM as u64 * 10
}

fn report(kind: &str, extra: &str) {
    let top = smaps_top(6);
    for (bytes, name) in &top {
        eprintln!("{kind}: {bytes:>10} {name}");
    }
    println!(
        "rss-report {kind} hwm={} rss={} {extra}",
        status_bytes("VmHWM:"),
        status_bytes("VmRSS:"),
    );
}

#[test]
fn rss_child_baseline() {
    if child::dir("rss_child_baseline").is_none() {
        return;
    }
    black_box(workload());
    report("baseline", "");
}

#[test]
fn rss_child_recording() {
    let Some(dir) = child::dir("rss_child_recording") else {
        return;
    };
    let mut settings = Settings::new();
    let sample = std::env::var_os("RSS_NO_SAMPLING").is_none();
    settings
        .set(
            "jdk.CPUTimeSample",
            "enabled",
            if sample { "true" } else { "false" },
        )
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "1 ms")
        .unwrap();
    let rec = Recording::start(
        RecordingConfig::new(dir.join("rss.jfr"))
            .repository(dir.join("repo"))
            .max_memory(MAX_MEMORY)
            .max_chunk_age(Some(Duration::from_secs(2)))
            .settings(settings),
    )
    .expect("start");
    black_box(workload());
    let m = rec.memory();
    eprintln!("recording: {m:?}");
    report("recording", "");
    rec.stop().expect("stop");
}

fn run(name: &str, dir: &std::path::Path) -> (u64, u64) {
    let out = child::command(name, dir).output().expect("run the child");
    assert!(out.status.success(), "{name}: {:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let r = child::find_report(&text, "rss-report ").expect("a report");
    let nums = child::numbers(r);
    (nums[0], nums[1])
}

#[test]
fn max_memory_bounds_resident_memory_over_the_baseline() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("rss-bound");
    let (base_hwm, base_rss) = run("rss_child_baseline", &dir);
    let (rec_hwm, rec_rss) = run("rss_child_recording", &dir);
    let over = rec_hwm.saturating_sub(base_hwm);
    // docs/memory.md, "Overhead".
    let fixed = 8 << 20;
    let slots = (FLOODERS + STORM) as u64 * (40 << 10);
    // The symbolizer's debug info has an allowance as large as max_memory
    // (here too small for the test binary's: its ELF symbols name it).
    let symbolizer = MAX_MEMORY as u64;
    let allowed = MAX_MEMORY as u64 + symbolizer + fixed + slots;
    eprintln!(
        "baseline hwm={base_hwm} rss={base_rss}; recording hwm={rec_hwm} rss={rec_rss}; \
         over: {over} B; allowed {allowed} B (symbolizer {symbolizer}, fixed {fixed}, \
         sampler slots {slots})"
    );
    assert!(
        over <= allowed,
        "{over} B over the baseline, {allowed} B allowed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
