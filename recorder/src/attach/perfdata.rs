//! The discovery file that lets `jcmd` (with no arguments) list a flightrec
//! process, as it lists JVMs: `/tmp/hsperfdata_<user>/<pid>`.
//!
//! The JDK's `jcmd` lists the pids named by the files of every
//! `hsperfdata_*` directory it can read, maps each file as a HotSpot
//! performance-data buffer (format version 2.0) and shows a process only
//! if its `sun.rt.jvmCapabilities` string starts with `1` (attachable),
//! naming it by `sun.rt.javaCommand`. So the file written here is such a
//! buffer with just those two string constants (the command line is the
//! process's own, `/proc/self/cmdline`):
//!
//! ```text
//! prologue (32 bytes): magic CAFEC0C0 (big-endian), byte order 1 (little),
//!   major 2, minor 0, accessible 1, used, overflow 0, mod time 0,
//!   entry offset 32, entry count 2
//! entry: length, name offset, vector length, type 'B', flags 1 (supported),
//!   units 5 (string), variability 1 (constant), data offset, name NUL, data NUL
//! ```
//!
//! then zeros to a whole number of pages (HotSpot maps the file and
//! refuses any other size). It is written under a temporary name (not all digits, so no lister
//! takes it for a pid) as `0600`, then renamed into place, into a directory
//! that must be ours, not a symbolic link and not writable by group or
//! others (made `0755` if missing, as HotSpot makes it). An `atexit` handler removes it in the process that
//! wrote it (not in a forked child); files of processes that no longer
//! exist are removed when one is published, as a starting JVM does. Failing to publish changes nothing but
//! the listing: `jcmd <pid>` still works.
//!
//! Invariant: a file named by a pid is whole when it appears (rename), and
//! only the process of that pid removes it, and only if it is still the
//! file it wrote (same inode).

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::base::sync::global::{AtomicU64, Ordering};

/// The pid that published (0: none).
static PUBLISHED: AtomicU64 = AtomicU64::new(0);
/// The inode of the file it published: only that file is removed.
static FILE_ID: AtomicU64 = AtomicU64::new(0);

/// `sun.rt.jvmCapabilities`: attachable, nothing else.
const CAPABILITIES: &str = "1000000000000000000000000000000000000000000000000000000000000000";

/// The directory for this user: `/tmp/hsperfdata_<user>`.
fn directory() -> io::Result<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `buf.len()` bytes
    // are writable; getpwuid_r is the reentrant form.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return Err(io::Error::other(format!("no user name for uid {uid}")));
    }
    // SAFETY: getpwuid_r succeeded: `pw_name` points to a NUL-terminated
    // string inside `buf`, which lives until the end of this function.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }
        .to_string_lossy()
        .into_owned();
    Ok(PathBuf::from(format!("/tmp/hsperfdata_{name}")))
}

/// The buffer `jcmd` reads: the two string constants after the prologue.
fn buffer(command_line: &str) -> Vec<u8> {
    let entries = [
        ("sun.rt.javaCommand", command_line),
        ("sun.rt.jvmCapabilities", CAPABILITIES),
    ];
    let mut body = Vec::new();
    for (name, value) in entries {
        let name_offset = 20usize;
        let data_offset = name_offset + name.len() + 1;
        let vector = value.len() + 1;
        let length = (data_offset + vector).next_multiple_of(8);
        let start = body.len();
        body.extend_from_slice(&(length as i32).to_le_bytes());
        body.extend_from_slice(&(name_offset as i32).to_le_bytes());
        body.extend_from_slice(&(vector as i32).to_le_bytes());
        body.extend_from_slice(&[b'B', 1, 5, 1]);
        body.extend_from_slice(&(data_offset as i32).to_le_bytes());
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
        body.resize(start + length, 0);
    }
    let used = 32 + body.len();
    let mut b = Vec::with_capacity(used);
    b.extend_from_slice(&0xcafe_c0c0_u32.to_be_bytes());
    b.extend_from_slice(&[1, 2, 0, 1]);
    b.extend_from_slice(&(used as i32).to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes());
    b.extend_from_slice(&0i64.to_le_bytes());
    b.extend_from_slice(&32i32.to_le_bytes());
    b.extend_from_slice(&(entries.len() as i32).to_le_bytes());
    b.extend_from_slice(&body);
    // HotSpot maps the file and refuses a size that is not a whole number
    // of pages; the zeros after the entries end the list (length 0).
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|&p| p > 0)
        .unwrap_or(4096);
    b.resize(used.next_multiple_of(page), 0);
    b
}

/// This process's command line, arguments joined by spaces.
fn command_line() -> String {
    let raw = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(String::from_utf8_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes this process's discovery file (once per process).
///
/// # Errors
///
/// The directory is another user's or a link, or cannot be made or
/// written.
pub(crate) fn publish() -> io::Result<PathBuf> {
    let pid = std::process::id();
    let dir = directory()?;
    let path = dir.join(pid.to_string());
    if PUBLISHED.load(Ordering::Acquire) == u64::from(pid) {
        return Ok(path);
    }
    match std::fs::DirBuilder::new().mode(0o755).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other(format!(
            "{} is not a directory of this user that only this user can write",
            dir.display()
        )));
    }
    remove_stale(&dir);
    let tmp = dir.join(format!(".{pid}.flightrec-tmp"));
    // The directory is this user's alone (checked above): what is in it is ours.
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    f.write_all(&buffer(&command_line()))?;
    FILE_ID.store(f.metadata()?.ino(), Ordering::Relaxed);
    drop(f);
    std::fs::rename(&tmp, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    PUBLISHED.store(u64::from(pid), Ordering::Release);
    register_exit_handler();
    Ok(path)
}

/// Removes the files of processes that no longer exist (one killed
/// before its `atexit` ran), as a starting JVM does.
fn remove_stale(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

pub(super) extern "C" fn remove_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let pid = std::process::id();
        if PUBLISHED.load(Ordering::Acquire) == u64::from(pid)
            && let Ok(dir) = directory()
        {
            let path = dir.join(pid.to_string());
            if std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() && m.ino() == FILE_ID.load(Ordering::Relaxed))
            {
                let _ = std::fs::remove_file(path);
            }
        }
    });
}

fn register_exit_handler() {
    static ONCE: crate::base::sync::Once = crate::base::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a plain `extern "C" fn()` that catches panics; atexit
        // only stores the pointer.
        unsafe { libc::atexit(remove_at_exit) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_holds_both_strings_aligned() {
        let b = buffer("app --port 8080");
        assert_eq!(&b[..4], &[0xca, 0xfe, 0xc0, 0xc0]);
        let used = i32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
        assert!(used < b.len() && b[used..].iter().all(|&z| z == 0));
        assert_eq!(b.len() % 4096, 0);
        let first = i32::from_le_bytes(b[32..36].try_into().unwrap()) as usize;
        assert_eq!(first % 8, 0);
        let at = |s: &str| b.windows(s.len()).position(|w| w == s.as_bytes()).is_some();
        assert!(at("sun.rt.javaCommand\0app --port 8080\0"));
        assert!(at("sun.rt.jvmCapabilities\x001000"));
    }
}
