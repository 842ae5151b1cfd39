//! Lazy start (`attach=lazy`): no socket until the first `jcmd`, which
//! starts the listener the way it starts a JVM's, by SIGQUIT.
//!
//! # The handshake
//!
//! When `/tmp/.java_pid<pid>` is missing, `jcmd` creates the trigger file
//! `.attach_pid<pid>` in the process's working directory (through
//! `/proc/<pid>/cwd`; if that fails, in its `/tmp`), sends SIGQUIT, and
//! polls for the socket for up to 10 s, sending SIGQUIT once more half-way.
//! It deletes the trigger file when done. JDK 25's client sends SIGQUIT
//! only if `/proc/<pid>/status` shows it caught (`SigCgt`) and not ignored
//! (`SigIgn`); JDK 17's sends it unconditionally.
//!
//! # Handler
//!
//! [`listen_on_sigquit`] installs a SIGQUIT handler (the process now shows
//! SIGQUIT as caught) and starts a thread (`flightrec-attach-trigger`)
//! blocked reading a pipe. The handler, as HotSpot's does, looks for the
//! trigger file in the working directory, then in `/tmp`, a regular file
//! (a symbolic link is not followed) owned by the effective uid or root:
//! - found: it writes one byte to the pipe; the thread wakes and calls
//!   [`super::listener::listen`] (a no-op once the listener runs);
//! - not found (a `kill -QUIT`, Ctrl-\): it forwards the signal to the
//!   handler installed before ours, if that was a function; if it was
//!   ignore (a shell's background job starts so), nothing happens, as
//!   before; if it was the default action (end the process with a core
//!   dump), it writes one line on stderr and the process goes on. A JVM
//!   prints a thread dump there; flightrec has none to print.
//!
//! The handler calls only `getpid`, `geteuid`, `lstat`, `write` and the
//! previous handler, and touches only atomics set before it was installed:
//! all async-signal-safe.
//!
//! Invariant: the pipe's reader is the thread of the process that
//! installed the handler ([`OWNER`]); in a forked child (no such thread)
//! the handler treats every SIGQUIT as not a trigger, until the child calls
//! [`listen_on_sigquit`] itself.

use std::io;

use crate::base::sync::global::{AtomicUsize, Mutex, Ordering};

/// The pid whose trigger thread runs (0: none).
static OWNER: AtomicUsize = AtomicUsize::new(0);
/// The pipe's write end (valid while [`OWNER`] is set).
static WAKE_FD: AtomicUsize = AtomicUsize::new(0);
/// Serialises installs.
static INSTALLING: Mutex<()> = Mutex::new(());

/// Installs the SIGQUIT handler of the lazy start and the thread that
/// starts the listener when `jcmd` asks (see the module doc). Does nothing
/// if this process already did.
///
/// It changes what SIGQUIT does: without `jcmd`'s trigger file, SIGQUIT
/// goes to the handler installed before; if SIGQUIT was ignored, it still
/// is; if it had its default action, it is noted on stderr instead of
/// ending the process.
///
/// # Errors
///
/// The pipe, the handler or the thread could not be made.
pub fn listen_on_sigquit() -> io::Result<()> {
    let _installing = INSTALLING.lock();
    let pid = std::process::id() as usize;
    if OWNER.load(Ordering::Acquire) == pid {
        return Ok(());
    }
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    // Never block the handler: a full pipe already holds a wake-up.
    // SAFETY: `write_fd` is the pipe just made.
    unsafe { libc::fcntl(write_fd, libc::F_SETFL, libc::O_NONBLOCK) };
    let spawned = std::thread::Builder::new()
        .name("flightrec-attach-trigger".into())
        .spawn(move || wait_for_triggers(read_fd));
    if let Err(e) = spawned {
        // SAFETY: both descriptors are ours and used nowhere else.
        unsafe {
            libc::close(read_fd);
            libc::close(write_fd);
        }
        return Err(e);
    }
    // Before the handler can run: it reads these.
    WAKE_FD.store(write_fd as usize, Ordering::Release);
    OWNER.store(pid, Ordering::Release);
    install_handler()?;
    // `jcmd` lists the process before its first SIGQUIT (see `perfdata.rs`).
    let _ = super::perfdata::publish();
    Ok(())
}

