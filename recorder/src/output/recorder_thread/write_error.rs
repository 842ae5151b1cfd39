//! Write errors on the recorder thread (a full disk, an I/O error): the
//! recording goes on in memory and writes again once it can.
//!
//! # Mechanism
//!
//! When writing the open chunk fails (a drain, a flush, the chunk's end,
//! or opening the next chunk), [`Recorder::write_failed`]:
//!
//! 1. cuts the chunk back to its last successful flush: the file is
//!    truncated to the size that flush's header gives and the header is
//!    written again, marked finished (a chunk's flushed prefix is complete:
//!    metadata and every constant its events reference, see
//!    `recording::chunk`). The chunk is then kept like any finished chunk.
//!    The events written since that flush are counted lost
//!    ([`LossCause::WriteError`]); a chunk never flushed is deleted;
//! 2. *stalls*: no chunk is open and nothing is drained. Emitting threads
//!    go on committing into the pool's blocks; once the pool (`max_memory`)
//!    is full they drop events, counted as `PoolExhausted`. No seal flips
//!    the epoch (the pool is disarmed), so the blocks hold the failed
//!    chunk's epoch and the next one at most;
//! 3. says so once on stderr: one line naming the file and the error.
//!
//! While stalled, [`Recorder::retry_writing`] tries again every
//! [`RETRY_EVERY`] and before each command, once the file system has room
//! for the sealed blocks waiting (`statvfs`; a try into a disk still
//! nearly full would drain them into a chunk that fails again): it opens a chunk for the failed
//! chunk's epoch (none of that epoch's constants were released: its chunk
//! never finished) and flushes it (metadata, constants, the loss report).
//! If that is written, the stall ends and the backlog is drained into the
//! new chunk as usual; if not, the new file is deleted and nothing was lost
//! by trying. At the last stop of a recording with a destination, a stall
//! that goes on ends in a chunk kept in memory, so the backlog and the last
//! loss report reach the destination (written at the stop, perhaps on
//! another disk); without a destination the backlog is counted lost.
//!
//! `stop()` of a recording that met a write error returns
//! [`RecordingError::WriteFailed`] (naming the first file and error, with
//! the losses and what was written); other calls made during a stall
//! return it without a summary.
//!
//! Invariant: every event committed is in a chunk the repository keeps,
//! in a block still to be drained, or counted lost; a kept chunk is
//! readable (state 0, its size that of a complete flushed prefix).

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Command, Recorder};
use crate::base::clock;
use crate::base::loss::{LossCause, LossCounts};
use crate::cpool::methods::FrameTables;
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};
use crate::output::chunk::SalvagePoint;
use crate::repository::store::ChunkFile;

/// How often a stalled recorder tries to write again.
pub(super) const RETRY_EVERY: Duration = Duration::from_millis(200);
/// Room wanted beyond the backlog before writing is tried again: a
/// chunk's metadata, constants and a few flushes.
const BACKLOG_MARGIN: u64 = 1 << 20;

/// The recorder's write-error state: see the module docs.
#[derive(Debug, Default)]
pub(super) struct WriteErrors {
    /// The first failure: the file and the error (said on stderr once).
    first: Option<(PathBuf, io::ErrorKind, String)>,
    /// Writing is failing now.
    stall: Option<Stall>,
    /// The chunk being finished, while its assembler is consumed by its
    /// end (set by `finish_chunk` around `ChunkAssembler::finish`).
    pub(super) ending: Option<(PathBuf, SalvagePoint)>,
}

/// A stall: no chunk open until writing works again.
#[derive(Debug)]
struct Stall {
    /// The epoch the next chunk takes (the failed chunk's); `None` when no
    /// chunk was open (the next chunk's opening failed: the recorder still
    /// holds its epoch).
    epoch: Option<u64>,
    /// When to try again.
    next_try: Instant,
}

impl WriteErrors {
    /// Whether writing is failing now (no chunk open).
    pub(super) fn stalled(&self) -> bool {
        self.stall.is_some()
    }

