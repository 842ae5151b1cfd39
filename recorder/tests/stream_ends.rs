//! An `EventStream` always ends, with a typed error saying why: on the
//! repository of a process killed with SIGKILL (its writer is gone), after
//! `idle_end` with nothing new, and at once on a file that is not a regular
//! file (a FIFO, `/dev/zero`, a directory), which it neither blocks on nor
//! reads until memory runs out.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use flightrec_testkit::child;
use recorder::stream::{EventStream, FileKind, StreamError, StreamSummary};
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Tick")]
struct Tick {
    n: u64,
}

/// Runs `stream` on a thread and waits at most `limit` for it to end:
/// its summary, the errors it reported (as text and as the error kinds the
/// test looks for), and how long it ran.
fn run_within(
    mut stream: EventStream,
    limit: Duration,
) -> (StreamSummary, Vec<StreamError>, Duration) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&errors);
    stream.on_error(move |e| sink.lock().unwrap().push(copy(e)));
    let t = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(stream.run());
    });
    let summary = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the stream did not end within {limit:?}"));
    let took = t.elapsed();
    let errors = std::mem::take(&mut *errors.lock().unwrap());
    (summary, errors, took)
}

/// The variants the tests look for, copied out of the callback.
fn copy(e: &StreamError) -> StreamError {
    match e {
        StreamError::WriterGone { dir, pid } => StreamError::WriterGone {
            dir: dir.clone(),
            pid: *pid,
        },
        StreamError::Idle { dir, idle } => StreamError::Idle {
            dir: dir.clone(),
            idle: *idle,
        },
        StreamError::NotAFile { path, kind } => StreamError::NotAFile {
            path: path.clone(),
            kind: *kind,
        },
        other => StreamError::Io {
            path: PathBuf::new(),
            error: std::io::Error::other(other.to_string()),
        },
    }
}

/// Child: records ticks into `dir/repo`, flushing every 20 ms, says how
/// many are flushed, then waits to be killed.
#[test]
fn writer_child() {
    let Some(dir) = child::dir("writer_child") else {
        return;
    };
    let _rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .flush_interval(Duration::from_millis(20)),
    )
    .unwrap();
    for n in 0..5000 {
        Tick { n }.commit();
    }
    std::thread::sleep(Duration::from_millis(200));
    println!("flushed 5000");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn a_stream_on_a_killed_writers_repository_ends_and_so_does_an_idle_one() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("stream_writer_gone");
    let repo = dir.join("repo");
    let mut c = child::command("writer_child", &dir).spawn().unwrap();
    let pid = c.id();
    assert!(
        child::lines(&mut c).any(|l| child::report(&l, "flushed ").is_some()),
        "the child did not flush"
    );
    // Follow the live writer's repository, then kill it under the stream.
    let mut stream = EventStream::open_repository(&repo);
    let ticks = Arc::new(Mutex::new(0u64));
    let seen = Arc::clone(&ticks);
    stream
        .poll_interval(Duration::from_millis(20))
        .idle_end(Duration::from_secs(60))
        .on_event("test.Tick", move |_| *seen.lock().unwrap() += 1);
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        c.kill().unwrap();
        c.wait().unwrap();
        Instant::now()
    });
    let (_, errors, _) = run_within(stream, Duration::from_secs(10));
    let killed = killer.join().unwrap();
    let after_kill = killed.elapsed();
    assert!(
        after_kill < Duration::from_secs(3),
        "ended {after_kill:?} after the kill"
    );
    assert_eq!(
        *ticks.lock().unwrap(),
        5000,
        "every flushed event delivered"
    );
    eprintln!("writer gone: the stream ended {after_kill:?} after the kill");
    assert!(
        matches!(&errors[..], [StreamError::WriterGone { dir: d, pid: p }] if *d == repo && *p == pid),
        "{errors:?}"
    );

    // The same chunks in a directory whose writer (this process) lives on:
    // `idle_end` ends the stream.
    let idle_dir = dir.join("idle");
    std::fs::create_dir(&idle_dir).unwrap();
    for e in std::fs::read_dir(&repo).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap();
        let own = name.replace(
            &format!("_{pid}.jfr"),
            &format!("_{}.jfr", std::process::id()),
        );
        std::fs::copy(&p, idle_dir.join(own)).unwrap();
    }
    let mut stream = EventStream::open_repository(&idle_dir);
    stream
        .poll_interval(Duration::from_millis(20))
        .idle_end(Duration::from_millis(500));
    let (summary, errors, took) = run_within(stream, Duration::from_secs(5));
    assert!(summary.events >= 5000, "{summary:?}");
    assert!(took >= Duration::from_millis(500), "{took:?}");
    eprintln!("idle_end 500 ms: the stream ended after {took:?}");
    assert!(
        matches!(&errors[..], [StreamError::Idle { dir: d, idle }] if *d == idle_dir && *idle == Duration::from_millis(500)),
        "{errors:?}"
    );
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn files_that_are_not_regular_are_refused_at_once() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("stream_not_a_file");
    let fifo = dir.join("fifo.jfr");
    mkfifo(&fifo);
    for (path, kind) in [
        (fifo.clone(), FileKind::Fifo),
        (PathBuf::from("/dev/zero"), FileKind::CharDevice),
        (dir.clone(), FileKind::Directory),
    ] {
        let (summary, errors, took) =
            run_within(EventStream::open_file(&path), Duration::from_secs(2));
        assert_eq!(summary.events, 0);
        assert!(
            matches!(&errors[..], [StreamError::NotAFile { path: p, kind: k }] if *p == path && *k == kind),
            "{}: {errors:?}",
            path.display()
        );
        assert!(took < Duration::from_secs(1), "{took:?}");
        eprintln!("{}: refused after {took:?}", path.display());
    }
    // A FIFO and a link to /dev/zero named like chunks in a repository:
    // reported, never opened for reading.
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    mkfifo(&repo.join("2026_01_01_00_00_00_000000000_1.jfr"));
    std::os::unix::fs::symlink(
        "/dev/zero",
        repo.join("2026_01_01_00_00_01_000000000_1.jfr"),
    )
    .unwrap();
    let mut stream = EventStream::open_repository(&repo);
    stream
        .poll_interval(Duration::from_millis(10))
        .idle_end(Duration::from_millis(100));
    let (_, errors, _) = run_within(stream, Duration::from_secs(2));
    let kinds: Vec<FileKind> = errors
        .iter()
        .filter_map(|e| match e {
            StreamError::NotAFile { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [FileKind::Fifo, FileKind::Symlink], "{errors:?}");
}
