//! Turning a repository into one `.jfr` file: [`assemble`], and
//! [`recover_chunk`] for one chunk file.
//!
//! # Which files, which chunks
//!
//! 1. Only regular files named like the repository's chunks
//!    (`YYYY_MM_DD_HH_MM_SS_NNNNNNNNN_<pid>.jfr`) are considered, in name
//!    (start-time) order; anything else in the directory (a foreign `.jfr`,
//!    a symbolic link, a temporary file) is *ignored* and listed in
//!    [`Assembled::ignored`]. A file with a chunk's name whose bytes do not
//!    start with a chunk header (`FLR\0`) is ignored too.
//! 2. A chunk left in progress (a killed process) is cut to the last flush
//!    its header records and marked finished.
//! 3. Each chunk is then read in full by the crate's own reader
//!    ([`jfr_format::read::read_recording`]): header magic, version,
//!    size and offsets, metadata, constant pools and every event record. A
//!    chunk that fails is *skipped* and listed, with the reader's error, in
//!    [`Assembled::skipped`]; so is an in-progress chunk with nothing flushed.
//! 4. The chunks that passed are written back to back into `out` the way
//!    every destination is written (a new `0600` file renamed into place,
//!    see [`crate::repository::store`]).
//!
//! Invariant: `out` holds only chunks that the reader parsed whole, so it
//! is a valid recording; when no chunk passes, no file is written.
//!
//! One chunk is held at a time; reading it decodes all of its events, so
//! memory is linear in the largest chunk (bounded by the reader; see its
//! docs).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use jfr_format::read::{ReadError, read_recording};
use jfr_format::write::header::{ChunkHeader, HEADER_LEN, MAGIC, STATE_FINISHED};

use crate::repository::files::{chunk_name_pid, write_private_file};

/// What [`assemble`] wrote and what it left out.
#[derive(Debug)]
#[non_exhaustive]
pub struct Assembled {
    /// Chunks written to the output, in start-time order.
    pub chunks: usize,
    /// Bytes written.
    pub bytes: u64,
    /// Chunk files left out, each with why.
    pub skipped: Vec<SkippedChunk>,
    /// Files in the directory that are not chunks of a repository.
    pub ignored: Vec<PathBuf>,
}

/// A chunk file [`assemble`] left out.
#[derive(Debug)]
pub struct SkippedChunk {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub reason: SkipReason,
}

/// Why a chunk file was left out.
#[derive(Debug)]
#[non_exhaustive]
pub enum SkipReason {
    /// The file could not be read.
    Unreadable(io::Error),
    /// A chunk in progress that had not been flushed yet: it holds no event.
    NothingFlushed,
    /// The chunk is damaged: the reader's error says where and how.
    Corrupt(ReadError),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreadable(e) => write!(f, "cannot be read: {e}"),
            Self::NothingFlushed => f.write_str("in progress with nothing flushed"),
            Self::Corrupt(e) => write!(f, "corrupt: {e}"),
        }
    }
}

