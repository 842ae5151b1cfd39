//! In-process streaming: follow a recording's repository (or read a
//! finished file) and call user callbacks per event type, as the JDK's
//! `EventStream` does, with stack traces resolved to named frames.
//!
//! # Mechanism
//!
//! The stream polls the repository directory (every
//! [`poll_interval`](EventStream::poll_interval), 100 ms by default: below
//! the recorder's flush interval, so events reach callbacks within about
//! one flush interval of being written). Chunk files are taken in name
//! order, which is start-time order. For each file not yet done it reads
//! the bytes, checks the header's state byte (255: being updated, try at
//! the next poll), cuts the file at the header's `chunk_size` (the part
//! the last flush made complete; the whole chunk once the state is 0,
//! finished), re-reads the header to be sure it did not change meanwhile,
//! decodes that prefix with the project's reader
//! ([`chunk_writer::reader`]), and hands each event past the ones already
//! delivered to the callbacks. A finished chunk is then done.
//!
//! * **Rotation**: a new chunk file simply appears; its events follow.
//! * **Retention** deleting a chunk under the reader: a chunk that vanishes
//!   before it was read to its end is reported to `on_error`
//!   ([`StreamError::ChunkRemoved`]), never silently skipped.
//! * **Stop**: a stream ends once it has delivered the recording's final
//!   chunk (the header flag the stop sets). If the directory disappears
//!   first, or the recording has stopped (or, for a directory not of this
//!   process's recording, nothing changed for
//!   [`idle_end`](EventStream::idle_end)) with no final chunk in sight, the
//!   stream reports [`StreamError::FinalChunkUnread`] and ends: the stop's
//!   clean-up removed chunks it never saw. A stream that must see every
//!   event keeps the repository (`keep_repository(true)`).
//! * **Callbacks** run on the streaming thread; one that panics is caught,
//!   reported to `on_error` ([`StreamError::CallbackPanicked`]) and the
//!   stream goes on.
//!
//! # Memory
//!
//! One chunk's bytes and decoded events at a time (the recorder bounds a
//! chunk's size, `max_chunk_size`), plus the names of the chunk files
//! present. Re-decoding the growing chunk at each poll costs time linear in
//! the chunk so far; a chunk is small and this keeps the reader the one
//! the tests check.
//!
//! Invariant: each event of a chunk is delivered at most once, in file
//! order, and a chunk whose remaining events can no longer be read is
//! reported.

mod event;

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chunk_writer::header::{ChunkHeader, HEADER_LEN};
use chunk_writer::reader::{ReadError, read_recording};

pub use event::{Frame, RecordedEvent};

use crate::sync::{Arc, AtomicBool, Ordering};

type EventFn = Box<dyn FnMut(&RecordedEvent<'_>) + Send>;
type FlushFn = Box<dyn FnMut() + Send>;
type ErrorFn = Box<dyn FnMut(&StreamError) + Send>;

/// Why a stream could not deliver something; passed to `on_error`.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamError {
    /// A chunk file vanished (retention, or the stop's clean-up) before its
    /// events were all delivered.
    ChunkRemoved {
        /// The chunk file.
        path: PathBuf,
        /// Events of it delivered before it vanished.
        delivered: u64,
    },
    /// A chunk could not be decoded (a finished one is then skipped).
    Read {
        /// The chunk file.
        path: PathBuf,
        /// What the reader found.
        error: ReadError,
    },
    /// Reading the repository or a file failed.
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// A callback panicked; the stream went on with the next event.
    CallbackPanicked {
        /// The type of the event being handled (`None` in `on_flush`).
        event_type: Option<String>,
        /// The panic's message.
        message: String,
    },
    /// The recording ended (its directory is gone, or it stopped and went
    /// quiet) before the stream read its final chunk: chunks the stream
    /// never saw were removed (the stop's clean-up, or retention).
    FinalChunkUnread {
        /// The repository.
        dir: PathBuf,
    },
    /// The recording keeps its chunks in memory (`disk(false)`): nothing to
    /// follow on disk.
    InMemoryRecording,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ChunkRemoved { path, delivered } => write!(
                f,
                "chunk {} was removed after {delivered} of its events were delivered",
                path.display()
            ),
            Self::Read { path, error } => write!(f, "chunk {}: {error}", path.display()),
            Self::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Self::CallbackPanicked {
                event_type,
                message,
            } => match event_type {
                Some(t) => write!(f, "callback for {t} panicked: {message}"),
                None => write!(f, "on_flush callback panicked: {message}"),
            },
            Self::FinalChunkUnread { dir } => write!(
                f,
                "the recording in {} ended before the stream read its final chunk: chunks it never saw were removed",
                dir.display()
            ),
            Self::InMemoryRecording => f.write_str(
                "the recording keeps its chunks in memory (disk(false)); stream a recording with a repository",
            ),
        }
    }
}

