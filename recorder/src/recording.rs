//! The recording lifecycle and the recorder thread.
//!
//! ```text
//! Recording::start ──► Running ──stop()/drop──► Stopped
//!                        │  rotate(), dump(path), settings changes
//! ```
//!
//! # The recorder thread
//!
//! Wakes when the full-block queue grows (or every 10 ms), drains sealed
//! blocks into the current chunk, and at each flush interval also drains the
//! committed part of every live thread's block, so idle threads' events are
//! written too. Commands (rotate, dump, stop) arrive over a channel.
//!
//! # Rotation (the safepoint)
//!
//! 1. flip the epoch (emitters that start an event from now on tag their
//!    blocks with the new epoch);
//! 2. `membarrier(PRIVATE_EXPEDITED)`: every thread executes a full barrier,
//!    so each writer's section flag is visible or it will see the new epoch;
//! 3. wait until no slot is inside a write section (a bounded wait: sections
//!    never block);
//! 4. drain every live block of the old epoch, then every sealed one;
//! 5. finish the old chunk (events, metadata, constants, header) and begin
//!    the next one. Emitting threads never wait for any of this.
//!
//! Invariant: every event committed in epoch *e* is written to the chunk of
//! epoch *e*, exactly once.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::buffer::pool::BlockPtr;
use crate::chunk::ChunkAssembler;
use crate::cpool::methods::FrameTables;
use crate::loss::LossCounts;
use crate::runtime::{self, Runtime, registry};
use crate::settings::{SettingError, Settings};
use crate::sync::{Ordering, spin_hint};
use crate::{clock, membarrier};

/// Smallest thread buffer.
pub const MIN_THREAD_BUFFER: usize = 1024;
/// Largest thread buffer.
pub const MAX_THREAD_BUFFER: usize = 16 << 20;

/// How a recording is set up. Validated by [`Recording::start`].
#[derive(Debug, Clone)]
pub struct RecordingConfig {
    path: PathBuf,
    thread_buffer_size: usize,
    max_memory: usize,
    flush_interval: Duration,
    max_stack_depth: usize,
    settings: Settings,
}

impl RecordingConfig {
    /// Records into `path` with default sizes: 64 KiB thread buffers, at most
    /// 64 MiB of buffers, a flush every second, stacks up to 64 frames.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            thread_buffer_size: 64 << 10,
            max_memory: 64 << 20,
            flush_interval: Duration::from_secs(1),
            max_stack_depth: 64,
            settings: Settings::new(),
        }
    }

    /// Bytes per thread buffer (1 KiB ..= 16 MiB); the largest event that can
    /// be recorded is one buffer.
    pub fn thread_buffer_size(mut self, bytes: usize) -> Self {
        self.thread_buffer_size = bytes;
        self
    }

    /// The most memory all event buffers together may use (at least two
    /// thread buffers). When it is used up, events are dropped and counted.
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes;
        self
    }

    /// How often idle threads' events are written out (10 ms ..= 1 h).
    pub fn flush_interval(mut self, d: Duration) -> Self {
        self.flush_interval = d;
        self
    }

    /// Deepest stack captured (1 ..= 128).
    pub fn max_stack_depth(mut self, frames: usize) -> Self {
        self.max_stack_depth = frames;
        self
    }

    /// Per-event-type settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    fn validate(&self) -> Result<(), StartError> {
        let bad = |what: &'static str, value: String, reason: &'static str| {
            Err(StartError::InvalidConfig {
                what,
                value,
                reason,
            })
        };
        if !(MIN_THREAD_BUFFER..=MAX_THREAD_BUFFER).contains(&self.thread_buffer_size) {
            return bad(
                "thread_buffer_size",
                self.thread_buffer_size.to_string(),
                "must be 1 KiB ..= 16 MiB",
            );
        }
        if self.max_memory < 2 * self.thread_buffer_size {
            return bad(
                "max_memory",
                self.max_memory.to_string(),
                "must hold at least two thread buffers",
            );
        }
        if !(Duration::from_millis(10)..=Duration::from_secs(3600)).contains(&self.flush_interval) {
            return bad(
                "flush_interval",
                format!("{:?}", self.flush_interval),
                "must be 10 ms ..= 1 h",
            );
        }
        if !(1..=128).contains(&self.max_stack_depth) {
            return bad(
                "max_stack_depth",
                self.max_stack_depth.to_string(),
                "must be 1 ..= 128",
            );
        }
        Ok(())
    }
}

