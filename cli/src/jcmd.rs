//! `flightrec jcmd [PID [COMMAND [ARGS...]]]`: a client of the HotSpot
//! attach protocol, for flightrec processes (which serve it: see the
//! recorder's `attach` module) and JVMs alike.
//!
//! # Listing
//!
//! With no PID, the processes of this user that can be controlled, one a
//! line as `jcmd` prints them (`PID COMMAND LINE`): those with an attach
//! socket `/tmp/.java_pid<pid>` (flightrec processes with `attach=true`,
//! JVMs a `jcmd` attached to before) and the JVMs that publish
//! `/tmp/hsperfdata_<user>/<pid>`, each pid once, in pid order. Only live
//! processes are listed (a socket or file left by a dead one is skipped).
//!
//! With no PID, the leftover repositories of this user's processes that
//! were killed are named too, one line each on standard error (see
//! `flightrec assemble`), so that the library never has to say so on its
//! host's stderr.
//!
//! # One command
//!
//! With a PID (and no command: `help`), the socket is looked for under
//! the process's own root (`/proc/<pid>/root/tmp/`). When it is missing,
//! the HotSpot handshake: `.attach_pid<pid>` is created in the process's
//! working directory (or `/tmp`), SIGQUIT is sent, and the socket is
//! waited for (up to 10 s), as the JDK's `jcmd` does. SIGQUIT's default
//! action ends a process with a core dump, so it is sent only to a process
//! that catches it (`SigCgt` in `/proc/<pid>/status`): a JVM, or a
//! flightrec process with `attach=lazy`.
//!
//! # Across users
//!
//! Only root controls another user's process, as with the JDK's `jcmd`.
//! Every path on the way is the other user's to plant things in
//! (`/proc/<pid>/cwd`, `/tmp`), so: the trigger file is created with
//! `O_CREAT | O_EXCL | O_NOFOLLOW` in a directory opened and checked once,
//! and only that file is removed (`trigger.rs`); a name already taken (a
//! symbolic link to a root file) is left as it is, named on stderr, and
//! the next place tried. The socket must be a socket itself (`lstat`),
//! owned by the process's user, with no group or other permissions (as
//! HotSpot's own client requires), and the listener at the other end
//! (`SO_PEERCRED`) must run as that user.
//!
//! # The reply
//!
//! The request is protocol version 1 (`"1" NUL "jcmd" NUL line NUL NUL
//! NUL`), which every HotSpot since JDK 6 and flightrec accept; the reply
//! is a status line and text, streamed as it arrives (`reply.rs`: one
//! deadline for the whole exchange, [`DEFAULT_DEADLINE`], and at most
//! [`DEFAULT_MAX_REPLY`] bytes). Status 0: the text goes to standard
//! output, exit 0. Otherwise the process refused the command: its text
//! goes to standard error, exit 1 (as `jcmd`). Failures to reach the
//! process (no such pid, another user's, no socket, a refused connection,
//! a reply late or too long) are one line and exit status 2.
//!
//! Invariant: a non-root client talks only to its own user's processes;
//! no client opens for writing a file it did not just create.

mod reply;
mod trigger;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reply::ReplyError;
pub use reply::{DEFAULT_DEADLINE, DEFAULT_MAX_REPLY, Limits};

/// How long the handshake waits for the socket.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// Why `flightrec jcmd` could not talk to the process (exit status 2).
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "jcmd: {}", self.0)
    }
}

impl std::error::Error for Error {}

fn fail<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// A process that can be controlled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its pid.
    pub pid: u32,
    /// Its command line, arguments joined by spaces.
    pub command_line: String,
}

/// The processes of this user that answer (or, JVMs, can be made to
/// answer) the attach protocol, in pid order.
pub fn list() -> Vec<Target> {
    let uid = euid();
    let mut pids = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(".java_pid"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if entry
            .metadata()
            .is_ok_and(|m| m.file_type().is_socket() && m.uid() == uid)
        {
            pids.insert(pid);
        }
    }
    if let Some(user) = user_name(uid) {
        let dir = PathBuf::from(format!("/tmp/hsperfdata_{user}"));
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) {
                pids.insert(pid);
            }
        }
    }
    pids.into_iter()
        .filter(|&pid| {
            std::fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == uid)
                && pid != std::process::id()
        })
        .map(|pid| Target {
            pid,
            command_line: command_line(pid),
        })
        .collect()
}

