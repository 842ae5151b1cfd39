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
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::base::clock;
use crate::base::loss::LossCounts;
use crate::config::builder::{RecordingConfig, StartError};
use crate::config::settings::{SettingError, Settings};
use crate::epoch::membarrier;
use crate::event::registry::registry;
use crate::lifecycle::active_recording;
use crate::lifecycle::member::Member;
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};
use crate::lifecycle::physical::{PHYSICAL, Physical, Turn};
use crate::lifecycle::statistics::{RecorderStatistics, Role, RoleThread};
use crate::output::recorder_thread::{Command, Recorder};
use crate::repository::store::Repository;
use crate::runtime::{self, Runtime};

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
/// its life (see the crate's README, "Several recordings").
#[derive(Debug)]
pub struct Recording {
    /// 1, 2, ... in the process, as `jdk.ActiveRecording` and `jcmd` show.
    id: u64,
    rt: &'static Runtime,
    repository: PathBuf,
    /// The process that started it: a forked child must not wait for the
    /// parent's recorder thread.
    pid: u32,
    stopped: bool,
    /// Its `memory_size` when kept in memory (`disk(false)`).
    memory_bound: Option<u64>,
}

impl Recording {
    /// Starts recording. The first recording in the process starts the
    /// recorder; a later one joins it (the current chunk ends, and the new
    /// recording holds the chunks from the next one on). A name already in
    /// use by a running recording is refused ([`StartError::NameInUse`]).
    pub fn start(config: RecordingConfig) -> Result<Recording, StartError> {
        config.validate()?;
        let config = config.effective();
        clock::init();
        crate::process::fork::install();
        membarrier::register();
        // Held for the whole start (a rotation, when others record); the
        // recorder itself is locked only for moments, so a `fork()`
        // meanwhile does not wait (see `crate::lifecycle::physical`).
        let _turn = Turn::take();
        let running = PHYSICAL.lock().as_ref().map(|p| {
            let name_taken = config.name.as_deref().and_then(|n| p.named(n));
            (p.commands.clone(), p.rt, name_taken)
        });
        if let Some((commands, rt, name_taken)) = running {
            return Self::join(commands, rt, name_taken, config);
        }
        let reg = registry();
        if !reg.claim_recording() {
            return Err(StartError::AlreadyRecording);
        }
        let release = |e: StartError| {
            reg.apply(Settings::new(), false);
            e
        };
        // Whether the samples carry `contextId`, for the recorder's life.
        #[cfg(feature = "pyroscope")]
        let uploads = config.pyroscope.is_some();
        #[cfg(not(feature = "pyroscope"))]
        let uploads = false;
        crate::labels::latch_for_recording(crate::sampler::pyroscope_events() || uploads);
        let rt = runtime::init(
            config.thread_buffer_size,
            config.buffer_blocks(),
            config.max_stack_depth,
            config.constant_memory(),
        );
        let repo = if config.disk {
            Repository::create(config.repository.as_deref(), config.keep_repository)
                .map_err(release)?
        } else {
            Repository::in_memory()
        };
        let repository = repo.dir().to_path_buf();
        let id = active_recording::next_id();
        let member = Member::new(id, config.clone(), rt.losses.snapshot());
        let recorder = Recorder::new(rt, member, repo).map_err(|source| {
            release(StartError::Io {
                path: repository.clone(),
                source,
            })
        })?;
        #[cfg(feature = "pyroscope")]
        crate::pyroscope::start(id, config.pyroscope.as_ref())
            .map_err(|e| release(StartError::Pyroscope(e)))?;
        reg.add_live(id, config.settings.clone());
        crate::lifecycle::statistics::reset();
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("flightrec-recorder".into())
            .spawn(move || {
                let _role = RoleThread::enter(Role::Recorder);
                recorder.run_guarded(rx)
            })
            .map_err(|source| {
                reg.clear_live();
                #[cfg(feature = "pyroscope")]
                crate::pyroscope::finish(id);
                release(StartError::Io {
                    path: PathBuf::from("<recorder thread>"),
                    source,
                })
            })?;
        crate::sampler::reconcile();
        crate::process::panics::start();
        crate::periodic::start(rt);
        crate::attach::control::started(id, &config, &tx, rt);
        *PHYSICAL.lock() = Some(Physical {
            commands: tx,
            thread,
            rt,
            members: vec![(id, config.name.clone())],
        });
        if let Err(e) = crate::attach::start(config.attach) {
            eprintln!("flightrec: attach: {e}");
        }
        Ok(Recording {
            id,
            rt,
            repository,
            pid: std::process::id(),
            stopped: false,
            memory_bound: config.memory_bound(),
        })
    }

