//! The host's stderr is the host's: 20 repositories left by killed
//! processes in the temp directory, and a program started with
//! `FLIGHTREC` (through `LD_PRELOAD`, as `flightrec record` starts one)
//! prints nothing about them; `flightrec jcmd` with no argument names each
//! of them exactly once. With `warn-stale=true` the program does name them
//! (the control: the leftovers are there to be found).
//!
//! The leftovers are real: `sleep` processes recording with the library
//! preloaded, killed with SIGKILL once their repository holds a chunk.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How many leftover repositories the test makes.
const LEFTOVERS: usize = 20;

fn library() -> PathBuf {
    let lib = Path::new(env!("CARGO_BIN_EXE_flightrec"))
        .parent()
        .unwrap()
        .join("libflightrec.so");
    assert!(
        lib.is_file(),
        "{} is missing: build it with `cargo build --release -p flightrec-capi`",
        lib.display()
    );
    lib
}

/// The default repository of process `pid` under `temp`, once it holds a
/// file.
fn repository_of(temp: &Path, pid: u32) -> Option<PathBuf> {
    let prefix = format!("flightrec-{pid}-");
    std::fs::read_dir(temp)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .filter(|d| std::fs::read_dir(d).is_ok_and(|mut r| r.next().is_some()))
}

/// A program run with the library preloaded and `flightrec` options.
fn preloaded(program: &str, temp: &Path, options: &str) -> Command {
    let mut c = Command::new(program);
    c.env("LD_PRELOAD", library())
        .env("FLIGHTREC", options)
        .env("TMPDIR", temp)
        .env_remove("FLIGHTREC_ROOT_PID");
    c
}

/// Makes one leftover repository: a recording `sleep`, killed.
fn leave_one(temp: &Path, n: usize) -> (u32, PathBuf) {
    let out = temp.join(format!("never-{n}.jfr"));
    let mut child = preloaded("sleep", temp, &format!("filename={}", out.display()))
        .arg("60")
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    let dir = loop {
        if let Some(d) = repository_of(temp, pid) {
            break d;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "process {pid} made no repository in {}",
            temp.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.exists(), "a killed process wrote its file");
    (pid, dir)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn leftover_repositories_are_named_by_the_command_only() {
    let temp = std::env::temp_dir().join(format!("flightrec-stale-note-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&temp);
    std::fs::create_dir(&temp).unwrap();
    std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o700)).unwrap();
    let left: BTreeMap<u32, PathBuf> = (0..LEFTOVERS).map(|n| leave_one(&temp, n)).collect();
    assert_eq!(left.len(), LEFTOVERS);

    // A program started with FLIGHTREC: its file is written, and its
    // stderr holds nothing of ours.
    let fresh = temp.join("fresh.jfr");
    let run = preloaded("true", &temp, &format!("filename={}", fresh.display()))
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    assert!(fresh.is_file(), "the program's own recording is missing");
    assert_eq!(stderr(&run), "", "the host's stderr got a line of ours");

    // The control: asked for, the note names them (one line for all).
    let warned = temp.join("warned.jfr");
    let run = preloaded(
        "true",
        &temp,
        &format!("filename={},warn-stale=true", warned.display()),
    )
    .output()
    .unwrap();
    assert!(run.status.success(), "{run:?}");
    let note = stderr(&run);
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(
        note.contains(&format!("and {} more such directories", LEFTOVERS - 1)),
        "{note}"
    );

    // The command lists each once.
    let run = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .arg("jcmd")
        .env("TMPDIR", &temp)
        .env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let listed = stderr(&run);
    let lines: Vec<&str> = listed
        .lines()
        .filter(|l| l.contains("holds chunks of process"))
        .collect();
    assert_eq!(lines.len(), LEFTOVERS, "{listed}");
    for (pid, dir) in &left {
        let named = lines
            .iter()
            .filter(|l| l.contains(&format!("{} holds chunks of process {pid},", dir.display())))
            .count();
        assert_eq!(named, 1, "{} named {named} times:\n{listed}", dir.display());
    }
    std::fs::remove_dir_all(&temp).unwrap();
}
