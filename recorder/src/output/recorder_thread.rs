//! The recorder thread: drains buffers into the current chunk, keeps the
//! chunk readable on disk, rotates chunks, applies retention, writes dumps.
//!
//! # Loop
//!
//! Wakes when a batch of blocks is sealed (4 MiB, a quarter of a smaller
//! pool, or a sixteenth of the chunk size limit, whichever is least), for a
//! command or a thread's exit (each notifies [`BufferPool`]'s `wakeup`),
//! or when its next timer (flush interval, chunk age) is due: an idle
//! recording wakes about once per flush interval, not every few ms. Sealed blocks of the current
//! epoch are drained in those batches, so on a small machine the emitting
//! threads are not competing with a drain after every block. Every flush
//! interval (or at [`crate::Recording::flush`]) it also drains the committed
//! part of every live thread's block and flushes the chunk (losses since the
//! last report, metadata, new constants, header), so idle threads' events
//! and every loss reach the disk and a live reader can follow. Rotates when
//! the chunk reaches its age limit or its closing size (below).
//!
//! # Chunk size
//!
//! A chunk holds every event committed in its epoch, so its size is decided
//! by when the epoch flips. Two marks, counted by the pool at every seal
//! from the chunk's length and the undrained bytes of the sealed blocks of
//! its epoch (see [`crate::buffer::pool`]):
//!
//! * `close_at` = `max_chunk_size` less 10 % (at least 64 KiB, at most
//!   half): the seal that reaches it wakes this thread, which flips before
//!   it drains, after committing the end-of-chunk events into the chunk;
//! * `flip_at` = `max_chunk_size` less one block (at least halfway from
//!   `close_at`): the seal that reaches it flips the epoch itself, when this
//!   thread has not (it was not scheduled in time), and this thread,
//!   finding the epoch flipped, does the rest of the safepoint.
//!
//! A finished chunk is therefore at most `flip_at` plus the block whose
//! seal reached it (so at most `max_chunk_size`), plus the committed part
//! of one live block per other writing thread (a writer's first event
//! after the flip moves to a new block), plus the chunk's end (losses,
//! constants, metadata). Both marks of the next epoch are armed with the
//! flip (in one step under the pool's lock, whoever flips), so the hard
//! stop holds from the flip on, while this thread is still finishing the
//! chunk before (draining it, writing its constants): constants carry the
//! tags of three epochs (see [`crate::cpool::threads`]), and a seal may flip
//! to an epoch at most two past the oldest chunk not finished (the pool's
//! flip limit, moved on as each chunk is finished). Only when this thread
//! lags by two whole chunks does an epoch grow past its hard mark until the
//! chunk two before it is finished. The chunk is at least `close_at` unless
//! cut short (age, `rotate()`, a start or stop). The price of a flip by a
//! seal is in the events, not the size: the end-of-chunk events this thread
//! then commits land in a later chunk. A seal that flips wakes this thread,
//! which then finishes each chunk whose epoch has ended in turn. (HotSpot
//! only requests: the thread whose write fills the chunk posts a rotation
//! to its recorder thread, `JfrChunkRotation`, and the chunk grows until
//! that thread runs.)
//!
//! # Rotation (the safepoint; steps 1–4 are [`crate::epoch::rotation`])
//!
//! 1. flip the epoch: emitters that open a write section from now on tag
//!    their blocks with the new epoch;
//! 2. `membarrier(PRIVATE_EXPEDITED)`: every running thread executes a full
//!    barrier, so each writer's open section is visible or it will load the
//!    new epoch (see [`crate::buffer::slot`]);
//! 3. wait until no slot is inside a write section (bounded: sections never
//!    block);
//! 4. drain every live block of the old epoch, then every sealed one;
//! 5. finish the old chunk (end events, metadata, constants, header, state 0
//!    last), record it in the repository, apply retention, open the next
//!    chunk file. Emitting threads never wait for any of this.
//!
//! # Several recordings
//!
//! The thread serves every live recording ([`crate::lifecycle::member`]): a start
//! while it runs ([`Command::Add`]) or a stop that leaves others
//! ([`Command::Stop`] without `last`) rotates, so each recording's chunks
//! span its life; a finished chunk goes to the list of every member live
//! when it ended.
//!
//! Invariant: every event committed in epoch *e* is written to the chunk of
//! epoch *e*, exactly once: blocks hold one epoch each, `flushed` positions
//! make every drain resume where the last stopped, and after step 3 no block
//! of epoch *e* can grow.

mod write_error;

