//! How a recording is set up: a builder that [`crate::Recording::start`]
//! validates, with the documented ranges and defaults.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::settings::Settings;

/// Smallest thread buffer.
pub const MIN_THREAD_BUFFER: usize = 1024;
/// Largest thread buffer.
pub const MAX_THREAD_BUFFER: usize = 16 << 20;
/// Default thread buffer (block) size. Under loom a block holds two 5-byte
/// model records, so block-full is reached in small models. (Not under
/// miri: there the real recording runs, and validation wants at least
/// [`MIN_THREAD_BUFFER`].)
pub(crate) const DEFAULT_THREAD_BUFFER: usize = if cfg!(flightrec_loom) { 10 } else { 64 << 10 };
/// Default memory for event buffers. Under loom three blocks, so the
/// pool-exhausted path is reached in small models.
pub(crate) const DEFAULT_MAX_MEMORY: usize = if cfg!(flightrec_loom) {
    3 * DEFAULT_THREAD_BUFFER
} else {
    64 << 20
};
/// Smallest chunk size that triggers a rotation.
pub const MIN_CHUNK_SIZE: u64 = 64 << 10;
/// Default bound of a recording kept in memory (`disk(false)`): the JDK's
/// default `memorysize`.
pub(crate) const DEFAULT_MEMORY_SIZE: u64 = 10 << 20;
/// Smallest `memory_size`: four of the smallest chunks.
pub(crate) const MIN_MEMORY_SIZE: u64 = 4 * MIN_CHUNK_SIZE;

/// How a recording is set up. Validated by [`crate::Recording::start`].
#[derive(Debug, Clone)]
pub struct RecordingConfig {
    pub(crate) destination: Option<PathBuf>,
    pub(crate) repository: Option<PathBuf>,
    pub(crate) keep_repository: bool,
    pub(crate) thread_buffer_size: usize,
    pub(crate) max_memory: usize,
    pub(crate) flush_interval: Duration,
    pub(crate) max_stack_depth: usize,
    pub(crate) max_chunk_size: u64,
    pub(crate) max_chunk_age: Option<Duration>,
    pub(crate) max_age: Option<Duration>,
    pub(crate) max_size: Option<u64>,
    pub(crate) settings: Settings,
    pub(crate) name: Option<String>,
    pub(crate) disk: bool,
    /// The most a recording kept in memory holds (see [`Self::memory_size`]).
    pub(crate) memory_size: u64,
    /// How long the recording was asked to run (reported in
    /// `jdk.ActiveRecording`; the `FLIGHTREC` start stops it then).
    pub(crate) duration: Option<Duration>,
    /// Start the attach listener with the recording (`attach=true`), or
    /// when `jcmd` asks (`attach=lazy`).
    pub(crate) attach: Attach,
    /// Push each period's chunk to Pyroscope.
    #[cfg(feature = "pyroscope")]
    pub(crate) pyroscope: Option<crate::pyroscope::config::PyroscopeConfig>,
}

/// When the `jcmd` listener (see [`crate::attach`]) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Attach {
    /// Never (`attach=false`, the default).
    #[default]
    Off,
    /// At once (`attach=true`): the socket exists from the start.
    Listen,
    /// When the first `jcmd` asks, by SIGQUIT (`attach=lazy`); this changes
    /// what SIGQUIT does (see [`crate::attach::listen_on_sigquit`]).
    OnSigquit,
}

