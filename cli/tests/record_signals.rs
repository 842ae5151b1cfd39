//! Issue 42: a program sees the signal world it would see bare under
//! `flightrec record`.
//!
//! * `python3` catches `KeyboardInterrupt` (its `except` block runs, it
//!   exits 0) and reports the same `signal.getsignal(SIGINT)` as bare; a
//!   `bash` `trap ... INT` runs once, as bare.
//! * A signal sent once reaches the program once: to the process group
//!   (`kill -SIG -- -PGID`, `flightrec` its leader, as a supervisor runs a
//!   job), to `flightrec`'s pid alone, or by the terminal (`SI_KERNEL`,
//!   through a pseudo-terminal's Ctrl-C). The program's handler sees the
//!   sender's `si_code` and `si_pid`, as bare.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

/// One recorded run at a time: two would share the two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const RUNS: usize = 10;

/// Counts the signal `argv[1]`; a second after the first, prints how many
/// arrived and the first one's `si_code` and `si_pid`.
const COUNTER_C: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t count, code = 999, from;

static void on(int s, siginfo_t *i, void *u) {
    (void)s; (void)u;
    if (count++ == 0) { code = i->si_code; from = i->si_pid; }
}

int main(int argc, char **argv) {
    int sig = atoi(argv[1]);
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = on;
    a.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&a.sa_mask);
    if (sigaction(sig, &a, 0) != 0) return 2;
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; count == 0 && i < 30000; i++) usleep(1000);
    struct timespec t = {1, 0};
    while (nanosleep(&t, &t) != 0) {}
    printf("count %d code %d pid %d\n", (int)count, (int)code, (int)from);
    fflush(stdout);
    return 0;
}
"#;

fn counter(dir: &Path) -> PathBuf {
    let src = dir.join("counter.c");
    std::fs::write(&src, COUNTER_C).unwrap();
    let exe = dir.join("counter");
    let run = Command::new("cc")
        .args(["-O1", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(run.status.success(), "cc: {run:?}");
    exe
}

fn flightrec(dir: &Path, program: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flightrec"));
    c.env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD")
        .current_dir(dir)
        .args(["record", "-o"])
        .arg(dir.join("run.jfr"))
        .arg("--")
        .args(program);
    c
}

/// Starts `cmd` as the leader of a new process group, SIGINT and SIGQUIT
/// at their default action (as a supervisor starts a job), its output
/// piped.
fn spawn_leader(mut cmd: Command) -> Child {
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: runs in the forked child before exec; `signal` is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.spawn().expect("flightrec runs")
}

/// Reads lines until one equals `marker`; the lines before it.
fn until(lines: &mut impl Iterator<Item = String>, marker: &str) -> Vec<String> {
    let mut before = Vec::new();
    for l in lines.by_ref() {
        if l.trim() == marker {
            return before;
        }
        before.push(l);
    }
    panic!("no `{marker}` line; got {before:?}");
}

/// The rest of `child`'s output and its status.
fn finish(mut child: Child, lines: impl Iterator<Item = String>) -> (Vec<String>, i32, String) {
    let rest: Vec<String> = lines.collect();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    (rest, status.code().unwrap_or(-1), err)
}

fn lines_of(child: &mut Child) -> impl Iterator<Item = String> + use<> {
    BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
}

/// How the test sends the signal.
#[derive(Clone, Copy, Debug)]
enum Target {
    Group,
    Flightrec,
}

fn send(target: Target, leader: u32, sig: libc::c_int) {
    let pid = match target {
        Target::Group => -(leader as libc::pid_t),
        Target::Flightrec => leader as libc::pid_t,
    };
    // SAFETY: kill has no memory preconditions; `leader` is our child.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {pid} {sig}");
}

/// The counter's report: (count, si_code, si_pid).
fn report(rest: &[String]) -> (i32, i32, i32) {
    let line = rest
        .iter()
        .find(|l| l.starts_with("count "))
        .unwrap_or_else(|| panic!("no count in {rest:?}"));
    let n: Vec<i32> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (n[0], n[1], n[2])
}

fn counted_once(dir: &Path, exe: &Path, sig: libc::c_int, target: Target) {
    let sig_arg = sig.to_string();
    let mut child = spawn_leader(flightrec(dir, &[exe.to_str().unwrap(), &sig_arg]));
    let mut lines = lines_of(&mut child);
    until(&mut lines, "ready");
    send(target, child.id(), sig);
    let (rest, code, err) = finish(child, lines);
    assert_eq!(code, 0, "{target:?} {sig}: status {code}, {rest:?}, {err}");
    let (count, si_code, si_pid) = report(&rest);
    assert_eq!(count, 1, "{target:?} signal {sig}: {rest:?}");
    assert_eq!(si_code, libc::SI_USER, "{target:?} {sig}: {rest:?}");
    assert_eq!(
        si_pid,
        std::process::id() as i32,
        "{target:?} {sig}: {rest:?}"
    );
}

#[test]
fn a_signal_sent_to_the_group_reaches_the_program_once() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-group-signal");
    let exe = counter(&dir);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT] {
        for _ in 0..RUNS {
            counted_once(&dir, &exe, sig, Target::Group);
        }
    }
}