use crate::base::sync::mpsc;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::base::clock;
use crate::base::loss::{LossCause, LossReporter};
use crate::base::sync::Ordering;
use crate::buffer::block::Block;
use crate::buffer::pool::BufferPool;
use crate::config::builder::StartError;
use crate::config::settings::Settings;
use crate::cpool::methods::FrameTables;
use crate::epoch::rotation::{self, BlockSink};
use crate::event::registry::registry;
use crate::feature;
use crate::lifecycle::active_recording::write_active_recording;
use crate::lifecycle::member::{Member, Stream};
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};
use crate::output::chunk::ChunkAssembler;
use crate::output::chunk_out::{ChunkOut, Staging};
use crate::process::panic_guard::{self, Place};
use crate::repository::files::write_private_file;
use crate::repository::retention::AtStop;
use crate::repository::store::{ChunkFile, Repository};
use crate::runtime::Runtime;

/// The chunk length at which a chunk with limit `max` closes: `max` less
/// 10 % (at least 64 KiB, at most half of `max`), room for what is
/// committed before this thread flips (see the module docs).
fn close_at(max: u64) -> u64 {
    if max == u64::MAX {
        return u64::MAX;
    }
    let tolerance = (max / 10).max(64 << 10).min(max / 2);
    max - tolerance
}

/// The chunk length at which a writer's seal flips the epoch (the hard
/// mark): one block below `max` (the sealed block that crosses it then
/// ends within `max`), and at least halfway from [`close_at`] to `max`, so
/// that this thread, woken at `close_at`, normally flips first.
fn flip_at(max: u64, block: u64) -> u64 {
    let close = close_at(max);
    if close == u64::MAX {
        return u64::MAX;
    }
    max.saturating_sub(block).max(close + (max - close) / 2)
}

/// Requests from the [`crate::Recording`] handle.
#[derive(Debug)]
pub(crate) enum Command {
    Flush(mpsc::Sender<Result<(), RecordingError>>),
    Rotate(mpsc::Sender<Result<(), RecordingError>>),
    Dump {
        /// The recording whose chunks are written.
        id: u64,
        path: PathBuf,
        from: Option<i64>,
        to: Option<i64>,
        /// Whole chunks up to this many bytes (`JFR.dump maxsize=`).
        max_size: Option<u64>,
        reply: mpsc::Sender<Result<(), RecordingError>>,
    },
    /// A recording starts while others run: rotate, then it holds the
    /// chunks from the next one on.
    Add {
        member: Box<Member>,
        /// The repository directory (empty in memory).
        reply: mpsc::Sender<Result<PathBuf, StartError>>,
    },
    /// Stop recording `id`; with `write: false` the destination is not
    /// written (a `FLIGHTREC` recording with `dumponexit=false`, at exit).
    /// With `last` the thread finishes the last chunk and exits; else it
    /// rotates and records on for the others.
    Stop {
        id: u64,
        write: bool,
        last: bool,
        reply: mpsc::Sender<Result<RecordingSummary, RecordingError>>,
    },
}

/// Why the recording stopped writing.
#[derive(Debug)]
struct Failure {
    context: String,
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    fn to_error(&self) -> RecordingError {
        RecordingError::Failed {
            context: self.context.clone(),
            source: io::Error::new(self.kind, self.message.clone()),
        }
    }
}

/// The recorder thread's state.
#[derive(Debug)]
pub(crate) struct Recorder {
    rt: &'static Runtime,
    /// The live recordings, in start order.
    members: Vec<Member>,
    /// Chunk limits and flush interval over `members`.
    stream: Stream,
    /// The chunk length at which the chunk closes, and the one at which a
    /// writer's seal flips the epoch (see the module docs).
    close_at: u64,
    flip_at: u64,
    /// The epoch of the next chunk, once the current one's is closed.
    next_epoch: Option<u64>,
    repo: Repository,
    chunk: Option<(ChunkAssembler, PathBuf)>,
    /// The last chunk's direct-I/O staging buffer, for the next chunk.
    staging: Option<Staging>,
    chunk_opened: Instant,
    /// When committed events were last written out (periodic or asked for).
    last_flush: Instant,
    failure: Option<Failure>,
    /// What the file has been told of the losses (see [`crate::base::loss`]).
    losses: LossReporter,
    /// Bytes and event records of the chunks finished so far (for
    /// `crate::lifecycle::statistics`).
    finished: (u64, u64),
    /// Write errors: a stall while writing fails (see [`write_error`]).
    write_errors: write_error::WriteErrors,
    /// The last stop is finishing the chunks: no seal flips the epoch and
    /// no block is handed out for an epoch after the last chunk's (see
    /// [`Recorder::finish_through`]).
    closing: bool,
}

