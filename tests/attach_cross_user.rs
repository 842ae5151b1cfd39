//! Issue 42: no local user can turn `flightrec jcmd` against root.
//!
//! A process of uid 65534 (the `always_on` example, run with its uid and
//! gid set in `pre_exec`) plants symbolic links to root-only files where
//! root's `flightrec jcmd` makes its files: `.attach_pid<pid>` in its
//! working directory and in `/tmp` for the handshake, and the file a
//! `JFR.dump filename=` names. Every root file keeps its bytes and mode,
//! and the client says why it refused. Root controls the uid-65534
//! process, as the JDK's `jcmd` does; uid 65534 cannot control root's.
//!
//! These tests need root (CI runs as root); as another user they fail.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use flightrec_testkit::{self as testkit, example_binary};

const NOBODY: u32 = 65534;
/// What every root file holds: 17 bytes.
const SECRET: &[u8] = b"root only, 17 b.\n";

fn must_be_root() {
    // SAFETY: geteuid only reads the process's credentials.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "these tests play uid 65534 against root: run them as root, as CI does"
    );
}

/// Makes `cmd` run as uid/gid 65534 with no supplementary groups.
fn as_nobody(cmd: &mut Command) -> &mut Command {
    // SAFETY: the closure runs in the forked child before exec and calls
    // only setgroups, setgid, setuid and signal, which are
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(NOBODY) != 0
                || libc::setuid(NOBODY) != 0
                || libc::signal(libc::SIGQUIT, libc::SIG_DFL) == libc::SIG_ERR
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// A directory of uid 65534 (`0755`) under `dir`.
fn nobody_dir(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A root-only file (`0600` in a `0700` directory) holding [`SECRET`].
fn root_file(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join("root-only");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    let f = d.join(name);
    std::fs::write(&f, SECRET).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    f
}

/// The file still holds [`SECRET`], mode `0600`, owned by root.
fn intact(f: &Path) {
    let m = std::fs::symlink_metadata(f).unwrap();
    assert_eq!(
        std::fs::read(f).unwrap(),
        SECRET,
        "{} was changed",
        f.display()
    );
    assert_eq!(m.mode() & 0o7777, 0o600, "{} mode changed", f.display());
    assert_eq!(m.uid(), 0);
}

/// A symbolic link at `at` to `target`, owned by uid 65534 as if that
/// user had planted it.
fn plant(at: &Path, target: &Path) {
    let _ = std::fs::remove_file(at);
    std::os::unix::fs::symlink(target, at).unwrap();
    std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// A running `always_on`, killed when dropped.
struct Service {
    child: Child,
    pid: u32,
}

impl Service {
    /// `always_on` for 600 s, one thread, with `extra` args, in `cwd`, as
    /// uid 65534 if `nobody`.
    fn spawn(nobody: bool, cwd: &Path, extra: &[&str]) -> Service {
        let mut cmd = Command::new(example_binary("always_on"));
        cmd.args(["--seconds", "600", "--threads", "1"])
            .args(extra)
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if nobody {
            as_nobody(&mut cmd);
        } else {
            testkit::child::default_signals(&mut cmd);
        }
        let child = cmd.spawn().expect("always_on runs");
        let pid = child.id();
        Service { child, pid }
    }

    fn socket(&self) -> PathBuf {
        PathBuf::from(format!("/tmp/.java_pid{}", self.pid))
    }

    /// Waits for its socket (`attach=true`).
    fn listening(self) -> Service {
        let socket = self.socket();
        wait_until(|| socket.exists(), "no attach socket");
        self
    }

    /// Waits until it catches SIGQUIT (`--lazy-attach`).
    fn waiting(self) -> Service {
        let pid = self.pid;
        wait_until(
            || {
                std::fs::read_to_string(format!("/proc/{pid}/status"))
                    .unwrap_or_default()
                    .lines()
                    .find_map(|l| l.strip_prefix("SigCgt:"))
                    .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
                    .is_some_and(|m| m & (1 << (libc::SIGQUIT - 1)) != 0)
            },
            "SIGQUIT never caught",
        );
        self
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(self.socket());
    }
}

fn wait_until(cond: impl Fn() -> bool, what: &str) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `flightrec` command of the workspace, built beside the examples.
fn flightrec_command() -> PathBuf {
    let examples = example_binary("always_on");
    let bin = examples
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("flightrec");
    assert!(bin.exists(), "{} not built", bin.display());
    bin
}

/// `flightrec jcmd <pid> <line>`, as root or as uid 65534.
fn jcmd(nobody: bool, pid: u32, line: &[&str]) -> Output {
    let mut cmd = Command::new(flightrec_command());
    cmd.arg("jcmd").arg(pid.to_string()).args(line);
    if nobody {
        as_nobody(&mut cmd);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_planted_trigger_link_is_never_followed_nor_removed() {
    must_be_root();
    let dir = testkit::temp_dir("cross-user-trigger");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = nobody_dir(&dir, "nobody-cwd");
    let in_cwd = root_file(&dir, "cwd-target");
    let in_tmp = root_file(&dir, "tmp-target");

    // The working directory's trigger is planted: refused, named, left;
    // the handshake goes on in /tmp.
    let svc = Service::spawn(true, &home, &["--lazy-attach"]).waiting();
    let pid = svc.pid;
    let cwd_link = home.join(format!(".attach_pid{pid}"));
    plant(&cwd_link, &in_cwd);
    let out = jcmd(false, pid, &["JFR.check"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with(&format!("{pid}:\n")), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "not using /proc/{pid}/cwd/.attach_pid{pid}: it already exists (a symbolic link)"
        )),
        "{stderr}"
    );
    intact(&in_cwd);
    assert!(
        cwd_link.symlink_metadata().is_ok(),
        "the planted link was removed: only what the client created may be"
    );
    assert!(
        Path::new(&format!("/tmp/.attach_pid{pid}"))
            .symlink_metadata()
            .is_err(),
        "the trigger the client made in /tmp was left behind"
    );
    drop(svc);

    // Both places planted: nothing is created, the client says why.
    let svc = Service::spawn(true, &home, &["--lazy-attach"]).waiting();
    let pid = svc.pid;
    let cwd_link = home.join(format!(".attach_pid{pid}"));
    let tmp_link = PathBuf::from(format!("/tmp/.attach_pid{pid}"));
    plant(&cwd_link, &in_cwd);
    plant(&tmp_link, &in_tmp);
    let out = jcmd(false, pid, &["help"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot start the attach listener of process {pid}: refused to use \
             /proc/{pid}/cwd/.attach_pid{pid}: it already exists (a symbolic link)"
        )) && stderr.contains(&format!(
            "/proc/{pid}/root/tmp/.attach_pid{pid}: it already exists (a symbolic link)"
        )),
        "{stderr}"
    );
    intact(&in_cwd);
    intact(&in_tmp);
    assert!(cwd_link.symlink_metadata().is_ok() && tmp_link.symlink_metadata().is_ok());
    assert!(
        !svc.socket().exists(),
        "the listener started without a trigger"
    );
    std::fs::remove_file(&tmp_link).unwrap();
    drop(svc);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dump_to_a_planted_link_is_refused_and_its_target_kept() {
    must_be_root();
    let dir = testkit::temp_dir("cross-user-dump");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let drop_box = nobody_dir(&dir, "nobody-files");
    let target = root_file(&dir, "dump-target");
    let svc = Service::spawn(false, &dir, &[]).listening();
    std::thread::sleep(Duration::from_millis(1500));
    for link in [drop_box.join("out.jfr"), dir.join("planted.jfr")] {
        plant(&link, &target);
        let filename = format!("filename={}", link.display());
        let out = jcmd(false, svc.pid, &["JFR.dump", &filename]);
        let stderr = text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}\n{stderr}",
            text(&out.stdout)
        );
        assert!(
            stderr.contains("Dump failed")
                && stderr.contains("refusing to replace it: it is owned by uid 65534"),
            "{stderr}"
        );
        intact(&target);
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    }
    // The same dump to a path of root's own works (the recording is there).
    let own = dir.join("own.jfr");
    let out = jcmd(
        false,
        svc.pid,
        &["JFR.dump", &format!("filename={}", own.display())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::metadata(&own).unwrap().len() > 0);
    drop(svc);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn root_controls_another_users_process_and_not_the_reverse() {
    must_be_root();
    let dir = testkit::temp_dir("cross-user-control");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = nobody_dir(&dir, "nobody-cwd");
    let theirs = Service::spawn(true, &home, &[]).listening();
    let out = jcmd(false, theirs.pid, &["JFR.check"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!("{}:\n", theirs.pid)) && stdout.contains("always-on"),
        "{stdout}"
    );
    let ours = Service::spawn(false, &dir, &[]).listening();
    let out = jcmd(true, ours.pid, &["JFR.check"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "process {} belongs to another user (uid 0): only its owner or root can control it",
            ours.pid
        )),
        "{stderr}"
    );
    drop((theirs, ours));
    std::fs::remove_dir_all(&dir).unwrap();
}
