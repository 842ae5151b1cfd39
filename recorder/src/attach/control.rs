//! What `jcmd` can see of the running recordings, whoever started them
//! (the program, `FLIGHTREC`, or `jcmd` itself): each one's id,
//! configuration and a sender to the recorder thread for dumps.
//!
//! [`started`] is called by `Recording::start` once the recorder thread
//! runs, [`stopped`] by the stop before it hangs up on the thread (a sender
//! kept here would otherwise keep the thread's channel open): a dump asks
//! the physical recorder for its sender when it is sent, and is answered, or fails
//! with `RecorderGone` when the thread has gone: the reply is awaited at
//! most [`DUMP_TIMEOUT`].
//!
//! Invariant: [`ACTIVE`] holds the recordings that run in this process, in
//! start order; entries left by a parent (in a forked child) are ignored.

use crate::base::sync::mpsc;
use std::path::PathBuf;
use std::time::Duration;

use crate::base::sync::global::Mutex;
use crate::config::builder::RecordingConfig;
use crate::lifecycle::outcome::RecordingError;
use crate::output::recorder_thread::Command;

/// How long a dump requested by `jcmd` may take.
pub(crate) const DUMP_TIMEOUT: Duration = Duration::from_secs(60);

/// The running recordings.
static ACTIVE: Mutex<Vec<Active>> = Mutex::new(Vec::new());

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
        let (commands, rt) =
            crate::lifecycle::physical::sender().ok_or(RecordingError::RecorderGone)?;
        let (reply, rx) = mpsc::channel();
        commands
            .send(Command::Dump {
                id: self.id,
                path,
                from,
                to,
                max_size,
                reply,
            })
            .map_err(|_| RecordingError::RecorderGone)?;
        rt.pool.wake_for_command();
        rx.recv_timeout(DUMP_TIMEOUT)
            .map_err(|_| RecordingError::RecorderGone)?
    }
}

/// Records recording `id`, which just started.
pub(crate) fn started(id: u64, config: &RecordingConfig) {
    let mut active = ACTIVE.lock();
    active.retain(|a| a.pid == std::process::id());
    active.push(Active {
        id,
        config: config.clone(),
        pid: std::process::id(),
    });
}

/// Forgets recording `id` (it is stopping).
pub(crate) fn stopped(id: u64) {
    ACTIVE.lock().retain(|a| a.id != id);
}

/// The running recordings, in start order.
pub(crate) fn list() -> Vec<Active> {
    ACTIVE
        .lock()
        .iter()
        .filter(|a| a.pid == std::process::id())
        .cloned()
        .collect()
}