impl Recorder {
    /// Opens the repository's first chunk, for the first recording.
    pub(crate) fn new(rt: &'static Runtime, first: Member, repo: Repository) -> io::Result<Self> {
        let losses = LossReporter::new(first.losses_at_start, rt.pool.block_size());
        let members = vec![first];
        let stream = Stream::of(&members);
        let mut r = Self {
            rt,
            members,
            stream,
            close_at: u64::MAX,
            flip_at: u64::MAX,
            next_epoch: None,
            repo,
            chunk: None,
            chunk_opened: Instant::now(),
            last_flush: Instant::now(),
            failure: None,
            losses,
            finished: (0, 0),
            staging: None,
            write_errors: Default::default(),
            closing: false,
        };
        // A block refused to a writer at the last stop of an earlier
        // recording is handed out again.
        rt.pool.reopen();
        r.members_changed();
        r.open_chunk()?;
        r.publish_statistics();
        Ok(r)
    }

    /// Recomputes what the chunk stream follows after a start or a stop.
    fn members_changed(&mut self) {
        self.stream = Stream::of(&self.members);
        let max = self.stream.max_chunk_size;
        self.close_at = close_at(max);
        self.flip_at = flip_at(max, self.rt.pool.block_size() as u64);
        self.rt.pool.set_fresh_marks(self.close_at, self.flip_at);
        // Small batches for small chunks: a live reader sees them soon.
        self.rt.pool.set_drain_batch(
            usize::try_from(self.stream.max_chunk_size / 16).unwrap_or(usize::MAX),
        );
        self.arm_rotation();
    }

    /// Tells the pool how many sealed bytes close the current chunk: the
    /// ones that wake this thread to rotate, and the ones at which a seal
    /// flips the epoch itself (see the module docs).
    fn arm_rotation(&self) {
        let pool = &self.rt.pool;
        match &self.chunk {
            Some((c, _))
                if self.failure.is_none() && !self.closing && self.close_at != u64::MAX =>
            {
                let len = c.len();
                pool.arm(
                    c.epoch(),
                    self.close_at.saturating_sub(len),
                    self.flip_at.saturating_sub(len),
                );
            }
            _ => pool.disarm(),
        }
    }

    fn open_chunk(&mut self) -> io::Result<()> {
        let (path, file) = self
            .repo
            .create_chunk(clock::wall_nanos(), self.stream.on_disk)?;
        // No loss snapshot here: the chunk's first flush reports every drop
        // since the previous chunk's last report (see `crate::base::loss`).
        // The chunk holds the epoch after the last one closed (a writer's
        // seal may have flipped past it already: the next step rotates), or
        // the current one for the first chunk.
        // Kept until the chunk is open: a stall reopens it (`write_error`).
        let epoch = self
            .next_epoch
            .unwrap_or_else(|| self.rt.epoch.load(Ordering::Acquire));
        // Every chunk before this one is finished.
        self.rt.pool.chunks_finished_before(epoch);
        let mut chunk = ChunkAssembler::begin(
            ChunkOut::new(file, !path.starts_with("memory:"), &mut self.staging),
            epoch,
        )?;
        let mut first = Vec::new();
        let ticks = clock::ticks();
        for m in &self.members {
            write_active_recording(&mut first, ticks, &m.info);
        }
        // Before every sample of the chunk (Pyroscope's parser needs the
        // sampler's jdk.ActiveSetting there).
        feature::each(|f| f.chunk_start_events(&mut first, ticks));
        chunk.write_records(&first)?;
        self.next_epoch = None;
        self.chunk = Some((chunk, path));
        self.chunk_opened = Instant::now();
        self.arm_rotation();
        Ok(())
    }

    /// The thread's body, guarded: a panic anywhere in the loop stops the
    /// recording as a failure (events off, buffered events counted lost,
    /// every later call answered with the panic), and the thread goes on
    /// answering commands so `stop()` returns.
    pub(crate) fn run_guarded(mut self, rx: mpsc::Receiver<Command>) {
        for _ in 0..3 {
            let Err(message) = panic_guard::catch(Place::RecorderThread, || self.run(&rx)) else {
                return;
            };
            if self.failure.is_none() {
                let e = io::Error::other(message);
                let _ = panic_guard::catch(Place::RecorderThread, || {
                    self.fail_with("the recorder thread panicked", e, LossCause::Panicked)
                });
            }
        }
        // The failure path itself keeps panicking: answer commands only.
        let error = || match &self.failure {
            Some(f) => f.to_error(),
            None => RecordingError::RecorderGone,
        };
        registry().apply(Settings::clone(&registry().settings.load()), false);
        for cmd in rx.iter() {
            match cmd {
                Command::Flush(reply) | Command::Rotate(reply) | Command::Dump { reply, .. } => {
                    let _ = reply.send(Err(error()));
                }
                Command::Add { reply, .. } => {
                    let _ = reply.send(Err(StartError::Io {
                        path: PathBuf::from("<recorder thread>"),
                        source: io::Error::other(error().to_string()),
                    }));
                }
                Command::Stop { reply, last, .. } => {
                    let _ = reply.send(Err(error()));
                    if last {
                        return;
                    }
                }
            }
        }
    }

