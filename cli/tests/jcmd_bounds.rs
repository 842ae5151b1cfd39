//! `flightrec jcmd` against peers that would hold it: a fake JVM socket
//! that answers with 2 GB of text, and one that trickles a byte a second.
//! Both times the command exits non-zero within its `--timeout` (one
//! deadline for the whole exchange, not one per read), and its peak RSS,
//! measured by `wait4`, stays under 64 MiB (the reply is streamed, never
//! held whole).
//!
//! The fake JVM is this test process: it binds `/tmp/.java_pid<P>` for a
//! `sleep` child `P` it owns (so the socket's owner, the listener's
//! `SO_PEERCRED` uid and the process's uid agree, as for a real JVM).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The most the command may keep resident, whatever the reply.
const RSS_LIMIT_KIB: i64 = 64 << 10;

/// A process to stand for the JVM, and the socket in its name.
struct FakeJvm {
    sleeper: Child,
    socket: PathBuf,
}

impl FakeJvm {
    /// Binds the socket; `serve` answers each connection on a thread.
    fn start(serve: fn(std::os::unix::net::UnixStream)) -> Self {
        let sleeper = Command::new("sleep").arg("120").spawn().unwrap();
        let socket = PathBuf::from(format!("/tmp/.java_pid{}", sleeper.id()));
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        // As a JVM makes it: its owner's only (jcmd refuses anything else).
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                std::thread::spawn(move || serve(conn));
            }
        });
        Self { sleeper, socket }
    }

    fn pid(&self) -> u32 {
        self.sleeper.id()
    }
}

impl Drop for FakeJvm {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
    }
}

/// Reads the request (protocol version, command, three arguments: five
/// NUL-terminated strings) so the client's write completes.
fn read_request(conn: &mut std::os::unix::net::UnixStream) {
    let mut nuls = 0;
    let mut b = [0u8; 1];
    while nuls < 5 && conn.read(&mut b).is_ok_and(|n| n == 1) {
        nuls += usize::from(b[0] == 0);
    }
}

/// Status 0, then 2 GB of text as fast as the client takes it.
fn flood(mut conn: std::os::unix::net::UnixStream) {
    read_request(&mut conn);
    let chunk = vec![b'x'; 1 << 20];
    let _ = conn.write_all(b"0\n");
    for _ in 0..2048 {
        if conn.write_all(&chunk).is_err() {
            return;
        }
    }
}

/// Status 0, then one byte a second for two minutes.
fn trickle(mut conn: std::os::unix::net::UnixStream) {
    read_request(&mut conn);
    let _ = conn.write_all(b"0\n");
    for _ in 0..120 {
        if conn.write_all(b"y").is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Runs `flightrec jcmd --timeout SECS PID help`, stdout to /dev/null;
/// returns its exit code, stderr, wall time and peak RSS (KiB).
#[expect(
    clippy::zombie_processes,
    reason = "reaped by wait4 below, which also gives its rusage"
)]
fn jcmd(pid: u32, timeout_s: u64) -> (Option<i32>, String, Duration, i64) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args([
            "jcmd",
            "--timeout",
            &timeout_s.to_string(),
            &pid.to_string(),
            "help",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is our unreaped child; both out-pointers are valid.
    let r = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(r, child.id() as libc::pid_t, "wait4 failed");
    let status = std::process::ExitStatus::from_raw(status);
    eprintln!(
        "flightrec jcmd: exit {:?} after {:?}, peak RSS {} KiB",
        status.code(),
        start.elapsed(),
        usage.ru_maxrss
    );
    (status.code(), stderr, start.elapsed(), usage.ru_maxrss)
}

#[test]
fn a_two_gigabyte_reply_is_cut_off_in_bounded_memory() {
    let jvm = FakeJvm::start(flood);
    let (code, stderr, took, rss) = jcmd(jvm.pid(), 60);
    assert_ne!(code, Some(0), "a 2 GB reply was accepted: {stderr}");
    assert!(code.is_some(), "flightrec jcmd died of a signal: {stderr}");
    assert!(took < Duration::from_secs(65), "took {took:?}: {stderr}");
    assert!(rss < RSS_LIMIT_KIB, "peak RSS {rss} KiB: {stderr}");
    assert!(
        stderr.contains("is longer than") && stderr.contains("cut off"),
        "not cut off for its size: {stderr}"
    );
}

#[test]
fn a_trickling_reply_ends_at_the_one_deadline() {
    let jvm = FakeJvm::start(trickle);
    let (code, stderr, took, rss) = jcmd(jvm.pid(), 5);
    assert_ne!(code, Some(0), "a trickle was waited out: {stderr}");
    assert!(code.is_some(), "flightrec jcmd died of a signal: {stderr}");
    // One deadline for the whole exchange: 5 s, not 5 s per byte.
    assert!(took < Duration::from_secs(10), "took {took:?}: {stderr}");
    assert!(
        took >= Duration::from_secs(4),
        "ended early ({took:?}): {stderr}"
    );
    assert!(rss < RSS_LIMIT_KIB, "peak RSS {rss} KiB: {stderr}");
    assert!(
        stderr.contains("did not finish its reply within 5 s"),
        "not cut off at its deadline: {stderr}"
    );
}
