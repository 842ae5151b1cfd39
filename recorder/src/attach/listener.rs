//! The attach socket and the thread that serves it: set-up (temporary
//! name, `0600`, owner, rename), the `SO_PEERCRED` check, and the
//! connections, read side by side under the deadlines of
//! [`super::protocol`].
//!
//! # Many clients, none holding the others
//!
//! One thread `poll(2)`s the listening socket and every connection whose
//! request is still arriving (at most [`MAX_PENDING`], each non-blocking,
//! each with its own [`REQUEST_DEADLINE`]). Bytes are gathered per
//! connection; a request is answered as soon as it is whole, whatever the
//! other connections do. A connection that has not sent its whole request
//! by its deadline is closed; when [`MAX_PENDING`] are waiting, the one
//! nearest its deadline is closed to take the next. So silent or slow
//! clients cost a real `jcmd` nothing but the time to answer the requests
//! that did arrive.
//!
//! Invariant: at most one listener per process, recorded in [`LISTENING`]
//! with the pid that made it; a forked child (which has no listener
//! thread) may start its own and never removes its parent's socket. The
//! thread blocks only in `poll` (bounded by the nearest deadline), in
//! answering one whole request, or in writing its reply (with a timeout).

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::protocol::{self, FrameError, REPLY_TIMEOUT, REQUEST_DEADLINE, Request};
use crate::base::sync::global::{AtomicU64, Mutex, Ordering};

/// The pid whose listener runs (0: none).
static LISTENING: Mutex<u32> = Mutex::new(0);
/// The inode of the socket this process bound (0: none).
static SOCKET_ID: AtomicU64 = AtomicU64::new(0);
/// Connections refused by the peer check.
static REFUSED: AtomicU64 = AtomicU64::new(0);
/// The most connections whose requests are read side by side.
pub(crate) const MAX_PENDING: usize = 64;

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
            if is_our_socket(&socket_path()) {
                let _ = std::fs::remove_file(socket_path());
            }
        })?;
    *listening = pid;
    register_exit_handler();
    // A terminating signal ends the process without `atexit`: the
    // automatic recordings' shutdown thread removes them then.
    crate::process::shutdown::on_terminate(remove_socket);
    // Only the listing depends on it (see `perfdata.rs`).
    let _ = super::perfdata::publish();
    Ok(path)
}

/// Binds under `<path>.tmp`, makes it `0600` and ours, renames it into
/// place (as HotSpot does). Only a leftover `.tmp` of our own user is
/// removed first; the new socket is checked (`lstat`: a socket of ours,
/// the one just bound) before its mode is set, and its owner is set with
/// `lchown`, so nothing planted at either name is followed.
fn bind(path: &std::path::Path) -> io::Result<UnixListener> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    // SAFETY: geteuid/getegid only read the process's credentials.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // A leftover of ours (a process killed between bind and rename);
    // unlink removes a link itself, never its target.
    if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.uid() == uid) {
        let _ = std::fs::remove_file(&tmp);
    }
    let listener = UnixListener::bind(&tmp)?;
    let set_up = (|| {
        let m = std::fs::symlink_metadata(&tmp)?;
        if !m.file_type().is_socket() || m.uid() != uid {
            return Err(io::Error::other(format!(
                "{} is not the socket just bound",
                tmp.display()
            )));
        }
        std::os::unix::fs::lchown(&tmp, Some(uid), Some(gid))?;
        // /tmp is sticky: only this user (or root) can replace the entry
        // checked above, so the mode reaches the socket.
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, path)?;
        SOCKET_ID.store(m.ino(), Ordering::Relaxed);
        Ok(())
    })();
    if let Err(e) = set_up {
        if std::fs::symlink_metadata(&tmp)
            .is_ok_and(|m| m.file_type().is_socket() && m.uid() == uid)
        {
            let _ = std::fs::remove_file(&tmp);
        }
        return Err(e);
    }
    Ok(listener)
}

/// Whether `path` is still the socket this process bound (its inode), so
/// that only what was created is removed.
fn is_our_socket(path: &std::path::Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.file_type().is_socket() && m.ino() == SOCKET_ID.load(Ordering::Relaxed))
}

/// A connection whose request is still arriving.
struct Pending {
    stream: UnixStream,
    bytes: Vec<u8>,
    deadline: Instant,
}

/// What the bytes gathered so far make.
enum Gathered {
    /// Not a whole request yet.
    More,
    /// A whole request, or a frame error to answer.
    Done(Result<protocol::Request, FrameError>),
}

impl Pending {
    /// Reads what has arrived (the stream is non-blocking).
    fn read(&mut self) -> Gathered {
        let mut buf = [0u8; 4096];
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => {
                    // The client is done sending: whatever we have is all.
                    return Gathered::Done(protocol::read_request(&self.bytes[..]));
                }
                Ok(n) => {
                    self.bytes.extend_from_slice(&buf[..n]);
                    if self.bytes.len() > protocol::MAX_REQUEST {
                        return Gathered::Done(Err(FrameError::TooLarge));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Gathered::Done(Err(FrameError::Io(e))),
            }
        }
        match protocol::read_request(&self.bytes[..]) {
            // A prefix reads as truncated: wait for the rest.
            Err(FrameError::Empty | FrameError::Malformed(_)) => Gathered::More,
            done => Gathered::Done(done),
        }
    }
}

