//! Whether the process writing a followed repository is still there.
//!
//! A chunk file's name ends in the id of the process that wrote it
//! (`…_<pid>.jfr`, see `crate::repository::store`), so the newest
//! chunk of a repository names its writer. The writer is gone when
//! `kill(pid, 0)` fails with `ESRCH`, or when the process is a zombie
//! (killed, not yet reaped by its parent: it writes nothing more). A
//! stream on a repository whose writer is gone reads what the chunks hold
//! (up to each one's last flush) and ends with
//! [`StreamError::WriterGone`](super::StreamError::WriterGone) instead of
//! waiting for chunks that will never finish.
//!
//! Invariant: a writer is called gone only on the kernel's word; a pid
//! reused by another process reads as alive (the stream's `idle_end` still
//! ends it).

use std::path::Path;

use crate::repository::files::chunk_name_pid;

/// The process that wrote the newest of `chunks` (in name order, oldest
/// first), if its name says.
pub(crate) fn writer_pid(chunks: &[impl AsRef<Path>]) -> Option<u32> {
    chunks
        .iter()
        .rev()
        .find_map(|p| p.as_ref().file_name()?.to_str().and_then(chunk_name_pid))
}

/// Whether process `pid` has exited (or is a zombie).
pub(crate) fn gone(pid: u32) -> bool {
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if id <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that `id` exists.
    if unsafe { libc::kill(id, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // Exists: a zombie (state Z, or X while being reaped) is gone too. The
    // state follows the command name's closing parenthesis.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state == 'Z' || state == 'X')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_or_zombie_child_is_gone_and_this_process_is_not() {
        assert!(!gone(std::process::id()));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(!gone(pid));
        child.kill().unwrap();
        // Not reaped yet: a zombie once the kill lands.
        let t = std::time::Instant::now();
        while !gone(pid) {
            assert!(t.elapsed().as_secs() < 5, "the killed child still runs");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
        assert!(gone(pid));
        let names = [
            "2026_01_01_00_00_00_000000000_17.jfr",
            "2026_01_01_00_00_01_000000000_42.jfr",
            "notes.jfr",
        ];
        assert_eq!(writer_pid(&names), Some(42));
        assert_eq!(writer_pid(&["notes.jfr"]), None);
    }
}