/// `/proc/<pid>/cmdline`, arguments joined by spaces.
fn command_line(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The user name of `uid` (as HotSpot names `hsperfdata_<user>`).
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id: u32 = f.nth(1)?.parse().ok()?;
        (id == uid).then(|| name.to_owned())
    })
}

/// What the process answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status line: 0 when the command ran.
    pub status: i32,
    /// The text after it.
    pub text: String,
}

/// Sends the diagnostic command `line` (`JFR.dump filename=x.jfr`) to
/// `pid`, starting its attach listener by the handshake if need be, and
/// returns the whole reply (at most [`DEFAULT_MAX_REPLY`] bytes, within
/// [`DEFAULT_DEADLINE`]). Notes about places the handshake did not use
/// go to standard error. [`send_to`] streams the reply instead.
///
/// # Errors
///
/// As [`send_to`].
pub fn send(pid: u32, line: &str) -> Result<Reply, Error> {
    let mut text = Vec::new();
    let mut notes = std::io::stderr();
    let status = send_to(pid, line, &Limits::default(), &mut notes, |_| Ok(&mut text))?;
    Ok(Reply {
        status,
        text: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// Sends `line` to `pid` (as [`send`]) and streams the reply's text, as
/// it arrives, into the writer `output(status)` returns; notes about the
/// handshake go to `notes`. Returns the status (0: the command ran).
///
/// # Errors
///
/// The process does not exist, is another user's (only root may control
/// another user's process), has no socket and cannot be asked for one,
/// its socket is not its own user's, the connection fails, or the reply
/// is not whole within `limits` (what arrived was passed on).
pub fn send_to<'w>(
    pid: u32,
    line: &str,
    limits: &Limits,
    notes: &mut dyn Write,
    output: impl FnOnce(i32) -> std::io::Result<&'w mut dyn Write>,
) -> Result<i32, Error> {
    let stream = connect(pid, notes)?;
    let mut request = Vec::with_capacity(line.len() + 16);
    for field in ["1", "jcmd", line, "", ""] {
        request.extend_from_slice(field.as_bytes());
        request.push(0);
    }
    reply::exchange(&stream, &request, limits, output).map_err(|e| match e {
        ReplyError::Request(e) => Error(format!("process {pid} did not take the request: {e}")),
        ReplyError::Late(d) => Error(format!(
            "process {pid} did not finish its reply within {} s: cut off there",
            d.as_secs_f64()
        )),
        ReplyError::TooLarge(n) => Error(format!(
            "the reply of process {pid} is longer than {n} bytes: cut off there"
        )),
        ReplyError::Read(e) => Error(format!("process {pid} did not answer: {e}")),
        ReplyError::NotAReply => Error(format!(
            "process {pid} answered something that is not an attach reply (closed the connection?)"
        )),
        ReplyError::Output(e) => Error(format!("cannot write the reply: {e}")),
    })
}

/// The effective uid of `pid` (`Uid:` in `/proc/<pid>/status`).
fn process_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1)?.parse().ok())
}

/// The connection to `pid`'s listener: its owner checked (only root
/// crosses users), the socket checked before and its listener after the
/// connection.
fn connect(pid: u32, notes: &mut dyn Write) -> Result<UnixStream, Error> {
    if std::fs::symlink_metadata(format!("/proc/{pid}")).is_err() {
        return fail(format!("no process {pid}"));
    }
    let Some(owner) = process_uid(pid) else {
        return fail(format!("no process {pid}"));
    };
    let uid = euid();
    if uid != 0 && owner != uid {
        return fail(format!(
            "process {pid} belongs to another user (uid {owner}): only its owner or root can \
             control it"
        ));
    }
    let socket = socket_path(pid);
    if std::fs::symlink_metadata(&socket).is_err() {
        handshake(pid, owner, &socket, notes)?;
    }
    check_socket(&socket, owner)?;
    let stream = UnixStream::connect(&socket)
        .map_err(|e| Error(format!("cannot connect to {}: {e}", socket.display())))?;
    // The socket checked above could have been swapped since: the
    // listener's credentials are what counts.
    match listener_uid(&stream) {
        Some(u) if u == owner => Ok(stream),
        Some(u) => fail(format!(
            "the listener on {} runs as uid {u}, not as process {pid}'s user (uid {owner}): \
             refused",
            socket.display()
        )),
        None => fail(format!(
            "cannot tell who listens on {}: refused",
            socket.display()
        )),
    }
}

