//! Repositories left behind by processes that have exited (killed, or
//! crashed before their stop), found so their chunks are not forgotten.
//!
//! A repository is stale when it holds chunk files (named like
//! [`crate::repository::store`]'s) written by a process other than this one that
//! no longer exists (`kill(pid, 0)` fails with `ESRCH`). Two places are
//! looked at: the default repositories under the temp directory
//! (`flightrec-<pid>-XXXXXX`, owned by this user) when a recording starts
//! with the default repository, and the chunk files of a named repository
//! that already exists.
//!
//! # Who is told
//!
//! The host program's stderr is the host's: a process that links flightrec
//! says nothing about other processes' repositories unless its user asks
//! (`warn-stale=true` in `FLIGHTREC`, [`set_warn`]). Then, however many
//! there are, one stderr line names the first, counts the others and names
//! `flightrec::assemble(dir, out)`, and each repository is named at most
//! once in the life of the process (a second recording's start names only
//! new ones). The `flightrec` command lists them when asked (`flightrec
//! jcmd`, `flightrec assemble` with no argument), through
//! [`stale_repositories`].
//!
//! A default repository named for this very process's pid that this image
//! did not make was left by an earlier image of the same process that
//! `exec`ed (exit handlers do not run across `exec`): nothing can finish
//! its chunks, and [`remove_own_leftovers`] removes it.
//!
//! A repository a stop renamed to `.flightrec-reap-<pid>-<name>` to delete
//! its files in the background ([`crate::repository::reap`]) is not stale,
//! even when its process exited before it was empty: every chunk in it is
//! in a destination. It is never listed here; a later start's
//! [`reap::sweep_exited`](crate::repository::reap::sweep_exited) removes it.
//!
//! Invariant: nothing here opens for writing; only the chunk files of this
//! pid in a default repository of this pid and user, and then that
//! directory, are ever removed.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::base::sync::Ordering;
use crate::base::sync::global::{AtomicBool, Mutex};
use crate::repository::files::{chunk_name_pid, euid};

/// Whether the user asked for the stderr note (`warn-stale=true`).
static WARN: AtomicBool = AtomicBool::new(false);
/// The repositories this process has named on stderr already.
static NOTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Asks for (`true`) or stops (`false`) the stderr note naming other
/// processes' leftover repositories when a recording starts (off by
/// default; `warn-stale=` in `FLIGHTREC`).
pub fn set_warn(on: bool) {
    WARN.store(on, Ordering::Relaxed);
}

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
pub struct StaleRepository {
    /// The repository.
    pub dir: PathBuf,
    /// The process that wrote (some of) its chunks and has exited.
    pub pid: u32,
}

/// The default repositories under the temp directory (`$TMPDIR`, else
/// `/tmp`) that belong to this user and hold chunks of a process that has
/// exited, in path order: what `flightrec assemble` can recover.
pub fn stale_repositories() -> Vec<StaleRepository> {
    default_repositories(&std::env::temp_dir())
}

/// The chunks in `dir` written by a process other than this one that has
/// exited: the first such process found.
pub(crate) fn chunks_in(dir: &Path) -> Option<StaleRepository> {
    let own = std::process::id();
    let mut pids: Vec<u32> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| chunk_name_pid(e.ok()?.file_name().to_str()?))
        .filter(|&pid| pid != own)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let pid = pids.into_iter().find(|&pid| !process_alive(pid))?;
    Some(StaleRepository {
        dir: dir.to_path_buf(),
        pid,
    })
}

/// Default repositories under `temp` that belong to this user, hold chunk
/// files, and whose process has exited.
pub(crate) fn default_repositories(temp: &Path) -> Vec<StaleRepository> {
    let own = std::process::id();
    let Ok(entries) = fs::read_dir(temp) else {
        return Vec::new();
    };
    let mut found: Vec<StaleRepository> = entries
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
            holds_chunks.then(|| StaleRepository { dir: e.path(), pid })
        })
        .collect();
    found.sort_by(|a, b| a.dir.cmp(&b.dir));
    found
}

/// The stderr line naming stale repositories: one line however many there
/// are (the first one named, the others counted).
pub(crate) fn hint(stale: &[StaleRepository], under: &Path) -> Option<String> {
    let first = stale.first()?;
    let more = match stale.len() - 1 {
        0 => String::new(),
        1 => format!(" (and 1 more such directory in {})", under.display()),
        n => format!(" (and {n} more such directories in {})", under.display()),
    };
    Some(format!(
        "flightrec: {} holds chunks of process {}, which has exited{more}; \
         flightrec::assemble(dir, out) (or `flightrec assemble DIR -o FILE`) turns them into one .jfr file",
        first.dir.display(),
        first.pid
    ))
}

