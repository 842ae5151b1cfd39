//! Issue 11: `fork()` while recording. The child exits normally and at
//! once (its `FLIGHTREC` exit handler must not wait for the parent's
//! recorder thread), writes nothing into the parent's repository, and can
//! start a recording of its own; the parent's file has exact counts.
//!
//! The scenario runs in a re-executed copy of this test binary with
//! `FLIGHTREC` set, so the recording is the automatic one and the exit
//! handlers of parent and children are the real ones. CPU sampling is on,
//! so the parent also has a sampler thread and timer signals when it forks.
#![cfg(not(flightrec_loom))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.fork.Steady")]
struct Steady {
    seq: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.fork.Child")]
struct ChildEvent {
    seq: u64,
}

const THREADS: u64 = 3;
const PER_THREAD: u64 = 200_000;
const CHILD_EVENTS: u64 = 7;
/// Forks without exec, then with exec, alternating.
const FORKS: usize = 6;

#[test]
fn fork_while_recording() {
    let dir = flightrec_testkit::temp_dir("fork-safety");
    let parent_file = dir.join("parent.jfr");
    let parent_repo = dir.join("repo-parent");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fork_scenario", "--ignored", "--nocapture"])
        .env(
            "FLIGHTREC",
            format!(
                "filename={},repository={},jdk.CPUTimeSample#enabled=true",
                parent_file.display(),
                parent_repo.display()
            ),
        )
        .env("FORK_TEST_DIR", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "scenario failed:\n{stdout}\n{stderr}");
    let parent_pid: u32 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("parent pid "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid line in\n{stdout}"));

    // The parent's file: exact counts, nothing of the children.
    let summary = flightrec_testkit::summary(&parent_file);
    assert_eq!(summary.counts["test.fork.Steady"], THREADS * PER_THREAD);
    assert_eq!(
        summary.counts.get("test.fork.Child").copied().unwrap_or(0),
        0
    );

    // The parent's repository holds the parent's chunks only.
    for entry in std::fs::read_dir(&parent_repo).into_iter().flatten() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            name.ends_with(&format!("_{parent_pid}.jfr")),
            "{name} in the parent's repository"
        );
    }

    // Each child's own recording.
    let children: Vec<PathBuf> = (0..FORKS)
        .step_by(2)
        .map(|i| dir.join(format!("child-{i}.jfr")))
        .collect();
    for file in &children {
        let s = flightrec_testkit::summary(file);
        assert_eq!(
            s.counts["test.fork.Child"],
            CHILD_EVENTS,
            "{}",
            file.display()
        );
        assert_eq!(s.counts.get("test.fork.Steady").copied().unwrap_or(0), 0);
    }
}

#[test]
#[ignore = "run by fork_while_recording, with FLIGHTREC set"]
fn fork_scenario() {
    let dir =
        PathBuf::from(std::env::var_os("FORK_TEST_DIR").expect("run by fork_while_recording"));
    assert!(Steady::should_commit(), "FLIGHTREC started the recording");
    println!("parent pid {}", std::process::id());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    Steady {
                        seq: t * PER_THREAD + i,
                    }
                    .commit();
                }
            });
        }
        for i in 0..FORKS {
            std::thread::sleep(Duration::from_millis(3));
            fork_and_wait(&dir, i);
        }
    });
    // Returning ends the process: the exit handler writes parent.jfr.
}

/// Forks; the child runs `child_body` (or execs `/bin/true`); waits at most
/// [`CHILD_LIMIT`] for it to exit with status 0. A child that waited for
/// the parent's recorder thread would never exit; the limit only has to be
/// far above what a starved machine takes (a child exits in milliseconds
/// when the machine is idle).
const CHILD_LIMIT: Duration = Duration::from_secs(10);

fn fork_and_wait(dir: &Path, i: usize) {
    let exec = i % 2 == 1;
    let file = dir.join(format!("child-{i}.jfr"));
    let repo = dir.join(format!("repo-child-{i}"));
    let truth = c"/bin/true";
    // SAFETY: the child only runs `child_body` (no locks that a parent
    // thread could have held: the recorder's are released by its fork
    // handler, and it prints nothing) or execs.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        if exec {
            let argv = [truth.as_ptr(), std::ptr::null()];
            // SAFETY: a valid NUL-terminated path and argv.
            unsafe { libc::execv(truth.as_ptr(), argv.as_ptr()) };
            // SAFETY: exec failed; leave without running the parent's handlers.
            unsafe { libc::_exit(90) };
        }
        // A panic must not end only this thread: the child's own recorder
        // thread would keep it (and the pipes of the outer test) alive.
        let code = std::panic::catch_unwind(|| child_body(&file, &repo)).unwrap_or(99);
        // `exit`, not `_exit`: the exit handlers run, as in a real child.
        std::process::exit(code);
    }
    let started = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        assert!(r >= 0, "waitpid: {}", std::io::Error::last_os_error());
        if r == pid {
            break;
        }
        if started.elapsed() >= CHILD_LIMIT {
            // SAFETY: `pid` is our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("child {i} (exec: {exec}) still running after {CHILD_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child {i} (exec: {exec}) ended with status {status:#x}"
    );
}

/// The forked child: recording is off; a recording of its own works. The
/// exit code says what failed.
fn child_body(file: &Path, repo: &Path) -> i32 {
    if Steady::should_commit() {
        return 10;
    }
    // Dropped: nothing records in the child yet.
    for seq in 0..100 {
        Steady { seq }.commit();
    }
    let Ok(rec) = Recording::start(RecordingConfig::new(file).repository(repo)) else {
        return 11;
    };
    for seq in 0..CHILD_EVENTS {
        ChildEvent { seq }.commit();
    }
    match rec.stop() {
        Ok(s) if s.losses.total_events() == 0 => {}
        _ => return 12,
    }
    0
}
