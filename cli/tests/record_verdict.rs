//! Issue 42: `flightrec record` says "recording written" only for a file
//! this run's recorder reported written, names the cause when nothing was
//! recorded, and records only the program started (and what it `exec`s in
//! place) unless `--children` is given.
//!
//! * A stale file at `-o` (from 2020) is not called written when the
//!   program leaves by `_exit`; it is replaced when the program records.
//! * Another user's link or file at `-o` is refused, named, left as it was.
//! * A `/bin/sh` (dash) script, `/bin/sh -c`, and `env -i` (a cleared
//!   environment): the line says why, where the chunks are and which
//!   `flightrec assemble` recovers them, and that command does.
//! * Secure mode, as the kernel really sets it: as root, a copy setuid to
//!   uid 65534 and one setgid to gid 65534 (root's own setuid copy is not
//!   secure and records); as uid 65534, a root-owned setuid copy and one
//!   with file capabilities. Each is named; the program still runs.
//! * A pyenv-style shim (six child commands, then `exec`): one file by
//!   default, its children bare (one thread, nothing on stderr, nothing
//!   left in `TMPDIR`); with `--children`, one file per descendant.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// One recorded run at a time: two would share the two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A test directory with a `tmp/` (mode 0777) for `TMPDIR`.
fn test_dir(name: &str) -> PathBuf {
    let dir = flightrec_testkit::temp_dir(name);
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

fn flightrec(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flightrec"));
    c.env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD")
        .env("TMPDIR", dir.join("tmp"))
        .current_dir(dir);
    c
}

fn record(dir: &Path, out: &Path, flags: &[&str], cmd: &[&std::ffi::OsStr]) -> Output {
    flightrec(dir)
        .arg("record")
        .arg("-o")
        .arg(out)
        .args(flags)
        .arg("--")
        .args(cmd)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn last_line(out: &Output) -> String {
    stderr(out).lines().last().unwrap_or_default().to_owned()
}

fn assert_not_written(run: &Output) {
    let err = stderr(run);
    assert!(!err.contains("written to"), "says written:\n{err}");
    assert!(
        last_line(run).starts_with("flightrec: nothing recorded"),
        "{err}"
    );
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// A small dynamically linked program that exits with status 5.
fn five(dir: &Path, name: &str) -> PathBuf {
    let src = dir.join("five.c");
    std::fs::write(&src, "int main(void) { return 5; }\n").unwrap();
    let exe = dir.join(name);
    let cc = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(cc.status.success(), "cc: {cc:?}");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

/// Sets the modification time of `path` to 2020-01-01.
fn age(path: &Path) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_577_836_800);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path, uid: Option<u32>, gid: Option<u32>) {
    std::os::unix::fs::lchown(path, uid, gid).unwrap();
}

#[test]
fn a_stale_file_is_never_called_written() {
    let _alone = alone();
    let dir = test_dir("cli-verdict-stale");
    let out = dir.join("stale.jfr");
    std::fs::write(&out, "a recording of 2020").unwrap();
    age(&out);
    // dash leaves by `_exit`: its recorder never writes.
    let run = record(&dir, &out, &[], &[os("/bin/sh"), os("-c"), os("exit 4")]);
    assert_eq!(run.status.code(), Some(4), "{run:?}");
    assert_not_written(&run);
    assert!(last_line(&run).contains("`_exit`"), "{}", stderr(&run));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "a recording of 2020"
    );
    // A program that records replaces it, and is said to.
    let run = record(&dir, &out, &[], &[os("/bin/true")]);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert_eq!(
        last_line(&run),
        format!("flightrec: recording written to {}", out.display())
    );
    assert_eq!(flightrec_testkit::summary(&out).chunks, 1);
}

#[test]
fn another_users_link_or_file_is_refused_and_named() {
    assert!(
        is_root(),
        "chown to another user needs root (CI runs as root)"
    );
    let _alone = alone();
    let dir = test_dir("cli-verdict-refused");
    let target = dir.join("target.txt");
    std::fs::write(&target, "theirs").unwrap();
    let link = dir.join("link.jfr");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    chown(&link, Some(65534), None);
    let file = dir.join("file.jfr");
    std::fs::write(&file, "theirs too").unwrap();
    chown(&file, Some(65534), None);
    for (out, what) in [(&link, "symbolic link"), (&file, "file")] {
        let run = record(&dir, out, &[], &[os("/bin/true")]);
        assert_eq!(run.status.code(), Some(0), "{run:?}");
        assert_not_written(&run);
        let last = last_line(&run);
        assert!(
            last.contains("the recorder refused the output")
                && last.contains(&out.display().to_string())
                && last.contains("owned by uid 65534")
                && last.contains("choose another -o"),
            "{what}: {last}"
        );
    }
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "theirs too");
}

