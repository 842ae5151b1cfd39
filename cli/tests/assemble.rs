//! `flightrec assemble` on the repository of a process killed with SIGKILL
//! mid-recording: the file it writes holds what the library's
//! `recorder::assemble` recovers (same chunks, same counts per event type
//! in `jfr summary`, every flushed event), and its report names the chunk
//! it skipped and the file it ignored. A repository with no usable chunk is
//! refused in one line, exit status 2, and no file is written.
//!
//! The killed process is this test binary, re-executed as a child.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use flightrec_derive::Event;
use flightrec_testkit::child;
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Tick")]
struct Tick {
    n: u64,
    text: &'static str,
}

/// Child: records into `dir/repo`, commits three rounds of 5000 ticks,
/// rotates once, and after each round's flush says how many are flushed;
/// the parent kills it mid-recording.
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
            Tick {
                n,
                text: "some payload to make the chunk grow",
            }
            .commit();
            n += 1;
        }
        if round == 1 {
            rec.rotate().unwrap();
        }
        // Two flush intervals: the events are on disk, the header says so.
        std::thread::sleep(Duration::from_millis(100));
        println!("flushed {n}");
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn flightrec(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

#[test]
fn assemble_recovers_what_the_library_recovers() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("cli-assemble");
    let reports = child::kill_when("killed_child", &dir, "flushed ", |r| {
        r.last().is_some_and(|n| n.first() == Some(&15000))
    });
    assert_eq!(reports.last().map(|n| n[0]), Some(15000), "no flush report");
    let repo = dir.join("repo");
    // A file that is no chunk, and a chunk file killed before its first
    // flush (its header's magic only).
    std::fs::write(repo.join("notes.txt"), "not a chunk").unwrap();
    let empty = repo.join("2000_01_01_00_00_00_000000000_1.jfr");
    std::fs::write(&empty, b"FLR\0").unwrap();

    let by_library = dir.join("library.jfr");
    let lib = recorder::assemble(&repo, &by_library).unwrap();
    let by_cli = dir.join("cli.jfr");
    let run = flightrec(&[
        "assemble".as_ref(),
        repo.as_os_str(),
        "-o".as_ref(),
        by_cli.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert_eq!(String::from_utf8_lossy(&run.stderr), "");
    assert_eq!(
        stdout,
        format!(
            "wrote 2 chunks ({} bytes) to {}\n\
             skipped {}: in progress with nothing flushed\n\
             ignored {}\n",
            lib.bytes,
            by_cli.display(),
            empty.display(),
            repo.join("notes.txt").display()
        )
    );
    assert_eq!(lib.chunks, 2, "the finished chunk and the one in progress");
    assert_eq!(
        std::fs::read(&by_cli).unwrap(),
        std::fs::read(&by_library).unwrap()
    );
    let jdk = flightrec_testkit::summary(&by_cli);
    assert_eq!(jdk.chunks, 2);
    assert_eq!(jdk.counts.get("test.Tick").copied(), Some(15000));
    assert_eq!(jdk.counts, flightrec_testkit::summary(&by_library).counts);
}

#[test]
fn a_repository_without_a_usable_chunk_is_refused() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("cli-assemble-none");
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("2000_01_01_00_00_00_000000000_1.jfr"), b"FLR\0").unwrap();
    let out = dir.join("out.jfr");
    for target in [repo.as_path(), &dir.join("missing")] {
        let run = flightrec(&[
            "assemble".as_ref(),
            target.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ]);
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{run:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("flightrec: assemble: "), "{err}");
        assert!(err.contains(&target.display().to_string()), "{err}");
    }
    assert!(!Path::new(&out).exists(), "a file was written");
}