    /// The thread's loop: returns when stopped.
    fn run(&mut self, rx: &mpsc::Receiver<Command>) {
        // Created on this thread: the symbolizer's caches stay here.
        let mut frames = FrameTables::new();
        loop {
            panic_guard::injection_point(Place::RecorderThread);
            // Sealed blocks are written in batches: when a quarter of the
            // pool is sealed, at each flush interval, or for a command. The
            // emitting threads then have the CPU to themselves between
            // batches, and the pool's other three quarters absorb the bursts.
            let mut pending = None;
            // A stall drains nothing: the sealed blocks wait (`write_error`).
            let stalled = self.write_errors.stalled();
            let drain_due = {
                let mut q = self.rt.pool.full_queue();
                let wake_at = self.rt.pool.wake_at();
                let sleep = self.until_next_timer();
                let due = |q: &std::collections::VecDeque<_>| {
                    (!stalled && BufferPool::drain_due(q, wake_at))
                        || self.rt.pool.rotation_due()
                        || self.flipped_past_chunk()
                };
                if !due(&q) && !sleep.is_zero() {
                    // The last look at the channel is under the queue's
                    // lock, which senders pass through before they notify
                    // (`wake_for_command`), as a seal reaching `wake_at`
                    // does: no wake-up is lost, so no polling is needed.
                    match rx.try_recv() {
                        Ok(cmd) => pending = Some(Ok(cmd)),
                        Err(e @ mpsc::TryRecvError::Disconnected) => pending = Some(Err(e)),
                        Err(mpsc::TryRecvError::Empty) => {
                            q = self.rt.pool.wakeup.wait_for(q, sleep);
                        }
                    }
                }
                due(&q)
            };
            loop {
                match pending.take().unwrap_or_else(|| rx.try_recv()) {
                    Ok(cmd) => {
                        if self.command(cmd, &mut frames) {
                            return;
                        }
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        // The handle stopped waiting for us (a panic here
                        // lost its Stop's reply): finish as a stop would.
                        let (reply, _) = mpsc::channel();
                        let id = self.members.first().map_or(0, |m| m.id);
                        let stop = Command::Stop {
                            id,
                            write: true,
                            last: true,
                            reply,
                        };
                        self.command(stop, &mut frames);
                        return;
                    }
                }
            }
            if self.failure.is_some() {
                self.discard_all();
                continue;
            }
            if !self.retry_writing(&mut frames, false, false) {
                continue;
            }
            let flush_due = self.last_flush.elapsed() >= self.stream.flush_interval;
            if flush_due {
                self.last_flush = Instant::now();
            }
            if let Err(e) = self.step(drain_due || flush_due, flush_due, &mut frames) {
                self.fail("writing the current chunk", e);
            }
        }
    }

    /// Whether a writer's seal flipped the epoch past the open chunk's
    /// (its end is due; the seal that flips wakes this thread).
    fn flipped_past_chunk(&self) -> bool {
        self.chunk
            .as_ref()
            .is_some_and(|(c, _)| self.rt.epoch.load(Ordering::Acquire) != c.epoch())
    }

    /// How long until a flush or the chunk's age limit is due (zero: now).
    /// A failed recording has no timers (it only discards blocks and
    /// answers commands, both of which wake it): it sleeps a flush interval.
    fn until_next_timer(&self) -> Duration {
        if self.failure.is_some() {
            return self.stream.flush_interval;
        }
        if let Some(retry) = self.write_errors.until_retry() {
            return retry;
        }
        let flush = self
            .stream
            .flush_interval
            .saturating_sub(self.last_flush.elapsed());
        match self.stream.max_chunk_age {
            Some(age) => flush.min(age.saturating_sub(self.chunk_opened.elapsed())),
            None => flush,
        }
    }

    /// One round of the loop: drains sealed blocks if `drain_due`, and live
    /// blocks plus a flush point if `flush_due`; rotates if the chunk is
    /// too large or too old.
    fn step(
        &mut self,
        drain_due: bool,
        flush_due: bool,
        frames: &mut FrameTables,
    ) -> io::Result<()> {
        let Some(epoch) = self.chunk.as_ref().map(|(c, _)| c.epoch()) else {
            return Err(io::Error::other("no chunk open"));
        };
        if self.rt.epoch.load(Ordering::Acquire) != epoch {
            // A writer's seal reached the hard mark and flipped the epoch:
            // the safepoint's other steps and the chunk's end are ours.
            return self.rotate(false, frames);
        }
        if drain_due && self.full_with_sealed() {
            // The sealed blocks take the chunk to its closing size: close
            // the epoch now, before draining, so the next blocks go to the
            // next chunk.
            return self.rotate(false, frames);
        }
        if drain_due || flush_due {
            self.drain_sealed(epoch)?;
        }
        if flush_due {
            self.drain_live(epoch)?;
            if let Some((chunk, _)) = self.chunk.as_mut() {
                chunk.flush(self.rt, frames, &mut self.losses)?;
            }
        }
        let len = self.chunk.as_ref().map_or(0, |(c, _)| c.len());
        let too_old = self
            .stream
            .max_chunk_age
            .is_some_and(|a| self.chunk_opened.elapsed() >= a);
        if len >= self.close_at || too_old {
            self.rotate(false, frames)?;
        }
        self.publish_statistics();
        self.arm_rotation();
        Ok(())
    }

