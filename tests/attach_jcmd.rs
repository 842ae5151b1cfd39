//! Issue 16: the JDK's own `jcmd` controls a running flightrec process
//! over the HotSpot attach socket (`attach=true`), and the listener
//! survives hostile clients.
//!
//! Each test runs the `always_on` example and drives it with the real
//! `jcmd` of JDK 25 (the testkit's JDK; its `bin/jcmd` must exist) and,
//! where installed, JDK 17's.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use flightrec_testkit::{self as testkit, example_binary};

const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// A running `always_on`, killed when dropped. It is asked to run for
/// 600 s: on a loaded machine each `jcmd` (a JVM start) can take seconds,
/// and a service that ends on its own mid-test removes its socket.
struct Service {
    child: Child,
    pid: u32,
    /// What it wrote on stderr so far, read as it comes by `reader`.
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Service {
    /// Starts it and waits for its socket.
    fn start(args: &[&str]) -> Service {
        let svc = Service::spawn(args, libc::SIG_DFL);
        let socket = socket(svc.pid);
        wait_until(|| socket.exists(), &format!("no {}", socket.display()));
        svc
    }

    /// Starts it with `--lazy-attach` and waits until it catches SIGQUIT.
    fn start_lazy(args: &[&str]) -> Service {
        Service::start_lazy_with(args, libc::SIG_DFL)
    }

    /// `start_lazy` with SIGQUIT's disposition at exec `sigquit`
    /// (`SIG_DFL` or `SIG_IGN`), whatever this test inherited: a shell's
    /// background job starts with SIGQUIT ignored.
    fn start_lazy_with(args: &[&str], sigquit: libc::sighandler_t) -> Service {
        let svc = Service::spawn(&[args, &["--lazy-attach"]].concat(), sigquit);
        wait_until(|| svc.catches_sigquit(), "SIGQUIT never caught");
        svc
    }

    fn spawn(args: &[&str], sigquit: libc::sighandler_t) -> Service {
        let mut cmd = Command::new(example_binary("always_on"));
        cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
        // SAFETY: the closure runs in the forked child before exec and
        // calls only `signal`, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::signal(libc::SIGQUIT, sigquit) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
                // As a service manager starts it, whatever the test inherited.
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("always_on runs");
        let pid = child.id();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let reader = {
            let stderr = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut buf) {
                    stderr
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        Service {
            child,
            pid,
            stderr,
            reader: Some(reader),
        }
    }

    /// Whether `/proc/<pid>/status` shows SIGQUIT caught (`SigCgt`, bit 2),
    /// as JDK 25's `jcmd` checks before it sends SIGQUIT.
    fn catches_sigquit(&self) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (libc::SIGQUIT - 1)) != 0)
    }

    /// Whether the process still runs.
    fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Resident memory in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// What it wrote on stderr so far.
    fn stderr_now(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Kills it and returns what it wrote on stderr.
    fn finish(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.stderr_now()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // SIGKILL skips the process's exit handler, which removes it.
        let _ = std::fs::remove_file(socket(self.pid));
    }
}

/// Polls `cond` for up to 10 s.
fn wait_until(cond: impl Fn() -> bool, what: &str) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < Duration::from_secs(10), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn socket(pid: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.java_pid{pid}"))
}

/// `jcmd <pid> <line>` with the `jcmd` under `home`: (exit 0, stdout, stderr).
fn jcmd(home: &Path, pid: u32, line: &str) -> (bool, String, String) {
    let out = Command::new(home.join("bin/jcmd"))
        .arg(pid.to_string())
        .args(line.split(' '))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}/bin/jcmd: {e}", home.display()));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `jcmd` that must succeed; its stdout.
fn ok(home: &Path, pid: u32, line: &str) -> String {
    let (success, out, err) = jcmd(home, pid, line);
    assert!(success, "jcmd {line} failed:\n{out}\n{err}");
    out
}

