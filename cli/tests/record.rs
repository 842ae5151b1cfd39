//! `flightrec record -- CMD`: an unmodified C program (compiled here with
//! `cc`, no include, no link) recorded with the preloaded library.
//!
//! * It exits with status 3: `flightrec` exits 3, the program's output is
//!   untouched, the file's CPU-time samples put its burning function on
//!   top in `jfr view cpu-time-hot-methods`.
//! * SIGTERM sent to `flightrec` mid-run is passed on: the program's
//!   recorder writes the file and the program dies of the signal, so
//!   `flightrec` exits 143 and `jfr summary` reads the file.
//! * `python3 -c` and `sort` give the same standard output and status as
//!   without recording, and write one file (`python3` may be a shim that
//!   runs children: they are not recorded).
//! * A statically linked program, an unknown command and bad flags are
//!   refused in one line with status 2, before anything runs.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// One recorded run at a time: two would share the two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const BURN_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) double spin_the_wheel(long n) {
    double x = 0;
    for (long i = 0; i < n; i++) x += (double)(i % 7) * 1.000001;
    return x;
}

int main(int argc, char **argv) {
    long n = atol(argv[1]);
    printf("burning %ld\n", n);
    fflush(stdout);
    sink = spin_the_wheel(n);
    printf("burned\n");
    return 3;
}
"#;

fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let run = Command::new("cc")
        .args(["-O1", "-g"])
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run cc");
    assert!(run.status.success(), "cc: {run:?}");
    exe
}

fn flightrec() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flightrec"));
    c.env_remove("FLIGHTREC").env_remove("LD_PRELOAD");
    c
}

fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_status_is_the_programs_and_its_hot_function_tops_the_profile() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-burn");
    let burn = compile(&dir, "burn", BURN_C, &[]);
    let file = dir.join("burn.jfr");
    let run = flightrec()
        .arg("record")
        .arg("-o")
        .arg(&file)
        .arg("--")
        .arg(&burn)
        .arg("300000000")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3), "{run:?}");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "burning 300000000\nburned\n"
    );
    assert_eq!(
        last_line(&run),
        format!("flightrec: recording written to {}", file.display())
    );
    let view = flightrec_testkit::view("cpu-time-hot-methods", &file);
    let hot = flightrec_testkit::view_rows(&view);
    assert_eq!(
        hot.first().map(|(m, _)| m.as_str()),
        Some("burn.spin_the_wheel()"),
        "not on top:\n{view}"
    );
    assert!(hot[0].1 >= 10, "too few samples:\n{view}");
}

#[test]
fn sigterm_is_passed_on_and_the_file_is_written() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("cli-record-term");
    let burn = compile(&dir, "burn", BURN_C, &[]);
    let file = dir.join("term.jfr");
    let mut child = flightrec()
        .arg("record")
        .arg("-o")
        .arg(&file)
        .arg("--")
        .arg(&burn)
        .arg("100000000000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    // Kept open to the end: a program that writes to a closed pipe dies of
    // SIGPIPE, not of the signal under test.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "burning 100000000000\n");
    // The program runs main: its recording started before. Some samples.
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill sends a signal to our own unreaped child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "the program went on");
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    assert_eq!(
        last_line(&out),
        format!("flightrec: recording written to {}", file.display())
    );
    let summary = flightrec_testkit::summary(&file);
    assert!(
        summary
            .counts
            .get("jdk.CPUTimeSample")
            .is_some_and(|&n| n > 0),
        "{:?}",
        summary.counts
    );
}

/// `cmd` run plainly and under `flightrec record`: the same stdout and
/// status, and the recording is written.
fn runs_unchanged(name: &str, cmd: &[&str]) {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir(name);
    let plain = Command::new(cmd[0])
        .args(&cmd[1..])
        .current_dir(&dir)
        .output()
        .unwrap();
    let file = dir.join("out.jfr");
    let recorded = flightrec()
        .arg("record")
        .arg("-o")
        .arg(&file)
        .arg("--")
        .args(cmd)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(recorded.status.code(), plain.status.code(), "{recorded:?}");
    assert_eq!(
        String::from_utf8_lossy(&recorded.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert_eq!(
        last_line(&recorded),
        format!("flightrec: recording written to {}", file.display())
    );
    // Only the program records, not the children a launcher runs (here
    // `python3` may be a pyenv shim, a bash script of several children).
    let recordings: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jfr"))
        .collect();
    assert_eq!(recordings, ["out.jfr"], "one recording");
    // One `jfr summary` (the other tests put files through every reader).
    let summary = flightrec_testkit::Summary::parse(
        &flightrec_testkit::jfr().run_text(&[std::ffi::OsStr::new("summary"), file.as_os_str()]),
    );
    assert!(summary.chunks >= 1, "{:?}", summary.counts);
}

#[test]
fn python_runs_unchanged() {
    runs_unchanged(
        "cli-record-python",
        &[
            "python3",
            "-c",
            "import sys\nprint(sum(i * i for i in range(300000)))\nsys.exit(5)",
        ],
    );
}

#[test]
fn sort_runs_unchanged() {
    let dir = flightrec_testkit::temp_dir("cli-record-sort-input");
    let input = dir.join("lines.txt");
    let text: String = (0..2000)
        .map(|i| format!("{}\n", (i * 7919) % 2003))
        .collect();
    std::fs::write(&input, text).unwrap();
    runs_unchanged("cli-record-sort", &["sort", "-n", input.to_str().unwrap()]);
}

fn assert_refused(args: &[&std::ffi::OsStr], says: &str) {
    let run = flightrec().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(says), "{err:?} does not say {says:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
}

#[test]
fn what_cannot_be_recorded_is_refused_in_one_line() {
    let dir = flightrec_testkit::temp_dir("cli-record-refused");
    let fixed = compile(
        &dir,
        "fixed",
        "int main(void) { return 7; }\n",
        &["-static"],
    );
    assert_refused(
        &["record".as_ref(), "--".as_ref(), fixed.as_os_str()],
        "is statically linked, so no library can be preloaded into it: link libflightrec.a",
    );
    assert_refused(
        &[
            "record".as_ref(),
            "--".as_ref(),
            "no-such-command-here".as_ref(),
        ],
        "no-such-command-here: command not found",
    );
    assert_refused(
        &["record", "--duration", "soon", "--", "true"].map(std::ffi::OsStr::new),
        "`soon` is not a time",
    );
    let run = flightrec()
        .args(["record", "--", "true"])
        .env("FLIGHTREC", "filename=x.jfr")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("FLIGHTREC is set here"),
        "{run:?}"
    );
}