    /// Tells `crate::lifecycle::statistics` the bytes and events written so far.
    fn publish_statistics(&self) {
        let (bytes, records) = self
            .chunk
            .as_ref()
            .map_or((0, 0), |(c, _)| (c.len(), c.records()));
        crate::lifecycle::statistics::set_written(
            self.finished.0 + bytes,
            self.finished.1 + records,
        );
    }

    /// Whether the chunk plus the bytes of the sealed blocks waiting reach
    /// the closing size.
    fn full_with_sealed(&self) -> bool {
        let len = self.chunk.as_ref().map_or(0, |(c, _)| c.len());
        len.saturating_add(self.rt.pool.queued_bytes()) >= self.close_at
    }

    /// Handles one command; true when the thread should exit.
    fn command(&mut self, cmd: Command, frames: &mut FrameTables) -> bool {
        self.retry_for(&cmd, frames);
        match cmd {
            Command::Flush(reply) => {
                self.last_flush = Instant::now();
                let r = self.checked(|me| me.step(true, true, frames), "flushing");
                let _ = reply.send(r);
                false
            }
            Command::Rotate(reply) => {
                let r = self.checked(|me| me.finish_through(false, frames), "rotating");
                let _ = reply.send(r);
                false
            }
            Command::Dump {
                id,
                path,
                from,
                to,
                max_size,
                reply,
            } => {
                let r = self
                    .checked(|me| me.finish_through(false, frames), "rotating for a dump")
                    .and_then(|()| {
                        self.write_file(id, &path, from, to, max_size)
                            .map(drop)
                            .map_err(|source| RecordingError::Dump { path, source })
                    });
                let _ = reply.send(r);
                false
            }
            Command::Add { member, reply } => {
                let _ = reply.send(self.add(*member, frames));
                false
            }
            Command::Stop {
                id,
                write,
                last: false,
                reply,
            } => {
                let _ = reply.send(self.stop_member(id, write, frames));
                false
            }
            Command::Stop {
                id,
                write,
                last: true,
                reply,
            } => {
                registry().apply(Settings::clone(&registry().settings.load()), false);
                let r = self
                    .checked(
                        |me| me.finish_through(true, frames),
                        "finishing the last chunk",
                    )
                    .and_then(|()| self.summary(id, write));
                let r = self.stop_result(r);
                // No chunk open: seals neither wake nor flip.
                self.rt.pool.disarm();
                // Every member goes (normally the one left). Their chunk
                // files are deleted together by `close`: for at most
                // 250 ms, then the rest after the repository's rename, on a
                // thread of their own (see `crate::repository::reap`): the
                // stop does not wait for a device that discards freed blocks.
                self.repo.defer_removals();
                for mut m in std::mem::take(&mut self.members) {
                    let written = m.id == id && write && m.config.destination.is_some();
                    let keep = m.config.keep_repository || self.repo.keeps();
                    let at = AtStop::of(written, r.is_ok());
                    self.repo.release_at_stop(&mut m.chunks, keep, at);
                }
                self.repo.close();
                registry().clear_live();
                let _ = reply.send(r);
                true
            }
        }
    }

    /// A recording starts while others run: the current chunk ends (it is
    /// not the newcomer's), the newcomer joins, the next chunk starts.
    fn add(&mut self, member: Member, frames: &mut FrameTables) -> Result<PathBuf, StartError> {
        let failed = |e: RecordingError| StartError::Io {
            path: PathBuf::from("<recorder thread>"),
            source: io::Error::other(e.to_string()),
        };
        if let Some(f) = &self.failure {
            return Err(failed(f.to_error()));
        }
        if member.config.disk && !self.repo.has_dir() {
            let c = &member.config;
            self.repo
                .add_dir(c.repository.as_deref(), c.keep_repository)?;
        }
        self.checked(|me| me.finish_chunk(false, frames), "rotating for a start")
            .map_err(failed)?;
        self.members.push(member);
        self.members_changed();
        self.checked(|me| me.open_next(), "rotating for a start")
            .map_err(failed)?;
        Ok(self.repo.dir().to_path_buf())
    }

