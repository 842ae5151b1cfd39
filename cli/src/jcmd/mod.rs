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
//! # One command
//!
//! With a PID (and no command: `help`), the socket is looked for under
//! the process's own root (`/proc/<pid>/root/tmp/`). When it is missing,
//! the HotSpot handshake: `.attach_pid<pid>` is created in the process's
//! working directory (or `/tmp`), SIGQUIT is sent, and the socket is
//! waited for (up to 10 s), as the JDK's `jcmd` does. SIGQUIT's default
//! action ends a process with a core dump, so it is sent only to a process
//! that catches it (`SigCgt` in `/proc/<pid>/status`): a JVM, or a
//! flightrec process with `attach=lazy`. The socket must belong to this
//! user (or to root) and have no group or other permissions, as HotSpot's
//! own client requires.
//!
//! The request is protocol version 1 (`"1" NUL "jcmd" NUL line NUL NUL
//! NUL`), which every HotSpot since JDK 6 and flightrec accept; the reply
//! is a status line and text. Status 0: the text goes to standard output,
//! exit 0. Otherwise the process refused the command: its text goes to
//! standard error, exit 1 (as `jcmd`). Failures to reach the process (no
//! such pid, another user's, no socket, a refused connection) are one line
//! and exit status 2.

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the handshake waits for the socket.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// How long a command may take to answer (a `JFR.dump` of a long
/// recording writes a file first).
const REPLY: Duration = Duration::from_secs(120);

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
/// `pid`, starting its attach listener by the handshake if need be.
///
/// # Errors
///
/// The process does not exist, is another user's, has no socket and
/// cannot be asked for one, or the connection fails.
pub fn send(pid: u32, line: &str) -> Result<Reply, Error> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let meta = match std::fs::metadata(&proc_dir) {
        Ok(m) => m,
        Err(_) => return fail(format!("no process {pid}")),
    };
    let uid = euid();
    if uid != 0 && meta.uid() != uid {
        return fail(format!(
            "process {pid} belongs to another user (uid {}): only its owner can control it",
            meta.uid()
        ));
    }
    let socket = socket_path(pid);
    if !socket.exists() {
        handshake(pid, &socket)?;
    }
    check_socket(&socket)?;
    let mut stream = UnixStream::connect(&socket)
        .map_err(|e| Error(format!("cannot connect to {}: {e}", socket.display())))?;
    let _ = stream.set_read_timeout(Some(REPLY));
    let _ = stream.set_write_timeout(Some(REPLY));
    let mut request = Vec::with_capacity(line.len() + 16);
    for field in ["1", "jcmd", line, "", ""] {
        request.extend_from_slice(field.as_bytes());
        request.push(0);
    }
    stream
        .write_all(&request)
        .map_err(|e| Error(format!("process {pid} did not take the request: {e}")))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| Error(format!("process {pid} did not answer: {e}")))?;
    let text = String::from_utf8_lossy(&raw);
    let (status, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let Ok(status) = status.trim().parse::<i32>() else {
        return fail(format!(
            "process {pid} answered something that is not an attach reply (closed the connection?)"
        ));
    };
    Ok(Reply {
        status,
        text: rest.to_owned(),
    })
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

/// A socket of this user (or root), no group or other permissions.
fn check_socket(socket: &Path) -> Result<(), Error> {
    let m = std::fs::metadata(socket)
        .map_err(|e| Error(format!("cannot use {}: {e}", socket.display())))?;
    let uid = euid();
    if !m.file_type().is_socket() {
        return fail(format!("{} is not a socket", socket.display()));
    }
    if m.uid() != uid && m.uid() != 0 {
        return fail(format!(
            "{} belongs to another user (uid {})",
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

/// The HotSpot handshake: `.attach_pid<pid>`, SIGQUIT, wait for `socket`.
fn handshake(pid: u32, socket: &Path) -> Result<(), Error> {
    if !catches_sigquit(pid) {
        return fail(format!(
            "process {pid} has no attach socket and does not catch SIGQUIT (which would end \
             it): it is not a JVM, nor a flightrec process started with attach=true or \
             attach=lazy"
        ));
    }
    let in_cwd = PathBuf::from(format!("/proc/{pid}/cwd/.attach_pid{pid}"));
    let in_tmp = PathBuf::from(format!("/proc/{pid}/root/tmp/.attach_pid{pid}"));
    let trigger = [in_cwd, in_tmp]
        .into_iter()
        .find(|p| std::fs::File::create(p).is_ok())
        .ok_or_else(|| {
            Error(format!(
                "cannot create .attach_pid{pid} in the working directory of process {pid} \
                 or in /tmp"
            ))
        })?;
    let started = Instant::now();
    let mut next_signal = started;
    let mut delay = Duration::from_millis(20);
    let found = loop {
        if socket.exists() {
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
    let _ = std::fs::remove_file(&trigger);
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
