//! `disk=false` keeps chunks in memory until a dump or the stop, with the
//! same rotation and retention; `signal=SIGRTMIN+3` samples with that
//! signal. One process: a single recording at a time.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use recorder::{Event, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Mem", label = "Mem")]
struct Mem {
    n: u64,
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Every file under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn an_in_memory_recording_writes_nothing_until_a_dump() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("in_memory");
    let repo = dir.join("repo");
    let out = dir.join("out.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(&repo).disk(false)).unwrap();
    assert_eq!(rec.repository(), std::path::Path::new(""));
    for n in 0..3 {
        Mem { n }.commit();
        rec.rotate().unwrap();
    }
    Mem { n: 3 }.commit();
    rec.flush().unwrap();
    assert_eq!(files_under(&dir), Vec::<std::path::PathBuf>::new());
    assert!(!repo.exists());
    // The dump holds every chunk kept in memory (retention in memory is
    // checked by the repository's unit tests).
    let dump = dir.join("dump.jfr");
    rec.dump(&dump).unwrap();
    let s = flightrec_testkit::summary(&dump);
    assert_eq!(s.counts.get("test.Mem").copied(), Some(4), "{s:?}");
    assert_eq!(s.chunks, 4, "{s:?}");
    assert_eq!(
        s.counts.get("jdk.ActiveRecording").copied(),
        Some(4),
        "one per chunk"
    );
    let summary = rec.stop().unwrap();
    assert_eq!(summary.destination.as_deref(), Some(out.as_path()));
    assert!(out.exists());
    let mut left = files_under(&dir);
    left.sort();
    assert_eq!(left, [dump, out]);
}

#[test]
fn signal_option_selects_the_sampling_signal() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let o = recorder::options::parse(
        "signal=SIGRTMIN+3,jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=1ms",
    )
    .unwrap();
    let sig = libc::SIGRTMIN() + 3;
    assert_eq!(o.signal, Some(sig));
    assert!(recorder::sampler::set_signal(libc::SIGSEGV).is_err());
    assert!(recorder::sampler::set_signal(33).is_err());
    recorder::sampler::set_signal(o.signal.unwrap()).unwrap();
    let dir = flightrec_testkit::temp_dir("signal_option");
    let out = dir.join("cpu.jfr");
    let caught = |sig: i32| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
            .unwrap();
        mask & (1 << (sig - 1)) != 0
    };
    assert!(!caught(sig));
    let mut settings = o.settings.clone();
    settings.enable("test.Mem", false);
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    let until = Instant::now() + Duration::from_millis(300);
    let mut x = 0u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    assert!(caught(sig), "SIGRTMIN+3 has no handler while sampling");
    rec.stop().unwrap();
    let s = flightrec_testkit::summary(&out);
    assert!(
        s.counts.get("jdk.CPUTimeSample").copied().unwrap_or(0) > 0,
        "{s:?}"
    );
    let _ = Settings::new();
}