    /// Recording `id` stops while others run: the current chunk ends (its
    /// last), its file is written from its chunks, it lets go of them, and
    /// the others record on in the next chunk.
    fn stop_member(
        &mut self,
        id: u64,
        write: bool,
        frames: &mut FrameTables,
    ) -> Result<RecordingSummary, RecordingError> {
        let rotated = self.checked(
            |me| me.finish_through_epoch(me.rt.epoch.load(Ordering::SeqCst), frames),
            "rotating for a stop",
        );
        let r = rotated.and_then(|()| self.summary(id, write));
        let r = self.stop_result(r);
        if let Some(at) = self.members.iter().position(|m| m.id == id) {
            let mut m = self.members.remove(at);
            let written = write && m.config.destination.is_some();
            let at = AtStop::of(written, r.is_ok());
            self.repo
                .release_at_stop(&mut m.chunks, m.config.keep_repository, at);
        }
        self.members_changed();
        if self.failure.is_none()
            && !self.write_errors.stalled()
            && let Err(e) = self.open_next()
        {
            self.fail("opening the next chunk", e);
        }
        r
    }

    /// Runs `f` unless the recording already failed; a new failure is
    /// recorded (stopping the recording) and returned.
    fn checked(
        &mut self,
        f: impl FnOnce(&mut Self) -> io::Result<()>,
        context: &str,
    ) -> Result<(), RecordingError> {
        if let Some(fail) = &self.failure {
            return Err(fail.to_error());
        }
        if let Some(e) = self.stall_error() {
            return Err(e);
        }
        f(self).map_err(|e| {
            self.fail(context, e);
            match &self.failure {
                Some(f) => f.to_error(),
                None => self.stall_error().expect("a write error stalls"),
            }
        })
    }

    /// What recording `id` wrote at its stop (its destination, if `write`).
    fn summary(&mut self, id: u64, write: bool) -> Result<RecordingSummary, RecordingError> {
        let now = self.rt.losses.snapshot();
        let Some(m) = self.members.iter().find(|m| m.id == id) else {
            return Err(RecordingError::RecorderGone);
        };
        let losses = now.since(&m.losses_at_start);
        let Some(dest) = m.config.destination.clone().filter(|_| write) else {
            return Ok(RecordingSummary {
                destination: None,
                chunks: 0,
                bytes: 0,
                losses,
            });
        };
        match self.write_file(id, &dest, None, None, None) {
            Ok((chunks, bytes)) => Ok(RecordingSummary {
                destination: Some(dest),
                chunks,
                bytes,
                losses,
            }),
            Err(source) => Err(RecordingError::Dump { path: dest, source }),
        }
    }

    /// Concatenates recording `id`'s finished chunks into `path` (a new
    /// `0600` file renamed into place: a link planted at `path` is not
    /// followed).
    fn write_file(
        &self,
        id: u64,
        path: &Path,
        from: Option<i64>,
        to: Option<i64>,
        max_size: Option<u64>,
    ) -> io::Result<(u64, u64)> {
        let empty = std::collections::VecDeque::new();
        let list = self
            .members
            .iter()
            .find(|m| m.id == id)
            .map_or(&empty, |m| &m.chunks);
        write_private_file(path, |out| {
            let chunks = self.repo.concat_into(out, list, from, to, max_size)?;
            Ok((chunks as u64, out.stream_position()?))
        })
    }

    /// After an I/O error: the chunk is cut back to its last flush and
    /// the recording goes on in memory until writing works again (see
    /// [`write_error`]).
    #[cold]
    fn fail(&mut self, context: &str, e: io::Error) {
        self.write_failed(context, e);
    }

    /// [`fail`](Self::fail), counting the events still buffered under `cause`.
    #[cold]
    fn fail_with(&mut self, context: &str, e: io::Error, cause: LossCause) {
        let path = self
            .chunk
            .as_ref()
            .map(|(_, p)| p.display().to_string())
            .unwrap_or_default();
        self.failure = Some(Failure {
            context: format!("{context} ({path})"),
            kind: e.kind(),
            message: e.to_string(),
        });
        registry().apply(Settings::clone(&registry().settings.load()), false);
        self.arm_rotation();
        if let Some((chunk, _)) = self.chunk.take() {
            let (events, bytes) = chunk.pending();
            self.rt.losses.record_many(cause, events, bytes);
        }
        self.discard_all();
    }

    /// Drops (and counts) every buffered event after a failure: the blocks
    /// count their records (see [`crate::buffer::block`]).
    fn discard_all(&mut self) {
        let count = |b: &crate::buffer::block::Block| {
            let _ = b.drain_with(|bytes, records| {
                self.rt
                    .losses
                    .record_many(LossCause::WriteError, records, bytes.len() as u64);
                Ok::<(), ()>(())
            });
        };
        for slot in self.rt.slots.lock().iter() {
            if let Some(b) = slot.current_block() {
                count(b.get());
            }
        }
        for b in self.rt.pool.take_sealed() {
            count(b.get());
            self.rt.pool.release(b);
        }
    }