    /// How long until the next try, while stalled.
    pub(super) fn until_retry(&self) -> Option<Duration> {
        self.stall
            .as_ref()
            .map(|s| s.next_try.saturating_duration_since(Instant::now()))
    }
}

impl Recorder {
    /// Writing failed with `e` while `context`: cuts the chunk back to its
    /// last flush, counts what that loses, stalls (see the module docs).
    #[cold]
    pub(super) fn write_failed(&mut self, context: &str, e: io::Error) {
        let failed = match self.chunk.take() {
            Some((chunk, path)) => {
                let point = chunk.salvage_point();
                // Dropped first: what it still buffers may reach the file,
                // past the size it is cut back to.
                drop(chunk);
                Some((path, point))
            }
            None => self.write_errors.ending.take(),
        };
        if let Some((path, point)) = &failed {
            self.salvage(path, point);
        }
        // No chunk: seals neither wake this thread nor flip the epoch.
        self.arm_rotation();
        let path = failed
            .as_ref()
            .map_or_else(|| self.repo.dir().to_path_buf(), |(p, _)| p.to_path_buf());
        if self.write_errors.first.is_none() {
            eprintln!(
                "flightrec: cannot write {} ({context}): {e}; recording goes on in memory \
                 (up to max_memory) and writes again when it can, counting what is lost",
                path.display()
            );
            self.write_errors.first = Some((path, e.kind(), e.to_string()));
        }
        self.write_errors.stall = Some(Stall {
            epoch: failed.map(|(_, p)| p.epoch),
            next_try: Instant::now() + RETRY_EVERY,
        });
    }

    /// Cuts the failed chunk at `path` back to its last flush and keeps it
    /// as a finished chunk of every live recording; counts the events
    /// written after that flush (all of them if nothing can be kept).
    fn salvage(&mut self, path: &Path, point: &SalvagePoint) {
        let (events, bytes) = point.pending;
        self.rt
            .losses
            .record_many(LossCause::WriteError, events, bytes);
        let kept = point.last_good.and_then(|(size, header)| {
            let f = self.repo.reopen_unfinished(path).ok()?;
            f.set_len(size)
                .and_then(|()| f.write_all_at(&header, 0))
                .ok()?;
            Some(size)
        });
        let flushed = point.records - events;
        let Some(size) = kept else {
            // Nothing readable is left of it.
            self.rt
                .losses
                .record_many(LossCause::WriteError, flushed, 0);
            self.repo.discard_unfinished(path);
            return;
        };
        self.finished.0 += size;
        self.finished.1 += flushed;
        let end_nanos = clock::wall_nanos();
        let chunk = ChunkFile {
            path: path.to_path_buf(),
            start_nanos: point.start_nanos,
            end_nanos,
            size,
        };
        // Its loss reports went with the part cut off: evicting it later
        // counts only the events it still holds.
        let seq = self.repo.add_finished(
            chunk,
            self.members.len(),
            flushed,
            crate::base::loss::LossCounts::default(),
        );
        for m in &mut self.members {
            m.chunks.push_back(seq);
            let (age, size) = (m.config.max_age, m.config.max_size);
            self.repo
                .apply_retention(&mut m.chunks, end_nanos, age, size);
        }
        self.publish_statistics();
    }