/// Prints [`hint`]'s one line for the repositories `find` returns that
/// this process has not named yet, if the user asked ([`set_warn`]);
/// otherwise looks at nothing.
pub(crate) fn print_hint(find: impl FnOnce() -> Vec<StaleRepository>, under: &Path) {
    if !WARN.load(Ordering::Relaxed) {
        return;
    }
    let mut noted = NOTED.lock();
    let new: Vec<StaleRepository> = find()
        .into_iter()
        .filter(|s| !noted.contains(&s.dir))
        .collect();
    if let Some(line) = hint(&new, under) {
        eprintln!("{line}");
        noted.extend(new.into_iter().map(|s| s.dir));
    }
}

/// Default repositories under `temp` named for this very process
/// (`flightrec-<own pid>-XXXXXX`, owned by this user) and made since this
/// process started: an earlier program image of this process made them and
/// then `exec`ed (a shell or a version-manager shim under `LD_PRELOAD` +
/// `FLIGHTREC`), which skips every exit handler. No process can finish
/// those chunks any more, so they are removed (this pid's chunk files,
/// then the directory if it is empty). One made before this process
/// started belonged to an earlier process with the same pid: it is left
/// for [`default_repositories`]' notice. Called before this image makes a
/// repository of its own. Returns how many directories were removed.
pub(crate) fn remove_own_leftovers(temp: &Path) -> usize {
    let Some(started) = process_start_secs() else {
        return 0;
    };
    let own = std::process::id();
    let Ok(entries) = fs::read_dir(temp) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        if name.to_str().and_then(default_dir_pid) != Some(own) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = e.metadata() else { continue }; // does not follow links
        // `mtime` moves with every chunk; `ctime` too. One second of slack
        // for the start time's rounding.
        if !meta.is_dir() || meta.uid() != euid() || meta.mtime() + 1 < started {
            continue;
        }
        let Ok(dir) = crate::repository::files::Dir::open(&path, true) else {
            continue;
        };
        for c in fs::read_dir(&path)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
        {
            let n = c.file_name();
            if n.to_str().and_then(chunk_name_pid) == Some(own) {
                let _ = dir.unlink(&n);
            }
        }
        if fs::remove_dir(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// When this process started (seconds since the epoch): the boot time
/// (`/proc/stat` `btime`) plus its start in clock ticks after boot
/// (`/proc/self/stat` field 22). `exec` keeps both.
fn process_start_secs() -> Option<i64> {
    let stat = fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let ticks: i64 = rest.split(' ').nth(19)?.parse().ok()?;
    let boot: i64 = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1);
    Some(boot + ticks / hz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::files::chunk_file_name;

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
            vec![StaleRepository {
                dir: stale.clone(),
                pid: dead
            }]
        );
        let hint = hint(&found, &base).unwrap();
        assert!(hint.contains(&stale.display().to_string()), "{hint}");
        assert!(hint.contains("flightrec::assemble(dir, out)"), "{hint}");
        // Many: still one line, the rest counted.
        let many = vec![found[0].clone(); 19];
        let line = super::hint(&many, &base).unwrap();
        assert!(
            !line.contains('\n') && line.contains("and 18 more"),
            "{line}"
        );
        assert_eq!(super::hint(&[], &base), None);
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

    #[test]
    fn an_earlier_image_of_this_process_leaves_nothing() {
        let base = scratch("own_leftovers");
        let own = std::process::id();
        let left = base.join(format!("flightrec-{own}-AbC123"));
        let old = base.join(format!("flightrec-{own}-Old000"));
        let other = base.join(format!("flightrec-{own}-Other0"));
        for d in [&left, &old, &other] {
            fs::create_dir(d).unwrap();
            fs::write(d.join(chunk_file_name(7)), b"FLR\0").unwrap();
        }
        // Someone else's file in it: the directory stays, that file too.
        fs::write(other.join("notes.txt"), b"x").unwrap();
        // Made before this process started: an earlier holder of the pid.
        let c = std::ffi::CString::new(old.as_os_str().as_encoded_bytes()).unwrap();
        let times = [libc::timespec {
            tv_sec: 1000,
            tv_nsec: 0,
        }; 2];
        // SAFETY: `c` and `times` are valid for the call.
        let r = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) };
        assert_eq!(r, 0);
        assert!(process_start_secs().is_some());
        assert_eq!(remove_own_leftovers(&base), 1);
        assert!(!left.exists());
        assert!(old.join(chunk_file_name(7)).exists());
        assert!(other.join("notes.txt").exists());
        assert!(!other.join(chunk_file_name(7)).exists());
        fs::remove_dir_all(&base).unwrap();
    }
}
