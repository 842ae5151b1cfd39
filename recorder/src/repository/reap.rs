//! Removing a finished repository without making the stop wait for it.
//!
//! # Why
//!
//! Deleting a file frees its blocks, and on a file system that discards
//! freed blocks (ext4 mounted `discard`, common on cloud disks) each
//! `unlink` of a file with data waits for the device: measured at 4 to
//! 5 ms per file on the 2-core VM of docs/performance.md, against 9 µs for
//! an empty file. A recording rotated every 5 ms for a minute holds about
//! 7,000 chunk files; removing them one by one inside `stop()` took 30 s,
//! six times the time of writing the destination.
//!
//! # Mechanism
//!
//! At the last stop, once the destination is written and synced, a
//! repository that is to go (this recording created it, nobody asked to
//! keep it, no chunk is kept in it) is emptied file by file for at most
//! [`STOP_BUDGET`] and removed: a recording of some dozens of chunks goes
//! as it always did, before `stop()` returns. If files are left, and the
//! directory (read through the descriptor held since it was checked)
//! holds nothing but them, it is renamed in its parent to
//! `.flightrec-reap-<pid>-<name>` (`RENAME_NOREPLACE`) and handed to a
//! background thread, `flightrec-reap`, which unlinks the files through
//! that descriptor ([`AT_ONCE`] at a time: the device serves concurrent
//! discards), then removes the directory. `stop()` returns after the
//! rename: the repository's path is gone. A directory holding anything
//! else (a file someone put there, another process's chunks) is not
//! renamed: the stop deletes its own files in place, as before.
//!
//! # A process that exits first
//!
//! Nothing waits for the thread: the program's exit ends it wherever it
//! is, and the renamed directory stays, holding chunk files whose every
//! event is already in the destination. It is never reported as a stale
//! repository (`stale` looks only at `flightrec-<pid>-XXXXXX` names). It is
//! removed, in the background, by the next process of this user that
//! starts a recording with a repository in the same parent or stops one
//! there ([`sweep_exited`]), once the process named in it has exited. A
//! directory named for this very pid is left to a later process: it may
//! be this process's own reap in progress (or one of an earlier program
//! image of it that `exec`ed).
//!
//! # Invariant
//!
//! Only a directory renamed here, or one named `.flightrec-reap-<pid>-*`,
//! owned by this user, of a process that has exited, is ever emptied, and
//! then only of chunk files (of that pid, for the latter); every file is
//! removed by `unlinkat` through a descriptor of the directory opened
//! with `O_NOFOLLOW` (never by a path that could be swapped, never
//! through a symbolic link), and a directory is removed only when empty.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::repository::files::{Dir, chunk_name_pid, euid};

/// What a repository's renamed directory starts with.
const PREFIX: &str = ".flightrec-reap-";
/// Threads unlinking at once.
const AT_ONCE: usize = 4;
/// How long the stop deletes chunk files itself before it hands the rest
/// to a thread: a recording of a few dozen chunks leaves nothing behind
/// even if the process exits right after its stop.
pub(crate) const STOP_BUDGET: Duration = Duration::from_millis(250);

/// The name `dir`'s renamed directory gets in its parent.
fn reap_name(dir_name: &OsStr) -> OsString {
    let mut name = OsString::from(format!("{PREFIX}{}-", std::process::id()));
    name.push(dir_name);
    name
}

