//! The disk repository: one private directory of chunk files, one file per
//! chunk.
//!
//! ```text
//! $TMPDIR/flightrec-4211-Xq3vZa/                      default: mkdtemp, 0700
//! <dir>/2026_11_30_06_48_08_123456789_4211.jfr         finished chunk, 0600
//! <dir>/2026_11_30_06_48_13_000004211_4211.jfr         finished chunk
//! <dir>/2026_11_30_06_48_18_500000000_4211.jfr         the chunk being written
//! ```
//!
//! Files are named by their chunk's start time (nanosecond resolution, so
//! names sort by time and never collide within a process) and the writing
//! process's id.
//!
//! How the directory is made and checked so that no other user can plant
//! or redirect it is [`dir`](mod@super::dir)'s; which chunks each
//! recording keeps, and when a chunk file goes, is
//! [`retention`](mod@super::retention)'s.
//!
//! # In memory (`disk=false`)
//!
//! [`Repository::in_memory`] keeps the same chunks behind the same calls,
//! but each chunk file is an anonymous memory file (`memfd_create(2)`)
//! instead of a file in a directory: rotation, retention (`max_age`,
//! `max_size`), dumps and the destination written at the stop work the
//! same, nothing is written to disk until a dump or the stop, and a
//! chunk dropped by retention frees its memory. Its chunks are named
//! `memory:<chunk file name>`.
//!
//! Memory is bounded like the JDK's `memorysize`: a recording kept in
//! memory cuts its chunks at a quarter of its `memory_size` at most, and
//! after each chunk [`Repository::evict`] drops its oldest chunks while
//! they and the chunk being written exceed `memory_size` (never the
//! newest). Unlike retention, which the user asked for, that drops data
//! the file would have held: the chunk's events, and the lost events its
//! loss records reported, are counted lost
//! ([`LossCause::Evicted`](crate::LossCause::Evicted)) in the next
//! chunk, so the file still says what was committed.
//!
//! A repository left by a process that has exited (killed, or crashed
//! before its stop) is named on stderr when the next recording starts, with
//! the call that turns it into a file ([`assemble`](mod@super::assemble)); `stale.rs` finds them.
//!
//! Invariant: every file in `finished` holds one complete chunk (state 0),
//! is held by at least one recording, and sequence numbers follow start
//! time; every file this module creates is
//! new (`O_EXCL`), so no path an attacker prepared is ever opened for writing.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::base::loss::LossCounts;
use crate::config::builder::StartError;
use crate::repository::dir::{default_template, make_temp_dir, open_private_dir};
use crate::repository::files::{Dir, chunk_file_name};
use crate::repository::stale;

/// One finished chunk file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkFile {
    /// The file.
    pub path: PathBuf,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_nanos: i64,
    /// Wall-clock end, ns since the Unix epoch.
    pub end_nanos: i64,
    /// Bytes.
    pub size: u64,
}

/// A repository directory (or memory) and the chunks in it.
#[derive(Debug)]
pub(crate) struct Repository {
    /// The directory; empty while chunks are kept in memory only.
    pub(super) dir: PathBuf,
    /// The directory, held open: chunks are created, read and removed
    /// through it.
    pub(super) handle: Option<Dir>,
    /// The chunk files kept in memory, by their `memory:` names (a second
    /// descriptor of each, read with `pread` by dumps).
    pub(super) memory: HashMap<PathBuf, File>,
    /// Bytes of the finished chunks in `memory`.
    pub(super) in_memory: u64,
    /// Finished chunks by sequence number (start order), each with the
    /// number of recordings holding it.
    pub(super) finished: BTreeMap<u64, Held>,
    pub(super) next_seq: u64,
    /// This recording created the directory (the default one, or a named
    /// one that did not exist), so it removes it at a clean stop.
    pub(super) created: bool,
    /// The user asked to keep chunks and directory after the stop.
    pub(super) keep: bool,
    /// The directory is the default one (`mkdtemp` under the temp
    /// directory): nobody else knows its name, so at a stop its chunks go
    /// even when no destination was written, unless kept.
    pub(super) temporary: bool,
    /// At the last stop: the chunk files on disk to delete, gathered for
    /// [`close`](Self::close) instead of deleted one by one (see
    /// [`reap`](mod@super::reap)).
    pub(super) deferred: Option<Vec<OsString>>,
}

/// A finished chunk and how many recordings hold it.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) chunk: ChunkFile,
    pub(super) refs: usize,
    /// Its event records (counted lost if [`Repository::evict`] frees it).
    pub(super) events: u64,
    /// What its loss records said (reported again if it is evicted).
    pub(super) reported: LossCounts,
}