/// The repository named in `line`'s `flightrec assemble DIR -o FILE`.
fn assemble_dir(line: &str) -> PathBuf {
    let cmd = line
        .split('`')
        .find(|s| s.starts_with("flightrec assemble "))
        .unwrap_or_else(|| panic!("no assemble command: {line}"));
    let words: Vec<&str> = cmd.split(' ').collect();
    assert_eq!(words[3], "-o", "{cmd}");
    PathBuf::from(words[2])
}

#[test]
fn a_dash_script_that_exits_says_where_its_chunks_are_and_assemble_recovers_them() {
    let _alone = alone();
    let dir = test_dir("cli-verdict-dash");
    let script = dir.join("script.sh");
    // Sleeps past a flush (every second) so chunks are on disk.
    std::fs::write(&script, "#!/bin/sh\nsleep 3\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.join("script.jfr");
    let run = record(&dir, &out, &[], &[script.as_os_str()]);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert_not_written(&run);
    let last = last_line(&run);
    assert!(
        last.contains(&format!("nothing recorded at {}", out.display()))
            && last.contains("`_exit`"),
        "{last}"
    );
    assert!(!out.exists());
    let repo = assemble_dir(&last);
    assert!(repo.starts_with(dir.join("tmp")), "{last}");
    let assembled = flightrec(&dir)
        .arg("assemble")
        .arg(&repo)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(assembled.status.success(), "{assembled:?}");
    let summary = flightrec_testkit::summary(&out);
    assert!(summary.chunks >= 1, "{summary:?}");
    assert!(
        summary
            .counts
            .get("jdk.ActiveRecording")
            .is_some_and(|&n| n > 0),
        "{summary:?}"
    );
    // `env -i` clears the environment of what it `exec`s: named too.
    let cleared = dir.join("cleared.jfr");
    let run = record(&dir, &cleared, &[], &[os("env"), os("-i"), os("/bin/true")]);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert_not_written(&run);
    assert!(
        last_line(&run).contains("its environment cleared"),
        "{}",
        stderr(&run)
    );
}

/// `exe` recorded (as uid 65534 when `nobody`); it runs all the same
/// (status 5).
fn secure(dir: &Path, exe: &Path, nobody: bool) -> Output {
    let out = dir.join(format!(
        "{}.jfr",
        exe.file_name().unwrap().to_string_lossy()
    ));
    let mut cmd = if nobody {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            env!("CARGO_BIN_EXE_flightrec"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_flightrec"))
    };
    let run = cmd
        .env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD")
        .env("TMPDIR", dir.join("tmp"))
        .current_dir(dir)
        .arg("record")
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(5), "it ran: {run:?}");
    run
}

#[test]
fn secure_mode_is_named_as_the_reason() {
    assert!(
        is_root(),
        "setuid copies of another user need root (CI runs as root)"
    );
    let _alone = alone();
    let dir = test_dir("cli-verdict-secure");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let setuid = five(&dir, "setuid");
    chown(&setuid, Some(65534), None);
    std::fs::set_permissions(&setuid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let setgid = five(&dir, "setgid");
    chown(&setgid, None, Some(65534));
    std::fs::set_permissions(&setgid, std::fs::Permissions::from_mode(0o2755)).unwrap();
    let own = five(&dir, "own_setuid");
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let caps = five(&dir, "caps");
    let setcap = Command::new("setcap")
        .args(["cap_net_bind_service+ep"])
        .arg(&caps)
        .output()
        .expect("setcap (libcap2-bin)");
    assert!(setcap.status.success(), "{setcap:?}");

    // As root: another user's setuid and setgid bits give secure mode.
    let run = secure(&dir, &setuid, false);
    assert_not_written(&run);
    let last = last_line(&run);
    assert!(
        last.contains("is setuid (it runs as uid 65534, you are uid 0)")
            && last.contains("drops LD_PRELOAD"),
        "{last}"
    );
    let run = secure(&dir, &setgid, false);
    assert_not_written(&run);
    assert!(
        last_line(&run).contains("is setgid (it runs as gid 65534, yours is 0)"),
        "{}",
        stderr(&run)
    );
    // Root's own setuid program runs as root: not secure, recorded.
    let run = secure(&dir, &own, false);
    let file = dir.join("own_setuid.jfr");
    assert_eq!(
        last_line(&run),
        format!("flightrec: recording written to {}", file.display())
    );
    // As uid 65534: a root-owned setuid program, and file capabilities.
    let run = secure(&dir, &own, true);
    assert_not_written(&run);
    assert!(
        last_line(&run).contains("is setuid (it runs as uid 0, you are uid 65534)"),
        "{}",
        stderr(&run)
    );
    let run = secure(&dir, &caps, true);
    assert_not_written(&run);
    assert!(
        last_line(&run).contains("has file capabilities"),
        "{}",
        stderr(&run)
    );
}

/// The external commands the shim runs in children before it `exec`s.
const CHILDREN: [&str; 6] = ["dirname", "basename", "cat", "true", "ls", "wc"];

/// A pyenv-style shim: `env bash`, then each of [`CHILDREN`] in a child
/// (command substitutions, a subshell, a pipe), then `exec` of a real
/// program.
const SHIM: &str = r#"#!/usr/bin/env bash
set -e
here="$(dirname "$0")"
name="$(basename "$0")"
cat /dev/null
( /bin/true )
ls /proc/self/task | wc -l
exec "$here/five"
"#;

#[test]
fn a_shim_writes_one_file_and_with_children_one_per_descendant() {
    let _alone = alone();
    let dir = test_dir("cli-verdict-shim");
    five(&dir, "five");
    let shim = dir.join("python3");
    std::fs::write(&shim, SHIM).unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = dir.join("one").join("py.jfr");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let run = record(&dir, &out, &[], &[shim.as_os_str()]);
    assert_eq!(run.status.code(), Some(5), "{run:?}");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "1\n",
        "ls: one thread"
    );
    assert_eq!(
        stderr(&run),
        format!("flightrec: recording written to {}\n", out.display()),
        "children said nothing"
    );
    assert_eq!(names(out.parent().unwrap()), ["py.jfr"]);
    assert_eq!(
        names(&dir.join("tmp")),
        Vec::<String>::new(),
        "left in TMPDIR"
    );
    assert_eq!(flightrec_testkit::summary(&out).chunks, 1);

    let out = dir.join("all").join("py.jfr");
    std::fs::create_dir(out.parent().unwrap()).unwrap();
    let run = record(&dir, &out, &["--children"], &[shim.as_os_str()]);
    assert_eq!(run.status.code(), Some(5), "{run:?}");
    let threads: u32 = String::from_utf8_lossy(&run.stdout).trim().parse().unwrap();
    assert!(threads > 1, "ls recorded: {threads} threads");
    let files = names(out.parent().unwrap());
    assert_eq!(files.len(), 1 + CHILDREN.len(), "{files:?}");
    assert!(files.contains(&"py.jfr".to_owned()), "{files:?}");
    let mut pids: Vec<u32> = files
        .iter()
        .filter(|f| *f != "py.jfr")
        .map(|f| {
            f.strip_prefix("py-")
                .and_then(|f| f.strip_suffix(".jfr"))
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("{f}"))
        })
        .collect();
    pids.dedup();
    assert_eq!(pids.len(), CHILDREN.len());
    let lines: Vec<String> = stderr(&run).lines().map(str::to_owned).collect();
    assert_eq!(
        lines.last().unwrap(),
        &format!("flightrec: recording written to {}", out.display())
    );
    assert!(
        lines[lines.len() - 2].starts_with(&format!(
            "flightrec: {} recordings of descendants written beside it",
            CHILDREN.len()
        )),
        "{lines:?}"
    );
    assert_eq!(
        names(&dir.join("tmp")),
        Vec::<String>::new(),
        "left in TMPDIR"
    );
    let child = files.iter().find(|f| *f != "py.jfr").unwrap();
    assert_eq!(
        flightrec_testkit::summary(&out.with_file_name(child)).chunks,
        1
    );
}
