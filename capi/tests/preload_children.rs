//! Issue 31: children a preloaded program `exec`s inherit `LD_PRELOAD` and
//! `FLIGHTREC`. With `children=true` each writes a file of its own
//! (`-<pid>` before the extension) instead of overwriting its parent's,
//! images replaced by `exec` leave no repository behind, and nothing is
//! left in the temp directory after a normal exit.
//!
//! Issue 42: without it (the default) only the first process and the
//! images it `exec`s in place record; every child runs bare (one thread,
//! no file, no repository, nothing on stderr).

#[allow(unused_imports)]
mod support;

use std::path::Path;
use std::process::Command;

use support::lib_dir;

/// Names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// `script` run by `/bin/sh` under `LD_PRELOAD` with `FLIGHTREC` writing
/// `<dir>/out.jfr` (and `extra` options), `TMPDIR` in `<dir>/tmp`.
fn run_preloaded(dir: &Path, script: &str, extra: &str) -> std::process::Output {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = dir.join("out.jfr");
    Command::new("/bin/sh")
        .args(["-c", script])
        .env("LD_PRELOAD", lib_dir().join("libflightrec.so"))
        .env("FLIGHTREC", format!("filename={}{extra}", out.display()))
        .env("TMPDIR", &tmp)
        .env_remove("FLIGHTREC_ROOT_PID")
        .output()
        .unwrap()
}

/// The shell forks and execs 20 children (each preloaded), then replaces
/// itself twice by `exec` (same pid, no exit handlers).
const TWENTY: &str = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do \
                      /bin/true; done; exec /bin/sh -c 'exec /bin/true'";

#[test]
fn by_default_children_run_bare_and_only_the_root_records() {
    let dir = flightrec_testkit::temp_dir("preload_children_bare");
    // Two children count their own threads: a recording one has more.
    let script = format!("ls /proc/self/task | wc -l; {TWENTY}");
    let run = run_preloaded(&dir, &script, "");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "nothing on stderr: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "1",
        "one thread"
    );
    assert_eq!(
        names(&dir.join("tmp")),
        Vec::<String>::new(),
        "left in TMPDIR"
    );
    assert_eq!(names(&dir), ["out.jfr", "tmp"], "only the root's file");
    let summary = flightrec_testkit::summary(&dir.join("out.jfr"));
    assert_eq!(summary.chunks, 1, "{summary:?}");
}

#[test]
fn twenty_exec_children_write_their_own_files_and_leave_no_repository() {
    let dir = flightrec_testkit::temp_dir("preload_children");
    let tmp = dir.join("tmp");
    let run = run_preloaded(&dir, TWENTY, ",children=true");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.is_empty(), "nothing on stderr: {stderr}");
    assert_eq!(names(&tmp), Vec::<String>::new(), "left in TMPDIR");
    let files: Vec<String> = names(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".jfr"))
        .collect();
    // The shell's last image writes out.jfr, each child out-<pid>.jfr.
    assert_eq!(files.len(), 21, "{files:?}");
    assert!(files.contains(&"out.jfr".to_owned()), "{files:?}");
    for f in &files {
        let pid = f.strip_prefix("out-").and_then(|f| f.strip_suffix(".jfr"));
        assert!(
            f == "out.jfr" || pid.is_some_and(|p| p.parse::<u32>().is_ok()),
            "{f}"
        );
    }
    // One child's file reads back as a recording.
    let child = files.iter().find(|f| *f != "out.jfr").unwrap();
    let summary = flightrec_testkit::summary(&dir.join(child));
    assert_eq!(summary.chunks, 1, "{summary:?}");
}