impl Repository {
    /// Creates the default repository (`dir == None`) or creates or checks
    /// the directory the user named; see the module docs for what is
    /// refused. `keep` leaves it in place at stop.
    pub(crate) fn create(dir: Option<&Path>, keep: bool) -> Result<Self, StartError> {
        let temporary = dir.is_none();
        let (dir, created) = match dir {
            None => {
                let temp = std::env::temp_dir();
                // Once per program image, before it makes any of its own.
                static ONCE: crate::base::sync::Once = crate::base::sync::Once::new();
                ONCE.call_once(|| {
                    stale::remove_own_leftovers(&temp);
                });
                stale::print_hint(|| stale::default_repositories(&temp), &temp);
                // What an exited process's stop left to its reaper.
                super::reap::sweep_exited(&temp);
                let dir =
                    make_temp_dir(&default_template(&temp)).map_err(|source| StartError::Io {
                        path: default_template(&temp),
                        source,
                    })?;
                (dir, true)
            }
            Some(dir) => match fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => (dir.to_path_buf(), true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (dir.to_path_buf(), false),
                Err(source) => {
                    return Err(StartError::Io {
                        path: dir.to_path_buf(),
                        source,
                    });
                }
            },
        };
        // Checked also when just created: another user may have raced us.
        let handle = open_private_dir(&dir)?;
        if !created {
            stale::print_hint(|| stale::chunks_in(&dir).into_iter().collect(), &dir);
        }
        if !temporary && let Some(parent) = dir.parent() {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            super::reap::sweep_exited(parent);
        }
        Ok(Self {
            dir,
            handle: Some(handle),
            memory: HashMap::new(),
            in_memory: 0,
            finished: BTreeMap::new(),
            next_seq: 0,
            created,
            keep,
            temporary,
            deferred: None,
        })
    }

    /// A repository whose chunks are kept in memory only (`disk=false`).
    pub(crate) fn in_memory() -> Self {
        Self {
            dir: PathBuf::new(),
            handle: None,
            memory: HashMap::new(),
            in_memory: 0,
            finished: BTreeMap::new(),
            next_seq: 0,
            created: false,
            keep: false,
            temporary: false,
            deferred: None,
        }
    }

    /// Whether chunks can be written to a directory.
    pub(crate) fn has_dir(&self) -> bool {
        !self.dir.as_os_str().is_empty()
    }

    /// Gives an in-memory repository a directory (a recording asking for
    /// disk joined recordings kept in memory): later chunks on disk go
    /// there. Checked and created as [`create`](Self::create) does.
    pub(crate) fn add_dir(&mut self, dir: Option<&Path>, keep: bool) -> Result<(), StartError> {
        let made = Self::create(dir, keep)?;
        self.dir = made.dir;
        self.handle = made.handle;
        self.created = made.created;
        self.keep = made.keep;
        self.temporary = made.temporary;
        Ok(())
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the file for a chunk starting at `start_nanos`: in the
    /// directory if `on_disk` and there is one, else in memory.
    pub(crate) fn create_chunk(
        &mut self,
        start_nanos: i64,
        on_disk: bool,
    ) -> io::Result<(PathBuf, File)> {
        if !on_disk || !self.has_dir() {
            let name = chunk_file_name(start_nanos);
            let file = memory_file(&name)?;
            let path = PathBuf::from(format!("memory:{name}"));
            self.memory.insert(path.clone(), file.try_clone()?);
            crate::stream::memory::publish(&path, &file);
            return Ok((path, file));
        }
        let name = chunk_file_name(start_nanos);
        let file = self.held()?.create_new(OsStr::new(&name))?;
        Ok((self.dir.join(name), file))
    }

    /// Records a finished chunk file, held by `holders` recordings, with
    /// `events` event records and loss records that said `reported` (see
    /// [`Self::evict`]); returns its sequence number.
    pub(crate) fn add_finished(
        &mut self,
        chunk: ChunkFile,
        holders: usize,
        events: u64,
        reported: LossCounts,
    ) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        if holders == 0 {
            self.remove(&chunk.path);
        } else {
            if self.memory.contains_key(&chunk.path) {
                self.in_memory += chunk.size;
            }
            self.finished.insert(
                seq,
                Held {
                    chunk,
                    refs: holders,
                    events,
                    reported,
                },
            );
        }
        seq
    }

    /// Bytes of the finished chunks kept in memory.
    pub(crate) fn in_memory_bytes(&self) -> u64 {
        self.in_memory
    }

