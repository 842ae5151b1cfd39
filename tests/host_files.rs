//! Issue 31: nothing of the host's is replaced, redirected or left behind.
//!
//! * A destination (`FLIGHTREC` `filename=`) and a `jcmd JFR.dump
//!   filename=` naming a FIFO, a character device (made with `mknod` in a
//!   temporary directory) or another user's file are refused and left as
//!   they were (type, mode, owner, content).
//! * A normal exit and a stopped `jcmd` recording leave no repository in
//!   the (private) temp directory.
//! * `maxage=18446744073709551615s` through `jcmd` keeps every chunk.
//! * `JFR.start settings=/proc/self/environ` answers an error that holds
//!   nothing of the file.
//! * 20 silent connections to the attach socket do not make JDK 25's
//!   `jcmd` wait.
//!
//! The service is the `always_on` example (`--no-recording`, so only
//! `jcmd` starts recordings), driven with raw attach requests except for
//! the last point, which uses the real `jcmd`.

use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use flightrec_testkit::{self as testkit, example_binary};

/// Type and mode, owner, device number and content of `p`, without
/// following a link (a FIFO or device is never opened).
fn identity(p: &Path) -> (u32, u32, u64, Option<Vec<u8>>) {
    let m = std::fs::symlink_metadata(p).unwrap();
    let content = m.is_file().then(|| std::fs::read(p).unwrap());
    (m.mode(), m.uid(), m.rdev(), content)
}

fn mknod(p: &Path, mode: u32, dev: u64) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    let r = unsafe { libc::mknod(c.as_ptr(), mode, dev) };
    assert_eq!(
        r,
        0,
        "mknod {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid only reads the process's credentials.
    unsafe { libc::geteuid() == 0 }
}

/// A FIFO, and when root a character device with /dev/null's numbers and
/// a regular file of `nobody`, all in `dir`.
fn targets(dir: &Path) -> Vec<PathBuf> {
    let fifo = dir.join("fifo.jfr");
    mknod(&fifo, libc::S_IFIFO | 0o644, 0);
    let mut v = vec![fifo];
    if is_root() {
        let dev = dir.join("null.jfr");
        mknod(&dev, libc::S_IFCHR | 0o666, libc::makedev(1, 3));
        let foreign = dir.join("foreign.jfr");
        std::fs::write(&foreign, b"theirs").unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        v.extend([dev, foreign]);
    } else {
        println!("not root: only the FIFO case runs");
    }
    v
}

/// Names of `flightrec-*` entries in `dir`.
fn repositories(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("flightrec-"))
        .collect()
}

#[test]
fn a_destination_at_a_fifo_device_or_foreign_file_is_refused_and_an_exit_leaves_nothing() {
    let dir = testkit::temp_dir("host_files_dest");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    for t in targets(&dir) {
        let before = identity(&t);
        let run = Command::new(example_binary("env_start"))
            .arg("10")
            .env("FLIGHTREC", format!("filename={}", t.display()))
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{err}");
        assert!(
            err.contains(&t.display().to_string()) && err.contains("refusing"),
            "{err}"
        );
        assert_eq!(identity(&t), before, "{} changed", t.display());
    }
    // A normal run writes its file and leaves no repository.
    let out = dir.join("ok.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("10")
        .env("FLIGHTREC", format!("filename={}", out.display()))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(
        testkit::summary(&out).counts.get("com.example.Work"),
        Some(&10)
    );
    assert_eq!(repositories(&tmp), Vec::<String>::new());
}

/// A running `always_on --no-recording` with a private `TMPDIR`, killed
/// when dropped.
struct Service {
    child: Child,
    pid: u32,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(socket(self.pid));
    }
}

fn socket(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.java_pid{pid}"))
}

/// One raw `jcmd` request: (status, text).
fn jcmd(pid: u32, line: &str) -> (i32, String) {
    let mut s = UnixStream::connect(socket(pid)).expect("the listener accepts");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(format!("1\0jcmd\0{line}\0\0\0").as_bytes())
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (status, text) = reply.split_once('\n').unwrap_or((&reply, ""));
    (status.parse().unwrap(), text.to_owned())
}

fn ok(pid: u32, line: &str) -> String {
    let (status, text) = jcmd(pid, line);
    assert_eq!(status, 0, "{line}: {text}");
    text
}

