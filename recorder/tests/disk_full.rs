//! A recording whose repository's disk fills up: an 8 MiB tmpfs, mounted
//! by the test (CI runs as root; elsewhere the test says loudly that it
//! skipped). A filler file takes most of it, the recording fills the rest.
//! Then: exactly one line on stderr naming the chunk file and the error;
//! the recording goes on in memory; once the test deletes the filler, the
//! recording writes again, and every event committed after that is in the
//! file. Per type, events in the file + events counted lost = events
//! committed, and the file's loss events say exactly what is missing. The
//! destination is on another file system (the temp dir): `stop()` writes it
//! and returns [`RecordingError::WriteFailed`] naming the chunk file, what
//! was lost and what it wrote.
//!
//! With the destination on the full tmpfs too and the disk still full at
//! the stop, `stop()` returns [`RecordingError::Dump`] naming the
//! destination; the chunks written before the disk filled stay in the
//! repository, readable by `recorder::assemble`.
//!
//! The recordings run in a child process (this binary re-executed), so the
//! parent sees its stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use flightrec_testkit::child;
use jfr_format::read::read_recording;
use recorder::{Event, LossCause, Recording, RecordingConfig, RecordingError, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Before")]
struct Before {
    n: u64,
    text: &'static str,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.After")]
struct After {
    n: u64,
}

/// About 1 KiB an event: the disk fills with few events, so the
/// file stays quick for `jfr` to print.
fn payload() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| "a payload that makes the chunk grow quickly. ".repeat(22))
}