/// The uid of the process that listens on the other end (`SO_PEERCRED`).
fn listener_uid(stream: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
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
    (r == 0).then_some(cred.uid)
}

/// `/tmp/.java_pid<pid>` as the process sees it: under its root, named by
/// its pid in its own namespace.
fn socket_path(pid: u32) -> PathBuf {
    let ns_pid = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .and_then(|v| v.split_whitespace().last().map(str::to_owned))
        })
        .unwrap_or_else(|| pid.to_string());
    PathBuf::from(format!("/proc/{pid}/root/tmp/.java_pid{ns_pid}"))
}

/// A socket itself (not a link: `lstat`), owned by the process's user
/// `owner`, no group or other permissions.
fn check_socket(socket: &Path, owner: u32) -> Result<(), Error> {
    let m = std::fs::symlink_metadata(socket)
        .map_err(|e| Error(format!("cannot use {}: {e}", socket.display())))?;
    if !m.file_type().is_socket() {
        return fail(format!("{} is not a socket", socket.display()));
    }
    if m.uid() != owner {
        return fail(format!(
            "{} belongs to uid {}, not to the process's user (uid {owner}): refused",
            socket.display(),
            m.uid()
        ));
    }
    if m.mode() & 0o077 != 0 {
        return fail(format!(
            "{} is open to other users (mode {:o}): refused, as the JDK refuses it",
            socket.display(),
            m.mode() & 0o777
        ));
    }
    Ok(())
}

/// Whether `pid` catches SIGQUIT (`SigCgt`), so that it can be sent
/// without ending the process.
fn catches_sigquit(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGQUIT - 1)) != 0)
}

/// The HotSpot handshake: `.attach_pid<pid>` (created, never followed:
/// see `trigger.rs`), SIGQUIT, wait for `socket`.
fn handshake(pid: u32, owner: u32, socket: &Path, notes: &mut dyn Write) -> Result<(), Error> {
    if !catches_sigquit(pid) {
        return fail(format!(
            "process {pid} has no attach socket and does not catch SIGQUIT (which would end \
             it): it is not a JVM, nor a flightrec process started with attach=true or \
             attach=lazy"
        ));
    }
    let name = format!(".attach_pid{pid}");
    let owners = [0, euid(), owner];
    let places = [
        (format!("/proc/{pid}/cwd"), true),
        (format!("/proc/{pid}/root/tmp"), false),
    ];
    let mut refused = Vec::new();
    let mut trigger = None;
    for (dir, follow) in &places {
        match trigger::Trigger::create(dir, *follow, &name, &owners) {
            Ok(t) => {
                trigger = Some(t);
                break;
            }
            Err(why) => {
                let _ = writeln!(notes, "flightrec: jcmd: not using {dir}/{name}: {why}");
                refused.push(format!("{dir}/{name}: {why}"));
            }
        }
    }
    let Some(trigger) = trigger else {
        return fail(format!(
            "cannot start the attach listener of process {pid}: refused to use {}",
            refused.join("; ")
        ));
    };
    let started = Instant::now();
    let mut next_signal = started;
    let mut delay = Duration::from_millis(20);
    let found = loop {
        if std::fs::symlink_metadata(socket).is_ok() {
            break true;
        }
        if started.elapsed() > HANDSHAKE {
            break false;
        }
        if Instant::now() >= next_signal {
            // SAFETY: kill only sends a signal; the process catches SIGQUIT.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGQUIT) };
            next_signal = Instant::now() + Duration::from_secs(2);
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    };
    trigger.remove();
    if found {
        Ok(())
    } else {
        fail(format!(
            "process {pid} did not open its attach socket within {} s of SIGQUIT",
            HANDSHAKE.as_secs()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_not_listed_and_a_dead_pid_is_named() {
        assert!(list().iter().all(|t| t.pid != std::process::id()));
        let e = send(u32::MAX - 1, "help").unwrap_err();
        assert_eq!(e.to_string(), format!("jcmd: no process {}", u32::MAX - 1));
    }

    #[test]
    fn a_process_without_socket_that_would_die_of_sigquit_is_not_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let e = send(child.id(), "help").unwrap_err();
        assert!(e.to_string().contains("does not catch SIGQUIT"), "{e}");
        assert!(child.try_wait().unwrap().is_none(), "the process died");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