    /// Starts a recording beside the running ones (the caller holds the
    /// turn): `commands` reach their recorder thread, `name_taken` is the
    /// running recording with the new one's name, if any.
    fn join(
        commands: mpsc::Sender<Command>,
        rt: &'static Runtime,
        name_taken: Option<u64>,
        config: RecordingConfig,
    ) -> Result<Recording, StartError> {
        let config = config.effective();
        if let Some(name) = &config.name
            && let Some(id) = name_taken
        {
            return Err(StartError::NameInUse {
                name: name.clone(),
                id,
            });
        }
        let id = active_recording::next_id();
        let member = Member::new(id, config.clone(), rt.losses.snapshot());
        #[cfg(feature = "pyroscope")]
        crate::pyroscope::start(id, config.pyroscope.as_ref()).map_err(StartError::Pyroscope)?;
        let (tx, rx) = mpsc::channel();
        let gone = || StartError::Io {
            path: PathBuf::from("<recorder thread>"),
            source: io::Error::other("the recorder thread has stopped"),
        };
        let added = commands
            .send(Command::Add {
                member: Box::new(member),
                reply: tx,
            })
            .map_err(|_| gone())
            .and_then(|()| {
                rt.pool.wake_for_command();
                rx.recv().map_err(|_| gone())?
            });
        let dir = match added {
            Ok(dir) => dir,
            Err(e) => {
                #[cfg(feature = "pyroscope")]
                crate::pyroscope::finish(id);
                return Err(e);
            }
        };
        let repository = if config.disk { dir } else { PathBuf::new() };
        registry().add_live(id, config.settings.clone());
        crate::sampler::reconcile();
        crate::periodic::wake();
        crate::attach::control::started(id, &config, &commands, rt);
        if let Some(p) = PHYSICAL.lock().as_mut() {
            p.members.push((id, config.name.clone()));
        }
        if let Err(e) = crate::attach::start(config.attach) {
            eprintln!("flightrec: attach: {e}");
        }
        Ok(Recording {
            id,
            rt,
            repository,
            pid: std::process::id(),
            stopped: false,
            memory_bound: config.memory_bound(),
        })
    }

    /// The recording's id: 1, 2, ... in the process, as
    /// `jdk.ActiveRecording` and `jcmd <pid> JFR.check` show it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The repository directory (empty for a recording kept in memory,
    /// [`RecordingConfig::disk`]`(false)`).
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
        crate::sampler::reconcile();
        crate::periodic::wake();
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
        crate::sampler::reconcile();
        crate::periodic::wake();
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

    /// What this recording's Pyroscope uploader has done so far (`None`
    /// without one). See [`crate::pyroscope`].
    #[cfg(feature = "pyroscope")]
    pub fn pyroscope_totals(&self) -> Option<crate::pyroscope::UploadTotals> {
        crate::pyroscope::totals(self.id)
    }

    fn request(
        &self,
        cmd: impl FnOnce(mpsc::Sender<Result<(), RecordingError>>) -> Command,
    ) -> Result<(), RecordingError> {
        if self.pid != std::process::id() {
            return Err(RecordingError::InForkedChild);
        }
        if crate::periodic::at_chunk_edge() {
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
        #[cfg(feature = "pyroscope")]
        crate::pyroscope::before_last_chunk(self.id);
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
            crate::attach::control::stopped(self.id);
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
            crate::sampler::reconcile();
            crate::periodic::wake();
            // Its last chunk is queued: the uploader sends what is left.
            #[cfg(feature = "pyroscope")]
            crate::pyroscope::finish(self.id);
            return result;
        }
        let p = physical.take().expect("checked above");
        drop(physical);
        // Periodic events first: their last round (end-of-chunk events,
        // jdk.Shutdown) lands in the last chunk, and none lands after it.
        crate::periodic::shutdown(reason);
        crate::process::panics::stop();
        // Before the hang-up below: the attach registry holds a sender too.
        crate::attach::control::stopped(self.id);
        crate::sampler::shutdown();
        // Queued allocation samples land in the last chunk.
        crate::alloc::shutdown();
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
        crate::alloc::stopped();
        registry().apply(Settings::new(), false);
        registry().clear_live();
        // Every chunk is queued: the uploader sends what is left.
        #[cfg(feature = "pyroscope")]
        crate::pyroscope::finish(self.id);
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
