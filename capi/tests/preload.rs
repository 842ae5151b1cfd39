//! `LD_PRELOAD=libflightrec.so` profiles a program that has never heard of
//! flightrec (`tests/c/burn.c`: no include, no link). With `FLIGHTREC` set
//! the recording starts before `main` and is written at exit, whether
//! `main` returns or calls `exit()`, and its CPU-heavy function tops `jfr
//! view cpu-time-hot-methods`. Without `FLIGHTREC` the program runs
//! unchanged: same output, same exit status, no file, nothing on stderr.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use support::{Link, capi_dir, compile, hot_methods, lib_dir};

/// One profiled run at a time: two would share the two cores.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

const SPINS: &str = "300000000";

fn burn(dir: &Path) -> std::path::PathBuf {
    compile(
        &capi_dir().join("tests/c/burn.c"),
        &dir.join("burn"),
        Link::None,
    )
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run the program")
}

/// `exe args`, without the test's own `FLIGHTREC` or `LD_PRELOAD`.
fn plain(exe: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD");
    cmd
}

/// [`plain`] with `libflightrec.so` preloaded.
fn preloaded(exe: &Path, args: &[&str]) -> Command {
    let mut cmd = plain(exe, args);
    cmd.env("LD_PRELOAD", lib_dir().join("libflightrec.so"));
    cmd
}

fn profile(exit_with_exit: bool, name: &str) {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir(name);
    let exe = burn(&dir);
    let out = dir.join("OUT.jfr");
    let mut args = vec![SPINS];
    if exit_with_exit {
        args.push("exit");
    }
    let run = preloaded(&exe, &args)
        .env(
            "FLIGHTREC",
            format!("filename={},settings=profile", out.display()),
        )
        .output()
        .expect("run burn");
    assert_eq!(run.status.code(), Some(3), "{run:?}");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        format!("burned {SPINS}\n")
    );
    assert!(out.exists(), "no file written at exit: {run:?}");
    let view = flightrec_testkit::view("cpu-time-hot-methods", &out);
    let hot = hot_methods(&view);
    assert_eq!(
        hot.first().map(|(m, _)| m.as_str()),
        Some("burn.spin_the_wheel()"),
        "not on top:\n{view}"
    );
    let count = |m: &str| hot.iter().find(|(n, _)| n == m).map_or(0, |(_, c)| *c);
    assert!(
        count("burn.spin_the_wheel()") >= 10 * count("burn.idle_a_bit()").max(1) / 2,
        "spin_the_wheel not far above idle_a_bit:\n{view}"
    );
    flightrec_testkit::assert_prints(&out);
}

#[test]
fn preload_profiles_a_program_that_returns_from_main() {
    profile(false, "preload-return");
}

#[test]
fn preload_profiles_a_program_that_calls_exit() {
    profile(true, "preload-exit");
}

#[test]
fn preload_without_flightrec_changes_nothing() {
    let dir = flightrec_testkit::temp_dir("preload-unset");
    let exe = burn(&dir);
    let before: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let bare = run(plain(&exe, &["1000000"]).current_dir(&dir));
    let loaded = run(preloaded(&exe, &["1000000"]).current_dir(&dir));
    assert_eq!(bare.status.code(), Some(3));
    assert_eq!(loaded.status.code(), bare.status.code());
    assert_eq!(loaded.stdout, bare.stdout);
    assert_eq!(String::from_utf8_lossy(&loaded.stderr), "");
    let after: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(before, after, "files appeared");
    // The library really was loaded: its constructor ran and found nothing.
    let maps = run(preloaded(Path::new("/bin/cat"), &["/proc/self/maps"]).current_dir(&dir));
    assert!(
        String::from_utf8_lossy(&maps.stdout).contains("libflightrec.so"),
        "libflightrec.so not mapped"
    );
}
