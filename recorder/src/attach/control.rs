//! What `jcmd` can see of the running recording, whoever started it (the
//! program, `FLIGHTREC`, or `jcmd` itself): its id, configuration and a
//! sender to its recorder thread for dumps.
//!
//! [`started`] is called by `Recording::start` once the recorder thread
//! runs, [`stopped`] by the stop before it hangs up on the thread (a sender
//! kept here would otherwise keep the thread's channel open). A dump sent
//! through a [`Remote`] taken just before the stop is answered, or fails
//! with `RecorderGone` when the thread has gone: the reply is awaited at
//! most [`DUMP_TIMEOUT`].
//!
//! Invariant: [`ACTIVE`] holds the recording that runs in this process, or
//! nothing; an entry left by a parent (in a forked child) is ignored.

use crate::sync::mpsc;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::RecordingConfig;
use crate::recorder_thread::Command;
use crate::recording::RecordingError;
use crate::runtime::Runtime;
use crate::sync::{AtomicU64, Mutex, Ordering};

/// How long a dump requested by `jcmd` may take.
pub(crate) const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// The running recording.
static ACTIVE: Mutex<Option<Active>> = Mutex::new(None);
/// Ids are 1, 2, ... in start order, as the JDK numbers recordings.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Settings `JFR.configure` gave for the next recordings `jcmd` starts.
pub(crate) static CONFIGURED: Mutex<Configured> = Mutex::new(Configured {
    repository: None,
    stack_depth: None,
});

/// `JFR.configure`'s values.
#[derive(Debug, Clone)]
pub(crate) struct Configured {
    /// `repositorypath`.
    pub(crate) repository: Option<PathBuf>,
    /// `stackdepth`.
    pub(crate) stack_depth: Option<usize>,
}

/// What `jcmd` knows of the running recording.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    /// 1, 2, ...
    pub(crate) id: u64,
    /// Its configuration at start.
    pub(crate) config: RecordingConfig,
    pid: u32,
    remote: Remote,
}

impl Active {
    /// The name `jcmd` shows: the configured one, or the id.
    pub(crate) fn name(&self) -> String {
        self.config
            .name
            .clone()
            .unwrap_or_else(|| self.id.to_string())
    }

    /// Whether `jcmd`'s `name=` selects it (its name or its id).
    pub(crate) fn is_named(&self, name: &str) -> bool {
        self.name() == name || self.id.to_string() == name
    }

    /// Writes the chunks overlapping `[from, to]` (ns since the epoch) to
    /// `path`, as `Recording::dump_window` does, only as many whole chunks
    /// as fit in `max_size` bytes if given (see `Repository::select`).
    pub(crate) fn dump(
        &self,
        path: PathBuf,
        from: Option<i64>,
        to: Option<i64>,
        max_size: Option<u64>,
    ) -> Result<(), RecordingError> {
        let (reply, rx) = mpsc::channel();
        self.remote
            .commands
            .send(Command::Dump {
                path,
                from,
                to,
                max_size,
                reply,
            })
            .map_err(|_| RecordingError::RecorderGone)?;
        self.remote.rt.pool.wake_for_command();
        rx.recv_timeout(DUMP_TIMEOUT)
            .map_err(|_| RecordingError::RecorderGone)?
    }
}

/// A way to the recorder thread.
#[derive(Debug, Clone)]
struct Remote {
    commands: mpsc::Sender<Command>,
    rt: &'static Runtime,
}

/// Records the recording that just started.
pub(crate) fn started(
    config: &RecordingConfig,
    commands: &mpsc::Sender<Command>,
    rt: &'static Runtime,
) {
    *ACTIVE.lock() = Some(Active {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        config: config.clone(),
        pid: std::process::id(),
        remote: Remote {
            commands: commands.clone(),
            rt,
        },
    });
}

/// Forgets the recording (it is stopping).
pub(crate) fn stopped() {
    ACTIVE.lock().take();
}

/// The running recording, if any.
pub(crate) fn active() -> Option<Active> {
    ACTIVE
        .lock()
        .as_ref()
        .filter(|a| a.pid == std::process::id())
        .cloned()
}