fn jdk25() -> PathBuf {
    let home = testkit::jfr().home().to_owned();
    assert!(
        home.join("bin/jcmd").exists(),
        "{} has no bin/jcmd (a JDK, not a bare runtime, is needed)",
        home.display()
    );
    home
}

/// Start, check, dump, stop: the sequence of the issue, with `home`'s jcmd.
fn start_check_dump_stop(home: &Path, dir: &Path) {
    let svc = Service::start(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    let pid = svc.pid;
    assert!(ok(home, pid, "JFR.check").contains("No available recordings."));

    let started = ok(
        home,
        pid,
        "JFR.start name=a settings=profile disk=false maxage=30s",
    );
    assert!(started.contains("Started recording "), "{started}");
    assert!(
        started.contains(&format!("Use jcmd {pid} JFR.dump name=a")),
        "{started}"
    );

    let check = ok(home, pid, "JFR.check");
    assert!(
        check.contains("name=a maxage=30s") && check.contains("(running)"),
        "{check}"
    );

    std::thread::sleep(Duration::from_millis(1500));
    let file = dir.join("a.jfr");
    let dumped = ok(
        home,
        pid,
        &format!("JFR.dump name=a filename={}", file.display()),
    );
    assert!(dumped.contains("Dumped recording \"a\""), "{dumped}");
    assert!(dumped.contains(&file.display().to_string()), "{dumped}");
    let summary = testkit::summary(&file);
    for ty in [
        "com.example.Request",
        "jdk.CPUTimeSample",
        "jdk.ActiveRecording",
        "jdk.ActiveSetting",
    ] {
        assert!(
            summary.counts.get(ty).copied().unwrap_or(0) > 0,
            "no {ty} in the dump: {summary:?}"
        );
    }

    let stopped = ok(home, pid, "JFR.stop name=a");
    assert!(stopped.contains("Stopped recording \"a\""), "{stopped}");
    assert!(ok(home, pid, "JFR.check").contains("No available recordings."));
    // Stopped means stopped: a second stop finds nothing.
    let (success, _, err) = jcmd(home, pid, "JFR.stop name=a");
    assert!(!success && err.contains("Could not find a."), "{err}");
}

#[test]
fn jcmd_25_starts_checks_dumps_and_stops_a_recording() {
    let home = jdk25();
    let dir = testkit::temp_dir("attach-jdk25");
    start_check_dump_stop(&home, &dir);

    let svc = Service::start(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    let help = ok(&home, svc.pid, "help");
    for cmd in [
        "JFR.start",
        "JFR.check",
        "JFR.dump",
        "JFR.stop",
        "JFR.configure",
        "help",
    ] {
        assert!(help.lines().any(|l| l == cmd), "{cmd} not in help:\n{help}");
    }
    let (success, out, err) = jcmd(&home, svc.pid, "Bogus.cmd");
    assert!(!success, "an unknown command must fail: {out}");
    assert!(err.contains("Unknown diagnostic command"), "{err}");
    let (success, _, err) = jcmd(&home, svc.pid, "JFR.start name=x bogus=1");
    assert!(
        !success && err.contains("Unknown argument 'bogus'"),
        "{err}"
    );
}

#[test]
fn jcmd_17_starts_checks_dumps_and_stops_a_recording() {
    let home = Path::new(JDK17);
    if !home.join("bin/jcmd").exists() {
        println!("skipped: no JDK 17 at {JDK17} (the JDK 25 test still runs)");
        return;
    }
    let dir = testkit::temp_dir("attach-jdk17");
    start_check_dump_stop(home, &dir);
}

#[test]
fn the_always_on_recording_keeps_a_bounded_window_and_dumps_it() {
    let home = jdk25();
    let dir = testkit::temp_dir("attach-always-on");
    // Chunks rotate every second (a quarter of maxage) and age out after 4 s
    // (the in-memory bound raised so that maxage, not memory_size, sets the
    // window).
    let svc = Service::start(&[
        "--seconds",
        "600",
        "--threads",
        "1",
        "--maxage",
        "4s",
        "--memory-mib",
        "256",
    ]);
    let check = ok(&home, svc.pid, "JFR.check");
    assert!(
        check.contains("name=always-on maxage=4s disk=false (running)"),
        "{check}"
    );
    std::thread::sleep(Duration::from_secs(8));
    let file = dir.join("window.jfr");
    ok(
        &home,
        svc.pid,
        &format!("JFR.dump filename={}", file.display()),
    );
    let text = testkit::jfr().run_text(&[std::ffi::OsStr::new("summary"), file.as_os_str()]);
    let summary = testkit::Summary::parse(&text);
    assert!(summary.counts["com.example.Request"] > 0, "{text}");
    let seconds: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Duration:"))
        .and_then(|d| d.trim().strip_suffix(" s")?.parse().ok())
        .unwrap_or_else(|| panic!("no `Duration: N s` in:\n{text}"));
    // 8 s recorded; kept: at most maxage (4 s) plus one chunk (1 s) and
    // the chunk the dump finished.
    assert!((2..=6).contains(&seconds), "window of {seconds} s:\n{text}");

    // The program holds this recording: jcmd may not stop it.
    let (success, _, err) = jcmd(&home, svc.pid, "JFR.stop");
    assert!(
        !success && err.contains("only the program can stop it"),
        "{err}"
    );
    // A second recording with the running one's name is refused, naming it.
    let (success, _, err) = jcmd(&home, svc.pid, "JFR.start name=always-on");
    assert!(
        !success && err.contains("recording 1 is named always-on"),
        "{err}"
    );
}

/// Issue 42: a program that listens through the API and dies of SIGTERM
/// or SIGINT removes its socket, as a `FLIGHTREC`-started one does, and
/// still dies of the signal (as it would bare).
#[test]
fn always_on_killed_by_sigterm_or_sigint_leaves_no_socket() {
    use std::os::unix::process::ExitStatusExt;
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut svc = Service::spawn(&["--seconds", "600", "--threads", "1"], libc::SIG_DFL);
        let path = socket(svc.pid);
        wait_until(|| path.exists(), &format!("no {}", path.display()));
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        assert_eq!(unsafe { libc::kill(svc.pid as libc::pid_t, sig) }, 0);
        let t = Instant::now();
        let status = loop {
            if let Some(status) = svc.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "always_on still runs 20 s after signal {sig}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            status.signal(),
            Some(sig),
            "{status:?}: {}",
            svc.stderr_now()
        );
        assert!(
            !path.exists(),
            "signal {sig} left {}: {}",
            path.display(),
            svc.stderr_now()
        );
    }
}

#[test]
fn jcmd_25_runs_two_named_recordings_at_once() {
    let home = jdk25();
    let dir = testkit::temp_dir("attach-two");
    let svc = Service::start(&["--seconds", "3600", "--threads", "1", "--no-recording"]);
    let pid = svc.pid;
    ok(
        &home,
        pid,
        "JFR.start name=a settings=default disk=false maxage=30s",
    );
    ok(
        &home,
        pid,
        "JFR.start name=b settings=none disk=false maxage=5s com.example.Request#enabled=true",
    );
    let check = ok(&home, pid, "JFR.check");
    assert!(
        check.contains("name=a maxage=30s disk=false (running)"),
        "{check}"
    );
    assert!(
        check.contains("name=b maxage=5s disk=false (running)"),
        "{check}"
    );
    // Each with its own settings: a records jdk.CPULoad, b does not.
    let verbose = ok(&home, pid, "JFR.check name=b verbose=true");
    assert!(
        verbose.contains("(com.example.Request)") || verbose.contains("Request"),
        "{verbose}"
    );
    // Without a name, a dump must say which.
    let (success, _, err) = jcmd(&home, pid, "JFR.dump");
    assert!(
        !success && err.contains("Several recordings are running"),
        "{err}"
    );
    std::thread::sleep(Duration::from_secs(2));
    let file = dir.join("a.jfr");
    ok(
        &home,
        pid,
        &format!("JFR.dump name=a filename={}", file.display()),
    );
    let summary = testkit::summary(&file);
    assert!(summary.counts["com.example.Request"] > 0, "{summary:?}");
    assert!(
        summary.counts.get("jdk.CPULoad").copied().unwrap_or(0) > 0,
        "{summary:?}"
    );
    let stopped = ok(&home, pid, "JFR.stop name=a");
    assert!(stopped.contains("Stopped recording \"a\""), "{stopped}");
    let check = ok(&home, pid, "JFR.check");
    assert!(!check.contains("name=a "), "{check}");
    assert!(
        check.contains("name=b maxage=5s disk=false (running)"),
        "{check}"
    );
    // b records on: a dump after a's stop still has its events (its maxage
    // keeps the file small: the service commits as fast as it can, and
    // `jfr print --xml` runs out of memory on some 100 MB).
    std::thread::sleep(Duration::from_secs(1));
    let file = dir.join("b.jfr");
    ok(
        &home,
        pid,
        &format!("JFR.dump name=b filename={}", file.display()),
    );
    let summary = testkit::summary(&file);
    assert!(summary.counts["com.example.Request"] > 0, "{summary:?}");
    ok(&home, pid, "JFR.stop name=b");
    assert!(ok(&home, pid, "JFR.check").contains("No available recordings."));
}

#[test]
fn lazy_attach_listens_only_once_jcmd_asks_by_sigquit() {
    let home = jdk25();
    let mut svc = Service::start_lazy(&["--seconds", "600", "--threads", "1"]);
    let path = socket(svc.pid);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!path.exists(), "a lazy listener made its socket unasked");

    // A SIGQUIT without jcmd's trigger file neither ends the process (the
    // default action would) nor starts the listener.
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(svc.pid as i32, libc::SIGQUIT) }, 0);
    // Handled before jcmd makes its trigger file (on a busy machine the
    // process may not run for a while): else this SIGQUIT would find the
    // file and count as jcmd's.
    wait_until(
        || svc.stderr_now().contains("SIGQUIT ignored"),
        "the bare SIGQUIT was never noted",
    );
    assert!(svc.running(), "a bare SIGQUIT ended the process");
    assert!(!path.exists(), "a bare SIGQUIT started the listener");

    // JDK 25's jcmd: trigger file, SIGQUIT, socket, answer.
    let check = ok(&home, svc.pid, "JFR.check");
    assert!(
        check.contains("name=always-on maxage=5m disk=false (running)"),
        "{check}"
    );
    assert!(path.exists());
    assert!(
        !Path::new(&format!("/proc/{}/cwd/.attach_pid{}", svc.pid, svc.pid)).exists(),
        "jcmd removes its trigger file"
    );
    let err = svc.finish();
    assert_eq!(
        err.matches("SIGQUIT ignored: no .attach_pid<pid> from jcmd")
            .count(),
        1,
        "stderr: {err}"
    );
}