/// Why a recording could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// Another recording is running (one at a time per process).
    AlreadyRecording,
    /// A configuration value is out of range.
    InvalidConfig {
        /// The option.
        what: &'static str,
        /// The value given.
        value: String,
        /// The accepted range.
        reason: &'static str,
    },
    /// The output file could not be created.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AlreadyRecording => f.write_str("a recording is already running in this process"),
            Self::InvalidConfig {
                what,
                value,
                reason,
            } => write!(f, "invalid {what} `{value}`: {reason}"),
            Self::Io { path, source } => write!(f, "cannot create {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An error while recording (the recording stops; events are counted lost).
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordingError {
    /// Writing the recording failed.
    Io(io::Error),
    /// The recorder thread is gone (it failed earlier, or panicked).
    RecorderGone,
}

impl std::fmt::Display for RecordingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "writing the recording failed: {e}"),
            Self::RecorderGone => f.write_str("the recorder thread has stopped"),
        }
    }
}

impl std::error::Error for RecordingError {}

impl From<io::Error> for RecordingError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// What a stopped recording wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingSummary {
    /// The file.
    pub path: PathBuf,
    /// Chunks written.
    pub chunks: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Events dropped, by cause, over the recording.
    pub losses: LossCounts,
}

enum Command {
    Rotate(mpsc::Sender<Result<(), RecordingError>>),
    Dump(PathBuf, mpsc::Sender<Result<(), RecordingError>>),
    Stop(mpsc::Sender<Result<RecordingSummary, RecordingError>>),
}

/// A running recording. Dropping it stops it (use [`stop`](Self::stop) to
/// see errors).
#[derive(Debug)]
pub struct Recording {
    commands: mpsc::Sender<Command>,
    thread: Option<JoinHandle<()>>,
    rt: &'static Runtime,
}

impl Recording {
    /// Starts recording into the configured file.
    pub fn start(config: RecordingConfig) -> Result<Recording, StartError> {
        config.validate()?;
        clock::init();
        membarrier::register();
        let reg = registry();
        if !reg.claim_recording() {
            return Err(StartError::AlreadyRecording);
        }
        let rt = runtime::init(
            config.thread_buffer_size,
            config.max_memory / config.thread_buffer_size,
            config.max_stack_depth,
        );
        let file = match File::create(&config.path) {
            Ok(f) => f,
            Err(source) => {
                reg.apply(Settings::new(), false);
                return Err(StartError::Io {
                    path: config.path,
                    source,
                });
            }
        };
        let chunk = match ChunkAssembler::begin(BufWriter::new(file), rt.losses.snapshot()) {
            Ok(c) => c,
            Err(source) => {
                reg.apply(Settings::new(), false);
                return Err(StartError::Io {
                    path: config.path,
                    source,
                });
            }
        };
        reg.apply(config.settings.clone(), true);
        let (tx, rx) = mpsc::channel();
        let losses_at_start = rt.losses.snapshot();
        let mut recorder = Recorder {
            rt,
            path: config.path,
            flush_interval: config.flush_interval,
            chunk: Some(chunk),
            chunks: 0,
            bytes: 0,
            losses_at_start,
        };
        let thread = std::thread::Builder::new()
            .name("flightrec-recorder".into())
            .spawn(move || recorder.run(rx))
            .map_err(|source| StartError::Io {
                path: PathBuf::from("<recorder thread>"),
                source,
            })?;
        Ok(Recording {
            commands: tx,
            thread: Some(thread),
            rt,
        })
    }

