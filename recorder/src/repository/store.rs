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
//! # A directory another user cannot redirect
//!
//! * The default directory is made by `mkdtemp(3)` from the template
//!   `$TMPDIR/flightrec-<pid>-XXXXXX`: an unpredictable name, created `0700`
//!   by this process, so nobody can plant it (or a symbolic link in its
//!   place) beforehand.
//! * A directory the user names is created `0700` when missing. Whether
//!   created or found, it is used only if it is a real directory (not a
//!   symbolic link), owned by the effective uid, with no group or other
//!   write bit; otherwise [`Repository::create`] fails with
//!   [`StartError::UnsafeRepository`] naming the path and the
//!   [`RepositoryProblem`].
//! * The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`), checked
//!   through that descriptor (`fstat`), and every chunk is created, read
//!   and removed through it (`openat`, `unlinkat`): if its path or a parent
//!   of it is renamed or replaced during the recording, chunks still go
//!   into the directory that was checked, never into the swapped-in one.
//! * Chunk files are opened `O_CREAT | O_EXCL | O_NOFOLLOW`, mode `0600`.
//! * Files written outside the repository (the destination at stop, dumps,
//!   [`assemble`](mod@super::assemble)'s output) are written by
//!   [`write_private_file`](crate::repository::files::write_private_file):
//!   only over nothing or a regular file or link of the effective user (a
//!   device, FIFO, socket, directory or another user's file is refused
//!   with a [`DestinationProblem`](super::files::DestinationProblem) and left as it was), into a new `0600`
//!   file beside the destination (`O_EXCL | O_NOFOLLOW`), synced, then
//!   renamed over the destination. A symbolic link planted at the
//!   destination is replaced, never followed.
//!
//! # Retention and clean-up
//!
//! Finished chunks are shared by the recordings live when they ended and
//! reference-counted: each recording keeps its own list
//! ([`crate::lifecycle::member`]) and applies its own retention to it, dropping its
//! oldest chunks while they are older than `max_age` or larger than
//! `max_size`, never its newest one (so a `max_size` below one chunk still
//! leaves the newest chunk to dump or write at the stop). A chunk file is
//! deleted (its memory freed) when no recording holds it. A dump
//! concatenates one recording's chunks (optionally only those that overlap
//! a time window, and only as many whole chunks as fit a size, as the JDK's
//! `JFR.dump` chooses them) into one `.jfr` file. At a clean stop, once the
//! destination is written, the recording lets go of its chunks, and the
//! last stop removes the directory if this repository created it and
//! nothing is left in it, unless the user asked to keep the repository
//! (`keep_repository`, `preserve-repository=true`): its chunk files are
//! deleted for at most a quarter of a second, then the directory is
//! renamed away and the rest deleted on a thread of their own, so the stop
//! does not wait for a device that discards freed blocks
//! ([`reap`](mod@super::reap)). A recording whose
//! destination could not be written keeps its chunk files (the only copy);
//! so does one without a destination in a repository the user named. In
//! the default repository a recording stopped without a destination lets
//! its chunks go (as the JDK discards a recording stopped without a file),
//! so every recording, `jcmd`'s included, leaves no directory behind.
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
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::loss::LossCounts;
use crate::config::builder::RepositoryProblem;
use crate::config::builder::StartError;
use crate::repository::files::{Dir, chunk_file_name, euid};
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
    dir: PathBuf,
    /// The directory, held open: chunks are created, read and removed
    /// through it.
    handle: Option<Dir>,
    /// The chunk files kept in memory, by their `memory:` names (a second
    /// descriptor of each, read with `pread` by dumps).
    memory: HashMap<PathBuf, File>,
    /// Bytes of the finished chunks in `memory`.
    in_memory: u64,
    /// Finished chunks by sequence number (start order), each with the
    /// number of recordings holding it.
    finished: BTreeMap<u64, Held>,
    next_seq: u64,
    /// This recording created the directory (the default one, or a named
    /// one that did not exist), so it removes it at a clean stop.
    created: bool,
    /// The user asked to keep chunks and directory after the stop.
    keep: bool,
    /// The directory is the default one (`mkdtemp` under the temp
    /// directory): nobody else knows its name, so at a stop its chunks go
    /// even when no destination was written, unless kept.
    temporary: bool,
    /// At the last stop: the chunk files on disk to delete, gathered for
    /// [`close`](Self::close) instead of deleted one by one (see
    /// [`reap`](mod@super::reap)).
    deferred: Option<Vec<OsString>>,
}