/// Chunks in a `.jfr` file (headers, back to back).
fn chunks(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    let mut n = 0;
    while at < bytes.len() {
        assert_eq!(&bytes[at..at + 4], b"FLR\0");
        at += u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        n += 1;
    }
    n
}

#[test]
fn jcmd_cannot_replace_files_leak_repositories_wrap_ages_echo_files_or_be_held() {
    let dir = testkit::temp_dir("host_files_jcmd");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let child = Command::new(example_binary("always_on"))
        .args(["--seconds", "600", "--threads", "1", "--no-recording"])
        .env_clear()
        .env("TMPDIR", &tmp)
        .env("SECRET_KEY_ONE", "hunter2")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let svc = Service {
        pid: child.id(),
        child,
    };
    let pid = svc.pid;
    let t = Instant::now();
    while !socket(pid).exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }

    ok(pid, "JFR.start name=x");
    assert_eq!(repositories(&tmp).len(), 1, "the default repository");
    for t in targets(&dir) {
        let before = identity(&t);
        let (status, text) = jcmd(pid, &format!("JFR.dump name=x filename={}", t.display()));
        assert_ne!(status, 0, "{text}");
        assert!(text.contains("refusing"), "{text}");
        assert_eq!(identity(&t), before, "{} changed", t.display());
    }

    // An age past i64 nanoseconds saturates: y keeps all its chunks. A
    // start and a stop beside it end y's chunk twice.
    ok(pid, "JFR.start name=y maxage=18446744073709551615s");
    let check = ok(pid, "JFR.check name=y");
    assert!(!check.contains("maxage=-"), "{check}");
    ok(pid, "JFR.start name=z");
    ok(pid, "JFR.stop name=z");
    let all = dir.join("y.jfr");
    ok(pid, &format!("JFR.dump name=y filename={}", all.display()));
    assert_eq!(chunks(&all), 3, "every chunk of y is kept");

    // A settings file's content never reaches the peer.
    let (status, text) = jcmd(pid, "JFR.start name=e settings=/proc/self/environ");
    assert_ne!(status, 0, "{text}");
    for secret in ["SECRET_KEY_ONE", "hunter2", "TMPDIR"] {
        assert!(!text.contains(secret), "{text}");
    }

    // 20 clients that connect and say nothing: the real jcmd is answered.
    let silent: Vec<UnixStream> = (0..20)
        .map(|_| UnixStream::connect(socket(pid)).unwrap())
        .collect();
    let home = testkit::jfr().home().to_owned();
    let t = Instant::now();
    let out = Command::new(home.join("bin/jcmd"))
        .args([&pid.to_string(), "JFR.check"])
        .output()
        .unwrap();
    let took = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("name=x"), "{text}");
    println!("jcmd answered in {took:?} beside 20 silent connections");
    // One at a time, the silent ones would hold it 20 x 2 s.
    assert!(took < Duration::from_secs(30), "{took:?}");
    drop(silent);

    // Stopped, every jcmd recording takes its repository with it.
    ok(pid, "JFR.stop name=x");
    ok(pid, "JFR.stop name=y");
    assert_eq!(repositories(&tmp), Vec::<String>::new());
}

#[test]
fn a_parent_directory_swapped_during_a_recording_gets_no_chunk() {
    use flightrec::{Recording, RecordingConfig};
    let dir = testkit::temp_dir("host_files_swap");
    let parent = dir.join("parent");
    let repo = parent.join("repo");
    std::fs::create_dir_all(&parent).unwrap();
    let out = dir.join("swap.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(&repo)).unwrap();
    rec.rotate().unwrap();
    // Another user moves the parent away and puts their own in its place.
    std::fs::rename(&parent, dir.join("moved")).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&parent, Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::chown(&repo, Some(65534), Some(65534)).unwrap();
    }
    for _ in 0..3 {
        rec.rotate().unwrap();
    }
    let summary = rec.stop().unwrap();
    assert_eq!(summary.chunks, 5, "{summary:?}");
    assert_eq!(chunks(&out), 5);
    assert_eq!(
        std::fs::read_dir(&repo).unwrap().count(),
        0,
        "a chunk went into the swapped-in directory"
    );
    // The swapped-in directory is not ours to remove either.
    assert!(repo.is_dir());
}