/// An 8 MiB tmpfs mounted at a directory for the test's life (unmounted on
/// drop, also when an assertion fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path) -> Option<Self> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!(
                "\n!!!!!!!! disk_full: NOT ROOT, cannot mount a tmpfs: TEST SKIPPED !!!!!!!!\n"
            );
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(at)
            .status()
            .unwrap();
        assert!(ok.success(), "mount -t tmpfs failed: {ok:?}");
        Some(Self(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status();
        if !ok.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Fills `fs` with a file of `bytes`.
fn filler(fs: &Path, bytes: usize) -> PathBuf {
    let path = fs.join("filler");
    std::fs::write(&path, vec![7u8; bytes]).unwrap();
    path
}

/// Commits `Before` events until the recorder found the tmpfs full and
/// stalled; returns how many. A write error is counted, or (when the write
/// that failed was the first since a flush, with nothing written since to
/// lose) none is, and a flush fails: calls made during a stall return the
/// error.
fn fill(rec: &Recording) -> u64 {
    let t = Instant::now();
    let mut n = 0;
    while rec.losses().events(LossCause::WriteError) == 0 && rec.flush().is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the disk never filled"
        );
        for _ in 0..100 {
            Before { n, text: payload() }.commit();
            n += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    n
}

/// The recorder's own system events are off, so the test's events are all
/// that competes for the pool and every loss is one of theirs.
fn config(dir: &Path, destination: PathBuf) -> RecordingConfig {
    let mut settings = Settings::new();
    for name in recorder::periodic::system_event_names() {
        settings.enable(name, false);
    }
    RecordingConfig::new(destination)
        .settings(settings)
        .repository(dir.join("fs").join("repo"))
        .max_chunk_size(1 << 20)
        .max_memory(2 << 20)
        .flush_interval(Duration::from_millis(50))
}

/// Child: fills the tmpfs, commits on while it is full, frees it, commits
/// `After` events, stops; reports what it committed and lost.
#[test]
fn disk_full_child() {
    let Some(dir) = child::dir("disk_full_child") else {
        return;
    };
    let fs = dir.join("fs");
    let filler = filler(&fs, 6 << 20);
    let rec = Recording::start(config(&dir, dir.join("out.jfr"))).unwrap();
    let mut before = fill(&rec);
    // Full: the recording goes on in memory (up to max_memory).
    for _ in 0..20_000 {
        Before {
            n: before,
            text: payload(),
        }
        .commit();
        before += 1;
    }
    // (A flush now may work or fail: cutting the failed chunk back freed
    // a little space, which the recorder uses as soon as it can.)
    std::thread::sleep(Duration::from_millis(300));
    std::fs::remove_file(&filler).unwrap();
    // Space is back: the next try writes again.
    let t = Instant::now();
    while let Err(e) = rec.flush() {
        assert!(t.elapsed() < Duration::from_secs(10), "never resumed: {e}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let resumed = t.elapsed();
    let after = 2_000;
    for n in 0..after {
        After { n }.commit();
    }
    let losses = rec.losses();
    let stop = rec.stop();
    let (path, written) = match &stop {
        Err(RecordingError::WriteFailed {
            path,
            summary: Some(s),
            ..
        }) => (path.display().to_string(), s.destination.is_some()),
        other => panic!("stop: {other:?}"),
    };
    println!("error: {}", stop.unwrap_err());
    println!(
        "report before={before} after={after} lost={} write={} pool={} written={} resumed_ms={} path={path}",
        losses.total_events(),
        losses.events(LossCause::WriteError),
        losses.events(LossCause::PoolExhausted),
        u8::from(written),
        resumed.as_millis(),
    );
}

/// Events per type in `file` by the crate's reader, and the events its
/// `flightrec.EventsLost` records count.
fn read_counts(file: &Path) -> (BTreeMap<String, u64>, u64) {
    let f = read_recording(&std::fs::read(file).unwrap()).unwrap();
    let mut counts = BTreeMap::new();
    let mut lost = 0;
    for e in f.chunks.iter().flat_map(|c| &c.events) {
        *counts.entry(e.type_name.to_string()).or_insert(0) += 1;
        if &*e.type_name == "flightrec.EventsLost" {
            lost += e.get("events").and_then(|v| v.as_i64()).unwrap() as u64;
        }
    }
    (counts, lost)
}

fn run_child(name: &str, dir: &Path) -> (String, String) {
    let out = child::command(name, dir)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "child failed: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

#[test]
fn a_full_disk_is_said_once_counted_and_written_again_when_space_returns() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("disk_full");
    let Some(_fs) = Tmpfs::mount(&dir.join("fs")) else {
        return;
    };
    let (stdout, stderr) = run_child("disk_full_child", &dir);
    let repo = dir.join("fs").join("repo");
    // Exactly one line on stderr, naming the chunk file and the error.
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "stderr:\n{stderr}");
    assert!(
        lines[0].contains(repo.to_str().unwrap()) && lines[0].contains("No space left on device"),
        "{}",
        lines[0]
    );
    let report = child::find_report(&stdout, "report ").unwrap_or_else(|| panic!("{stdout}"));
    let n = child::numbers(report);
    let (before, after, lost, write, pool, written) = (n[0], n[1], n[2], n[3], n[4], n[5]);
    // The write error lost what was written since the last flush (perhaps
    // nothing), the stall what did not fit in `max_memory` (20 MiB of
    // events, 2 MiB of memory).
    assert!(pool > 0, "{report}");
    assert_eq!(write + pool, lost, "{report}");
    assert_eq!(written, 1, "{report}");
    let error = child::find_report(&stdout, "error: ").unwrap();
    assert!(
        error.contains(repo.to_str().unwrap()) && error.contains("No space left on device"),
        "{error}"
    );
    eprintln!("{report}");

    let out = dir.join("out.jfr");
    let (counts, lost_in_file) = read_counts(&out);
    let in_file = |t: &str| counts.get(t).copied().unwrap_or(0);
    // Every event committed after space returned is in the file.
    assert_eq!(in_file("test.After"), after, "{report}");
    // Before the stop, nothing was lost of them: what is missing is
    // `Before`, and exactly what was counted.
    assert_eq!(in_file("test.Before") + lost, before, "{report}");
    assert_eq!(lost_in_file, lost, "the file's loss events: {report}");
    // The JDK reads the same.
    let jdk = flightrec_testkit::summary(&out);
    for t in ["test.Before", "test.After", "flightrec.EventsLost"] {
        assert_eq!(jdk.counts.get(t).copied().unwrap_or(0), in_file(t), "{t}");
    }
}

/// Child: fills the tmpfs and stops while it is still full. With
/// `FLIGHTREC_TEST_DEST=fs` the destination is on the full tmpfs too.
#[test]
fn full_at_stop_child() {
    let Some(dir) = child::dir("full_at_stop_child") else {
        return;
    };
    let fs = dir.join("fs");
    let on_fs = std::env::var_os("FLIGHTREC_TEST_DEST").is_some_and(|v| v == "fs");
    let dest = if on_fs {
        fs.join("out.jfr")
    } else {
        dir.join("out.jfr")
    };
    let _filler = filler(&fs, 6 << 20);
    let rec = Recording::start(config(&dir, dest)).unwrap();
    let mut before = fill(&rec);
    for _ in 0..5_000 {
        Before {
            n: before,
            text: payload(),
        }
        .commit();
        before += 1;
    }
    // Whatever space the cut-back chunk freed is taken: full at the stop.
    let _more = std::fs::write(fs.join("more"), vec![7u8; 8 << 20]);
    let stop = rec.stop();
    let (kind, lost) = match &stop {
        Err(RecordingError::WriteFailed {
            lost,
            summary: Some(s),
            ..
        }) if s.destination.is_some() => ("write_failed", lost.total_events()),
        Err(RecordingError::Dump { .. }) => ("dump", 0),
        other => panic!("stop: {other:?}"),
    };
    println!("error: {}", stop.unwrap_err());
    println!("report before={before} lost={lost} kind={kind}");
}

#[test]
fn a_disk_still_full_at_the_stop() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("full_at_stop");
    let Some(_fs) = Tmpfs::mount(&dir.join("fs")) else {
        return;
    };
    let repo = dir.join("fs").join("repo");
    // Destination elsewhere: the last chunk is kept in memory and written
    // there with the others; every event is in it or counted, and the
    // file's loss events say so.
    let (stdout, stderr) = run_child("full_at_stop_child", &dir);
    assert_eq!(stderr.lines().count(), 1, "stderr:\n{stderr}");
    let report = child::find_report(&stdout, "report ").unwrap_or_else(|| panic!("{stdout}"));
    assert!(report.contains("kind=write_failed"), "{report}");
    let n = child::numbers(report);
    let (before, lost) = (n[0], n[1]);
    let out = dir.join("out.jfr");
    let (counts, lost_in_file) = read_counts(&out);
    let in_file = counts.get("test.Before").copied().unwrap_or(0);
    assert_eq!(in_file + lost, before, "{report}");
    assert_eq!(lost_in_file, lost, "{report}");
    let jdk = flightrec_testkit::summary(&out);
    assert_eq!(jdk.counts.get("test.Before").copied(), Some(in_file));
    eprintln!("destination elsewhere: {report}");

    // Destination on the full tmpfs: `stop()` cannot write it and says so,
    // naming it; the chunks written before the disk filled stay in the
    // repository, and `assemble` reads them.
    std::fs::remove_dir_all(&repo).unwrap();
    for f in ["filler", "more"] {
        let _ = std::fs::remove_file(dir.join("fs").join(f));
    }
    let out = child::command("full_at_stop_child", &dir)
        .env("FLIGHTREC_TEST_DEST", "fs")
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let report = child::find_report(&stdout, "report ").unwrap();
    assert!(report.contains("kind=dump"), "{report}");
    let error = child::find_report(&stdout, "error: ").unwrap();
    let dest = dir.join("fs").join("out.jfr");
    assert!(
        error.contains(dest.to_str().unwrap()) && error.contains("No space left on device"),
        "{error}"
    );
    assert!(!dest.exists());
    let assembled = dir.join("assembled.jfr");
    let done = recorder::assemble(&repo, &assembled).unwrap();
    assert!(done.chunks > 0 && done.skipped.is_empty(), "{done:?}");
    let (counts, _) = read_counts(&assembled);
    let jdk = flightrec_testkit::summary(&assembled);
    assert_eq!(jdk.counts.get("test.Before"), counts.get("test.Before"));
    eprintln!(
        "destination on the full disk: {error}; {} chunks, {:?} events assembled",
        done.chunks,
        counts.get("test.Before")
    );
}