impl RecordingConfig {
    /// Records into a repository and writes the whole recording to `path`
    /// when it stops. Defaults: 64 KiB thread buffers, at most 64 MiB of
    /// buffers, a flush every second, stacks up to 64 frames, chunks of
    /// 12 MiB, no retention limit, the per-process repository under the
    /// system temp directory.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            destination: Some(path.into()),
            ..Self::repository_only()
        }
    }

    /// Records into the repository only (no file is written at stop; use
    /// [`crate::Recording::dump`]).
    pub fn repository_only() -> Self {
        Self {
            destination: None,
            repository: None,
            keep_repository: false,
            thread_buffer_size: DEFAULT_THREAD_BUFFER,
            max_memory: DEFAULT_MAX_MEMORY,
            flush_interval: Duration::from_secs(1),
            max_stack_depth: 64,
            max_chunk_size: 12 << 20,
            max_chunk_age: None,
            max_age: None,
            max_size: None,
            settings: Settings::new(),
            name: None,
            disk: true,
            memory_size: DEFAULT_MEMORY_SIZE,
            duration: None,
            attach: Attach::Off,
            #[cfg(feature = "pyroscope")]
            pyroscope: None,
        }
    }

    /// Pushes the recording to Grafana Pyroscope (feature `pyroscope`):
    /// a chunk is cut every [`PyroscopeConfig::period`] (the chunk age
    /// limit is lowered to it) and uploaded by a thread of its own; see
    /// [`crate::pyroscope`].
    ///
    /// [`PyroscopeConfig::period`]: crate::pyroscope::config::PyroscopeConfig::period
    #[cfg(feature = "pyroscope")]
    pub fn pyroscope(mut self, upload: crate::pyroscope::config::PyroscopeConfig) -> Self {
        self.pyroscope = Some(upload);
        self
    }

    /// The configuration as recorded: with an uploader, chunks are cut at
    /// least every upload period.
    pub(crate) fn effective(self) -> Self {
        #[cfg(feature = "pyroscope")]
        if let Some(p) = &self.pyroscope {
            let period = p.upload_period();
            let age = self.max_chunk_age.map_or(period, |a| a.min(period));
            return self.max_chunk_age(Some(age));
        }
        self
    }

    /// The recording's name, shown by `jfr view active-recordings`
    /// (`jdk.ActiveRecording`). Default: the recording's id.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Where chunks are kept while recording: in the repository directory
    /// (`true`, the default) or only in memory (`false`): chunks are then
    /// rotated and dropped by `max_age`/`max_size` exactly as on disk, and
    /// nothing is written to disk until [`crate::Recording::dump`] or the
    /// stop writes the destination. `repository` and `keep_repository` do
    /// not apply in memory.
    pub fn disk(mut self, disk: bool) -> Self {
        self.disk = disk;
        self
    }

    /// The most memory a recording kept in memory ([`Self::disk`]`(false)`)
    /// holds in chunks, the one being written included (default 10 MiB, the
    /// JDK's `memorysize`; at least 256 KiB). Its chunks are cut at a
    /// quarter of it at most; past it the oldest chunks are dropped, their
    /// events counted lost ([`crate::LossCause::Evicted`]), so the file
    /// holds the newest data and says what went. Does not apply on disk.
    pub fn memory_size(mut self, bytes: u64) -> Self {
        self.memory_size = bytes;
        self
    }

    /// The bound on this recording's in-memory chunks (`None` on disk).
    pub(crate) fn memory_bound(&self) -> Option<u64> {
        (!self.disk).then_some(self.memory_size)
    }

    /// The chunk size the chunk stream follows for this recording: in
    /// memory, at most a quarter of `memory_size`, so the ring holds three
    /// finished chunks besides the one being written.
    pub(crate) fn chunk_size_limit(&self) -> u64 {
        match self.memory_bound() {
            Some(bound) => self.max_chunk_size.min((bound / 4).max(MIN_CHUNK_SIZE)),
            None => self.max_chunk_size,
        }
    }

    /// Also answer the JDK's `jcmd` (`JFR.check`, `JFR.dump`, `JFR.stop`,
    /// `JFR.start`, ...) on the HotSpot attach socket
    /// `/tmp/.java_pid<pid>` (default `false`). The listener starts with
    /// the recording and stays after it stops; a listener that cannot be
    /// set up is reported on stderr and the recording goes on. See
    /// [`crate::attach`]; [`crate::attach::listen`] starts it alone and
    /// returns the error.
    pub fn attach(mut self, on: bool) -> Self {
        self.attach = if on { Attach::Listen } else { Attach::Off };
        self
    }

    /// When to start the `jcmd` listener: [`Attach::OnSigquit`] waits for
    /// the first `jcmd` (no socket until then) and catches SIGQUIT for it.
    /// [`Self::attach`]`(true)` is [`Attach::Listen`].
    pub fn attach_mode(mut self, mode: Attach) -> Self {
        self.attach = mode;
        self
    }

    /// Reports `duration` as the recording's requested length.
    pub(crate) fn reported_duration(mut self, duration: Option<Duration>) -> Self {
        self.duration = duration;
        self
    }

    /// The file written when the recording stops (`None`: none).
    pub fn destination(mut self, path: Option<PathBuf>) -> Self {
        self.destination = path;
        self
    }

    /// The repository directory: created `0700` if missing; if it exists it
    /// must be a directory (not a symbolic link) owned by the effective uid
    /// and not writable by group or others, or the start fails with
    /// [`StartError::UnsafeRepository`]. Default: a new directory with an
    /// unpredictable name under the system temp directory
    /// (`flightrec-<pid>-XXXXXX`, `0700`).
    pub fn repository(mut self, dir: impl Into<PathBuf>) -> Self {
        self.repository = Some(dir.into());
        self
    }

    /// Keep the repository's chunk files (and the directory) after a clean
    /// stop. By default, once the destination file is written, the chunks
    /// are removed, and the directory too if the recording created it. A
    /// recording without a destination always keeps them.
    pub fn keep_repository(mut self, keep: bool) -> Self {
        self.keep_repository = keep;
        self
    }

    /// Bytes per thread buffer (1 KiB ..= 16 MiB); the largest event that can
    /// be recorded is one buffer.
    pub fn thread_buffer_size(mut self, bytes: usize) -> Self {
        self.thread_buffer_size = bytes;
        self
    }

    /// The most memory the recorder's buffers and constant pools together
    /// may use (default 64 MiB). Three quarters go to event buffers (at
    /// least two thread buffers), one quarter to the interned stack traces
    /// and their symbolized frames. When buffers are used up, events are
    /// dropped and counted; when the constant pools are, new stack traces
    /// are dropped (the event is kept) and counted.
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.max_memory = bytes;
        self
    }

    /// How often the chunk on disk is brought up to date (10 ms ..= 1 h).
    pub fn flush_interval(mut self, d: Duration) -> Self {
        self.flush_interval = d;
        self
    }

    /// Deepest stack captured (1 ..= 128).
    pub fn max_stack_depth(mut self, frames: usize) -> Self {
        self.max_stack_depth = frames;
        self
    }

    /// Rotate when the chunk reaches this size (at least 64 KiB).
    pub fn max_chunk_size(mut self, bytes: u64) -> Self {
        self.max_chunk_size = bytes;
        self
    }

    /// Rotate when the chunk is this old (at least 10 ms).
    pub fn max_chunk_age(mut self, age: Option<Duration>) -> Self {
        self.max_chunk_age = age;
        self
    }

    /// Drop repository chunks older than this.
    pub fn max_age(mut self, age: Option<Duration>) -> Self {
        self.max_age = age;
        self
    }

    /// Drop the oldest repository chunks while the finished ones exceed this.
    pub fn max_size(mut self, bytes: Option<u64>) -> Self {
        self.max_size = bytes;
        self
    }

    /// Per-event-type settings.
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The bytes kept for constant pools: a quarter of `max_memory`.
    pub(crate) fn constant_memory(&self) -> usize {
        self.max_memory / 4
    }

    /// How many thread buffers the rest of `max_memory` holds.
    pub(crate) fn buffer_blocks(&self) -> usize {
        (self.max_memory - self.constant_memory()) / self.thread_buffer_size.max(1)
    }

    pub(crate) fn validate(&self) -> Result<(), StartError> {
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
        if self.buffer_blocks() < 2 {
            return bad(
                "max_memory",
                self.max_memory.to_string(),
                "must hold at least two thread buffers besides the quarter kept for constant pools",
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
        if self.max_chunk_size < MIN_CHUNK_SIZE {
            return bad(
                "max_chunk_size",
                self.max_chunk_size.to_string(),
                "must be at least 64 KiB",
            );
        }
        if self
            .max_chunk_age
            .is_some_and(|a| a < Duration::from_millis(1))
        {
            return bad(
                "max_chunk_age",
                format!("{:?}", self.max_chunk_age),
                "must be at least 1 ms",
            );
        }
        if self.memory_size < MIN_MEMORY_SIZE {
            return bad(
                "memory_size",
                self.memory_size.to_string(),
                "must be at least 256 KiB",
            );
        }
        if let Some(dest) = &self.destination {
            check_destination(dest)?;
        }
        self.settings
            .check_supported()
            .map_err(StartError::Setting)?;
        Ok(())
    }
}

/// Whether the destination can be written at the stop: its directory
/// exists and this process may create files in it (`faccessat` with the
/// effective ids), so a bad `filename` fails the start, not the exit.
fn check_destination(path: &std::path::Path) -> Result<(), StartError> {
    use std::os::unix::ffi::OsStrExt;
    let bad = |source: std::io::Error| StartError::Destination {
        path: path.to_path_buf(),
        source,
    };
    if path.file_name().is_none() || path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(bad(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names no file",
        )));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    let meta = std::fs::metadata(dir).map_err(bad)?;
    if !meta.is_dir() {
        return Err(bad(std::io::Error::from_raw_os_error(libc::ENOTDIR)));
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        bad(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path contains a NUL byte",
        ))
    })?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call;
    // faccessat only reads it.
    let r = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    };
    if r != 0 {
        return Err(bad(std::io::Error::last_os_error()));
    }
    // A device, FIFO, socket, directory or another user's file there is
    // refused now rather than at the stop.
    crate::repository::files::check_destination(path).map_err(bad)
}