    /// Changes one setting of one event type while recording, e.g.
    /// `("com.example.Request", "threshold", "1 ms")`. Emitters see it at
    /// their next event.
    pub fn set(&self, event: &str, setting: &str, value: &str) -> Result<(), SettingError> {
        let reg = registry();
        let mut s = Settings::clone(&reg.settings.load());
        s.set(event, setting, value)?;
        reg.apply(s, true);
        Ok(())
    }

    /// Replaces all settings while recording.
    pub fn apply_settings(&self, settings: Settings) {
        registry().apply(settings, true);
    }

    /// Finishes the current chunk and starts a new one.
    pub fn rotate(&self) -> Result<(), RecordingError> {
        self.request(Command::Rotate)
    }

    /// Writes everything recorded so far, as a complete file, to `path`.
    pub fn dump(&self, path: impl AsRef<Path>) -> Result<(), RecordingError> {
        let path = path.as_ref().to_owned();
        self.request(|tx| Command::Dump(path, tx))
    }

    /// Events dropped so far, by cause.
    pub fn losses(&self) -> LossCounts {
        self.rt.losses.snapshot()
    }

    fn request(
        &self,
        cmd: impl FnOnce(mpsc::Sender<Result<(), RecordingError>>) -> Command,
    ) -> Result<(), RecordingError> {
        let (tx, rx) = mpsc::channel();
        self.commands
            .send(cmd(tx))
            .map_err(|_| RecordingError::RecorderGone)?;
        self.rt.pool.wakeup.notify_all();
        rx.recv().map_err(|_| RecordingError::RecorderGone)?
    }

    /// Stops recording: every event committed before the call is written and
    /// the file is finished.
    pub fn stop(mut self) -> Result<RecordingSummary, RecordingError> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<RecordingSummary, RecordingError> {
        let Some(thread) = self.thread.take() else {
            return Err(RecordingError::RecorderGone);
        };
        let (tx, rx) = mpsc::channel();
        let sent = self.commands.send(Command::Stop(tx));
        self.rt.pool.wakeup.notify_all();
        let result = if sent.is_ok() {
            rx.recv().unwrap_or(Err(RecordingError::RecorderGone))
        } else {
            Err(RecordingError::RecorderGone)
        };
        let _ = thread.join();
        registry().apply(Settings::new(), false);
        result
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_inner();
        }
    }
}

/// The recorder thread's state.
struct Recorder {
    rt: &'static Runtime,
    path: PathBuf,
    flush_interval: Duration,
    chunk: Option<ChunkAssembler>,
    chunks: u64,
    bytes: u64,
    losses_at_start: LossCounts,
}

impl Recorder {
    fn run(&mut self, rx: mpsc::Receiver<Command>) {
        // Created on this thread: the symbolizer is not `Send`.
        let mut frames = FrameTables::new();
        let mut last_flush = Instant::now();
        loop {
            {
                let mut q = self.rt.pool.full_queue();
                if q.is_empty() {
                    let _ = self
                        .rt
                        .pool
                        .wakeup
                        .wait_for(&mut q, Duration::from_millis(10));
                }
            }
            let result = (|| -> Result<bool, RecordingError> {
                while let Ok(cmd) = rx.try_recv() {
                    match cmd {
                        Command::Rotate(reply) => {
                            let r = self.rotate(false, &mut frames);
                            let _ = reply.send(r);
                        }
                        Command::Dump(path, reply) => {
                            let r = self
                                .rotate(false, &mut frames)
                                .and_then(|()| self.copy_to(&path));
                            let _ = reply.send(r);
                        }
                        Command::Stop(reply) => {
                            registry().apply(Settings::clone(&registry().settings.load()), false);
                            let r = self.rotate(true, &mut frames).map(|()| RecordingSummary {
                                path: self.path.clone(),
                                chunks: self.chunks,
                                bytes: self.bytes,
                                losses: self.rt.losses.snapshot().since(&self.losses_at_start),
                            });
                            let _ = reply.send(r);
                            return Ok(false);
                        }
                    }
                }
                let epoch = self.rt.epoch.load(Ordering::Acquire);
                self.drain_sealed(epoch)?;
                if last_flush.elapsed() >= self.flush_interval {
                    self.drain_live(epoch)?;
                    last_flush = Instant::now();
                }
                Ok(true)
            })();
            match result {
                Ok(true) => {}
                Ok(false) => return,
                Err(_) => {
                    // Disk errors stop the recording; later commands report it.
                    registry().apply(Settings::new(), false);
                    self.chunk = None;
                    for cmd in rx.iter() {
                        match cmd {
                            Command::Rotate(r) | Command::Dump(_, r) => {
                                let _ = r.send(Err(RecordingError::RecorderGone));
                            }
                            Command::Stop(r) => {
                                let _ = r.send(Err(RecordingError::RecorderGone));
                                return;
                            }
                        }
                    }
                    return;
                }
            }
        }
    }