/// The pid in a renamed directory's name, if it is one.
fn reap_pid(name: &OsStr) -> Option<u32> {
    let rest = name.to_str()?.strip_prefix(PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` exists (one we may not signal exists too).
fn alive(pid: u32) -> bool {
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

/// Whether `a` and `b` are the same directory.
fn same(a: &Dir, b: Option<crate::repository::files::Stat>) -> bool {
    match (a.stat_self(), b) {
        (Ok(a), Some(b)) => (a.dev, a.ino) == (b.dev, b.ino),
        _ => false,
    }
}

/// The directory `path` names the parent of (`.` for a bare name).
fn parent_of(path: &Path) -> Option<&Path> {
    let parent = path.parent()?;
    Some(if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    })
}

/// Removes the repository `path` (held open as `held`, its chunk files
/// `files`): file by file for up to `budget`, then, if files are left,
/// renamed out of the way and the rest removed on a thread of its own.
/// Gives the handle and the files left back if it could not be renamed
/// (the caller then removes them in place).
pub(crate) fn remove(
    path: &Path,
    held: Dir,
    mut files: Vec<OsString>,
    budget: Duration,
) -> Result<(), (Dir, Vec<OsString>)> {
    let began = Instant::now();
    while !files.is_empty() && began.elapsed() < budget {
        if let Some(f) = files.pop() {
            let _ = held.unlink(&f);
        }
    }
    let (Some(parent_path), Some(name)) = (parent_of(path), path.file_name()) else {
        return Err((held, files));
    };
    let Ok(parent) = Dir::open(parent_path, false) else {
        return Err((held, files));
    };
    if files.is_empty() {
        // All gone within the budget: as before any reaping (fails,
        // harmlessly, if someone else put files there).
        if same(&held, parent.stat(name).ok().flatten()) {
            let _ = parent.remove_dir(name);
        }
        if leftovers(&parent) {
            in_background(move || sweep(&parent));
        }
        return Ok(());
    }
    // Renamed only if it holds nothing but what is ours to delete: whatever
    // else is in it is not taken out of its path.
    let ours: HashSet<&OsStr> = files.iter().map(OsString::as_os_str).collect();
    let only_ours = held
        .names()
        .is_ok_and(|names| names.iter().all(|n| ours.contains(n.as_os_str())));
    drop(ours);
    let renamed = reap_name(name);
    if !only_ours || parent.rename(name, &renamed, true).is_err() {
        return Err((held, files));
    }
    in_background(move || {
        reap(&held, &files);
        // The directory renamed is the one held (nobody swapped another in
        // between the caller's check and the rename), and empty.
        if same(&held, parent.stat(&renamed).ok().flatten()) {
            let _ = parent.remove_dir(&renamed);
        }
        sweep(&parent);
    });
    Ok(())
}

/// Removes, in the background, what processes of this user that have
/// exited left in `parent_path` ([`sweep`]), if they left anything: the
/// cleanup a recording's start runs where its repository lives.
pub(crate) fn sweep_exited(parent_path: &Path) {
    if let Ok(parent) = Dir::open(parent_path, false)
        && leftovers(&parent)
    {
        in_background(move || sweep(&parent));
    }
}

/// Runs `work` on a `flightrec-reap` thread, which nothing joins. Without
/// a thread (none could be made), what it would have removed is left to
/// the next sweep in the same parent.
fn in_background(work: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("flightrec-reap".into())
        .spawn(move || {
            // The recorder's own allocations are not the program's.
            crate::feature::each(|f| f.own_thread());
            work();
        });
}

/// The renamed directories in `parent` left by a process that has exited.
fn exited(parent: &Dir) -> Vec<(OsString, u32)> {
    let own = std::process::id();
    parent
        .names()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| reap_pid(&n).map(|pid| (n, pid)))
        .filter(|&(_, pid)| pid != own && !alive(pid))
        .collect()
}

/// Whether `parent` holds a renamed directory of an exited process.
fn leftovers(parent: &Dir) -> bool {
    !exited(parent).is_empty()
}

/// Unlinks `files` in `dir`, [`AT_ONCE`] at a time.
fn reap(dir: &Dir, files: &[OsString]) {
    let per = files.len().div_ceil(AT_ONCE).max(1);
    std::thread::scope(|s| {
        for part in files.chunks(per) {
            let _ = std::thread::Builder::new()
                .name("flightrec-reap".into())
                .spawn_scoped(s, move || {
                    crate::feature::each(|f| f.own_thread());
                    for f in part {
                        let _ = dir.unlink(f);
                    }
                });
        }
    });
}

/// Removes the renamed directories in `parent` left by processes of this
/// user that exited before their reaper finished: each opened without
/// following a link, checked to be this user's, emptied of the chunk
/// files of the process in its name, and removed if that left it empty.
fn sweep(parent: &Dir) {
    for (name, pid) in exited(parent) {
        let Ok(dir) = parent.open_dir(&name) else {
            continue; // a link, not a directory, or gone
        };
        if dir.stat_self().map_or(true, |st| st.uid != euid()) {
            continue;
        }
        let files: Vec<OsString> = dir
            .names()
            .unwrap_or_default()
            .into_iter()
            .filter(|n| n.to_str().and_then(chunk_name_pid) == Some(pid))
            .collect();
        reap(&dir, &files);
        if same(&dir, parent.stat(&name).ok().flatten()) {
            let _ = parent.remove_dir(&name);
        }
    }
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    use super::*;

    /// A fresh directory for one test.
    fn scratch(test: &str) -> PathBuf {
        let base =
            std::env::temp_dir().join(format!("flightrec-reap-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        base
    }

    /// The pid of a process that has exited (and was reaped).
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        assert!(!alive(pid));
        pid
    }

    /// A chunk file name of process `pid`.
    fn chunk(pid: u32, i: u32) -> String {
        format!("2026_12_07_12_00_00_{i:09}_{pid}.jfr")
    }

    /// Waits up to 20 s for `done`.
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn renamed_directories_are_recognised() {
        let name = reap_name(OsStr::new("flightrec-4211-Xq3vZa"));
        assert_eq!(
            name.to_str().unwrap(),
            format!(
                ".flightrec-reap-{}-flightrec-4211-Xq3vZa",
                std::process::id()
            )
        );
        assert_eq!(reap_pid(&name), Some(std::process::id()));
        for other in [
            "flightrec-4211-Xq3vZa",
            ".flightrec-reap-x-y",
            ".flightrec-reap-12",
            ".flightrec-reap--12-x",
            ".flightrec-reap-+12-x",
        ] {
            assert_eq!(reap_pid(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn a_small_repository_goes_within_the_stop() {
        let base = scratch("small");
        let repo = base.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let own = std::process::id();
        let files: Vec<OsString> = (0..5).map(|i| OsString::from(chunk(own, i))).collect();
        for f in &files {
            std::fs::write(repo.join(f), b"chunk").unwrap();
        }
        let held = Dir::open(&repo, true).unwrap();
        remove(&repo, held, files, Duration::from_secs(60)).expect("removed");
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0, "nothing left");
        std::fs::remove_dir(&base).unwrap();
    }

    #[test]
    fn a_repository_goes_at_once_by_name_and_later_on_disk() {
        let base = scratch("later");
        let repo = base.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let own = std::process::id();
        let files: Vec<OsString> = (0..20).map(|i| OsString::from(chunk(own, i))).collect();
        for f in &files {
            std::fs::write(repo.join(f), b"chunk").unwrap();
        }
        // Left by a process that has exited: swept by this one's reaper.
        let dead = dead_pid();
        let left = base.join(format!(".flightrec-reap-{dead}-old"));
        std::fs::create_dir(&left).unwrap();
        std::fs::write(left.join(chunk(dead, 1)), b"chunk").unwrap();
        let held = Dir::open(&repo, true).unwrap();
        remove(&repo, held, files, Duration::ZERO).expect("renamed");
        assert!(!repo.exists());
        eventually("not removed", || {
            std::fs::read_dir(&base).unwrap().next().is_none()
        });
        std::fs::remove_dir(&base).unwrap();
    }

    #[test]
    fn a_repository_holding_anything_else_is_not_renamed() {
        let base = scratch("foreign");
        let repo = base.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let own = std::process::id();
        let files: Vec<OsString> = (0..3).map(|i| OsString::from(chunk(own, i))).collect();
        for f in &files {
            std::fs::write(repo.join(f), b"chunk").unwrap();
        }
        std::fs::write(repo.join(chunk(1, 9)), b"another process's").unwrap();
        let held = Dir::open(&repo, true).unwrap();
        let (_, left) = remove(&repo, held, files, Duration::ZERO).expect_err("kept its path");
        assert_eq!(left.len(), 3);
        assert!(repo.join(chunk(1, 9)).exists());
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// What a process killed before its reaper finished leaves: removed by
    /// a later start's sweep, and nothing but its own chunk files, never
    /// through a link.
    #[test]
    fn an_exited_reapers_leftover_goes_and_nothing_else() {
        let base = scratch("sweep");
        let dead = dead_pid();
        let outside = base.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join(chunk(dead, 1)), b"not in a reap dir").unwrap();
        // The leftover: its chunks, and a link to a chunk outside it.
        let left = base.join(format!(".flightrec-reap-{dead}-flightrec-{dead}-AbC123"));
        std::fs::create_dir(&left).unwrap();
        for i in 0..10 {
            std::fs::write(left.join(chunk(dead, i)), b"chunk").unwrap();
        }
        // One with something that is not a chunk of that process: emptied
        // of its chunks, kept.
        let mixed = base.join(format!(".flightrec-reap-{dead}-mixed"));
        std::fs::create_dir(&mixed).unwrap();
        std::fs::write(mixed.join(chunk(dead, 1)), b"chunk").unwrap();
        std::fs::write(mixed.join("notes.txt"), b"x").unwrap();
        std::fs::write(mixed.join(chunk(1, 1)), b"init's").unwrap();
        // A link named like a leftover, to a directory of chunks: not followed.
        symlink(&outside, base.join(format!(".flightrec-reap-{dead}-link"))).unwrap();
        // A live process's (init's): its reaper may be at work.
        let live = base.join(".flightrec-reap-1-live");
        std::fs::create_dir(&live).unwrap();
        std::fs::write(live.join(chunk(1, 1)), b"chunk").unwrap();

        // Never listed as a stale repository: its chunks are all in a
        // destination.
        assert_eq!(crate::repository::stale::default_repositories(&base), []);
        sweep_exited(&base);
        eventually("the leftover was not removed", || !left.exists());
        eventually("the mixed one was not emptied of its chunks", || {
            !mixed.join(chunk(dead, 1)).exists()
        });
        assert!(mixed.join("notes.txt").exists());
        assert!(mixed.join(chunk(1, 1)).exists());
        assert!(outside.join(chunk(dead, 1)).exists(), "followed a link");
        assert!(live.join(chunk(1, 1)).exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
