//! `FLIGHTREC` starts a recording in a program that never mentions one, and
//! the file is written at exit; a bad option string is reported, naming the
//! option, and the program runs unrecorded.

use std::process::{Command, Output};

use flightrec_testkit::example_binary;

#[test]
fn flightrec_env_var_records_a_program_without_code_changes() {
    let dir = flightrec_testkit::temp_dir("env_start");
    let out = dir.join("env.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("4321")
        .env(
            "FLIGHTREC",
            format!(
                "filename={},settings=profile,com.example.Work#enabled=true",
                out.display()
            ),
        )
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("com.example.Work").copied(), Some(4321));

    // An override disabling the event: the file holds none.
    let off = dir.join("off.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("100")
        .env(
            "FLIGHTREC",
            format!("filename={},com.example.Work#enabled=false", off.display()),
        )
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(
        flightrec_testkit::summary(&off)
            .counts
            .get("com.example.Work")
            .copied(),
        Some(0)
    );
}

#[test]
fn a_bad_option_string_is_reported_and_nothing_is_recorded() {
    let run = Command::new(example_binary("env_start"))
        .arg("10")
        .env("FLIGHTREC", "filename=/tmp/never.jfr,maxsize=12q")
        .output()
        .unwrap();
    assert!(run.status.success(), "the program still runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("maxsize=12q") && err.contains("not a size"),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "committed 10");
}

/// Runs `env_start 10` with `FLIGHTREC=options`: (exit ok, stdout, stderr, pid).
fn run_with(options: &str) -> (bool, String, String, u32) {
    let child = Command::new(example_binary("env_start"))
        .arg("10")
        .env("FLIGHTREC", options)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        pid,
    )
}

#[test]
fn dumponexit_false_writes_no_file_and_name_reaches_active_recording() {
    let dir = flightrec_testkit::temp_dir("env_options");
    let off = dir.join("off.jfr");
    let (ok, _, err, _) = run_with(&format!("filename={},dumponexit=false", off.display()));
    assert!(ok, "{err}");
    assert!(!off.exists(), "dumponexit=false wrote {}", off.display());

    let named = dir.join("named.jfr");
    let (ok, _, err, _) = run_with(&format!(
        "filename={},name=nightly build,maxage=1h,maxsize=100M,com.example.Work#enabled=true",
        named.display()
    ));
    assert!(ok, "{err}");
    let events = flightrec_testkit::print_json(&named);
    let rec: Vec<_> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.ActiveRecording")
        .collect();
    assert_eq!(rec.len(), 1, "one chunk, one jdk.ActiveRecording");
    let v = &rec[0]["values"];
    assert_eq!(v["name"], "nightly build");
    assert_eq!(v["destination"], named.display().to_string());
    assert_eq!(v["disk"], true);
    let view = flightrec_testkit::view("active-recordings", &named);
    assert!(
        view.contains("nightly build") && view.contains("1 h"),
        "{view}"
    );
}

#[test]
fn filename_expands_pid_and_start_time() {
    let dir = flightrec_testkit::temp_dir("env_expand");
    let (ok, _, err, pid) = run_with(&format!("filename={}/app-%p-%t.jfr", dir.display()));
    assert!(ok, "{err}");
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let prefix = format!("app-{pid}-");
    let stamp = names[0]
        .strip_prefix(&prefix)
        .and_then(|n| n.strip_suffix(".jfr"))
        .unwrap_or_else(|| panic!("{names:?} does not start with {prefix}"));
    // yyyy_MM_dd_HH_mm_ss
    let parts: Vec<&str> = stamp.split('_').collect();
    let widths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
    assert_eq!(widths, [4, 2, 2, 2, 2, 2], "{stamp}");
    assert!(
        stamp.bytes().all(|b| b.is_ascii_digit() || b == b'_'),
        "{stamp}"
    );
}

#[test]
fn bad_destinations_and_options_fail_at_start_naming_them() {
    let dir = flightrec_testkit::temp_dir("env_bad");
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    for (options, want) in [
        (
            format!("filename={}/missing/x.jfr", dir.display()),
            format!(
                "cannot write the recording to {}/missing/x.jfr",
                dir.display()
            ),
        ),
        (
            format!("filename={}/x.jfr", file.display()),
            format!("{}/x.jfr: Not a directory", file.display()),
        ),
        (",,,".to_owned(), "holds no option".to_owned()),
        (
            "maxchunksize=1k".to_owned(),
            "option `maxchunksize=1k`: must be at least 64k".to_owned(),
        ),
        (
            "flush-interval=1ms".to_owned(),
            "option `flush-interval=1ms`: must be 10 ms ..= 1 h".to_owned(),
        ),
        (
            "com.example.Work#throttle=10ms".to_owned(),
            "`com.example.Work#throttle` is not supported".to_owned(),
        ),
        (
            "jdk.ExecutionSample#throttle=10ms".to_owned(),
            "`jdk.ExecutionSample#throttle` is not supported".to_owned(),
        ),
        (
            "signal=SIGSEGV".to_owned(),
            "option `signal=SIGSEGV`".to_owned(),
        ),
        (
            "signal=33".to_owned(),
            "may not be used for sampling".to_owned(),
        ),
    ] {
        let (ok, out, err, _) = run_with(&options);
        assert!(ok, "{options}: the program still runs");
        assert_eq!(out.trim(), "committed 10");
        assert!(err.contains(&want), "{options}: {err}");
        assert_eq!(err.lines().count(), 1, "{options}: one line: {err}");
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "nothing written"
    );
}

#[test]
fn settings_for_a_type_that_never_registered_are_named() {
    let dir = flightrec_testkit::temp_dir("env_unknown");
    let out = dir.join("x.jfr");
    let (ok, _, err, _) = run_with(&format!(
        "filename={},com.example.Nope#enabled=true,com.example.Work#enabled=true",
        out.display()
    ));
    assert!(ok, "{err}");
    assert!(err.contains("`com.example.Nope`"), "{err}");
    assert!(!err.contains("com.example.Work"), "{err}");
    assert!(out.exists());
}

/// `env_start 10` with `FLIGHTREC=filename=<dir>/x.jfr`, run by `launcher`
/// (its arguments before the program's).
fn run_under(launcher: &[&str], bin: &std::path::Path, dest: &std::path::Path) -> Output {
    let (cmd, pre) = launcher.split_first().expect("a launcher");
    Command::new(cmd)
        .args(pre)
        .arg(bin)
        .arg("10")
        .env("FLIGHTREC", format!("filename={}", dest.display()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"))
}

fn found(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Root ignores mode bits, so the directory check runs as an unprivileged
/// user (uid/gid 65534 through `setpriv`), on a copy of the program it can
/// execute, in a directory of mode 0555: the start fails, naming the path
/// and the reason, the program runs on unrecorded, and nothing is written.
#[test]
fn a_read_only_directory_fails_at_start() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root && !found("setpriv") {
        println!("skipped: running as root and setpriv is missing, so mode bits cannot be tested");
        return;
    }
    let dir = flightrec_testkit::temp_dir("env_read_only");
    // Reachable by everyone: the test's directories above are root's.
    let open = std::env::temp_dir().join(format!("flightrec-ro-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&open);
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = open.join("env_start");
    std::fs::copy(example_binary("env_start"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = open.join("read-only");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let dest = ro.join("x.jfr");
    let launcher: &[&str] = if root {
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]
    } else {
        &["env", "--"]
    };
    let run = run_under(launcher, &bin, &dest);
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    let listed = std::fs::read_dir(&ro).unwrap().count();
    let _ = std::fs::remove_dir_all(&open);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(run.status.success(), "the program still runs: {err}");
    assert_eq!(out.trim(), "committed 10", "{err}");
    let want = format!(
        "cannot write the recording to {}: Permission denied",
        dest.display()
    );
    assert!(err.contains(&want), "{want} in:\n{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert_eq!(listed, 0, "nothing written in the read-only directory");
}

/// A read-only file system fails the start even for root (whom mode bits
/// do not stop): a tmpfs mounted read-only in a private mount namespace
/// (`unshare --mount`), which vanishes with the program.
#[test]
fn a_read_only_file_system_fails_at_start_even_for_root() {
    if !found("unshare") {
        println!("skipped: unshare is missing");
        return;
    }
    let dir = flightrec_testkit::temp_dir("env_read_only_fs");
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let probe = Command::new("unshare")
        .args(["--mount", "mount", "-t", "tmpfs", "-o", "ro", "tmpfs"])
        .arg(&mnt)
        .output()
        .unwrap();
    if !probe.status.success() {
        println!(
            "skipped: cannot mount a read-only tmpfs here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return;
    }
    let dest = mnt.join("x.jfr");
    let script = format!(
        "mount -t tmpfs -o ro tmpfs '{}' && exec \"$0\" \"$@\"",
        mnt.display()
    );
    let run = run_under(
        &["unshare", "--mount", "sh", "-c", &script],
        &example_binary("env_start"),
        &dest,
    );
    let (out, err) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(run.status.success(), "the program still runs: {err}");
    assert_eq!(out.trim(), "committed 10", "{err}");
    let want = format!(
        "cannot write the recording to {}: Read-only file system",
        dest.display()
    );
    assert!(err.contains(&want), "{want} in:\n{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert_eq!(std::fs::read_dir(&mnt).unwrap().count(), 0);
}