/// Why a recording could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// An automatic recording (`FLIGHTREC`, `start_from_options`, the C
    /// ABI's `flightrec_start`) is already running: those start one.
    AlreadyRecording,
    /// A running recording already has this name.
    NameInUse {
        /// The name asked for.
        name: String,
        /// The id of the recording that has it.
        id: u64,
    },
    /// A configuration value is out of range.
    InvalidConfig {
        /// The option.
        what: &'static str,
        /// The value given.
        value: String,
        /// The accepted range.
        reason: &'static str,
    },
    /// An existing repository directory is not private to this user.
    UnsafeRepository {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        problem: RepositoryProblem,
    },
    /// A setting an event type does not support (`throttle` on a type that
    /// is not sampled, ...).
    Setting(crate::config::settings::SettingError),
    /// The destination file could not be written at the stop: its
    /// directory is missing, is no directory, or is not writable, or the
    /// path names something that is not replaced (a device, a FIFO, a
    /// socket, a directory, another user's file: the source is then an
    /// `InvalidInput` error holding a
    /// [`DestinationProblem`](crate::repository::DestinationProblem)).
    Destination {
        /// The destination.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The Pyroscope uploader could not start (its `Authorization`
    /// variable is not set, ...).
    #[cfg(feature = "pyroscope")]
    Pyroscope(crate::pyroscope::config::PyroscopeError),
    /// The repository or the first chunk could not be created.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AlreadyRecording => f.write_str("a recording is already running in this process"),
            Self::NameInUse { name, id } => write!(
                f,
                "a recording named `{name}` is already running (recording {id}); choose another name"
            ),
            Self::InvalidConfig {
                what,
                value,
                reason,
            } => write!(f, "invalid {what} `{value}`: {reason}"),
            Self::UnsafeRepository { path, problem } => {
                write!(f, "refusing repository {}: {problem}", path.display())
            }
            Self::Setting(e) => write!(f, "{e}"),
            #[cfg(feature = "pyroscope")]
            Self::Pyroscope(e) => write!(f, "{e}"),
            Self::Destination { path, source } => write!(
                f,
                "cannot write the recording to {}: {source} (nothing was recorded)",
                path.display()
            ),
            Self::Io { path, source } => write!(f, "cannot create {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::Destination { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why an existing directory is not used as a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepositoryProblem {
    /// The path is a symbolic link (it is not followed).
    SymbolicLink,
    /// The path exists and is not a directory.
    NotADirectory,
    /// The directory belongs to another user.
    ForeignOwner {
        /// The directory's owner.
        owner: u32,
        /// This process's effective uid.
        euid: u32,
    },
    /// Group or others may write into the directory (and so replace chunks).
    Writable {
        /// The directory's permission bits.
        mode: u32,
    },
}

impl std::fmt::Display for RepositoryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SymbolicLink => f.write_str("it is a symbolic link (not followed)"),
            Self::NotADirectory => f.write_str("it is not a directory"),
            Self::ForeignOwner { owner, euid } => write!(
                f,
                "it is owned by uid {owner}, not by this process's effective uid {euid}"
            ),
            Self::Writable { mode } => write!(
                f,
                "group or others may write into it (mode {mode:04o}; expected no group/other write bit, e.g. 0700)"
            ),
        }
    }
}