    fn chunk_mut(&mut self) -> io::Result<&mut ChunkAssembler> {
        self.chunk
            .as_mut()
            .map(|(c, _)| c)
            .ok_or_else(|| io::Error::other("no chunk open"))
    }

    /// Drains sealed blocks of epoch `<= epoch` into the chunk; later ones go
    /// back to the queue.
    fn drain_sealed(&mut self, epoch: u64) -> io::Result<()> {
        let rt = self.rt;
        rotation::drain_sealed(rt, epoch, &mut ChunkSink(self.chunk_mut()?))
    }

    /// Drains the committed part of every live block of epoch `epoch`, and
    /// forgets slots of exited threads.
    fn drain_live(&mut self, epoch: u64) -> io::Result<()> {
        let rt = self.rt;
        rotation::drain_live(rt, epoch, &mut ChunkSink(self.chunk_mut()?))
    }

    /// Hands finished chunk `seq` to the features that take finished
    /// chunks (the Pyroscope uploaders); its bytes are read now, before
    /// retention may delete the file.
    fn offer_finished(&self, seq: u64, start: i64, end: i64, size: u64) {
        if !feature::any(|f| f.wants_finished_chunks()) {
            return;
        }
        let ids: Vec<u64> = self.members.iter().map(|m| m.id).collect();
        let mut read = || {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            let one = std::collections::VecDeque::from([seq]);
            self.repo.concat_into(&mut bytes, &one, None, None, None)?;
            Ok(bytes)
        };
        feature::each(|f| f.chunk_finished(&ids, start, end, &mut read));
    }

    /// Finishes the current chunk after the safepoint and, unless `last`,
    /// starts the next one.
    fn rotate(&mut self, last: bool, frames: &mut FrameTables) -> io::Result<()> {
        self.finish_chunk(last, frames)?;
        if !last {
            self.open_next()?;
        }
        Ok(())
    }

    /// Finishes every chunk up to the current epoch's and, unless `last`,
    /// opens the next: every event committed before the command that asks
    /// for it is then in a finished chunk. Usually one chunk; more when a
    /// writer's seal flipped the epoch past the open chunk's (at its hard
    /// size mark) and this thread has not caught up yet.
    ///
    /// With `last` (the last stop) the epoch moves only with this thread's
    /// own flips from here on (the pool is disarmed first, under its lock,
    /// so no seal flips after the current epoch is read), and the pool
    /// hands out no block for the epoch after the last chunk's: a writer
    /// that passed its enabled check before the stop turned its type off
    /// and opens its section after the last flip does not commit its event
    /// (the commit returns as for a disabled type, nothing is counted),
    /// instead of leaving it in a block no chunk will drain; a writer whose
    /// section opened before the flip is waited for, and its event is in
    /// the last chunk.
    fn finish_through(&mut self, last: bool, frames: &mut FrameTables) -> io::Result<()> {
        if last {
            self.closing = true;
            self.rt.pool.disarm();
        }
        // SeqCst, after the command's receipt: a write section that
        // committed before the command was sent loaded this epoch or an
        // earlier one.
        let epoch = self.rt.epoch.load(Ordering::SeqCst);
        self.finish_through_epoch(epoch, frames)?;
        if !last {
            self.open_next()?;
        }
        Ok(())
    }

    /// Finishes the open chunk and each later one up to the chunk of
    /// `epoch`, opening each next one but the last (the caller opens it, or
    /// none at the last stop): every event of `epoch` or before is then
    /// in a finished chunk.
    fn finish_through_epoch(&mut self, epoch: u64, frames: &mut FrameTables) -> io::Result<()> {
        loop {
            let open = self.chunk_mut()?.epoch();
            if open >= epoch {
                return self.finish_chunk(self.closing, frames);
            }
            self.finish_chunk(false, frames)?;
            self.open_next()?;
        }
    }

    /// Opens the next chunk and runs its beginning-of-chunk events.
    fn open_next(&mut self) -> io::Result<()> {
        self.open_chunk()?;
        feature::each(|f| f.chunk_opened());
        Ok(())
    }