    /// The finished chunk `seq`, while a recording holds it.
    pub(crate) fn chunk(&self, seq: u64) -> Option<&ChunkFile> {
        self.finished.get(&seq).map(|h| &h.chunk)
    }

    /// Writes the chunks of `list` that [`Self::select`] takes into `out`,
    /// back to back. Returns the number of chunks written.
    pub(crate) fn concat_into(
        &self,
        out: &mut impl Write,
        list: &VecDeque<u64>,
        from: Option<i64>,
        to: Option<i64>,
        max_size: Option<u64>,
    ) -> io::Result<usize> {
        let mut n = 0;
        for c in self.select(list, from, to, max_size) {
            match self.memory.get(&c.path) {
                Some(f) => copy_at(f, c.size, out)?,
                None => {
                    let name = c.path.file_name().unwrap_or_default();
                    let mut f = self.held()?.open_read(name)?;
                    io::copy(&mut (&mut f).take(c.size), out)?;
                }
            }
            n += 1;
        }
        Ok(n)
    }

    /// The last stop is coming: chunk files released from now on are
    /// deleted by [`close`](Self::close), all at once.
    pub(crate) fn defer_removals(&mut self) {
        self.deferred.get_or_insert_with(Vec::new);
    }

    /// The last recording stopped: frees every chunk kept in memory, and
    /// removes the directory if this repository created it, nothing is
    /// left in it and the user did not ask to keep it: renamed out of the
    /// way now, its files deleted on a thread of their own (see
    /// [`reap`](mod@super::reap)). Chunk files released since
    /// [`defer_removals`](Self::defer_removals) are deleted here.
    pub(crate) fn close(&mut self) {
        let memory = std::mem::take(&mut self.memory);
        for path in memory.keys() {
            crate::stream::memory::withdraw(path);
        }
        self.finished
            .retain(|_, h| !memory.contains_key(&h.chunk.path));
        self.in_memory = 0;
        let mut doomed = self.deferred.take().unwrap_or_default();
        let mut remove_dir = false;
        if self.has_dir() && self.created && !self.keep && self.finished.is_empty() {
            // Only if the path still names the directory we held (not one
            // swapped in); fails, harmlessly, if someone else put files
            // there.
            let ours = self.handle.as_ref().and_then(|h| h.stat_self().ok());
            let there = Dir::open(&self.dir, true).and_then(|d| d.stat_self());
            if let (Some(a), Ok(b)) = (ours, there)
                && (a.dev, a.ino) == (b.dev, b.ino)
                && let Some(held) = self.handle.take()
            {
                let budget = super::reap::STOP_BUDGET;
                match super::reap::remove(&self.dir, held, doomed, budget) {
                    Ok(()) => return,
                    Err((held, files)) => {
                        // Not renamed: removed here, file by file.
                        self.handle = Some(held);
                        doomed = files;
                        remove_dir = true;
                    }
                }
            }
        }
        if let Some(h) = &self.handle {
            for name in &doomed {
                let _ = h.unlink(name);
            }
        }
        if remove_dir {
            let _ = fs::remove_dir(&self.dir);
        }
    }

    /// The user asked to keep the chunks (`keep_repository`).
    pub(crate) fn keeps(&self) -> bool {
        self.keep
    }
}

impl Repository {
    /// A chunk file being written that failed (see
    /// `recorder_thread::write_error`), opened again to be cut back to its
    /// last flush: a new descriptor of the file, for writing.
    pub(crate) fn reopen_unfinished(&self, path: &Path) -> io::Result<File> {
        match self.memory.get(path) {
            Some(f) => f.try_clone(),
            // Through the held directory, as every chunk is.
            None => {
                let name = path
                    .file_name()
                    .ok_or_else(|| io::Error::other("a chunk path without a file name"))?;
                self.held()?.open_write(name)
            }
        }
    }

    /// Deletes a chunk file that was never finished (nothing of it could be
    /// kept after a write error).
    pub(crate) fn discard_unfinished(&mut self, path: &Path) {
        self.remove(path);
    }

    /// Deletes a chunk file (on disk) or frees it (in memory).
    pub(super) fn remove(&mut self, path: &Path) {
        if self.memory.remove(path).is_some() {
            crate::stream::memory::withdraw(path);
        } else if let (Some(deferred), Some(name)) = (&mut self.deferred, path.file_name()) {
            deferred.push(name.to_os_string());
        } else if let (Some(h), Some(name)) = (&self.handle, path.file_name()) {
            let _ = h.unlink(name);
        }
    }