/// What became of a stopping recording's destination, for
/// [`Repository::release_at_stop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtStop {
    /// Its destination was written: the chunks are copied.
    Written,
    /// It has no destination, or was stopped without writing it.
    NotWritten,
    /// Writing its destination failed: the chunks are the only copy.
    WriteFailed,
}

impl AtStop {
    /// From whether a destination was to be written and whether the stop
    /// succeeded.
    pub(crate) fn of(to_write: bool, ok: bool) -> Self {
        match (to_write, ok) {
            (false, _) => Self::NotWritten,
            (true, true) => Self::Written,
            (true, false) => Self::WriteFailed,
        }
    }
}

/// A finished chunk and how many recordings hold it.
#[derive(Debug)]
struct Held {
    chunk: ChunkFile,
    refs: usize,
    /// Its event records (counted lost if [`Repository::evict`] frees it).
    events: u64,
    /// What its loss records said (reported again if it is evicted).
    reported: LossCounts,
}

/// What [`Repository::evict`] freed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Evicted {
    /// Event records of the freed chunks.
    pub(crate) events: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// What their loss records said.
    pub(crate) reported: LossCounts,
}

/// The template `mkdtemp(3)` completes for the default repository.
fn default_template(temp: &Path) -> PathBuf {
    temp.join(format!("flightrec-{}-XXXXXX", std::process::id()))
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

    /// Keeps one recording's chunks kept in memory within `bound` bytes
    /// with `coming` more on their way (the chunk being finished, which
    /// joins `list`, and the next): drops the oldest of `list` while its
    /// in-memory chunks and `coming` exceed `bound`. Returns what the
    /// chunks this freed for good (no other recording still holds them)
    /// held: their events and bytes, to count lost
    /// ([`LossCause::Evicted`](crate::LossCause::Evicted)), and what their
    /// loss records said, to report again.
    pub(crate) fn evict(&mut self, list: &mut VecDeque<u64>, bound: u64, coming: u64) -> Evicted {
        let mut total: u64 = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .filter(|c| self.memory.contains_key(&c.path))
            .map(|c| c.size)
            .sum();
        let mut evicted = Evicted::default();
        while total.saturating_add(coming) > bound {
            let Some(seq) = list.pop_front() else {
                break;
            };
            let Some(held) = self.finished.get(&seq) else {
                continue;
            };
            if self.memory.contains_key(&held.chunk.path) {
                total -= held.chunk.size;
            }
            if held.refs == 1 {
                evicted.events += held.events;
                evicted.bytes += held.chunk.size;
                evicted.reported = evicted.reported.plus(&held.reported);
            }
            self.release(seq);
        }
        evicted
    }

    /// The finished chunk `seq`, while a recording holds it.
    pub(crate) fn chunk(&self, seq: u64) -> Option<&ChunkFile> {
        self.finished.get(&seq).map(|h| &h.chunk)
    }

    /// One recording lets go of chunk `seq`: the file is deleted (or its
    /// memory freed) when no recording holds it.
    pub(crate) fn release(&mut self, seq: u64) {
        let Some(held) = self.finished.get_mut(&seq) else {
            return;
        };
        held.refs -= 1;
        if held.refs == 0 {
            let held = self.finished.remove(&seq).expect("present");
            if self.memory.contains_key(&held.chunk.path) {
                self.in_memory -= held.chunk.size;
            }
            self.remove(&held.chunk.path);
        }
    }

    /// Drops the oldest chunks of one recording's `list` while they are
    /// older than `max_age` (measured from `now_nanos`) or their total
    /// exceeds `max_size`, but never the newest one. Returns the chunks
    /// this recording let go of.
    pub(crate) fn apply_retention(
        &mut self,
        list: &mut VecDeque<u64>,
        now_nanos: i64,
        max_age: Option<Duration>,
        max_size: Option<u64>,
    ) -> Vec<ChunkFile> {
        let mut removed = Vec::new();
        let mut total: u64 = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .map(|c| c.size)
            .sum();
        // Never the newest: a recording always keeps its latest chunk.
        while list.len() > 1 {
            let Some(oldest) = list.front().and_then(|s| self.chunk(*s)).cloned() else {
                list.pop_front();
                continue;
            };
            // Saturating: an age beyond i64 nanoseconds (`200000d`,
            // `Duration::MAX`) keeps everything rather than wrapping
            // negative and dropping all but the newest.
            let too_old = max_age.is_some_and(|a| {
                now_nanos.saturating_sub(oldest.end_nanos)
                    > i64::try_from(a.as_nanos()).unwrap_or(i64::MAX)
            });
            let too_big = max_size.is_some_and(|m| total > m);
            if !too_old && !too_big {
                break;
            }
            let seq = list.pop_front().expect("front exists");
            total -= oldest.size;
            self.release(seq);
            removed.push(oldest);
        }
        removed
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

    /// The chunks of `list` a dump takes, oldest first, chosen as the JDK's
    /// `JFR.dump` does: those overlapping `[from, to]` (ns since the epoch;
    /// `None` is open); then, if `max_size` is given, only as many whole
    /// chunks as fit in it, the newest, or the oldest when only `from` is
    /// given (`begin=` or `maxage=` without `end=`); and at least one.
    fn select(
        &self,
        list: &VecDeque<u64>,
        from: Option<i64>,
        to: Option<i64>,
        max_size: Option<u64>,
    ) -> Vec<&ChunkFile> {
        let mut chosen: Vec<&ChunkFile> = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .filter(|c| {
                !(from.is_some_and(|f| c.end_nanos < f) || to.is_some_and(|t| c.start_nanos > t))
            })
            .collect();
        let Some(max) = max_size else {
            return chosen;
        };
        let newest_first = !(from.is_some() && to.is_none());
        if newest_first {
            chosen.reverse();
        }
        let mut total = 0u64;
        let fit = chosen
            .iter()
            .take_while(|c| {
                total = total.saturating_add(c.size);
                total <= max
            })
            .count();
        chosen.truncate(fit.max(1));
        if newest_first {
            chosen.reverse();
        }
        chosen
    }

    /// A recording stops: it lets go of the chunks of `list`. Its chunk
    /// files on disk stay when the user asked to keep the repository
    /// (`keep`), when writing its destination failed (they are the only
    /// copy), or when nothing was written and the repository is one the
    /// user named; in the default repository (a temporary directory nobody
    /// else knows) an unwritten recording's chunks go, as the JDK discards
    /// a recording stopped without a file.
    pub(crate) fn release_at_stop(&mut self, list: &mut VecDeque<u64>, keep: bool, at: AtStop) {
        let keep_files = keep
            || self.keep
            || at == AtStop::WriteFailed
            || (at == AtStop::NotWritten && !self.temporary);
        for seq in list.drain(..) {
            let on_disk = self
                .chunk(seq)
                .is_some_and(|c| !self.memory.contains_key(&c.path));
            if !(keep_files && on_disk) {
                self.release(seq);
            }
        }
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
    fn remove(&mut self, path: &Path) {
        if self.memory.remove(path).is_some() {
            crate::stream::memory::withdraw(path);
        } else if let (Some(deferred), Some(name)) = (&mut self.deferred, path.file_name()) {
            deferred.push(name.to_os_string());
        } else if let (Some(h), Some(name)) = (&self.handle, path.file_name()) {
            let _ = h.unlink(name);
        }
    }

    /// The directory held open.
    fn held(&self) -> io::Result<&Dir> {
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

/// Makes a new `0700` directory from `template` (ending in `XXXXXX`) with
/// `mkdtemp(3)`.
fn make_temp_dir(template: &Path) -> io::Result<PathBuf> {
    let c = CString::new(template.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut bytes = c.into_bytes_with_nul();
    // SAFETY: `bytes` is a NUL-terminated, writable buffer that outlives the
    // call; mkdtemp only overwrites the trailing `XXXXXX` in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast::<libc::c_char>()) };
    if made.is_null() {
        return Err(io::Error::last_os_error());
    }
    bytes.pop(); // the NUL
    Ok(PathBuf::from(OsStr::from_bytes(&bytes)))
}

/// Opens `dir` as a repository if it may be one: a real directory (not a
/// symbolic link: opened `O_NOFOLLOW`), owned by the effective uid, not
/// writable by group or others, checked on the descriptor that is then
/// used for every chunk.
pub(crate) fn open_private_dir(dir: &Path) -> Result<Dir, StartError> {
    let unsafe_dir = |problem| StartError::UnsafeRepository {
        path: dir.to_path_buf(),
        problem,
    };
    let handle = match Dir::open(dir, true) {
        Ok(h) => h,
        Err(source) => {
            // Name what is there, if it is a link or not a directory.
            return Err(match fs::symlink_metadata(dir) {
                Ok(m) if m.file_type().is_symlink() => unsafe_dir(RepositoryProblem::SymbolicLink),
                Ok(m) if !m.is_dir() => unsafe_dir(RepositoryProblem::NotADirectory),
                _ => StartError::Io {
                    path: dir.to_path_buf(),
                    source,
                },
            });
        }
    };
    let st = handle.stat_self().map_err(|source| StartError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if st.uid != euid() {
        return Err(unsafe_dir(RepositoryProblem::ForeignOwner {
            owner: st.uid,
            euid: euid(),
        }));
    }
    if st.mode & 0o022 != 0 {
        return Err(unsafe_dir(RepositoryProblem::Writable {
            mode: st.mode & 0o7777,
        }));
    }
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::files::{chunk_name_pid, write_private_file};
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

    #[test]
    fn an_age_beyond_i64_nanoseconds_keeps_every_chunk() {
        let mut repo = Repository::in_memory();
        let mut list = VecDeque::new();
        for i in 0..4i64 {
            let (path, mut f) = repo.create_chunk(i, true).unwrap();
            f.write_all(b"x").unwrap();
            let c = ChunkFile {
                path,
                start_nanos: i * 1_000_000_000,
                end_nanos: (i + 1) * 1_000_000_000,
                size: 1,
            };
            list.push_back(repo.add_finished(c, 1, 0, LossCounts::default()));
        }
        let now = 3_600_000_000_000;
        for age in [
            Duration::from_secs(200_000 * 86_400),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            assert!(
                repo.apply_retention(&mut list, now, Some(age), None)
                    .is_empty()
            );
            assert!(
                repo.apply_retention(&mut list, i64::MAX, Some(age), None)
                    .is_empty()
            );
            assert_eq!(list.len(), 4, "{age:?}");
        }
        // An age that fits still drops the old ones, never the newest.
        assert_eq!(
            repo.apply_retention(&mut list, now, Some(Duration::from_secs(1)), None)
                .len(),
            3
        );
        repo.release_at_stop(&mut list, false, AtStop::Written);
    }

    #[test]
    fn a_chunk_held_by_two_recordings_goes_when_both_let_go() {
        let mut repo = Repository::in_memory();
        let chunk = |repo: &mut Repository, at: i64, holders| {
            let (path, mut f) = repo.create_chunk(at, false).unwrap();
            f.write_all(b"x").unwrap();
            let c = ChunkFile {
                path,
                start_nanos: at,
                end_nanos: at + 1,
                size: 1,
            };
            repo.add_finished(c, holders, 0, LossCounts::default())
        };
        // Chunk 0: only a; chunk 1: a and b; chunk 2: only b.
        let s0 = chunk(&mut repo, 0, 1);
        let s1 = chunk(&mut repo, 1, 2);
        let s2 = chunk(&mut repo, 2, 1);
        let mut a = VecDeque::from([s0, s1]);
        let mut b = VecDeque::from([s1, s2]);
        // a's max_size drops its chunk 0 only; chunk 1 stays for both.
        repo.apply_retention(&mut a, 10, None, Some(1));
        assert_eq!(a, [s1]);
        assert_eq!(repo.memory.len(), 2);
        repo.release_at_stop(&mut a, false, AtStop::Written);
        assert!(repo.chunk(s1).is_some(), "b still holds chunk 1");
        let mut out = Vec::new();
        assert_eq!(repo.concat_into(&mut out, &b, None, None, None).unwrap(), 2);
        repo.release_at_stop(&mut b, false, AtStop::Written);
        assert!(repo.memory.is_empty() && repo.finished.is_empty());
    }

    #[test]
    fn eviction_drops_the_oldest_in_memory_chunks_and_counts_what_only_they_held() {
        let mut repo = Repository::in_memory();
        let chunk = |repo: &mut Repository, at: i64, holders, events| {
            let (path, mut f) = repo.create_chunk(at, false).unwrap();
            f.write_all(&[0; 100]).unwrap();
            let c = ChunkFile {
                path,
                start_nanos: at,
                end_nanos: at + 1,
                size: 100,
            };
            repo.add_finished(c, holders, events, LossCounts::default())
        };
        // Chunk 0 held by a and b; chunks 1-3 by a only.
        let s0 = chunk(&mut repo, 0, 2, 7);
        let mut a = VecDeque::from([s0]);
        let b = VecDeque::from([s0]);
        for (i, events) in [(1, 11), (2, 13), (3, 17)] {
            a.push_back(chunk(&mut repo, i, 1, events));
        }
        assert_eq!(repo.in_memory_bytes(), 400);
        // Within the bound: nothing goes.
        assert_eq!(repo.evict(&mut a, 500, 100), Evicted::default());
        assert_eq!(a.len(), 4);
        // 400 + 150 coming over 350: the two oldest go; chunk 0 stays for
        // b (not counted), chunk 1 is freed and counted.
        assert_eq!(repo.evict(&mut a, 350, 150).events, 11);
        assert_eq!(a.len(), 2);
        assert_eq!(repo.in_memory_bytes(), 300);
        assert!(repo.chunk(s0).is_some());
        let mut out = Vec::new();
        assert_eq!(repo.concat_into(&mut out, &b, None, None, None).unwrap(), 1);
        // A bound below what is coming empties the list.
        let last = repo.evict(&mut a, 100, 150);
        assert_eq!((last.events, last.bytes), (30, 200));
        assert!(a.is_empty());
        assert_eq!(repo.in_memory_bytes(), 100);
    }

    #[test]
    fn a_private_file_replaces_a_planted_symlink_without_following_it() {
        let base = scratch("private_file");
        let target = base.join("precious");
        fs::write(&target, b"keep me").unwrap();
        let dest = base.join("out.jfr");
        std::os::unix::fs::symlink(&target, &dest).unwrap();
        let n = write_private_file(&dest, |w| w.write_all(b"new").map(|()| 3)).unwrap();
        assert_eq!(n, 3);
        assert_eq!(fs::read(&target).unwrap(), b"keep me");
        assert!(fs::symlink_metadata(&dest).unwrap().file_type().is_file());
        assert_eq!(mode(&dest), 0o600);
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        // A failed write leaves the destination and no temporary file.
        let err = write_private_file(&dest, |_| Err::<(), _>(io::Error::other("boom")));
        assert!(err.is_err());
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        fs::remove_dir_all(&base).unwrap();
    }
}
