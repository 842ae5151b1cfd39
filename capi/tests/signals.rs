//! The program's signals stay the program's (issue 31): under
//! `LD_PRELOAD=libflightrec.so` with CPU sampling on, a program that sets
//! its own disposition for `SIGPROF` never receives a signal of the
//! sampler's, and a program that blocks `SIGPROF` has the samples it cannot
//! get counted lost.
//!
//! * GNU `sort` installs a handler for `SIGPROF` that cleans up and
//!   re-raises it with the default action (exit 155, "Profiling timer
//!   expired"): sorting random bytes under the recording exits 0 with the
//!   unrecorded run's output, every run, and the file reads. CI sorts 8 MB
//!   five times; the check, 30 MB twenty times, is
//!   `FLIGHTREC_SORT_MB=30 FLIGHTREC_SORT_RUNS=20 cargo test --release -p
//!   flightrec-capi --test signals sort`.
//! * `tests/c/sigprof.c` burns CPU while sampled, then installs a `SIGPROF`
//!   handler that calls `abort()` (with `sigaction`, and with `signal`),
//!   and burns on: it never aborts, and the samples go on (on the signal
//!   the timers moved to).
//! * The same program blocking `SIGPROF` gets no sample; its CPU time is
//!   in `jdk.CPUTimeSamplesLost` and `flightrec.EventsLost`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use support::{Link, capi_dir, compile, lib_dir};

/// One profiled run at a time: two would share the two cores.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `exe args` with `libflightrec.so` preloaded and CPU sampling on,
/// writing `out`.
fn profiled(exe: &Path, args: &[&str], out: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env("LD_PRELOAD", lib_dir().join("libflightrec.so"))
        .env(
            "FLIGHTREC",
            format!("filename={},settings=profile", out.display()),
        );
    cmd
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `n` pseudo-random bytes (xorshift64*), newlines included.
fn random_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
    }
    out.truncate(n);
    out
}

/// The summed `field` of every `ty` event, and how many there were.
fn sum_of(events: &serde_json::Value, ty: &str, field: &str) -> (u64, usize) {
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .fold((0, 0), |(sum, n), e| {
            (sum + e["values"][field].as_u64().unwrap_or(0), n + 1)
        })
}

/// The `events` of `flightrec.EventsLost` records with `cause`.
fn lost_for(events: &serde_json::Value, cause: &str) -> u64 {
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "flightrec.EventsLost" && e["values"]["cause"] == cause)
        .map(|e| e["values"]["events"].as_u64().unwrap())
        .sum()
}

const TAKEN: &str = "CPU sample lost: the program took the sampling signal";
const BLOCKED: &str = "CPU sample lost: the thread blocks the sampling signal";

#[test]
fn sort_under_cpu_sampling_matches_an_unrecorded_run() {
    let is_gnu_sort = Command::new("sort")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU"));
    if !is_gnu_sort {
        eprintln!("skipped: no GNU sort on this machine");
        return;
    }
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (mb, runs) = (
        env_number("FLIGHTREC_SORT_MB", 8),
        env_number("FLIGHTREC_SORT_RUNS", 5),
    );
    let dir = flightrec_testkit::temp_dir("signals_sort");
    let input = dir.join("random.bin");
    std::fs::write(&input, random_bytes(mb << 20)).unwrap();
    let sort_args = ["-S", "50M", input.to_str().unwrap()];
    let plain = Command::new("sort")
        .args(sort_args)
        .env_remove("LD_PRELOAD")
        .env_remove("FLIGHTREC")
        .output()
        .expect("run sort");
    assert!(plain.status.success(), "{plain:?}");
    let mut samples = 0;
    for run in 0..runs {
        let out = dir.join(format!("sort-{run}.jfr"));
        let rec = profiled(Path::new("sort"), &sort_args, &out)
            .output()
            .expect("run sort");
        let stderr = String::from_utf8_lossy(&rec.stderr);
        assert_eq!(rec.status.code(), Some(0), "run {run}: {stderr}");
        assert!(
            rec.stdout == plain.stdout,
            "run {run}: output differs from the unrecorded run's"
        );
        assert!(!stderr.contains("CPU sampling used"), "run {run}: {stderr}");
        let summary = flightrec_testkit::summary(&out);
        assert!(
            summary
                .counts
                .get("jdk.ActiveSetting")
                .copied()
                .unwrap_or(0)
                > 0,
            "run {run}: {summary:?}"
        );
        samples += summary
            .counts
            .get("jdk.CPUTimeSample")
            .copied()
            .unwrap_or(0);
        let _ = std::fs::remove_file(&out);
    }
    eprintln!("{runs} runs of sort on {mb} MB: exit 0, same output; {samples} CPU samples");
}

fn sigprof_program(dir: &Path) -> PathBuf {
    compile(
        &capi_dir().join("tests/c/sigprof.c"),
        &dir.join("sigprof"),
        Link::None,
    )
}

#[test]
fn a_sigprof_handler_of_the_program_never_receives_a_sample_signal() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("signals_abort");
    let exe = sigprof_program(&dir);
    for mode in ["abort-sigaction", "abort-signal"] {
        let out = dir.join(format!("{mode}.jfr"));
        let run = profiled(&exe, &[mode], &out).output().expect("run sigprof");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{mode}: {run:?}");
        assert!(
            String::from_utf8_lossy(&run.stdout).starts_with("done "),
            "{mode}: {run:?}"
        );
        assert!(!stderr.contains("CPU sampling used"), "{mode}: {stderr}");
        let events = flightrec_testkit::print_json(&out);
        // Sampled before the handler, and after it on the signal the
        // timers moved to: nothing was lost.
        let count = |function: &str| {
            let samples = events.as_array().unwrap().iter();
            samples
                .filter(|e| e["type"] == "jdk.CPUTimeSample")
                .filter(|e| e["values"]["stackTrace"].to_string().contains(function))
                .count()
        };
        let (before, after) = (count("before_the_handler"), count("after_the_handler"));
        assert!(
            before > 0 && after > 0,
            "{mode}: {before} and {after} samples"
        );
        assert_eq!(lost_for(&events, TAKEN), 0, "{mode}");
    }
}

#[test]
fn samples_of_a_thread_that_blocks_sigprof_are_counted_lost() {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("signals_block");
    let exe = sigprof_program(&dir);
    let out = dir.join("block.jfr");
    let run = profiled(&exe, &["block"], &out)
        .output()
        .expect("run sigprof");
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let cpu_ns: u64 = stdout
        .trim()
        .strip_prefix("done ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    let events = flightrec_testkit::print_json(&out);
    let (lost, records) = sum_of(&events, "jdk.CPUTimeSamplesLost", "lostSamples");
    let samples = sum_of(&events, "jdk.CPUTimeSample", "failed").1;
    // 10 ms per sample (the `profile` throttle). The first check comes
    // within a second of the thread's attach; the program's 1.5 s of CPU
    // is counted from there, never more than it used.
    let most = cpu_ns / 10_000_000 + 1;
    assert!(
        (50..=most).contains(&lost),
        "{lost} samples counted lost in {records} records, {most} at most; {samples} samples"
    );
    assert_eq!(lost_for(&events, BLOCKED), lost, "the same count, by cause");
    let view = flightrec_testkit::view("cpu-time-hot-methods", &out);
    assert!(
        !view.contains("with_sigprof_blocked"),
        "a sample while the signal was blocked:\n{view}"
    );
}