impl std::error::Error for StreamError {}

/// What a stream delivered, returned when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamSummary {
    /// Events handed to callbacks (each event once, whatever the number of
    /// callbacks).
    pub events: u64,
    /// Chunks read to their end.
    pub chunks: u64,
    /// Errors reported to `on_error`.
    pub errors: u64,
}

#[derive(Debug)]
enum Source {
    Repository(PathBuf),
    File(PathBuf),
}

/// Closes a running stream from any thread.
#[derive(Debug, Clone)]
pub struct StreamCloser(Arc<AtomicBool>);

impl StreamCloser {
    /// Asks the stream to end after the poll in progress.
    pub fn close(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Follows a recording and calls back per event (see the module doc).
pub struct EventStream {
    source: Source,
    recording_pid: Option<u32>,
    handlers: Vec<(Option<String>, EventFn)>,
    on_flush: Vec<FlushFn>,
    on_error: Vec<ErrorFn>,
    start_time: Option<SystemTime>,
    poll: Duration,
    idle_end: Duration,
    closed: Arc<AtomicBool>,
    summary: StreamSummary,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("source", &self.source)
            .field("handlers", &self.handlers.len())
            .field("start_time", &self.start_time)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl EventStream {
    fn new(source: Source) -> Self {
        Self {
            source,
            recording_pid: None,
            handlers: Vec::new(),
            on_flush: Vec::new(),
            on_error: Vec::new(),
            start_time: None,
            poll: Duration::from_millis(100),
            idle_end: Duration::from_secs(2),
            closed: Arc::new(AtomicBool::new(false)),
            summary: StreamSummary::default(),
        }
    }

    /// Follows the chunk files of a repository directory (this process's
    /// recording or another's).
    pub fn open_repository(dir: impl Into<PathBuf>) -> Self {
        Self::new(Source::Repository(dir.into()))
    }

    /// Reads a finished `.jfr` file once, then ends.
    pub fn open_file(path: impl Into<PathBuf>) -> Self {
        Self::new(Source::File(path.into()))
    }

    /// Follows `recording`'s repository, and ends once it has stopped and
    /// its chunks are delivered.
    #[cfg(not(flightrec_loom))]
    pub fn for_recording(recording: &crate::Recording) -> Result<Self, StreamError> {
        let dir = recording.repository();
        if dir.as_os_str().is_empty() {
            return Err(StreamError::InMemoryRecording);
        }
        let mut s = Self::open_repository(dir);
        s.recording_pid = Some(std::process::id());
        Ok(s)
    }

    /// Calls `f` for every event of type `type_name`.
    pub fn on_event(
        &mut self,
        type_name: &str,
        f: impl FnMut(&RecordedEvent<'_>) + Send + 'static,
    ) -> &mut Self {
        self.handlers
            .push((Some(type_name.to_owned()), Box::new(f)));
        self
    }

    /// Calls `f` for every event.
    pub fn on_any(&mut self, f: impl FnMut(&RecordedEvent<'_>) + Send + 'static) -> &mut Self {
        self.handlers.push((None, Box::new(f)));
        self
    }

    /// Calls `f` after each poll that delivered new data (about once per
    /// recorder flush).
    pub fn on_flush(&mut self, f: impl FnMut() + Send + 'static) -> &mut Self {
        self.on_flush.push(Box::new(f));
        self
    }

    /// Calls `f` with everything the stream could not deliver.
    pub fn on_error(&mut self, f: impl FnMut(&StreamError) + Send + 'static) -> &mut Self {
        self.on_error.push(Box::new(f));
        self
    }

    /// Delivers only events that start at or after `t` (chunks that ended
    /// before it are not decoded).
    pub fn start_time(&mut self, t: SystemTime) -> &mut Self {
        self.start_time = Some(t);
        self
    }

    /// How often the repository is looked at (at least 1 ms).
    pub fn poll_interval(&mut self, d: Duration) -> &mut Self {
        self.poll = d.max(Duration::from_millis(1));
        self
    }

    /// For a stream on a directory: end after this long with every chunk
    /// finished and nothing new.
    pub fn idle_end(&mut self, d: Duration) -> &mut Self {
        self.idle_end = d;
        self
    }

    /// A handle that closes the stream from another thread.
    pub fn closer(&self) -> StreamCloser {
        StreamCloser(Arc::clone(&self.closed))
    }

    /// Runs the stream on a new thread.
    pub fn start(self) -> std::io::Result<StreamHandle> {
        let closer = self.closer();
        let thread = std::thread::Builder::new()
            .name("flightrec-stream".into())
            .spawn(move || self.run())?;
        Ok(StreamHandle { closer, thread })
    }

    /// Runs the stream on this thread until it ends (see the module doc).
    pub fn run(mut self) -> StreamSummary {
        match &self.source {
            Source::File(path) => {
                let path = path.clone();
                match std::fs::read(&path) {
                    Ok(bytes) => match read_recording(&bytes) {
                        Ok(file) => {
                            for chunk in &file.chunks {
                                self.deliver(&chunk.header, &chunk.events, 0);
                                self.summary.chunks += 1;
                            }
                            self.flushed();
                        }
                        Err(error) => self.error(StreamError::Read { path, error }),
                    },
                    Err(error) => self.error(StreamError::Io { path, error }),
                }
            }
            Source::Repository(dir) => {
                let dir = dir.clone();
                self.follow(&dir);
            }
        }
        self.summary
    }

    fn follow(&mut self, dir: &Path) {
        // Per chunk file not yet done: events delivered so far.
        let mut open: BTreeMap<PathBuf, u64> = BTreeMap::new();
        let mut done: Vec<PathBuf> = Vec::new();
        let mut idle_since = Instant::now();
        // Read a finished chunk flagged as the recording's last.
        let mut saw_final = false;
        loop {
            let closed = self.closed.load(Ordering::Acquire);
            // Read the recording's state before the directory: chunks
            // listed after it stopped are all there will be.
            let stopped =
                self.recording_pid.is_some() && !crate::event::registry::registry().is_recording();
            let names = match list_chunks(dir) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.report_vanished(&mut open, &[]);
                    if !saw_final {
                        self.error(StreamError::FinalChunkUnread {
                            dir: dir.to_owned(),
                        });
                    }
                    return;
                }
                Err(error) => {
                    self.error(StreamError::Io {
                        path: dir.to_owned(),
                        error,
                    });
                    return;
                }
            };
            done.retain(|d| names.contains(d));
            self.report_vanished(&mut open, &names);
            let mut progressed = false;
            let mut all_finished = true;
            for path in names {
                if done.contains(&path) || closed {
                    continue;
                }
                let delivered = open.get(&path).copied().unwrap_or(0);
                match self.read_chunk(&path, delivered) {
                    Step::Again => all_finished = false,
                    Step::Progress {
                        delivered: d,
                        finished,
                        last,
                    } => {
                        progressed |= d != delivered;
                        saw_final |= last;
                        if finished {
                            open.remove(&path);
                            done.push(path);
                            self.summary.chunks += 1;
                            progressed = true;
                        } else {
                            open.insert(path, d);
                            all_finished = false;
                        }
                    }
                    Step::Gone => {
                        if delivered > 0 || open.contains_key(&path) {
                            open.remove(&path);
                            self.error(StreamError::ChunkRemoved { path, delivered });
                        }
                    }
                    Step::Skip => {
                        open.remove(&path);
                        done.push(path);
                    }
                }
            }
            if progressed {
                self.flushed();
                idle_since = Instant::now();
            }
            if closed || (saw_final && all_finished) {
                return;
            }
            // Stopped (or, for a directory, quiet) without a final chunk in
            // sight: it was removed unread.
            if (stopped || self.recording_pid.is_none())
                && all_finished
                && idle_since.elapsed() >= self.idle_end
            {
                if !saw_final {
                    self.error(StreamError::FinalChunkUnread {
                        dir: dir.to_owned(),
                    });
                }
                return;
            }
            std::thread::sleep(self.poll);
        }
    }

    /// Reports every open chunk no longer listed.
    fn report_vanished(&mut self, open: &mut BTreeMap<PathBuf, u64>, names: &[PathBuf]) {
        let gone: Vec<(PathBuf, u64)> = open
            .iter()
            .filter(|(p, _)| !names.contains(p))
            .map(|(p, d)| (p.clone(), *d))
            .collect();
        for (path, delivered) in gone {
            open.remove(&path);
            self.error(StreamError::ChunkRemoved { path, delivered });
        }
    }

    fn read_chunk(&mut self, path: &Path, delivered: u64) -> Step {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Step::Gone,
            Err(error) => {
                self.error(StreamError::Io {
                    path: path.to_owned(),
                    error,
                });
                return Step::Skip;
            }
        };
        let Some(header) = bytes.get(..HEADER_LEN).and_then(ChunkHeader::parse) else {
            return Step::Again; // not even a header yet
        };
        if header.state == chunk_writer::header::STATE_UPDATING {
            return Step::Again;
        }
        let finished = header.is_finished();
        if let (Some(t), true) = (self.start_time, finished) {
            let end = header.start_nanos.saturating_add(header.duration_nanos);
            if end >= 0 && UNIX_EPOCH + Duration::from_nanos(end as u64) < t {
                return Step::Skip;
            }
        }
        let Some(prefix) = usize::try_from(header.chunk_size)
            .ok()
            .and_then(|n| bytes.get(..n))
        else {
            return Step::Again;
        };
        if !finished && !header_unchanged(path, &bytes[..HEADER_LEN]) {
            return Step::Again;
        }
        match read_recording(prefix) {
            Ok(file) => {
                let Some(chunk) = file.chunks.first() else {
                    return Step::Again;
                };
                let n = chunk.events.len() as u64;
                if n > delivered {
                    self.deliver(&chunk.header, &chunk.events, delivered as usize);
                }
                Step::Progress {
                    delivered: n.max(delivered),
                    finished,
                    last: finished && header.flags & chunk_writer::header::FLAG_FINAL_CHUNK != 0,
                }
            }
            Err(_) if !finished => Step::Again,
            Err(error) => {
                self.error(StreamError::Read {
                    path: path.to_owned(),
                    error,
                });
                Step::Skip
            }
        }
    }

    fn deliver(
        &mut self,
        header: &ChunkHeader,
        events: &[chunk_writer::reader::EventRecord],
        from: usize,
    ) {
        let mut panics = Vec::new();
        for record in events.iter().skip(from) {
            let ev = RecordedEvent { record, header };
            if self.start_time.is_some_and(|t| ev.start_time() < t) {
                continue;
            }
            self.summary.events += 1;
            for (ty, f) in &mut self.handlers {
                if ty.as_deref().is_some_and(|t| t != &*record.type_name) {
                    continue;
                }
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(&ev))) {
                    panics.push(StreamError::CallbackPanicked {
                        event_type: Some(record.type_name.to_string()),
                        message: panic_message(&*p),
                    });
                }
            }
        }
        for e in panics {
            self.error(e);
        }
    }