/// The listener thread: forever, `poll`s the socket and the connections
/// still sending, answers each whole request, closes the late ones.
fn serve(listener: UnixListener) {
    if listener.set_nonblocking(true).is_err() {
        return serve_one_at_a_time(listener);
    }
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        let now = Instant::now();
        let wait = pending
            .iter()
            .map(|p| p.deadline.saturating_duration_since(now))
            .min()
            .map_or(-1, |d| {
                libc::c_int::try_from(d.as_millis() + 1).unwrap_or(libc::c_int::MAX)
            });
        let mut fds: Vec<libc::pollfd> = std::iter::once(listener.as_raw_fd())
            .chain(pending.iter().map(|p| p.stream.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds that
        // outlives the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
        if n < 0 {
            // EINTR, or out of memory: back off instead of spinning.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        // Requests first, then deadlines: a request that arrived while
        // another was answered is not dropped as late.
        let mut ready = fds[1..].iter().map(|f| f.revents != 0);
        pending.retain_mut(|p| {
            if !ready.next().unwrap_or(false) {
                return true;
            }
            match p.read() {
                Gathered::More => true,
                Gathered::Done(r) => {
                    finish(&p.stream, r);
                    false
                }
            }
        });
        let now = Instant::now();
        pending.retain(|p| p.deadline > now);
        if fds[0].revents != 0 {
            accept_all(&listener, &mut pending);
        }
    }
}

/// Takes every connection waiting on the socket: refused peers are closed,
/// the others join `pending` (closing the one nearest its deadline when
/// [`MAX_PENDING`] already wait).
fn accept_all(listener: &UnixListener, pending: &mut Vec<Pending>) {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            // Out of descriptors or memory: back off instead of spinning.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                return;
            }
        };
        if !peer_checked(&stream) || stream.set_nonblocking(true).is_err() {
            continue;
        }
        if pending.len() >= MAX_PENDING
            && let Some(at) = pending
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.deadline)
                .map(|(at, _)| at)
        {
            pending.swap_remove(at);
        }
        pending.push(Pending {
            stream,
            bytes: Vec::new(),
            deadline: Instant::now() + REQUEST_DEADLINE,
        });
    }
}

/// Answers a whole request (or its frame error) and closes.
fn finish(stream: &UnixStream, request: Result<Request, FrameError>) {
    let (status, text) = match request {
        Ok(r) => {
            // A panic answering one client must not end the listener.
            match std::panic::catch_unwind(|| answer(&r)) {
                Ok(a) => a,
                Err(_) => (-1, "flightrec: internal error\n".to_owned()),
            }
        }
        Err(FrameError::Empty) => return,
        Err(FrameError::Io(_)) => return, // reset: nobody to tell
        Err(e) => (-1, format!("{e}\n")),
    };
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_write_timeout(Some(REPLY_TIMEOUT));
    let _ = protocol::write_reply(stream, status, &text);
}

/// Whether the peer may attach; the first refusal is named on stderr.
fn peer_checked(stream: &UnixStream) -> bool {
    match peer(stream) {
        Some((uid, gid)) if peer_allowed(uid, gid) => true,
        other => {
            if REFUSED.fetch_add(1, Ordering::Relaxed) == 0 {
                let uid = other.map_or_else(|| "unknown".to_owned(), |(u, _)| u.to_string());
                eprintln!(
                    "flightrec: attach: refused a connection from uid {uid} \
                     (only the process's own user or root may attach)"
                );
            }
            false
        }
    }
}

/// The fallback if the socket cannot be made non-blocking: one
/// connection at a time, each under its deadline.
#[cold]
fn serve_one_at_a_time(listener: UnixListener) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if peer_checked(&stream) {
                    let request = read_request(&stream, Instant::now() + REQUEST_DEADLINE);
                    finish(&stream, request);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
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
            && is_our_socket(&socket_path())
        {
            let _ = std::fs::remove_file(socket_path());
        }
    });
}

fn register_exit_handler() {
    static ONCE: crate::base::sync::Once = crate::base::sync::Once::new();
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
        let r = read_request(&a, Instant::now() + Duration::from_millis(200));
        assert!(matches!(r, Err(FrameError::Io(_))), "{r:?}");
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn silent_clients_do_not_hold_a_whole_request() {
        let dir = std::env::temp_dir().join(format!("flightrec-listener-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || serve(listener));
        let silent: Vec<UnixStream> = (0..20)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        // One more sends half a request and stalls.
        let mut slow = UnixStream::connect(&path).unwrap();
        std::io::Write::write_all(&mut slow, b"1\0getver").unwrap();
        let t = Instant::now();
        let mut s = UnixStream::connect(&path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        std::io::Write::write_all(&mut s, b"1\0getversion\0options\0\0\0").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert_eq!(reply, "0\n2 streaming");
        // Well inside one request deadline: nobody waited for the silent.
        assert!(t.elapsed() < REQUEST_DEADLINE, "{:?}", t.elapsed());
        // The silent ones are closed at their deadline, without a reply.
        let mut first = &silent[0];
        first
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut rest = Vec::new();
        assert_eq!(first.read_to_end(&mut rest).unwrap(), 0);
        drop(silent);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn getversion_asks_for_version_2() {
        let r = protocol::read_request(&b"1\0getversion\0options\0\0\0"[..]).unwrap();
        assert_eq!(answer(&r), (0, "2 streaming".to_owned()));
        let r = protocol::read_request(&b"1\0load\0x\0\0\0"[..]).unwrap();
        assert_ne!(answer(&r).0, 0);
    }
}
/// Removes the attach socket and the discovery file, if this process made
/// them (the shutdown on a terminating signal, where `atexit` does not run).
pub(crate) fn remove_socket() {
    remove_socket_at_exit();
    super::perfdata::remove_at_exit();
}
