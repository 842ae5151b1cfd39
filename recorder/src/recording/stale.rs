//! Repositories left behind by processes that have exited (killed, or
//! crashed before their stop), named on stderr when the next recording
//! starts so their chunks are not forgotten.
//!
//! A repository is stale when it holds chunk files (named like
//! [`crate::recording::repository`]'s) written by a process other than this one that
//! no longer exists (`kill(pid, 0)` fails with `ESRCH`). Two places are
//! looked at: the default repositories under the temp directory
//! (`flightrec-<pid>-XXXXXX`, owned by this user) when a recording starts
//! with the default repository, and the chunk files of a named repository
//! that already exists. Each gets one stderr line naming the directory and
//! `recorder::assemble(dir, out)`.
//!
//! Invariant: only reads; nothing here removes or opens for writing.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::recording::files::{chunk_name_pid, euid};

/// Whether process `pid` exists (a pid we may not signal exists too).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that `pid` exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// The pid in a default repository's name, `flightrec-<pid>-XXXXXX` (or the
/// older `flightrec-<pid>`).
fn default_dir_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("flightrec-")?;
    let (pid, suffix) = rest.split_once('-').unwrap_or((rest, ""));
    let suffix_ok = suffix.is_empty()
        || (suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric()));
    (suffix_ok && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// A directory holding chunks of an exited process, and that process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stale {
    pub(crate) dir: PathBuf,
    pub(crate) pid: u32,
}

/// The chunks in `dir` written by a process other than this one that has
/// exited: the first such process found.
pub(crate) fn chunks_in(dir: &Path) -> Option<Stale> {
    let own = std::process::id();
    let mut pids: Vec<u32> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| chunk_name_pid(e.ok()?.file_name().to_str()?))
        .filter(|&pid| pid != own)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let pid = pids.into_iter().find(|&pid| !process_alive(pid))?;
    Some(Stale {
        dir: dir.to_path_buf(),
        pid,
    })
}

/// Default repositories under `temp` that belong to this user, hold chunk
/// files, and whose process has exited.
pub(crate) fn default_repositories(temp: &Path) -> Vec<Stale> {
    let own = std::process::id();
    let Ok(entries) = fs::read_dir(temp) else {
        return Vec::new();
    };
    let mut found: Vec<Stale> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let pid = default_dir_pid(e.file_name().to_str()?)?;
            let meta = e.metadata().ok()?; // does not follow links
            if pid == own || !meta.is_dir() || meta.uid() != euid() || process_alive(pid) {
                return None;
            }
            let holds_chunks = fs::read_dir(e.path()).ok()?.any(|c| {
                c.ok()
                    .is_some_and(|c| c.file_name().to_str().and_then(chunk_name_pid).is_some())
            });
            holds_chunks.then(|| Stale { dir: e.path(), pid })
        })
        .collect();
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// The stderr line naming a stale repository.
pub(crate) fn hint(s: &Stale) -> String {
    format!(
        "flightrec: {} holds chunks of process {}, which has exited; \
         recorder::assemble(dir, out) turns them into one .jfr file",
        s.dir.display(),
        s.pid
    )
}

/// Prints one line per stale repository (at most three, then a count).
pub(crate) fn print_hint(stale: &[Stale], under: &Path) {
    for s in stale.iter().take(3) {
        eprintln!("{}", hint(s));
    }
    if stale.len() > 3 {
        eprintln!(
            "flightrec: and {} more such directories in {}",
            stale.len() - 3,
            under.display()
        );
    }
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;
    use crate::recording::files::chunk_file_name;

    /// A fresh directory for one test.
    fn scratch(test: &str) -> PathBuf {
        let base = std::env::temp_dir().join(format!(
            "flightrec-stale-test-{}-{test}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        base
    }

    /// The pid of a process that has exited (and was reaped).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!process_alive(pid));
        pid
    }

    #[test]
    fn default_repository_names_are_recognised() {
        assert_eq!(default_dir_pid("flightrec-4211-Xq3vZa"), Some(4211));
        assert_eq!(default_dir_pid("flightrec-4211"), Some(4211));
        for bad in [
            "flightrec-tests",
            "flightrec-repo-test-1",
            "flightrec-12-abc",
            "other-12",
        ] {
            assert_eq!(default_dir_pid(bad), None, "{bad}");
        }
    }

    #[test]
    fn repositories_of_exited_processes_are_found_and_named() {
        let base = scratch("stale");
        let dead = dead_pid();
        let chunk = format!("2025_11_30_06_28_08_123456789_{dead}.jfr");
        let stale = base.join(format!("flightrec-{dead}-AbC123"));
        fs::create_dir(&stale).unwrap();
        fs::write(stale.join(&chunk), b"FLR\0").unwrap();
        // Not stale: our own, an empty one, a live process's, a foreign name.
        let own = base.join(format!("flightrec-{}-ZZZ999", std::process::id()));
        let empty = base.join(format!("flightrec-{dead}-eeeeee"));
        let live = base.join("flightrec-1-LLLLLL"); // init is alive
        let other = base.join("flightrec-tests");
        for d in [&own, &empty, &live, &other] {
            fs::create_dir(d).unwrap();
        }
        for d in [&own, &live, &other] {
            fs::write(d.join(&chunk), b"FLR\0").unwrap();
        }
        let found = default_repositories(&base);
        assert_eq!(
            found,
            vec![Stale {
                dir: stale.clone(),
                pid: dead
            }]
        );
        let hint = hint(&found[0]);
        assert!(hint.contains(&stale.display().to_string()), "{hint}");
        assert!(hint.contains("recorder::assemble(dir, out)"), "{hint}");
        // A named repository holding an exited process's chunks.
        assert_eq!(chunks_in(&own).map(|s| s.pid), Some(dead));
        assert_eq!(chunks_in(&empty), None);
        fs::write(
            empty.join(chunk_file_name(7)), // our own chunk: not stale
            b"FLR\0",
        )
        .unwrap();
        assert_eq!(chunks_in(&empty), None);
        fs::remove_dir_all(&base).unwrap();
    }
}
