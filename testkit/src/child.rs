//! Tests that run part of themselves in a child process: the test binary
//! re-executes itself to run one test (the child) with
//! `FLIGHTREC_TEST_CHILD` naming it and `FLIGHTREC_TEST_DIR` the parent's
//! directory, and the child reports on stdout in `key=value` words.
//! [`kill_when`] runs a child and SIGKILLs it after a given report.
//!
//! ```no_run
//! # use flightrec_testkit::child;
//! #[test]
//! fn crashing_child() {
//!     let Some(dir) = child::dir("crashing_child") else { return };
//!     // ... record into `dir`, print "flushed committed=5 lost=0" ...
//! }
//!
//! #[test]
//! fn parent() {
//!     if child::is_child() {
//!         return;
//!     }
//!     let dir = flightrec_testkit::temp_dir("parent");
//!     let mut c = child::command("crashing_child", &dir).spawn().unwrap();
//!     for line in child::lines(&mut c) {
//!         if let Some(report) = child::report(&line, "flushed ") {
//!             let nums = child::numbers(report); // [committed, lost]
//!             assert_eq!(nums.len(), 2);
//!         }
//!     }
//! }
//! ```

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The variable naming the test a child runs.
pub const CHILD_VAR: &str = "FLIGHTREC_TEST_CHILD";
/// The variable holding the parent's directory.
pub const DIR_VAR: &str = "FLIGHTREC_TEST_DIR";

/// The command that runs only test `name` of this test binary as a child,
/// with `dir` for its files: stdout piped (read it with [`lines`] after
/// `spawn`, or take `output()`), stderr inherited, SIGINT and SIGQUIT at
/// their default action ([`default_signals`]).
pub fn command(name: &str, dir: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("test binary path"));
    c.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, name)
        .env(DIR_VAR, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    default_signals(&mut c);
    c
}

/// Makes `cmd`'s process start with SIGINT and SIGQUIT at their default
/// action, whatever the tests inherited: a non-interactive shell's
/// background job (`cmd &` in a script) starts with both ignored, and an
/// ignored disposition survives `exec`. A test that signals its child, or
/// checks what a signal does to it, wants what a program started from a
/// terminal gets.
pub fn default_signals(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only `signal`, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT] {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// In the child running test `name`: the parent's directory. `None` in the
/// parent and in children running other tests (the test returns at once).
pub fn dir(name: &str) -> Option<PathBuf> {
    (std::env::var(CHILD_VAR).ok()? == name)
        .then(|| PathBuf::from(std::env::var_os(DIR_VAR).expect("FLIGHTREC_TEST_DIR")))
}

/// Whether this process is a child (a parent test returns at once then).
pub fn is_child() -> bool {
    std::env::var_os(CHILD_VAR).is_some()
}

/// The lines a spawned child prints, as they come (its stdout is taken).
pub fn lines(child: &mut Child) -> impl Iterator<Item = String> {
    let out = child.stdout.take().expect("the child's stdout is piped");
    BufReader::new(out).lines().map_while(Result::ok)
}

/// The text of `line` from `marker` on, if the line holds it. A child's
/// first report shares its line with the harness's `test NAME ... `, so the
/// marker is looked for anywhere in the line.
pub fn report<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.find(marker).map(|i| &line[i..])
}

/// The first report with `marker` in a child's whole `output`.
pub fn find_report<'a>(output: &'a str, marker: &str) -> Option<&'a str> {
    output.lines().find_map(|l| report(l, marker))
}

/// Runs child test `name` with `dir` and collects the numbers of each
/// report with `marker` as they come; once `done` says so of the reports so
/// far (or the child's output ends), kills the child with SIGKILL and reaps
/// it: a crash at a known point. Returns the reports' numbers, in order.
pub fn kill_when(
    name: &str,
    dir: &Path,
    marker: &str,
    mut done: impl FnMut(&[Vec<u64>]) -> bool,
) -> Vec<Vec<u64>> {
    let mut c = command(name, dir).spawn().expect("spawn the child");
    let mut reports = Vec::new();
    for line in lines(&mut c) {
        let Some(r) = report(&line, marker) else {
            continue;
        };
        reports.push(numbers(r));
        if done(&reports) {
            break;
        }
    }
    c.kill().expect("SIGKILL the child");
    c.wait().expect("reap the child");
    reports
}

/// The numbers of a report, in order: the value of each `key=value` word
/// and each bare word that is a number (`flushed 5000` gives `[5000]`,
/// `committed=9 lost=2 ok=true` gives `[9, 2]`).
pub fn numbers(report: &str) -> Vec<u64> {
    report
        .split_whitespace()
        .filter_map(|w| w.split_once('=').map_or(w, |(_, v)| v).parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse() {
        let line = "test dropping_child ... flushed committed=20000 lost=7 exhausted=7";
        let r = report(line, "flushed ").unwrap();
        assert_eq!(numbers(r), [20000, 7, 7]);
        assert_eq!(numbers("flushed 5000"), [5000]);
        assert_eq!(numbers("rotate=true stop=true lost=12"), [12]);
        let out = "running 1 test\ncommitted=5 lost=1 chunks=25\n";
        assert_eq!(
            find_report(out, "committed="),
            Some("committed=5 lost=1 chunks=25")
        );
        assert_eq!(find_report(out, "nothing"), None);
        assert!(report("flushed", "flushed ").is_none());
    }
}
