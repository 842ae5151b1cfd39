//! What survives when things go wrong: a process killed with SIGKILL leaves a
//! repository from which every event flushed before the kill is recovered,
//! retention bounds the repository, and a disk error is reported by the
//! calls and the stop (with counted losses) instead of a panic or a hang.
//!
//! The crash and disk-error cases run in a child process: this test binary
//! re-executes itself with `FLIGHTREC_TEST_CHILD` set.

use std::path::Path;
use std::time::Duration;

use flightrec_derive::Event;
use flightrec_testkit::child;
use jfr_format::read::read_recording;
use recorder::{Event, LossCause, Recording, RecordingConfig, RecordingError};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Tick")]
struct Tick {
    n: u64,
    text: &'static str,
}

/// A tick with a payload that makes the chunk grow.
fn tick(n: u64) -> Tick {
    Tick {
        n,
        text: "some payload to make the chunk grow",
    }
}

fn count_ticks(file: &Path) -> u64 {
    let f = read_recording(&std::fs::read(file).unwrap()).unwrap();
    f.chunks
        .iter()
        .flat_map(|c| &c.events)
        .filter(|e| &*e.type_name == "test.Tick")
        .count() as u64
}

/// Child: records into `dir/repo`, commits events in rounds, rotates once,
/// and after each flush says how many events are flushed; the parent kills
/// it mid-recording.
#[test]
fn killed_child() {
    let Some(dir) = child::dir("killed_child") else {
        return;
    };
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .flush_interval(Duration::from_millis(20)),
    )
    .unwrap();
    let mut n = 0;
    for round in 0..3 {
        for _ in 0..5000 {
            tick(n).commit();
            n += 1;
        }
        if round == 1 {
            rec.rotate().unwrap();
        }
        // Two flush intervals: the events are on disk with a header saying so.
        std::thread::sleep(Duration::from_millis(100));
        println!("flushed {n}");
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn sigkill_leaves_a_recoverable_repository() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("sigkill");
    let reports = child::kill_when("killed_child", &dir, "flushed ", |r| {
        r.last().is_some_and(|n| n.first() == Some(&15000))
    });
    let flushed = reports.last().map_or(0, |n| n[0]);
    assert_eq!(flushed, 15000, "child did not report its flushes");

    let out = dir.join("recovered.jfr");
    let done = recorder::assemble(&dir.join("repo"), &out).unwrap();
    assert_eq!(done.chunks, 2, "one finished chunk and the one in progress");
    assert!(done.skipped.is_empty(), "{:?}", done.skipped);
    assert_eq!(count_ticks(&out), 15000);
    let jdk = flightrec_testkit::summary(&out);
    assert_eq!(jdk.chunks, 2);
    assert_eq!(jdk.counts.get("test.Tick").copied(), Some(15000));
}

/// Child: records with a file-size limit far below what it writes, so the
/// disk "fills up" mid-recording.
#[test]
fn disk_full_child() {
    let Some(dir) = child::dir("disk_full_child") else {
        return;
    };
    // SAFETY: plain libc calls with valid arguments; SIGXFSZ is ignored so a
    // write past the limit fails with EFBIG instead of killing the process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: 256 << 10,
            rlim_max: 256 << 10,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    let rec = Recording::start(
        RecordingConfig::new(dir.join("out.jfr"))
            .repository(dir.join("repo"))
            .flush_interval(Duration::from_millis(10)),
    )
    .unwrap();
    for n in 0..200_000 {
        tick(n).commit();
        if n % 10_000 == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let rotate = rec.rotate();
    let losses = rec.losses();
    let stop = rec.stop();
    println!(
        "rotate={} stop={} write_losses={}",
        rotate.is_err(),
        // The destination is under the same file-size limit: `Dump`.
        matches!(
            stop,
            Err(RecordingError::WriteFailed { .. } | RecordingError::Dump { .. })
        ),
        losses.events(LossCause::WriteError)
    );
    if let Err(e) = stop {
        println!("error: {e}");
    }
}

#[test]
fn disk_errors_stop_the_recording_with_an_error() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("disk_full");
    let out = child::command("disk_full_child", &dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child crashed: {:?}\n{text}",
        out.status
    );
    let line = child::find_report(&text, "rotate=").unwrap_or_else(|| panic!("no report:\n{text}"));
    assert!(line.starts_with("rotate=true stop=true"), "{line}");
    let lost: u64 = line.rsplit('=').next().unwrap().trim().parse().unwrap();
    assert!(
        lost > 0,
        "events dropped after the error must be counted: {line}"
    );
    assert!(
        text.contains("File too large") || text.contains("too large"),
        "{text}"
    );
}

#[test]
fn retention_bounds_the_repository_by_size_and_age() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("retention");
    let repo = dir.join("repo");
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(&repo)
            .max_size(Some(64 << 10))
            .max_age(Some(Duration::from_millis(300))),
    )
    .unwrap();
    let mut n = 0;
    for _ in 0..40 {
        for _ in 0..500 {
            tick(n).commit();
            n += 1;
        }
        rec.rotate().unwrap();
    }
    let size: u64 = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let files = std::fs::read_dir(&repo).unwrap().count();
    // Finished chunks are at most 64 KiB together, plus the one in progress.
    assert!(
        size <= (64 << 10) + (64 << 10),
        "repository holds {size} bytes in {files} files"
    );
    assert!(files < 40, "retention removed nothing: {files} files");
    // Age: after waiting past max_age, one rotation drops everything older.
    std::thread::sleep(Duration::from_millis(400));
    rec.rotate().unwrap();
    let files = std::fs::read_dir(&repo).unwrap().count();
    assert_eq!(files, 2, "the chunk just finished and the one in progress");
    let dump = dir.join("dump.jfr");
    rec.dump(&dump).unwrap();
    assert_eq!(count_ticks(&dump), 0, "the last chunks hold no ticks");
    rec.stop().unwrap();
}