    fn chunk(&mut self) -> Result<&mut ChunkAssembler, RecordingError> {
        self.chunk.as_mut().ok_or(RecordingError::RecorderGone)
    }

    /// Drains sealed blocks of epoch `<= epoch` into the chunk; later ones go
    /// back to the queue.
    fn drain_sealed(&mut self, epoch: u64) -> Result<(), RecordingError> {
        let sealed = self.rt.pool.take_sealed();
        let mut later = Vec::new();
        for b in sealed {
            if b.get().epoch() > epoch {
                later.push(b);
                continue;
            }
            self.chunk()?.add_block(b.get())?;
            self.rt.pool.release(b);
        }
        self.rt.pool.requeue(later);
        Ok(())
    }

    /// Drains the committed part of every live block of epoch `epoch`, and
    /// forgets slots of exited threads.
    fn drain_live(&mut self, epoch: u64) -> Result<(), RecordingError> {
        let slots: Vec<_> = {
            let mut slots = self.rt.slots.lock();
            slots.retain(|s| !(s.has_exited() && s.current_block().is_none()));
            slots.clone()
        };
        for slot in slots {
            let Some(b): Option<BlockPtr> = slot.current_block() else {
                continue;
            };
            if b.get().epoch() == epoch {
                self.chunk()?.add_block(b.get())?;
            }
        }
        Ok(())
    }

    /// Finishes the current chunk after the safepoint and, unless `last`,
    /// starts the next one.
    fn rotate(&mut self, last: bool, frames: &mut FrameTables) -> Result<(), RecordingError> {
        let old = self.rt.epoch.load(Ordering::Relaxed);
        self.rt.epoch.store(old + 1, Ordering::SeqCst);
        membarrier::barrier();
        let slots: Vec<_> = self.rt.slots.lock().clone();
        for slot in &slots {
            while slot.in_section() {
                spin_hint();
                std::thread::yield_now();
            }
        }
        self.drain_live(old)?;
        self.drain_sealed(old)?;
        let chunk = self.chunk.take().ok_or(RecordingError::RecorderGone)?;
        let chunk_len = chunk.len();
        let out = chunk.finish(self.rt, frames, last)?;
        self.chunks += 1;
        self.bytes += chunk_len;
        self.rt.threads.prune_exited_before(old);
        if !last {
            self.chunk = Some(ChunkAssembler::begin(out, self.rt.losses.snapshot())?);
        } else {
            let mut out = out;
            out.flush()?;
            self.bytes = out.stream_position()?;
        }
        Ok(())
    }

    /// Copies the finished chunks (everything before the current chunk) to
    /// `path`.
    fn copy_to(&mut self, path: &Path) -> Result<(), RecordingError> {
        let mut src = File::open(&self.path)?;
        let mut dst = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let finished = self.bytes_before_current()?;
        io::copy(&mut (&mut src).take(finished), &mut dst)?;
        dst.sync_all()?;
        Ok(())
    }

    fn bytes_before_current(&mut self) -> Result<u64, RecordingError> {
        // The current chunk began where the file stood after the last finish.
        let chunk = self.chunk()?;
        Ok(chunk.start_offset())
    }
}
