//! The recording lifecycle: the handle a program holds.
//!
//! ```text
//! Recording::start ──► Running ──stop()/drop──► Stopped
//!                        │  flush(), rotate(), dump(path), set(..)▲
//!                        └──disk error──► Failed (events off) ───┘
//! ```
//!
//! The handle talks to the recorder thread ([`crate::output::recorder_thread`]) over
//! a channel; every call that needs the file waits for the thread's answer.
//! Several handles may be live at once: they share one recorder
//! ([`crate::lifecycle::physical`]), each with its own settings and chunks.
//! A disk error stops recording (all types disabled, further drops counted
//! as [`LossCause::WriteError`](crate::LossCause::WriteError)) and every later
//! call returns [`RecordingError::Failed`] with the cause; nothing panics or
//! hangs. A panic on the recorder thread does the same (the events it held
//! counted as [`LossCause::Panicked`](crate::LossCause::Panicked)), with the
//! panic's message as the error's source.

use crate::base::sync::mpsc;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::base::loss::LossCounts;
use crate::config::settings::{SettingError, Settings};
use crate::event::registry::registry;
use crate::feature;
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};
use crate::lifecycle::physical::{PHYSICAL, Turn};
use crate::lifecycle::statistics::RecorderStatistics;
use crate::output::recorder_thread::Command;
use crate::runtime::Runtime;

/// The memory the recorder holds, by its own accounting
/// ([`Recording::memory`]). Buffers plus constants stay within the
/// recording's `max_memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryUse {
    /// Bytes of event buffers allocated (they are reused, never freed while
    /// the process records).
    pub buffers: usize,
    /// The most event buffers may take.
    pub buffers_limit: usize,
    /// Bytes held by interned stack traces and their symbolized frames,
    /// methods, classes and names.
    pub constants: usize,
    /// The most the constant pools may take.
    pub constants_limit: usize,
    /// Stack traces interned now.
    pub stacks: usize,
    /// Bytes of finished chunks kept in memory (recordings with
    /// [`disk(false)`](crate::RecordingConfig::disk)), as of the last
    /// chunk's end; the chunk being written adds at most a quarter of the
    /// limit.
    pub chunks_in_memory: u64,
    /// The most this recording's chunks may take in memory, the one being
    /// written included ([`RecordingConfig::memory_size`]; 0 on disk).
    ///
    /// [`RecordingConfig::memory_size`]: crate::RecordingConfig::memory_size
    pub chunks_in_memory_limit: u64,
}

/// A running recording. Dropping it stops it (use [`stop`](Self::stop) to
/// see errors).
///
/// Several recordings may run at once, each with its own settings,
/// destination and retention; events are recorded with the union of their
/// settings, and each recording's file holds the chunks written during
/// its life (see docs/configuration.md, "Several recordings").
#[derive(Debug)]
pub struct Recording {
    /// 1, 2, ... in the process, as `jdk.ActiveRecording` and `jcmd` show.
    pub(super) id: u64,
    pub(super) rt: &'static Runtime,
    pub(super) repository: PathBuf,
    /// The process that started it: a forked child must not wait for the
    /// parent's recorder thread.
    pub(super) pid: u32,
    pub(super) stopped: bool,
    /// Its `memory_size` when kept in memory (`disk(false)`).
    pub(super) memory_bound: Option<u64>,
}

impl Recording {
    /// The recording's id: 1, 2, ... in the process, as
    /// `jdk.ActiveRecording` and `jcmd <pid> JFR.check` show it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The repository directory (empty for a recording kept in memory,
    /// [`RecordingConfig::disk`](crate::RecordingConfig::disk)`(false)`).
    pub fn repository(&self) -> &Path {
        &self.repository
    }

    /// Changes one setting of one event type of this recording, e.g.
    /// `("com.example.Request", "threshold", "1 ms")`; the union with the
    /// other live recordings' settings is applied. Emitters see it at their
    /// next event.
    pub fn set(&self, event: &str, setting: &str, value: &str) -> Result<(), SettingError> {
        if self.pid != std::process::id() {
            return Err(SettingError::InForkedChild);
        }
        let reg = registry();
        let mut s = reg.live_settings(self.id).unwrap_or_default();
        s.set(event, setting, value)?;
        s.check_supported()?;
        reg.set_live(self.id, s);
        feature::each(|f| f.settings_changed());
        Ok(())
    }