/// A program that starts with SIGQUIT ignored (a shell's background job)
/// keeps ignoring a bare one: no note, no listener, still running. jcmd's
/// SIGQUIT still starts the listener.
#[test]
fn lazy_attach_keeps_an_ignored_sigquit_ignored() {
    let home = jdk25();
    let mut svc = Service::start_lazy_with(&["--seconds", "600", "--threads", "1"], libc::SIG_IGN);
    let path = socket(svc.pid);
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(svc.pid as i32, libc::SIGQUIT) }, 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(svc.running(), "an ignored SIGQUIT ended the process");
    assert!(!path.exists(), "a bare SIGQUIT started the listener");
    let check = ok(&home, svc.pid, "JFR.check");
    assert!(
        check.contains("name=always-on maxage=5m disk=false (running)"),
        "{check}"
    );
    let err = svc.finish();
    assert!(!err.contains("SIGQUIT ignored"), "stderr: {err}");
}

#[test]
fn lazy_attach_answers_jcmd_17_which_sends_sigquit_unconditionally() {
    let home = Path::new(JDK17);
    if !home.join("bin/jcmd").exists() {
        println!("skipped: no JDK 17 at {JDK17} (the JDK 25 test still runs)");
        return;
    }
    let mut svc = Service::start_lazy(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    assert!(!socket(svc.pid).exists());
    let check = ok(home, svc.pid, "JFR.check");
    assert!(check.contains("No available recordings."), "{check}");
    assert!(svc.running());
    // Once listening, later clients find the socket and send no SIGQUIT.
    assert!(ok(home, svc.pid, "JFR.check").contains("No available recordings."));
    let err = svc.finish();
    assert!(!err.contains("SIGQUIT ignored"), "stderr: {err}");
}

/// (start ns since the epoch, duration ns, size) of each chunk in `path`,
/// from the chunk headers.
fn chunk_headers(path: &Path) -> Vec<(i64, i64, u64)> {
    let bytes = std::fs::read(path).unwrap();
    let at = |o: usize| u64::from_be_bytes(bytes[o..o + 8].try_into().unwrap());
    let mut chunks = Vec::new();
    let mut off = 0;
    while off < bytes.len() {
        assert_eq!(&bytes[off..off + 4], b"FLR\0", "chunk at {off} of {path:?}");
        let size = at(off + 8);
        chunks.push((at(off + 32) as i64, at(off + 40) as i64, size));
        off += size as usize;
    }
    chunks
}

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn jfr_dump_honours_maxsize_maxage_begin_and_end_as_the_jdk_does() {
    let home = jdk25();
    let dir = testkit::temp_dir("attach-dump-window");
    // Chunks rotate every second, and are kept for 4 s (the in-memory
    // bound raised so that it, not memory_size, sets the window).
    let svc = Service::start(&[
        "--seconds",
        "600",
        "--threads",
        "1",
        "--maxage",
        "4s",
        "--memory-mib",
        "256",
    ]);
    let pid = svc.pid;
    let dump = |name: &str, args: &str| {
        let file = dir.join(name);
        let before = now_nanos();
        let out = ok(
            &home,
            pid,
            &format!("JFR.dump filename={} {args}", file.display()),
        );
        assert!(out.contains("Dumped recording \"always-on\""), "{out}");
        let chunks = chunk_headers(&file);
        (file, chunks, before, now_nanos())
    };
    std::thread::sleep(Duration::from_secs(6));
    let (file, all, ..) = dump("all.jfr", "maxsize=0");
    assert!(all.len() >= 4, "{all:?}");
    assert_eq!(testkit::summary(&file).chunks, all.len() as u64);

    // maxsize: whole chunks, at least one: the newest without begin=, so
    // the chunk the dump itself finished (it ends after the request) ...
    let (file, newest, before, _) = dump("newest.jfr", "maxsize=1");
    assert_eq!(newest.len(), 1, "{newest:?}");
    assert_eq!(testkit::summary(&file).chunks, 1);
    assert!(newest[0].0 + newest[0].1 >= before, "{newest:?}");
    // ... and the oldest with begin= (here by maxage=) and no end=, one of
    // the window's several that ended before the request.
    let (_, oldest, before, _) = dump("oldest.jfr", "maxage=1h maxsize=1");
    assert_eq!(oldest.len(), 1, "{oldest:?}");
    assert!(oldest[0].0 + oldest[0].1 < before, "{oldest:?}");
    let newest_size = std::fs::metadata(&file).unwrap().len();
    assert_eq!(newest_size, newest[0].2);
    // A limit of half the full dump: fewer chunks, within the limit.
    let half: u64 = all.iter().map(|c| c.2).sum::<u64>() / 2;
    let (file, some, ..) = dump("half.jfr", &format!("maxsize={half}"));
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(
        size <= half && some.len() < all.len(),
        "{size} > {half}: {some:?}"
    );

    // begin=, end= and maxage= keep the chunks overlapping the interval.
    // Which chunks are older than 2 s depends on when retention (4 s) last
    // ran, so the dump is checked against the chunks listed just before it:
    // each that ended in the window is in, each that ended before it is out
    // (the process reads its clock between `before` and `after`).
    let (_, listed, ..) = dump("listed.jfr", "maxsize=0");
    let (_, recent, before, after) = dump("recent.jfr", "maxage=2s");
    for (start, duration, _) in &recent {
        assert!(start + duration >= before - 2_000_000_000, "{recent:?}");
    }
    for (start, duration, _) in &listed {
        let end = start + duration;
        let present = recent.iter().any(|r| r.0 == *start);
        if end >= after - 2_000_000_000 {
            assert!(present, "{start} ended in the window: {recent:?}");
        } else if end < before - 2_000_000_000 {
            assert!(!present, "{start} ended before the window: {recent:?}");
        }
    }
    let (_, ended, _, after) = dump("ended.jfr", "end=-3s");
    assert!(!ended.is_empty());
    for (start, ..) in &ended {
        assert!(*start <= after - 3_000_000_000, "{ended:?}");
    }
    let (_, begun, before, _) = dump("begun.jfr", "begin=-2s");
    for (start, duration, _) in &begun {
        assert!(start + duration >= before - 2_000_000_000, "{begun:?}");
    }
    let (success, _, err) = jcmd(&home, pid, "JFR.dump begin=-1s end=-5s");
    assert!(!success && err.contains("begin must precede end"), "{err}");
}

/// Sends `bytes` on a new connection, half-closes, returns the reply.
fn exchange(path: &Path, bytes: &[u8]) -> Vec<u8> {
    let mut s = UnixStream::connect(path).expect("the listener accepts");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    reply
}

#[test]
fn malformed_frames_leave_the_listener_answering_with_bounded_memory() {
    let home = jdk25();
    let svc = Service::start(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    let path = socket(svc.pid);
    ok(&home, svc.pid, "JFR.check");
    let rss_before = svc.rss_kib();

    let huge = exchange(&path, b"2\x0099999999999\x00jcmd\x00");
    assert!(
        huge.starts_with(b"-1\n"),
        "{:?}",
        String::from_utf8_lossy(&huge)
    );
    let no_nul = exchange(&path, b"1\x00jcmd\x00JFR.check");
    assert!(
        no_nul.starts_with(b"-1\n"),
        "{:?}",
        String::from_utf8_lossy(&no_nul)
    );
    let mut garbage = vec![0u8; 200_000];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut garbage {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    exchange(&path, &garbage);
    assert!(
        exchange(&path, b"").is_empty(),
        "an empty connection gets no reply"
    );

    // 10 000 connections in a row, four kinds in turn; the good ones are
    // all answered.
    let t = Instant::now();
    let mut answered = 0;
    for i in 0..10_000 {
        let reply = match i % 4 {
            0 => exchange(&path, b""),
            1 => exchange(&path, &garbage[i..i + 64]),
            2 => exchange(&path, b"2\x0070000\x00jcmd\x00"),
            _ => exchange(&path, b"1\x00getversion\x00options\x00\x00\x00"),
        };
        if i % 4 == 3 {
            assert_eq!(reply, b"0\n2 streaming");
            answered += 1;
        }
    }
    assert_eq!(answered, 2500);
    println!("10000 connections in {:?}", t.elapsed());

    // A client that connects and never sends holds the listener only until
    // its deadline: jcmd is answered meanwhile-queued, within seconds.
    let silent = UnixStream::connect(&path).unwrap();
    let t = Instant::now();
    let out = ok(&home, svc.pid, "JFR.check");
    assert!(out.contains("No available recordings."), "{out}");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    drop(silent);

    let mut svc = svc;
    assert!(svc.running(), "the process died");
    let grown = svc.rss_kib().saturating_sub(rss_before);
    println!("resident memory grew {grown} KiB over the hostile clients");
    assert!(grown < 8 << 10, "resident memory grew {grown} KiB");
    let started = ok(
        &home,
        svc.pid,
        "JFR.start name=after settings=default disk=false",
    );
    assert!(started.contains("Started recording"), "{started}");
}

#[test]
fn a_peer_of_another_uid_is_refused_by_the_listener() {
    // SAFETY: geteuid only reads the process's credentials.
    if unsafe { libc::geteuid() } != 0 {
        println!("skipped: needs root to run a client as uid 65534 (setpriv)");
        return;
    }
    let home = jdk25();
    let svc = Service::start(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    let path = socket(svc.pid);
    // The socket is 0600, so the file system alone would stop uid 65534
    // before the listener saw it. Open it up for this test so the
    // connection reaches the listener, whose SO_PEERCRED check must refuse
    // it; then close it again (jcmd refuses a socket with other bits).
    let chmod = |mode: &str| {
        assert!(
            Command::new("chmod")
                .args([mode, path.to_str().unwrap()])
                .status()
                .unwrap()
                .success()
        )
    };
    chmod("0666");
    const CLIENT: &str = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
print("connected")
data = b""
try:
    s.sendall(b"1\0getversion\0options\0\0\0")
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError as e:
    pass
print(repr(data))
"#;
    let run = |as_nobody: bool| {
        let mut cmd = if as_nobody {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
            ]);
            c
        } else {
            Command::new("/usr/bin/python3")
        };
        let out = cmd
            .args(["-c", CLIENT, path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let nobody = run(true);
    assert_eq!(nobody, "connected\nb''\n", "uid 65534 was answered");
    let root = run(false);
    assert_eq!(root, "connected\nb'0\\n2 streaming'\n");
    chmod("0600");
    assert!(ok(&home, svc.pid, "JFR.check").contains("No available recordings."));
    let err = svc.finish();
    assert!(
        err.contains("refused a connection from uid 65534"),
        "stderr: {err}"
    );
}

/// The `flightrec` command of the workspace (`cli/`), built beside the
/// examples by `cargo test`.
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

/// `flightrec <args>`: (exit 0, stdout, stderr).
fn flightrec(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(flightrec_command())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 34: `flightrec jcmd` lists a running `always_on` and starts, dumps
/// and stops a recording in it; the JDK's `jcmd` lists it too.
#[test]
fn the_flightrec_command_lists_and_controls_always_on() {
    let dir = testkit::temp_dir("attach-flightrec-cli");
    let svc = Service::start(&["--seconds", "600", "--threads", "1", "--no-recording"]);
    let pid = svc.pid.to_string();
    let listed = |text: &str| {
        text.lines()
            .any(|l| l.split_whitespace().next() == Some(pid.as_str()))
    };
    let (success, out, err) = flightrec(&["jcmd"]);
    assert!(success && listed(&out), "{pid} not listed:\n{out}\n{err}");
    let jdk = Command::new(jdk25().join("bin/jcmd")).output().unwrap();
    let jdk = String::from_utf8_lossy(&jdk.stdout);
    assert!(listed(&jdk), "the JDK's jcmd does not list {pid}:\n{jdk}");

    let run = |line: &[&str]| {
        let (success, out, err) = flightrec(&[&["jcmd", pid.as_str()], line].concat());
        assert!(success, "flightrec jcmd {pid} {line:?}:\n{out}\n{err}");
        out
    };
    let started = run(&["JFR.start", "name=c", "settings=profile", "disk=false"]);
    assert!(started.contains("Started recording"), "{started}");
    std::thread::sleep(Duration::from_millis(1500));
    let file = dir.join("c.jfr");
    let dumped = run(&[
        "JFR.dump",
        "name=c",
        &format!("filename={}", file.display()),
    ]);
    assert!(dumped.contains(&file.display().to_string()), "{dumped}");
    let summary = testkit::summary(&file);
    assert!(
        summary
            .counts
            .get("com.example.Request")
            .copied()
            .unwrap_or(0)
            > 0,
        "no requests in the dump: {summary:?}"
    );
    let stopped = run(&["JFR.stop", "name=c"]);
    assert!(stopped.contains("Stopped recording \"c\""), "{stopped}");
    assert!(run(&["JFR.check"]).contains("No available recordings."));
}