impl std::fmt::Display for SkippedChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// Why [`assemble`] wrote no file.
#[derive(Debug)]
#[non_exhaustive]
pub enum AssembleError {
    /// The repository directory cannot be listed.
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The output cannot be written.
    Write {
        /// The output file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// No chunk of the directory could be used; nothing was written.
    NoChunks {
        /// The directory.
        dir: PathBuf,
        /// The chunk files left out, each with why.
        skipped: Vec<SkippedChunk>,
    },
}

impl std::fmt::Display for AssembleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ReadDir { dir, source } => write!(f, "cannot list {}: {source}", dir.display()),
            Self::Write { path, source } => write!(f, "cannot write {}: {source}", path.display()),
            Self::NoChunks { dir, skipped } => {
                write!(f, "{} holds no usable chunk", dir.display())?;
                for s in skipped {
                    write!(f, "; {s}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for AssembleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ReadDir { source, .. } | Self::Write { source, .. } => Some(source),
            Self::NoChunks { .. } => None,
        }
    }
}

/// What one file turned out to be.
enum Loaded {
    /// A chunk the reader parsed whole (finished, or recovered up to its
    /// last flush).
    Chunk(Vec<u8>),
    /// Not a chunk at all.
    Foreign,
    /// A chunk that cannot be used.
    Skip(SkipReason),
}

/// Reads the chunk in `path`, cut to its last flush and marked finished,
/// and checks it with the reader.
fn load_chunk(path: &Path) -> Loaded {
    let read = || -> io::Result<Vec<u8>> {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        if !f.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let mut bytes = match read() {
        Ok(b) => b,
        Err(e) => return Loaded::Skip(SkipReason::Unreadable(e)),
    };
    if bytes.len() < HEADER_LEN {
        // A chunk file is created empty and gets its header at once.
        return if MAGIC.starts_with(&bytes) || bytes.starts_with(&MAGIC) {
            Loaded::Skip(SkipReason::NothingFlushed)
        } else {
            Loaded::Foreign
        };
    }
    let Some(mut h) = ChunkHeader::parse(&bytes) else {
        return Loaded::Foreign;
    };
    if h.state != STATE_FINISHED && h.metadata_offset == 0 {
        return Loaded::Skip(SkipReason::NothingFlushed);
    }
    // Cut to the size the header records (the last flush of a chunk in
    // progress); a size past the end is left for the reader to report.
    if let Ok(size) = usize::try_from(h.chunk_size)
        && (HEADER_LEN..=bytes.len()).contains(&size)
    {
        bytes.truncate(size);
    }
    if h.state != STATE_FINISHED {
        h.state = STATE_FINISHED;
        bytes[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    }
    match read_recording(&bytes) {
        Ok(file) if file.chunks.len() == 1 => Loaded::Chunk(bytes),
        Ok(file) => Loaded::Skip(SkipReason::Corrupt(ReadError::BadChunkSize {
            at: 0,
            size: h.chunk_size,
            available: file
                .chunks
                .first()
                .map_or(0, |c| c.header.chunk_size as u64),
        })),
        Err(e) => Loaded::Skip(SkipReason::Corrupt(e)),
    }
}

/// Makes a readable copy of a chunk file that may have been left in progress
/// (for example by a process killed mid-recording): the bytes up to the last
/// flush the header records, with the state byte set to finished. Returns
/// `None` if the file is not a chunk, holds no flushed metadata (nothing is
/// recoverable) or fails the reader's checks; `Err` if it cannot be read.
pub fn recover_chunk(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match load_chunk(path) {
        Loaded::Chunk(bytes) => Ok(Some(bytes)),
        Loaded::Skip(SkipReason::Unreadable(e)) => Err(e),
        Loaded::Foreign | Loaded::Skip(_) => Ok(None),
    }
}

/// Assembles the chunk files of a repository directory, in start-time
/// order, into one `.jfr` file, recovering chunks left in progress and
/// leaving out damaged ones and files that are not chunks (see the [module
/// docs](self)). The file is written only if at least one chunk passes.
///
/// ```no_run
/// # use recorder as flightrec;
/// let done = flightrec::assemble("/tmp/flightrec-4211-Xq3vZa".as_ref(), "out.jfr".as_ref())?;
/// for s in &done.skipped {
///     eprintln!("left out {s}");
/// }
/// println!("{} chunks", done.chunks);
/// # Ok::<(), flightrec::AssembleError>(())
/// ```
pub fn assemble(dir: &Path, out: &Path) -> Result<Assembled, AssembleError> {
    let list_err = |source| AssembleError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    };
    let mut candidates = Vec::new();
    let mut ignored = Vec::new();
    for entry in fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        let path = entry.path();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file()); // not following links
        let named = entry
            .file_name()
            .to_str()
            .and_then(chunk_name_pid)
            .is_some();
        if is_file && named {
            candidates.push(path);
        } else {
            ignored.push(path);
        }
    }
    candidates.sort();
    ignored.sort();
    let mut skipped = Vec::new();
    let mut chunks = 0;
    let mut listed = false;
    // One chunk in memory at a time; a run with no usable chunk returns an
    // error from the closure, so the temporary file is removed unrenamed.
    let written = write_private_file(out, |w| {
        listed = true;
        let mut bytes = 0;
        for path in candidates {
            match load_chunk(&path) {
                Loaded::Chunk(c) => {
                    w.write_all(&c)?;
                    bytes += c.len() as u64;
                    chunks += 1;
                }
                Loaded::Foreign => ignored.push(path),
                Loaded::Skip(reason) => skipped.push(SkippedChunk { path, reason }),
            }
        }
        if chunks == 0 {
            return Err(io::Error::other("no usable chunk"));
        }
        Ok(bytes)
    });
    ignored.sort();
    match written {
        Ok(bytes) => Ok(Assembled {
            chunks,
            bytes,
            skipped,
            ignored,
        }),
        Err(_) if listed && chunks == 0 => Err(AssembleError::NoChunks {
            dir: dir.to_path_buf(),
            skipped,
        }),
        Err(source) => Err(AssembleError::Write {
            path: out.to_path_buf(),
            source,
        }),
    }
}
