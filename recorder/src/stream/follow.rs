//! The stream itself: a source (a repository, a file, or this process's
//! in-memory chunks), callbacks per event type, and the loop that reads
//! each chunk as far as it is complete, delivers its events once, and
//! moves on when the writer finished it.

use std::collections::BTreeMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::fs::File;
use std::os::unix::fs::FileExt;

use jfr_format::read::{ChunkFollower, ReadError, read_recording};
use jfr_format::write::header::{ChunkHeader, HEADER_LEN};

use super::error::StreamError;
use super::event::RecordedEvent;
use super::files;
use super::{memory, writer};
use crate::base::sync::{Arc, AtomicBool, Ordering};

type EventFn = Box<dyn FnMut(&RecordedEvent<'_>) + Send>;
type FlushFn = Box<dyn FnMut() + Send>;
type ErrorFn = Box<dyn FnMut(&StreamError) + Send>;

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
    /// Bytes of chunks read: each byte of a chunk once (the header, also
    /// re-read at each poll to see how much of the chunk is complete, is
    /// counted once).
    pub bytes_read: u64,
}

#[derive(Debug)]
enum Source {
    Repository(PathBuf),
    File(PathBuf),
    /// The in-memory chunks of this process's recording.
    Memory(memory::Subscription),
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

    /// Follows `recording`'s repository, or its chunks in memory for a
    /// recording with `disk(false)`, and ends once it has stopped and its
    /// chunks are delivered. (Never fails today; the `Result` is kept for
    /// sources that cannot be followed.)
    pub fn for_recording(
        recording: &crate::lifecycle::handle::Recording,
    ) -> Result<Self, StreamError> {
        let dir = recording.repository();
        let mut s = if dir.as_os_str().is_empty() {
            Self::new(Source::Memory(memory::subscribe()))
        } else {
            Self::open_repository(dir)
        };
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

    /// For a stream on a directory: end after this long with nothing new
    /// (2 s by default). With every chunk finished the stream simply ends
    /// (reporting [`StreamError::FinalChunkUnread`] if none was flagged
    /// final); with a chunk unfinished it ends with [`StreamError::Idle`].
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
                match files::read_regular(&path) {
                    Ok(bytes) => match read_recording(&bytes) {
                        Ok(file) => {
                            for chunk in &file.chunks {
                                self.deliver(&chunk.header, &chunk.events);
                                self.summary.chunks += 1;
                            }
                            self.flushed();
                        }
                        Err(error) => self.error(StreamError::Read { path, error }),
                    },
                    Err(e) => self.open_failed(path, e),
                }
            }
            Source::Repository(dir) => {
                let dir = dir.clone();
                self.follow(&dir);
            }
            Source::Memory(_) => self.follow(Path::new("memory:")),
        }
        self.summary
    }

    /// The chunk files present now, in name order; in memory, the chunks
    /// handed to the stream since the last poll, each with a descriptor of
    /// its own.
    fn list(&self, dir: &Path) -> std::io::Result<Vec<(PathBuf, Option<File>)>> {
        match &self.source {
            Source::Memory(sub) => Ok(sub.take().into_iter().map(|(p, f)| (p, Some(f))).collect()),
            _ => Ok(list_chunks(dir)?.into_iter().map(|p| (p, None)).collect()),
        }
    }

    fn follow(&mut self, dir: &Path) {
        // The chunks not yet done that the stream has begun to read.
        let mut open: BTreeMap<PathBuf, OpenChunk> = BTreeMap::new();
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
            let bytes_before = self.summary.bytes_read;
            let listed = match self.list(dir) {
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
            let names: Vec<PathBuf> = listed.iter().map(|(p, _)| p.clone()).collect();
            // Looked at before the chunks are read: what a writer gone now
            // wrote is all read in this round (see `stream::writer`).
            let writer_gone = match (&self.source, self.recording_pid) {
                (Source::Repository(_), None) => writer::writer_pid(&names)
                    .filter(|&pid| pid != std::process::id() && writer::gone(pid)),
                _ => None,
            };
            done.retain(|d| names.contains(d));
            self.report_vanished(&mut open, &names);
            // Listed chunks, then those no longer listed that the stream
            // still holds a descriptor of, in name order.
            let mut todo: BTreeMap<PathBuf, Option<File>> = listed.into_iter().collect();
            for p in open.keys() {
                todo.entry(p.clone()).or_insert(None);
            }
            let mut progressed = false;
            let mut all_finished = true;
            for (path, file) in todo {
                if done.contains(&path) || closed {
                    continue;
                }
                let mut chunk = open.remove(&path).unwrap_or_else(|| OpenChunk {
                    follower: ChunkFollower::new(),
                    delivered: 0,
                    file,
                });
                let before = chunk.delivered;
                match self.read_chunk(&path, &mut chunk) {
                    Step::Again => {
                        all_finished = false;
                        open.insert(path, chunk);
                    }
                    Step::Progress { finished, last } => {
                        progressed |= chunk.delivered != before;
                        saw_final |= last;
                        if finished {
                            done.push(path);
                            self.summary.chunks += 1;
                            progressed = true;
                        } else {
                            open.insert(path, chunk);
                            all_finished = false;
                        }
                    }
                    Step::Gone => {
                        if chunk.delivered > 0 || !chunk.follower.is_empty() {
                            self.error(StreamError::ChunkRemoved {
                                path,
                                delivered: chunk.delivered,
                            });
                        }
                    }
                    Step::Skip => done.push(path),
                }
            }
            if progressed {
                self.flushed();
            }
            if progressed || self.summary.bytes_read != bytes_before {
                // A flush with no events still shows the writer is there.
                idle_since = Instant::now();
            }
            if closed || (saw_final && all_finished) {
                return;
            }
            if let Some(pid) = writer_gone {
                self.error(StreamError::WriterGone {
                    dir: dir.to_owned(),
                    pid,
                });
                return;
            }
            if self.recording_pid.is_none()
                && !all_finished
                && idle_since.elapsed() >= self.idle_end
            {
                self.error(StreamError::Idle {
                    dir: dir.to_owned(),
                    idle: self.idle_end,
                });
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

    /// Reports every open chunk no longer listed that the stream cannot
    /// read on (a file on disk; one in memory is read through the stream's
    /// own descriptor).
    fn report_vanished(&mut self, open: &mut BTreeMap<PathBuf, OpenChunk>, names: &[PathBuf]) {
        let gone: Vec<PathBuf> = open
            .iter()
            .filter(|(p, c)| c.file.is_none() && !names.contains(p))
            .map(|(p, _)| p.clone())
            .collect();
        for path in gone {
            let delivered = open.remove(&path).map_or(0, |c| c.delivered);
            self.error(StreamError::ChunkRemoved { path, delivered });
        }
    }

    fn read_chunk(&mut self, path: &Path, chunk: &mut OpenChunk) -> Step {
        let opened;
        let file = match &chunk.file {
            Some(f) => f,
            None => match files::open_regular(path, false) {
                Ok((f, _)) => {
                    opened = f;
                    &opened
                }
                Err(files::OpenError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Step::Gone;
                }
                Err(e) => {
                    self.open_failed(path.to_owned(), e);
                    return Step::Skip;
                }
            },
        };
        let mut head = [0u8; HEADER_LEN];
        if file.read_exact_at(&mut head, 0).is_err() {
            return Step::Again; // not even a header yet
        }
        let Some(header) = ChunkHeader::parse(&head) else {
            return Step::Again;
        };
        if header.state == jfr_format::write::header::STATE_UPDATING {
            return Step::Again;
        }
        let finished = header.is_finished();
        if let (Some(t), true) = (self.start_time, finished) {
            let end = header.start_nanos.saturating_add(header.duration_nanos);
            if end >= 0 && UNIX_EPOCH + Duration::from_nanos(end as u64) < t {
                return Step::Skip;
            }
        }
        let Ok(size) = usize::try_from(header.chunk_size) else {
            return Step::Again;
        };
        let held = chunk.follower.len();
        // Never more than the file holds: a header may claim any size.
        let available = file.metadata().map_or(0, |m| m.len());
        if size as u64 > available {
            if !finished {
                return Step::Again;
            }
            self.error(StreamError::Read {
                path: path.to_owned(),
                error: ReadError::BadChunkSize {
                    at: 0,
                    size: header.chunk_size,
                    available,
                },
            });
            return Step::Skip;
        }
        if size > held {
            // Only the part past what is held: the bytes before the size a
            // published header gives never change.
            let mut more = vec![0u8; size - held];
            if file.read_exact_at(&mut more, held as u64).is_err() {
                return Step::Again;
            }
            self.summary.bytes_read += more.len() as u64;
            chunk.follower.append(&more);
        }
        if !finished && !header_unchanged(file, &head) {
            return Step::Again;
        }
        match chunk.follower.advance(&header) {
            Ok(events) => {
                if !events.is_empty() {
                    chunk.delivered += events.len() as u64;
                    self.deliver(&header, &events);
                }
                Step::Progress {
                    finished,
                    last: finished
                        && header.flags & jfr_format::write::header::FLAG_FINAL_CHUNK != 0,
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

    fn deliver(&mut self, header: &ChunkHeader, events: &[jfr_format::read::EventRecord]) {
        let mut panics = Vec::new();
        for record in events {
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

    /// Reports a file that could not be opened for reading.
    fn open_failed(&mut self, path: PathBuf, e: files::OpenError) {
        self.error(match e {
            files::OpenError::NotAFile(kind) => StreamError::NotAFile { path, kind },
            files::OpenError::Io(error) => StreamError::Io { path, error },
        });
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

/// A chunk the stream has begun to read.
struct OpenChunk {
    follower: ChunkFollower,
    /// Events of it delivered so far.
    delivered: u64,
    /// The stream's own descriptor of a chunk in memory.
    file: Option<File>,
}

enum Step {
    /// Nothing readable yet (being updated, or only a partial header).
    Again,
    Progress {
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

/// True if the header of `file` still reads as `header` (the chunk was not
/// flushed between the read of its header and of its body).
fn header_unchanged(file: &File, header: &[u8]) -> bool {
    let mut now = [0u8; HEADER_LEN];
    file.read_exact_at(&mut now, 0)
        .is_ok_and(|()| now[..] == *header)
}
