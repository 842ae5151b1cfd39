//! What `flightrec` does with files it cannot read: one line on standard
//! error naming the problem and exit status 2, never a panic or a hang;
//! and 10,000 mutated recordings through every reading path of the
//! library, none of which may panic.

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flightrec_cli::profile::{self, Select};
use flightrec_cli::recording::Recording;
use flightrec_cli::{convert, metadata, print, summary, view};
use flightrec_testkit::{run_example, temp_dir};

/// Runs `flightrec args`, killing it after 10 s; returns (status, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "flightrec {args:?} hangs");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_refused(args: &[&str], says: &str) {
    let (code, err) = run(args);
    assert_eq!(code, Some(2), "flightrec {args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line, got: {err}");
    assert!(
        err.contains(says),
        "flightrec {args:?} said {err:?}, not {says:?}"
    );
}

/// Records a short CPU profile into a file of its own: tests run in parallel
/// in one process, and the example refuses an `--out` that already exists.
fn sample_file(name: &str) -> std::path::PathBuf {
    let file = temp_dir("cli-errors").join(format!("{name}.jfr"));
    run_example(
        "cpu_profile",
        &["--out", file.to_str().unwrap(), "--seconds", "1"],
    );
    file
}

#[test]
fn files_that_are_not_recordings_are_refused_in_one_line() {
    let dir = temp_dir("cli-bad-files");
    let text = dir.join("notes.txt");
    std::fs::write(
        &text,
        "this is not a recording, but it is long enough to have a header of 68 bytes in it",
    )
    .unwrap();
    let empty = dir.join("empty.jfr");
    std::fs::write(&empty, b"").unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo does not keep it.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let good = sample_file("refused");
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.join("cut.jfr");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();

    for sub in ["summary", "metadata", "print"] {
        assert_refused(&[sub, text.to_str().unwrap()], "not a readable JFR file");
        assert_refused(&[sub, empty.to_str().unwrap()], "not a readable JFR file");
        assert_refused(&[sub, fifo.to_str().unwrap()], "is a FIFO");
        assert_refused(&[sub, "/dev/zero"], "is a character device");
        assert_refused(&[sub, dir.to_str().unwrap()], "is a directory");
        assert_refused(&[sub, cut.to_str().unwrap()], "not a readable JFR file");
        assert_refused(
            &[sub, dir.join("absent.jfr").to_str().unwrap()],
            "cannot read",
        );
    }
    let out = dir.join("x.html");
    assert_refused(
        &["view", "no-such-view", good.to_str().unwrap()],
        "unknown view",
    );
    assert_refused(
        &[
            "convert",
            good.to_str().unwrap(),
            "-o",
            dir.join("x.png").to_str().unwrap(),
        ],
        "cannot tell the format",
    );
    assert_refused(
        &[
            "flame",
            good.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--include",
            "(",
        ],
        "--include",
    );
}

/// The reading paths of the library over `path`; errors are fine, panics
/// are not. Every mutant goes through `summary`, `metadata`, `print` and a
/// profile; which printer, view and output format it meets turns with `i`,
/// so each sees thousands of mutants.
fn every_path(path: &Path, i: usize) {
    let sink = &mut io::sink();
    let open = || Recording::open(path).unwrap();
    let _ = summary::run(&mut open(), sink);
    let _ = metadata::run(&mut open(), sink);
    let opts = print::Options {
        json: i.is_multiple_of(2),
        events: None,
        stack_depth: 64,
    };
    let _ = print::run(&mut open(), &opts, sink);
    let _ = view::run(&mut open(), view::VIEWS[i % view::VIEWS.len()].0, sink);
    let select = Select {
        kind: None,
        type_name: None,
        state: None,
        from: None,
        to: None,
        include: None,
        exclude: None,
    };
    if let Ok(p) = profile::collect(&mut open(), &select) {
        let _ = match i % 4 {
            0 => convert::collapsed::write(&p, true, sink),
            1 => convert::pprof::write(&p, 1, 0, sink),
            2 => convert::speedscope::write(&p, false, "x", sink),
            _ => flightrec_cli::flame::write(&p, false, i % 8 == 3, "x", true, sink),
        };
    }
}

#[test]
fn ten_thousand_mutated_files_never_panic() {
    let good = std::fs::read(sample_file("mutated")).unwrap();
    let dir = temp_dir("cli-mutants");
    let path = dir.join("m.jfr");
    // A small deterministic generator: the same mutants every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let started = Instant::now();
    for i in 0..10_000 {
        let mut m = good.clone();
        match i % 4 {
            // One to four bytes replaced anywhere.
            0 | 1 => {
                for _ in 0..=next() % 4 {
                    let at = (next() % m.len() as u64) as usize;
                    m[at] = next() as u8;
                }
            }
            // A byte in the header (sizes, offsets, tick rate).
            2 => {
                let at = (next() % 68) as usize;
                m[at] = next() as u8;
            }
            // Cut short.
            _ => m.truncate((next() % m.len() as u64) as usize),
        }
        std::fs::write(&path, &m).unwrap();
        let t = Instant::now();
        if let Err(panic) = std::panic::catch_unwind(|| every_path(&path, i)) {
            let keep = dir.join(format!("panic-{i}.jfr"));
            std::fs::write(&keep, &m).unwrap();
            std::panic::resume_unwind(panic);
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "mutant {i} took {:?}",
            t.elapsed()
        );
    }
    eprintln!("10000 mutants in {:?}", started.elapsed());
}