    fn flushed(&mut self) {
        let mut panics = Vec::new();
        for f in &mut self.on_flush {
            if let Err(p) = catch_unwind(AssertUnwindSafe(&mut *f)) {
                panics.push(StreamError::CallbackPanicked {
                    event_type: None,
                    message: panic_message(&*p),
                });
            }
        }
        for e in panics {
            self.error(e);
        }
    }

    fn error(&mut self, e: StreamError) {
        self.summary.errors += 1;
        if self.on_error.is_empty() {
            eprintln!("flightrec stream: {e}");
        }
        for f in &mut self.on_error {
            // A panicking error handler is not called again for its own
            // panic.
            let _ = catch_unwind(AssertUnwindSafe(|| f(&e)));
        }
    }
}

/// A stream running on its own thread.
#[derive(Debug)]
pub struct StreamHandle {
    closer: StreamCloser,
    thread: std::thread::JoinHandle<StreamSummary>,
}

impl StreamHandle {
    /// Closes the stream and waits for it.
    pub fn close(self) -> StreamSummary {
        self.closer.close();
        self.join()
    }

    /// Waits for the stream to end by itself.
    pub fn join(self) -> StreamSummary {
        self.thread.join().unwrap_or_default()
    }

    /// A handle that closes the stream.
    pub fn closer(&self) -> StreamCloser {
        self.closer.clone()
    }
}

enum Step {
    /// Nothing readable yet (being updated, or only a partial header).
    Again,
    Progress {
        delivered: u64,
        finished: bool,
        /// Finished and flagged as the recording's last chunk.
        last: bool,
    },
    Gone,
    /// Done with it without reading (before the start time, or unreadable).
    Skip,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// The chunk files of `dir`, in name (start time) order.
fn list_chunks(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jfr"))
        .collect();
    v.sort();
    Ok(v)
}

/// True if the header of `path` still reads as `header` (the chunk was not
/// flushed between the read of its header and of its body).
fn header_unchanged(path: &Path, header: &[u8]) -> bool {
    use std::io::Read;
    let mut now = [0u8; HEADER_LEN];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut now))
        .is_ok_and(|()| now[..] == *header)
}