    /// Finishes the current chunk after the safepoint: it goes to every
    /// live member's list, and each applies its retention.
    fn finish_chunk(&mut self, last: bool, frames: &mut FrameTables) -> io::Result<()> {
        let rt = self.rt;
        // The end-of-chunk events the features produce on threads of
        // their own (the periodic tasks) belong to the chunk that ends.
        feature::each(|f| f.chunk_ending());
        let open = self.chunk_mut()?.epoch();
        let (close_at, flip_at) = (self.close_at, self.flip_at);
        // The next epoch counts from its flip, not from its chunk's
        // opening: finishing this chunk takes a while (drains, constants,
        // metadata, the file, retention), and writers fill the next epoch
        // meanwhile. Both its marks are armed with the flip, under the
        // pool's lock: a seal may flip it while this chunk is still being
        // finished (constants carry the tags of three epochs; the pool's
        // flip limit keeps a seal from flipping further until this chunk
        // is finished).
        let next = (!last && !self.closing && close_at != u64::MAX).then_some((close_at, flip_at));
        if last {
            // No block of the epoch the flip below opens is handed out:
            // no chunk of this recording will drain it (see `finish_through`).
            rt.pool.close_from(open + 1);
        }
        let old = rotation::rotate(rt, open, next, &mut ChunkSink(self.chunk_mut()?))?;
        self.next_epoch = Some(old + 1);
        let (chunk, path) = self
            .chunk
            .take()
            .ok_or_else(|| io::Error::other("no chunk open"))?;
        let start_nanos = chunk.start_nanos();
        let records = chunk.records();
        self.evict_over_memory_size(chunk.len());
        // What a failure from here on cuts the chunk back to.
        self.write_errors.ending = Some((path.clone(), chunk.salvage_point()));
        let mut file = chunk.finish(self.rt, frames, last, &mut self.losses)?;
        // The chunk's constants are written: its epoch's tag word may be
        // reused, so a seal may flip one epoch further.
        self.rt.pool.chunks_finished_before(old + 1);
        file.flush()?;
        let size = file.stream_position()?;
        self.staging = self.staging.take().or(file.into_staging());
        if !last {
            // The constants and metadata written since the eviction above
            // made the chunk larger than it was then: the ring is kept
            // within its bound with the chunk's final size too. What this
            // drops is reported in the next chunk.
            self.evict_over_memory_size(size);
        }
        self.finished.0 += size;
        self.finished.1 += records;
        let end_nanos = clock::wall_nanos();
        let chunk = ChunkFile {
            path,
            start_nanos,
            end_nanos,
            size,
        };
        let reported = self.losses.take_chunk_reported();
        let seq = self
            .repo
            .add_finished(chunk, self.members.len(), records, reported);
        self.write_errors.ending = None;
        self.offer_finished(seq, start_nanos, end_nanos, size);
        for m in &mut self.members {
            m.chunks.push_back(seq);
            let (age, size) = (m.config.max_age, m.config.max_size);
            self.repo
                .apply_retention(&mut m.chunks, end_nanos, age, size);
        }
        crate::lifecycle::statistics::set_in_memory(self.repo.in_memory_bytes());
        self.rt.threads.prune_exited_before(old);
        // The chunk of `old` is written: stacks not tagged since the flip
        // are referenced by no unwritten event (see `cpool::stacks`).
        frames.release(&self.rt.stacks.release_before(old + 1));
        self.rt.stacks.set_resolved_bytes(frames.bytes());
        self.publish_statistics();
        Ok(())
    }

    /// Keeps each recording kept in memory within its `memory_size`, with
    /// the chunk of `len` bytes being finished and the next one (up to the
    /// stream's chunk size, or `len` if larger) added: drops its oldest chunks, counting their
    /// events lost, and what their loss records said to be reported again,
    /// before the finishing chunk's last loss report, so that report
    /// carries both (see [`Repository::evict`]).
    fn evict_over_memory_size(&mut self, len: u64) {
        // The next chunk may overshoot its size as this one did.
        let coming = len.saturating_add(len.max(self.stream.max_chunk_size));
        for m in &mut self.members {
            if let Some(bound) = m.config.memory_bound() {
                let evicted = self.repo.evict(&mut m.chunks, bound, coming);
                if evicted.events > 0 {
                    let (events, bytes) = (evicted.events, evicted.bytes);
                    self.rt
                        .losses
                        .record_many(LossCause::Evicted, events, bytes);
                }
                self.losses.carry(&evicted.reported);
            }
        }
    }
}

/// The open chunk as the drains' sink: sealed blocks are written from
/// their own memory where the file allows it (see
/// [`ChunkAssembler::add_sealed_block`]), live blocks are copied.
struct ChunkSink<'a>(&'a mut ChunkAssembler);

impl BlockSink<io::Error> for ChunkSink<'_> {
    fn add(&mut self, block: &Block) -> io::Result<()> {
        self.0.add_block(block).map(drop)
    }

    unsafe fn add_sealed(&mut self, block: &Block) -> io::Result<()> {
        // SAFETY: the drain resets `block` only after `end_batch`, which
        // writes it (this method's contract).
        unsafe { self.0.add_sealed_block(block) }.map(drop)
    }

    fn end_batch(&mut self) -> io::Result<()> {
        self.0.write_gathered()
    }
}