    /// The directory held open.
    pub(super) fn held(&self) -> io::Result<&Dir> {
        self.handle
            .as_ref()
            .ok_or_else(|| io::Error::other("the repository has no directory"))
    }
}

/// A new anonymous memory file (`memfd_create(2)`, close-on-exec).
fn memory_file(name: &str) -> io::Result<File> {
    use std::os::fd::FromRawFd;
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains a NUL byte"))?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    let fd = unsafe { libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Copies the first `size` bytes of `f` into `out` with positioned reads
/// (the writer's descriptor shares the file offset, so it is not moved).
fn copy_at(f: &File, size: u64, out: &mut impl Write) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1 << 16];
    let mut at = 0u64;
    while at < size {
        let want = (size - at).min(buf.len() as u64) as usize;
        let n = f.read_at(&mut buf[..want], at)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        out.write_all(&buf[..n])?;
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::builder::RepositoryProblem;
    use crate::repository::files::chunk_name_pid;
    use crate::repository::retention::AtStop;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A fresh directory for one test.
    fn scratch(test: &str) -> PathBuf {
        let base =
            std::env::temp_dir().join(format!("flightrec-repo-test-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        base
    }

    #[test]
    fn names_sort_by_time() {
        let a = chunk_file_name(1_764_484_088_123_456_789);
        assert!(a.starts_with("2025_11_30_06_28_08_123456789_"), "{a}");
        assert_eq!(&chunk_file_name(0)[..30], "1970_01_01_00_00_00_000000000_");
        assert!(chunk_file_name(5) < chunk_file_name(1_000_000_000));
        assert_eq!(
            &chunk_file_name(951_782_400_000_000_000)[..10],
            "2000_02_29"
        );
    }

    #[test]
    fn chunk_names_are_recognised_and_others_are_not() {
        let own = chunk_file_name(1_764_484_088_123_456_789);
        assert_eq!(chunk_name_pid(&own), Some(std::process::id()));
        assert_eq!(
            chunk_name_pid("2025_11_30_06_28_08_123456789_77.jfr"),
            Some(77)
        );
        for bad in [
            "recording.jfr",
            "2025_11_30_06_28_08_123456789_77.jfr.tmp",
            "2025_11_30_06_28_08_12345678_77.jfr",
            "2025_11_30_06_28_08_123456789_.jfr",
            "2025_11_30_06_28_08_123456789_77_1.jfr",
            "2025_11_30_06_28_08_123456789_x7.jfr",
            ".2025_11_30_06_28_08_123456789_77.jfr.1-2.tmp",
        ] {
            assert_eq!(chunk_name_pid(bad), None, "{bad}");
        }
    }

    #[test]
    fn default_directory_is_made_by_mkdtemp_private_and_removed_at_a_clean_stop() {
        let a = Repository::create(None, false).unwrap();
        let b = Repository::create(None, false).unwrap();
        assert_ne!(a.dir(), b.dir(), "two default repositories got one name");
        let name = a.dir().file_name().unwrap().to_str().unwrap().to_owned();
        let prefix = format!("flightrec-{}-", std::process::id());
        assert!(
            name.starts_with(&prefix) && name.len() == prefix.len() + 6,
            "{name}"
        );
        assert_eq!(mode(a.dir()), 0o700);
        for mut repo in [a, b] {
            let (path, _f) = repo.create_chunk(42, true).unwrap();
            assert_eq!(mode(&path), 0o600);
            let seq = repo.add_finished(
                ChunkFile {
                    path: path.clone(),
                    start_nanos: 42,
                    end_nanos: 43,
                    size: 0,
                },
                1,
                0,
                LossCounts::default(),
            );
            repo.release_at_stop(&mut VecDeque::from([seq]), false, AtStop::Written);
            assert!(!path.exists());
            repo.close();
            assert!(!repo.dir().exists(), "{}", repo.dir().display());
        }
        // Kept when asked, or when the destination failed.
        for (keep, at) in [(true, AtStop::NotWritten), (false, AtStop::WriteFailed)] {
            let mut repo = Repository::create(None, keep).unwrap();
            let (path, _f) = repo.create_chunk(42, true).unwrap();
            let chunk = ChunkFile {
                path: path.clone(),
                start_nanos: 42,
                end_nanos: 43,
                size: 0,
            };
            let seq = repo.add_finished(chunk, 1, 0, LossCounts::default());
            repo.release_at_stop(&mut VecDeque::from([seq]), false, at);
            repo.close();
            assert!(path.exists() && repo.dir().is_dir());
            fs::remove_dir_all(repo.dir()).unwrap();
        }
        // Nothing written: the default repository goes, a named one stays.
        let mut repo = Repository::create(None, false).unwrap();
        let (path, _f) = repo.create_chunk(42, true).unwrap();
        let c = ChunkFile {
            path: path.clone(),
            start_nanos: 42,
            end_nanos: 43,
            size: 0,
        };
        let seq = repo.add_finished(c, 1, 0, LossCounts::default());
        repo.release_at_stop(&mut VecDeque::from([seq]), false, AtStop::NotWritten);
        repo.close();
        assert!(!repo.dir().exists());
        let base = scratch("named_unwritten");
        let mut repo = Repository::create(Some(&base.join("r")), false).unwrap();
        let (path, _f) = repo.create_chunk(42, true).unwrap();
        let c = ChunkFile {
            path: path.clone(),
            start_nanos: 42,
            end_nanos: 43,
            size: 0,
        };
        let seq = repo.add_finished(c, 1, 0, LossCounts::default());
        repo.release_at_stop(&mut VecDeque::from([seq]), false, AtStop::NotWritten);
        repo.close();
        assert!(path.exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn named_directory_is_private_and_unsafe_ones_are_refused() {
        let base = scratch("named");
        let dir = base.join("repo");
        let mut repo = Repository::create(Some(&dir), false).unwrap();
        assert_eq!(mode(&dir), 0o700);
        let (path, _f) = repo.create_chunk(42, true).unwrap();
        assert_eq!(mode(&path), 0o600);
        // A second chunk with the same name is refused, not overwritten.
        assert!(repo.create_chunk(42, true).is_err());
        let refused = |p: &Path| match Repository::create(Some(p), false) {
            Err(StartError::UnsafeRepository { path, problem }) => {
                assert_eq!(path, p);
                problem
            }
            other => panic!("{}: {other:?}", p.display()),
        };
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert_eq!(refused(&link), RepositoryProblem::SymbolicLink);
        let file = base.join("file");
        fs::write(&file, b"x").unwrap();
        assert_eq!(refused(&file), RepositoryProblem::NotADirectory);
        let open = base.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(refused(&open), RepositoryProblem::Writable { mode: 0o777 });
        fs::set_permissions(&open, fs::Permissions::from_mode(0o750)).unwrap();
        Repository::create(Some(&open), false).unwrap();
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn in_memory_chunks_rotate_age_out_and_dump_like_files() {
        let mut repo = Repository::in_memory();
        assert_eq!(repo.dir(), Path::new(""));
        let mut list = VecDeque::new();
        for (i, body) in [&b"first"[..], b"second", b"third"].into_iter().enumerate() {
            let (path, mut f) = repo.create_chunk(i as i64, true).unwrap();
            assert!(path.to_str().unwrap().starts_with("memory:"), "{path:?}");
            assert!(!path.exists());
            f.write_all(body).unwrap();
            list.push_back(repo.add_finished(
                ChunkFile {
                    path,
                    start_nanos: i as i64,
                    end_nanos: i as i64 + 1,
                    size: body.len() as u64,
                },
                1,
                0,
                LossCounts::default(),
            ));
        }
        let mut out = Vec::new();
        assert_eq!(
            repo.concat_into(&mut out, &list, None, None, None).unwrap(),
            3
        );
        assert_eq!(out, b"firstsecondthird");
        // A size limit takes whole chunks as the JDK does: the newest that
        // fit, the oldest with only a start, always one.
        let dump = |from, to, max| {
            let mut out = Vec::new();
            repo.concat_into(&mut out, &list, from, to, max).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(dump(None, None, Some(11)), "secondthird");
        assert_eq!(dump(None, None, Some(10)), "third");
        assert_eq!(dump(None, None, Some(1)), "third");
        assert_eq!(dump(Some(0), None, Some(11)), "firstsecond");
        assert_eq!(dump(Some(0), Some(2), Some(11)), "secondthird");
        assert_eq!(dump(None, Some(1), Some(100)), "firstsecond");
        assert_eq!(dump(Some(2), None, None), "secondthird");
        assert_eq!(dump(Some(5), None, Some(1)), "");
        // max_size drops the oldest, as on disk.
        let removed = repo.apply_retention(&mut list, 10, None, Some(11));
        assert_eq!(removed.len(), 1);
        out.clear();
        repo.concat_into(&mut out, &list, None, None, None).unwrap();
        assert_eq!(out, b"secondthird");
        assert_eq!(repo.memory.len(), 2);
        repo.release_at_stop(&mut list, false, AtStop::NotWritten);
        assert!(repo.memory.is_empty());
    }
}
