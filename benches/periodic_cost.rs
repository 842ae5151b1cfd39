//! Cost of the periodic thread (issue 14): CPU time of `flightrec-periodic`
//! per second of recording, in a process with 200 threads, with every
//! built-in periodic event at its JDK default period, and again with every
//! interval event at 1 s (so `jdk.ThreadCPULoad`, 10 s by default, runs
//! every second too). Target: below 0.1 % of one core. Beside the CPU
//! time, the thread's wakes per second (its context switches, from
//! `/proc/self/task/TID/status`): each costs about as much as the work.
//! Measuring starts [`SETTLE`] after the recording: the first second after
//! a start (the thread list changing) is polled faster, once. A third line
//! has every periodic event off and only the thread start and end polls
//! on: the same wakes with no work in them, the floor of the first two.
//!
//! `cargo bench --bench periodic_cost` (seconds per run:
//! `FLIGHTREC_BENCH_SECONDS`, default 5).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec::{Recording, RecordingConfig, Settings};

/// Nanoseconds thread `tid` has run (`/proc/self/task/TID/schedstat`).
fn run_nanos(tid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Times thread `tid` was switched out (`voluntary_ctxt_switches` plus
/// `nonvoluntary_ctxt_switches` of `/proc/self/task/TID/status`): its wakes.
fn switches(tid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

fn periodic_tid() -> Option<String> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|e| {
        let tid = e.ok()?.file_name().to_string_lossy().into_owned();
        let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
        (comm.trim() == "flightrec-perio").then_some(tid)
    })
}

/// Time from the start to the measured seconds (see the module docs).
const SETTLE: Duration = Duration::from_millis(1500);

fn measure(label: &str, settings: Settings, seconds: f64) {
    let dir = std::env::temp_dir().join(format!("flightrec-periodic-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = Recording::start(RecordingConfig::new(dir.join("cost.jfr")).settings(settings))
        .expect("start");
    std::thread::sleep(SETTLE);
    let tid = periodic_tid().expect("flightrec-periodic thread");
    let (c0, w0) = (run_nanos(&tid), switches(&tid));
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let used = run_nanos(&tid) - c0;
    let wakes = (switches(&tid) - w0) as f64 / seconds;
    rec.stop().expect("stop");
    let per_second = used as f64 / seconds;
    println!(
        "periodic_cost/{label}: {:.1} us of CPU per second = {:.4} % of one core, {wakes:.1} wakes/s",
        per_second / 1e3,
        per_second / 1e9 * 100.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let seconds: f64 = std::env::var("FLIGHTREC_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..200)
        .map(|i| {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("idle-{i}"))
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })
                .unwrap()
        })
        .collect();
    measure("200_threads_defaults", Settings::new(), seconds);
    let mut every_second = Settings::new();
    for e in [
        "jdk.ThreadCPULoad",
        "jdk.ContainerCPUUsage",
        "jdk.ContainerMemoryUsage",
        "jdk.ContainerCPUThrottling",
        "jdk.ContainerIOUsage",
        "jdk.NetworkUtilization",
    ] {
        every_second.set(e, "period", "1 s").unwrap();
    }
    measure("200_threads_all_every_second", every_second, seconds);
    // The floor: the same wakes with no periodic event on, only the thread
    // start and end polls (what is left is the wakes' own cost).
    let mut polls_only = Settings::new();
    for name in flightrec::periodic::system_event_names() {
        if !matches!(name, "jdk.ThreadStart" | "jdk.ThreadEnd") {
            polls_only.set(name, "enabled", "false").unwrap();
        }
    }
    measure("200_threads_polls_only", polls_only, seconds);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
}