    /// While stalled: tries to write again if it is time (or `now`),
    /// opening the next chunk in memory if `in_memory`. True when writing
    /// works (or never failed).
    pub(super) fn retry_writing(
        &mut self,
        frames: &mut FrameTables,
        now: bool,
        in_memory: bool,
    ) -> bool {
        let Some(stall) = &self.write_errors.stall else {
            return true;
        };
        if !now && Instant::now() < stall.next_try {
            return false;
        }
        if !in_memory && !self.room_for_backlog() {
            if let Some(stall) = &mut self.write_errors.stall {
                stall.next_try = Instant::now() + RETRY_EVERY;
            }
            return false;
        }
        if let Some(epoch) = stall.epoch {
            self.next_epoch = Some(epoch);
        }
        let on_disk = self.stream.on_disk;
        self.stream.on_disk &= !in_memory;
        let opened = self.open_chunk();
        self.stream.on_disk = on_disk;
        let written = opened.and_then(|()| match self.chunk.as_mut() {
            Some((chunk, _)) => chunk.flush(self.rt, frames, &mut self.losses),
            None => Err(io::Error::other("no chunk open")),
        });
        if written.is_ok() {
            self.write_errors.stall = None;
            self.arm_rotation();
            return true;
        }
        // Still failing: the try's file goes, with nothing of the backlog
        // in it.
        if let Some((chunk, path)) = self.chunk.take() {
            drop(chunk);
            self.repo.discard_unfinished(&path);
        }
        self.arm_rotation();
        if let Some(stall) = &mut self.write_errors.stall {
            stall.next_try = Instant::now() + RETRY_EVERY;
        }
        false
    }

    /// Whether the repository's file system has room for the sealed
    /// blocks waiting, and a margin for the chunk's metadata and constants
    /// (`statvfs`): writing them into a disk that is still nearly full
    /// would lose them. True where that cannot be told (in memory, or
    /// `statvfs` fails): the try itself then decides.
    fn room_for_backlog(&self) -> bool {
        if !self.stream.on_disk || !self.repo.has_dir() {
            return true;
        }
        let Ok(dir) = std::ffi::CString::new(self.repo.dir().as_os_str().as_bytes()) else {
            return true;
        };
        // SAFETY: `statvfs` is plain data; all zeros is a valid value.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `dir` is NUL-terminated and outlives the call; `st` is a
        // valid out-pointer.
        if unsafe { libc::statvfs(dir.as_ptr(), &mut st) } != 0 {
            return true;
        }
        let available = st.f_bavail.saturating_mul(st.f_frsize);
        available >= self.rt.pool.queued_bytes().saturating_add(BACKLOG_MARGIN)
    }

    /// Before a command during a stall: one more try at writing; for the
    /// last stop, in memory if the recording has a destination to write,
    /// else the backlog is counted lost.
    pub(super) fn retry_for(&mut self, cmd: &Command, frames: &mut FrameTables) {
        if !self.write_errors.stalled() {
            return;
        }
        let Command::Stop {
            id, write, last, ..
        } = cmd
        else {
            self.retry_writing(frames, true, false);
            return;
        };
        if self.retry_writing(frames, true, false) || !last {
            return;
        }
        let destination = *write
            && self
                .members
                .iter()
                .any(|m| m.id == *id && m.config.destination.is_some());
        if !(destination && self.retry_writing(frames, true, true)) {
            self.discard_all();
        }
    }

    /// The error for calls made while writing is failing (`None` if it is
    /// not).
    pub(super) fn stall_error(&self) -> Option<RecordingError> {
        self.write_errors.stall.as_ref()?;
        let lost = self.members.first().map_or_else(LossCounts::default, |m| {
            self.rt.losses.snapshot().since(&m.losses_at_start)
        });
        self.write_error(lost, None)
    }

    /// A stop's result, for a recording that met a write error:
    /// [`RecordingError::WriteFailed`] with what it wrote.
    pub(super) fn stop_result(
        &self,
        r: Result<RecordingSummary, RecordingError>,
    ) -> Result<RecordingSummary, RecordingError> {
        match r {
            Ok(summary) if self.write_errors.first.is_some() => {
                let lost = summary.losses;
                Err(self
                    .write_error(lost, Some(Box::new(summary)))
                    .expect("a first failure"))
            }
            r => r,
        }
    }

    fn write_error(
        &self,
        lost: LossCounts,
        summary: Option<Box<RecordingSummary>>,
    ) -> Option<RecordingError> {
        let (path, kind, message) = self.write_errors.first.as_ref()?;
        Some(RecordingError::WriteFailed {
            path: path.clone(),
            source: io::Error::new(*kind, message.clone()),
            lost: Box::new(lost),
            summary,
        })
    }
}