    /// Replaces all of this recording's settings while recording (the
    /// union with the other live recordings' applies). Does nothing on a
    /// parent's recording in a forked child (where recording is off).
    pub fn apply_settings(&self, settings: Settings) {
        if self.pid != std::process::id() {
            return;
        }
        registry().set_live(self.id, settings);
        feature::each(|f| f.settings_changed());
    }

    /// Writes every event committed before the call to the current chunk in
    /// the repository, with the constants they use, and marks a flush point
    /// there, so a reader following the repository (`jfr print`, the JDK's
    /// `EventStream.openRepository`) sees them. The recorder does this by
    /// itself every flush interval; this is for a program that wants it now.
    pub fn flush(&self) -> Result<(), RecordingError> {
        self.request(Command::Flush)
    }

    /// Finishes the current chunk and starts a new one.
    pub fn rotate(&self) -> Result<(), RecordingError> {
        self.request(Command::Rotate)
    }

    /// Writes everything this recording recorded so far (its chunks, after
    /// finishing the current one) as one `.jfr` file to `path`.
    pub fn dump(&self, path: impl AsRef<Path>) -> Result<(), RecordingError> {
        self.dump_window(path, None, None)
    }

    /// Like [`dump`](Self::dump), but only chunks that overlap `[from, to]`.
    pub fn dump_window(
        &self,
        path: impl AsRef<Path>,
        from: Option<SystemTime>,
        to: Option<SystemTime>,
    ) -> Result<(), RecordingError> {
        let nanos = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        };
        let path = path.as_ref().to_owned();
        let (from, to) = (from.map(nanos), to.map(nanos));
        let id = self.id;
        self.request(|reply| Command::Dump {
            id,
            path,
            from,
            to,
            max_size: None,
            reply,
        })
    }

    /// The memory the recorder holds now (see [`MemoryUse`]).
    pub fn memory(&self) -> MemoryUse {
        let (buffers, buffers_limit) = self.rt.pool.memory();
        MemoryUse {
            buffers,
            buffers_limit,
            constants: self.rt.stacks.held_bytes(),
            constants_limit: self.rt.stacks.limit(),
            stacks: self.rt.stacks.len(),
            chunks_in_memory: crate::lifecycle::statistics::in_memory(),
            chunks_in_memory_limit: self.memory_bound.unwrap_or(0),
        }
    }

    /// Events dropped so far, by cause.
    pub fn losses(&self) -> LossCounts {
        self.rt.losses.snapshot()
    }

    /// What recording has cost so far (see [`RecorderStatistics`]): the
    /// CPU time of flightrec's threads and signal handler against the
    /// process's, bytes and events written, buffers in use. The same
    /// figures the periodic `flightrec.RecorderStatistics` event records.
    /// Bytes and events are as of the recorder's last drain
    /// ([`flush`](Self::flush) makes them current).
    pub fn statistics(&self) -> RecorderStatistics {
        crate::lifecycle::statistics::snapshot(self.rt.pool.occupancy())
    }

    fn request(
        &self,
        cmd: impl FnOnce(mpsc::Sender<Result<(), RecordingError>>) -> Command,
    ) -> Result<(), RecordingError> {
        if self.pid != std::process::id() {
            return Err(RecordingError::InForkedChild);
        }
        if feature::any(|f| f.busy_at_chunk_edge()) {
            return Err(RecordingError::FromChunkEdge);
        }
        if self.stopped {
            return Err(RecordingError::RecorderGone);
        }
        let (commands, rt) =
            crate::lifecycle::physical::sender().ok_or(RecordingError::RecorderGone)?;
        let (tx, rx) = mpsc::channel();
        commands
            .send(cmd(tx))
            .map_err(|_| RecordingError::RecorderGone)?;
        rt.pool.wake_for_command();
        rx.recv().map_err(|_| RecordingError::RecorderGone)?
    }

    /// Stops recording: every event committed before the call is written,
    /// the last chunk is finished and the destination file (if any) written.
    pub fn stop(mut self) -> Result<RecordingSummary, RecordingError> {
        self.stop_inner(true, "Recording stopped")
    }

    /// Stops recording without writing the destination (`dumponexit=false`
    /// at exit): the chunks stay in the repository (on disk) or are freed
    /// (in memory).
    pub(crate) fn stop_without_writing(mut self) -> Result<RecordingSummary, RecordingError> {
        self.stop_inner(false, "Process exit")
    }

    /// [`stop`](Self::stop) with `reason` in the last chunk's `jdk.Shutdown`.
    pub(crate) fn stop_with_reason(
        mut self,
        reason: &str,
    ) -> Result<RecordingSummary, RecordingError> {
        self.stop_inner(true, reason)
    }

    fn stop_inner(
        &mut self,
        write: bool,
        reason: &str,
    ) -> Result<RecordingSummary, RecordingError> {
        if std::mem::replace(&mut self.stopped, true) {
            return Err(RecordingError::RecorderGone);
        }
        if self.pid != std::process::id() {
            // A copy in a forked child: the thread is the parent's.
            return Err(RecordingError::InForkedChild);
        }
        // While its last chunk is open (and before the lock: this may wait
        // up to the stop timeout), the uploader settles or its losses are
        // recorded in that chunk.
        let id = self.id;
        feature::each(|f| f.before_last_chunk(id));
        // Held for the whole stop; the recorder is locked only for moments
        // (see `crate::lifecycle::physical`).
        let _turn = Turn::take();
        let mut physical = PHYSICAL.lock();
        let Some(p) = physical.as_mut() else {
            return Err(RecordingError::RecorderGone);
        };
        let (tx, rx) = mpsc::channel();
        if p.members.iter().any(|(i, _)| *i != self.id) {
            let (commands, rt) = (p.commands.clone(), p.rt);
            // Others record on: the chunk ends (its last, with the
            // end-of-chunk events its settings select, such as
            // jdk.MethodTiming), its file is written, then the union of the
            // others applies.
            p.members.retain(|(i, _)| *i != self.id);
            drop(physical);
            feature::each(|f| f.member_leaving(id));
            let stop = Command::Stop {
                id: self.id,
                write,
                last: false,
                reply: tx,
            };
            let sent = commands.send(stop);
            rt.pool.wake_for_command();
            let result = match sent {
                Ok(()) => rx.recv().unwrap_or(Err(RecordingError::RecorderGone)),
                Err(_) => Err(RecordingError::RecorderGone),
            };
            registry().remove_live(self.id);
            feature::each(|f| f.settings_changed());
            // Its last chunk is queued: an uploader sends what is left.
            feature::each(|f| f.member_gone(id));
            return result;
        }
        let p = physical.take().expect("checked above");
        drop(physical);
        // In the table's order: periodic events first (their last round,
        // end-of-chunk events and jdk.Shutdown, lands in the last chunk,
        // and none lands after it), then the samplers, whose queued samples
        // land in the last chunk too.
        feature::each(|f| f.shutdown(reason));
        crate::process::panics::stop();
        feature::each(|f| f.member_leaving(id));
        let sent = p.commands.send(Command::Stop {
            id: self.id,
            write,
            last: true,
            reply: tx,
        });
        self.rt.pool.wake_for_command();
        let result = match sent {
            Ok(()) => rx.recv().unwrap_or(Err(RecordingError::RecorderGone)),
            Err(_) => Err(RecordingError::RecorderGone),
        };
        // Hang up, so a recorder thread that lost our Stop (a panic while
        // handling it) sees the channel close and finishes.
        drop(p.commands);
        let _ = p.thread.join();
        feature::each(|f| f.stopped());
        registry().apply(Settings::new(), false);
        registry().clear_live();
        // Every chunk is queued: an uploader sends what is left.
        feature::each(|f| f.member_gone(id));
        result
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.stop_inner(true, "Recording dropped");
        }
    }
}
