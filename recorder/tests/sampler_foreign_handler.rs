//! Issue 12: a program that installs its own handler for the sampling
//! signal after the recording started would take every CPU-time sample from then
//! on. A Rust program has no interposed `sigaction`, so the sampler notices
//! on its next pass and moves its timers to a free real-time signal: the
//! program's handler gets at most that pass's signals, and sampling goes on.
//!
//! The scenario runs in a re-executed copy of this test binary, so its
//! stderr can be read.
#![cfg(not(flightrec_loom))]

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recorder::{Recording, RecordingConfig, Settings};

static FOREIGN: AtomicU64 = AtomicU64::new(0);

extern "C" fn foreign(_: libc::c_int) {
    FOREIGN.fetch_add(1, Ordering::Relaxed);
}

fn burn(d: Duration) {
    let until = Instant::now() + d;
    let mut x = 1u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

#[test]
fn a_foreign_handler_is_reported_and_its_samples_counted() {
    let dir = flightrec_testkit::temp_dir("foreign-handler");
    let out = dir.join("foreign.jfr");
    let run = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "foreign_scenario", "--ignored", "--nocapture"])
        .env("FOREIGN_OUT", &out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let foreign: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("foreign signals: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in\n{stdout}"));
    // The sampler's next pass (at most 250 ms, 25 periods of 10 ms) moves
    // the timers to a free signal: the program's handler gets at most
    // that pass's signals, far from the 150 of 1.5 s of CPU.
    assert!(
        foreign <= 60,
        "the program's handler kept getting the sampling signal: {foreign}\n{stderr}"
    );

    let events = flightrec_testkit::print_json(&out);
    let events = events.as_array().unwrap();
    let samples = events
        .iter()
        .filter(|e| e["type"] == "jdk.CPUTimeSample")
        .count() as u64;
    // Sampling goes on after the program took SIGPROF: 1.9 s of CPU at
    // 10 ms is 190 periods; well over the signals the handler took.
    assert!(
        samples > foreign && samples >= 50,
        "{samples} samples, {foreign} signals to the program's handler"
    );
}

#[test]
#[ignore = "run by a_foreign_handler_is_reported_and_its_samples_counted"]
fn foreign_scenario() {
    let out = std::env::var_os("FOREIGN_OUT").expect("run by the test above");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(out).settings(settings)).expect("start");
    burn(Duration::from_millis(400));
    // SAFETY: a plain handler that only counts; SIGPROF is the sampler's.
    unsafe {
        libc::signal(libc::SIGPROF, foreign as *const () as libc::sighandler_t);
    }
    burn(Duration::from_millis(1500));
    rec.stop().expect("stop");
    println!("foreign signals: {}", FOREIGN.load(Ordering::Relaxed));
}