#[test]
fn a_signal_sent_to_flightrec_alone_reaches_the_program_once() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-pid-signal");
    let exe = counter(&dir);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGQUIT, libc::SIGHUP] {
        for _ in 0..3 {
            counted_once(&dir, &exe, sig, Target::Flightrec);
        }
    }
}

/// A pseudo-terminal whose Ctrl-C the kernel sends (`SI_KERNEL`) to its
/// foreground process group: `flightrec` (a session leader on it) and the
/// program.
#[test]
fn the_terminals_ctrl_c_reaches_the_program_once() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-tty-signal");
    let exe = counter(&dir);
    for _ in 0..3 {
        let (mut master, mut slave_fd) = (-1, -1);
        // SAFETY: valid out-pointers; no name, default termios and size.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave_fd,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened and are owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave_fd)) };
        let sig_arg = libc::SIGINT.to_string();
        let mut cmd = flightrec(&dir, &[exe.to_str().unwrap(), &sig_arg]);
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::null());
        // SAFETY: runs in the forked child before exec; setsid, ioctl and
        // signal are async-signal-safe. Stdin is the terminal by then.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                if libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("flightrec runs");
        // The terminal's last holders are the child's: the reads below end
        // when it exits.
        drop(cmd);
        drop(slave);
        let mut tty = std::fs::File::from(master);
        // The terminal ends lines with "\r\n" (`ONLCR`).
        let mut lines = BufReader::new(tty.try_clone().unwrap())
            .lines()
            .map_while(Result::ok)
            .map(|l| l.trim_end_matches('\r').to_owned());
        until(&mut lines, "ready");
        tty.write_all(b"\x03").unwrap();
        // The terminal echoes the Ctrl-C as "^C" with no line end.
        let line = lines
            .find_map(|l| l.find("count ").map(|at| l[at..].to_owned()))
            .expect("the counter's report");
        let (count, si_code, _) = report(std::slice::from_ref(&line));
        assert_eq!(count, 1, "{line}");
        assert_eq!(si_code, libc::SI_KERNEL, "{line}");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "status {status:?}");
    }
}

/// Runs `script` with `python3 -c`, bare or recorded, in a new process
/// group that the test signals with SIGINT after the script says `ready`;
/// returns its output lines before `ready`, after it, and its status.
fn python(dir: &Path, script: &str, recorded: bool) -> (Vec<String>, Vec<String>, i32) {
    let cmd = if recorded {
        flightrec(dir, &["python3", "-c", script])
    } else {
        let mut c = Command::new("python3");
        c.args(["-c", script]);
        c
    };
    let mut child = spawn_leader(cmd);
    let mut lines = lines_of(&mut child);
    let before = until(&mut lines, "ready");
    send(Target::Group, child.id(), libc::SIGINT);
    let (rest, code, err) = finish(child, lines);
    assert!(
        !err.contains("Traceback"),
        "recorded={recorded}: {before:?} {rest:?} {err}"
    );
    (before, rest, code)
}

const PY: &str = r#"
import signal, sys, time
print(signal.getsignal(signal.SIGINT), flush=True)
try:
    print("ready", flush=True)
    time.sleep(30)
except KeyboardInterrupt:
    print("caught", flush=True)
    time.sleep(1)
    print("cleaned up", flush=True)
sys.exit(0)
"#;

#[test]
fn python_catches_keyboard_interrupt_as_bare() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-python-sigint");
    let bare = python(&dir, PY, false);
    assert_eq!(bare.1, ["caught", "cleaned up"], "bare: {bare:?}");
    assert_eq!(bare.2, 0, "bare: {bare:?}");
    for run in 0..RUNS {
        let recorded = python(&dir, PY, true);
        assert_eq!(recorded.0, bare.0, "run {run}: getsignal(SIGINT) differs");
        assert_eq!(recorded.1, bare.1, "run {run}: {recorded:?}");
        assert_eq!(recorded.2, 0, "run {run}: {recorded:?}");
    }
}

const BASH: &str = r#"
n=0
trap 'n=$((n+1))' INT
echo ready
while [ "$n" -eq 0 ]; do :; done
end=$((SECONDS+2))
while [ "$SECONDS" -lt "$end" ]; do :; done
echo "traps $n"
"#;

#[test]
fn a_bash_trap_runs_once_as_bare() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-bash-trap");
    let run = |recorded: bool| {
        let cmd = if recorded {
            flightrec(&dir, &["bash", "-c", BASH])
        } else {
            let mut c = Command::new("bash");
            c.args(["-c", BASH]);
            c
        };
        let mut child = spawn_leader(cmd);
        let mut lines = lines_of(&mut child);
        until(&mut lines, "ready");
        send(Target::Group, child.id(), libc::SIGINT);
        let (rest, code, _) = finish(child, lines);
        (rest, code)
    };
    let bare = run(false);
    assert_eq!(bare, (vec!["traps 1".to_owned()], 0), "bare");
    for i in 0..RUNS {
        assert_eq!(run(true), bare, "run {i}");
    }
}