/// Puts flightrec in front of SIGQUIT: it looks at every SIGQUIT first
/// ([`take_trigger`]), and notes one on stderr where the program's
/// disposition is the default ([`note`]); the program's disposition stays
/// its own (see [`crate::process::relay`]).
fn install_handler() -> io::Result<()> {
    crate::process::relay::adopt(libc::SIGQUIT, Some(take_trigger), Some(note))
}

/// The trigger thread: one listener start attempt per wake-up.
fn wait_for_triggers(read_fd: libc::c_int) {
    let mut byte = 0u8;
    let mut reported = false;
    loop {
        // SAFETY: `byte` is valid for a one-byte write; `read_fd` stays
        // open for the process's life.
        let n = unsafe { libc::read(read_fd, (&raw mut byte).cast(), 1) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
        if let Err(e) = super::listener::listen()
            && !std::mem::replace(&mut reported, true)
        {
            eprintln!("flightrec: attach: jcmd asked (SIGQUIT) but {e}");
        }
    }
}

/// A SIGQUIT, before the program's disposition: `jcmd`'s (its trigger
/// file exists) wakes the trigger thread and goes no further.
fn take_trigger(_: libc::c_int) -> bool {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as usize;
    if OWNER.load(Ordering::Acquire) != pid || !trigger_present(pid) {
        return false;
    }
    let byte = 1u8;
    // SAFETY: WAKE_FD is the pipe's open write end while OWNER is this
    // pid (stored before OWNER); a full pipe fails with EAGAIN, which is
    // fine: a wake-up is pending.
    unsafe {
        libc::write(
            WAKE_FD.load(Ordering::Relaxed) as i32,
            (&raw const byte).cast(),
            1,
        )
    };
    true
}

/// Whether `.attach_pid<pid>` exists in the working directory or `/tmp`,
/// a regular file owned by our effective uid or root (HotSpot's check,
/// without following a link). Async-signal-safe.
fn trigger_present(pid: usize) -> bool {
    let mut path = [0u8; 64];
    let prefix = b"/tmp/.attach_pid";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut p = pid;
    loop {
        i -= 1;
        digits[i] = b'0' + (p % 10) as u8;
        p /= 10;
        if p == 0 {
            break;
        }
    }
    let end = prefix.len() + digits.len() - i;
    path[prefix.len()..end].copy_from_slice(&digits[i..]);
    // path[end] is the NUL. First relative (`.attach_pid<pid>`), then /tmp.
    [&path[5..=end], &path[..=end]].into_iter().any(owned_by_us)
}

/// Whether the NUL-terminated `path` is a regular file (not a link:
/// `lstat`), owned by our euid or root.
fn owned_by_us(path: &[u8]) -> bool {
    // SAFETY: an all-zero `stat` is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` ends with NUL (see the caller); `st` is a valid out-pointer.
    if unsafe { libc::lstat(path.as_ptr().cast(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
    {
        return false;
    }
    // SAFETY: geteuid only reads the process's credentials.
    st.st_uid == 0 || st.st_uid == unsafe { libc::geteuid() }
}

/// A SIGQUIT that is no trigger, where the program's disposition is the
/// default: a note instead of the end of the process.
fn note(_: libc::c_int) {
    let note = b"flightrec: SIGQUIT ignored: no .attach_pid<pid> from jcmd \
                 (attach=lazy catches SIGQUIT)\n";
    // SAFETY: writes a static buffer to stderr; the result is moot.
    unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_is_looked_for_in_the_working_directory_and_tmp() {
        // A pid no process of this test has: only our file can match.
        let pid = 4_000_000_000usize;
        let tmp = format!("/tmp/.attach_pid{pid}");
        let _ = std::fs::remove_file(&tmp);
        assert!(!trigger_present(pid));
        std::fs::write(&tmp, b"").unwrap();
        assert!(trigger_present(pid));
        std::fs::remove_file(&tmp).unwrap();
        assert!(!trigger_present(pid));
    }
}
