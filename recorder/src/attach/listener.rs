//! The attach socket and the thread that serves it: set-up (temporary
//! name, `0600`, owner, rename), the `SO_PEERCRED` check, and one
//! connection at a time under the deadlines of [`super::protocol`].
//!
//! Invariant: at most one listener per process, recorded in [`LISTENING`]
//! with the pid that made it; a forked child (which has no listener
//! thread) may start its own and never removes its parent's socket.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Instant;

use super::protocol::{self, FrameError, REPLY_TIMEOUT, REQUEST_DEADLINE, Request};
use crate::sync::{AtomicU64, Mutex, Ordering};

/// The pid whose listener runs (0: none).
static LISTENING: Mutex<u32> = Mutex::new(0);
/// Connections refused by the peer check.
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// The socket `jcmd` connects to: `/tmp/.java_pid<pid>`.
pub fn socket_path() -> PathBuf {
    PathBuf::from(format!("/tmp/.java_pid{}", std::process::id()))
}

/// Starts answering `jcmd` on [`socket_path`], on a thread of its own
/// (`flightrec-attach`). Does nothing if this process already listens.
/// Returns the socket's path.
///
/// # Errors
///
/// The socket could not be made (`/tmp` not writable, a file of another
/// user in the way) or the thread could not start.
pub fn listen() -> io::Result<PathBuf> {
    let pid = std::process::id();
    let path = socket_path();
    let mut listening = LISTENING.lock();
    if *listening == pid {
        return Ok(path);
    }
    let listener = bind(&path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot listen on {}: {e}", path.display()),
        )
    })?;
    std::thread::Builder::new()
        .name("flightrec-attach".into())
        .spawn(move || serve(listener))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(socket_path());
        })?;
    *listening = pid;
    register_exit_handler();
    Ok(path)
}

/// Binds under `<path>.tmp`, makes it `0600` and ours, renames it into
/// place (as HotSpot does).
fn bind(path: &std::path::Path) -> io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    // Not followed if it is a symbolic link: unlink removes the link.
    let _ = std::fs::remove_file(&tmp);
    let listener = UnixListener::bind(&tmp)?;
    let set_up = (|| {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        // SAFETY: geteuid/getegid only read the process's credentials.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        std::os::unix::fs::chown(&tmp, Some(uid), Some(gid))?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = set_up {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(listener)
}

/// The listener thread: accepts forever; one connection at a time.
fn serve(listener: UnixListener) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                // A panic answering one client must not end the listener.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    handle(stream);
                }));
            }
            // Out of descriptors or memory: back off instead of spinning.
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// Serves one connection: peer check, request, reply, close.
fn handle(stream: UnixStream) {
    match peer(&stream) {
        Some((uid, gid)) if peer_allowed(uid, gid) => {}
        other => {
            if REFUSED.fetch_add(1, Ordering::Relaxed) == 0 {
                let uid = other.map_or_else(|| "unknown".to_owned(), |(u, _)| u.to_string());
                eprintln!(
                    "flightrec: attach: refused a connection from uid {uid} \
                     (only the process's own user or root may attach)"
                );
            }
            return;
        }
    }
    let request = read_request(&stream, Instant::now() + REQUEST_DEADLINE);
    let (status, text) = match request {
        Ok(r) => answer(&r),
        Err(FrameError::Empty) => return,
        Err(FrameError::Io(_)) => return, // timed out or reset: nobody to tell
        Err(e) => (-1, format!("{e}\n")),
    };
    let _ = stream.set_write_timeout(Some(REPLY_TIMEOUT));
    let _ = protocol::write_reply(&stream, status, &text);
}

/// The answer to `r`: (status, text).
fn answer(r: &Request) -> (i32, String) {
    match r.command.as_str() {
        "getversion" if r.args.first().is_some_and(|a| a == "options") => {
            (0, protocol::VERSION_REPLY.to_owned())
        }
        "getversion" => (0, "flightrec\n".to_owned()),
        "jcmd" => {
            let line = r.args.first().map_or("", String::as_str);
            match std::panic::catch_unwind(|| super::jfr::execute(line)) {
                Ok(Ok(text)) => (0, text),
                Ok(Err(text)) => (-1, text),
                Err(_) => (-1, format!("flightrec: internal error running `{line}`\n")),
            }
        }
        other => (
            -1,
            format!("Operation {other} not recognized! (flightrec answers jcmd only)\n"),
        ),
    }
}

/// Reads one request, giving up at `deadline`.
fn read_request(stream: &UnixStream, deadline: Instant) -> Result<Request, FrameError> {
    struct Deadlined<'a>(&'a UnixStream, Instant);
    impl Read for Deadlined<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let left = self.1.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.0.set_read_timeout(Some(left))?;
            (&mut &*self.0).read(buf)
        }
    }
    protocol::read_request(Deadlined(stream, deadline))
}

/// The peer's (uid, gid) from `SO_PEERCRED`.
fn peer(stream: &UnixStream) -> Option<(u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given; the
    // descriptor is the open stream's.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some((cred.uid, cred.gid))
}

/// HotSpot's rule: the peer has our effective uid and gid, or is root.
fn peer_allowed(uid: u32, gid: u32) -> bool {
    // SAFETY: geteuid/getegid only read the process's credentials.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    uid == 0 || (uid == euid && gid == egid)
}

/// Removes the socket if this process made it (at exit, and before a
/// `FLIGHTREC` process ends by a terminating signal).
pub(crate) extern "C" fn remove_socket_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        // Only the process that made it (not a forked child). `try_lock`:
        // exit must not wait on a `listen` another thread is in.
        if LISTENING
            .try_lock()
            .is_some_and(|l| *l == std::process::id())
        {
            let _ = std::fs::remove_file(socket_path());
        }
    });
}

fn register_exit_handler() {
    static ONCE: crate::sync::Once = crate::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a plain `extern "C" fn()` that catches panics; atexit
        // only stores the pointer.
        unsafe { libc::atexit(remove_socket_at_exit) };
    });
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_our_user_or_root_may_attach() {
        // SAFETY: reads the process's credentials only.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        assert!(peer_allowed(euid, egid));
        assert!(peer_allowed(0, 12345));
        if euid != 65534 {
            assert!(!peer_allowed(65534, egid));
        }
        if egid != 65534 && euid != 0 {
            assert!(!peer_allowed(euid, 65534));
        }
    }

    #[test]
    fn a_socket_pair_peer_is_this_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        // SAFETY: reads the process's credentials only.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(peer(&a).map(|p| p.0), Some(euid));
    }

    #[test]
    fn a_silent_client_is_dropped_at_the_deadline() {
        let (a, _b) = UnixStream::pair().unwrap();
        let t = Instant::now();
        let r = read_request(&a, Instant::now() + std::time::Duration::from_millis(200));
        assert!(matches!(r, Err(FrameError::Io(_))), "{r:?}");
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn getversion_asks_for_version_2() {
        let r = protocol::read_request(&b"1\0getversion\0options\0\0\0"[..]).unwrap();
        assert_eq!(answer(&r), (0, "2 streaming".to_owned()));
        let r = protocol::read_request(&b"1\0load\0x\0\0\0"[..]).unwrap();
        assert_ne!(answer(&r).0, 0);
    }
}
