//! Opening a recording and walking it one chunk at a time.
//!
//! A file is read chunk by chunk: the 68-byte header says how long its
//! chunk is, that many bytes are read, handed to the caller and dropped
//! before the next chunk is read. Memory is bounded by the largest chunk,
//! not the file, so a 1 GiB recording of 12 MiB chunks is read in about
//! 12 MiB.
//!
//! Only regular files are opened: a FIFO could block for ever and a device
//! such as `/dev/zero` never ends. A chunk that cannot be read stops the
//! walk: what came before it has been shown, and the error says where.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use jfr_format::read::{
    ChunkContext, ChunkCounts, ChunkReader, ChunkRecord, ClassRecord, EventRecord, chunk_extent,
    read_chunk,
};
use jfr_format::write::header::HEADER_LEN;

use crate::error::CliError;

/// An open recording file.
#[derive(Debug)]
pub struct Recording {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Recording {
    /// Opens `path`, refusing anything but a regular file.
    pub fn open(path: &Path) -> Result<Self, CliError> {
        let io = |source| CliError::Io {
            path: path.to_owned(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if let Some(kind) = not_a_file(&meta) {
            return Err(CliError::NotAFile {
                path: path.to_owned(),
                kind,
            });
        }
        let file = File::open(path).map_err(io)?;
        // Checked again on the open file: the path may have changed between.
        let meta = file.metadata().map_err(io)?;
        if let Some(kind) = not_a_file(&meta) {
            return Err(CliError::NotAFile {
                path: path.to_owned(),
                kind,
            });
        }
        Ok(Self {
            path: path.to_owned(),
            len: meta.len(),
            file,
        })
    }

    /// The path it was opened as.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `each` with the bytes of every chunk in file order (each chunk
    /// starts at offset 0 of its slice) and the chunk's file offset.
    ///
    /// Stops at the first error of `each`, or at the first chunk that
    /// cannot be framed (bad magic, a size past the end of the file, a read
    /// error); the error names the file and the offset. An empty file is
    /// an error too: it holds no chunk.
    pub fn for_each_chunk(
        &mut self,
        mut each: impl FnMut(&[u8], u64) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let mut at = 0u64;
        let mut buf = Vec::new();
        loop {
            let available = self.len - at;
            let mut head = [0u8; HEADER_LEN];
            let got = self.read_at(at, &mut head)?;
            let extent =
                chunk_extent(&head[..got], at, available).map_err(|source| CliError::Damaged {
                    path: self.path.clone(),
                    chunk_at: None,
                    source,
                })?;
            buf.clear();
            buf.resize(extent.size as usize, 0);
            let got = self.read_at(at, &mut buf)?;
            buf.truncate(got);
            each(&buf, at)?;
            at += extent.size;
            if at >= self.len {
                return Ok(());
            }
        }
    }

    /// Reads up to `out.len()` bytes at `at`; returns how many (fewer only
    /// at the end of the file).
    fn read_at(&mut self, at: u64, out: &mut [u8]) -> Result<usize, CliError> {
        let io = |source| CliError::Io {
            path: self.path.clone(),
            source,
        };
        self.file.seek(SeekFrom::Start(at)).map_err(io)?;
        let mut n = 0;
        while n < out.len() {
            match self.file.read(&mut out[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io(e)),
            }
        }
        Ok(n)
    }

    /// The error for a chunk at `chunk_at` the reader refused (its
    /// offsets count from the chunk's start).
    fn damaged(path: &Path, chunk_at: u64, source: jfr_format::ReadError) -> CliError {
        CliError::Damaged {
            path: path.to_owned(),
            chunk_at: Some(chunk_at),
            source,
        }
    }

    /// Calls `each` with the record counts of every chunk and the chunk's
    /// file offset (record frames and metadata only, no payload decoded;
    /// a chunk's metadata is parsed only if it differs from the previous
    /// chunk's).
    pub fn for_each_scan(
        &mut self,
        mut each: impl FnMut(&ChunkCounts, u64) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let mut reader = ChunkReader::new();
        let path = self.path.clone();
        self.for_each_chunk(|bytes, at| {
            let scan = reader
                .scan(bytes)
                .map_err(|source| Self::damaged(&path, at, source))?;
            each(&scan, at)
        })
    }

    /// Calls `each` with every chunk fully decoded, and its file offset.
    pub fn for_each_decoded(
        &mut self,
        mut each: impl FnMut(&ChunkRecord, u64) -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        let path = self.path.clone();
        self.for_each_chunk(|bytes, at| {
            let chunk = read_chunk(bytes).map_err(|source| Self::damaged(&path, at, source))?;
            each(&chunk, at)
        })
    }

    /// Calls `each`, chunk by chunk in file order, with the chunk's file
    /// offset, its context (metadata, constants) and each event of a type
    /// `want` accepts; the events of other types are skipped by their
    /// frames, never decoded.
    pub fn for_each_event(
        &mut self,
        mut want: impl FnMut(&ClassRecord) -> bool,
        mut each: impl FnMut(u64, &ChunkContext, &EventRecord),
    ) -> Result<(), CliError> {
        let mut reader = ChunkReader::new();
        let path = self.path.clone();
        self.for_each_chunk(|bytes, at| {
            reader
                .read(bytes, &mut want, |ctx, ev| each(at, ctx, ev))
                .map(drop)
                .map_err(|source| Self::damaged(&path, at, source))
        })
    }
}

fn not_a_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("directory")
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else if t.is_socket() {
        Some("socket")
    } else {
        Some("special file")
    }
}

impl Recording {
    /// The first chunk's header: the recording's start and tick rate.
    pub fn first_header(&mut self) -> Result<jfr_format::write::header::ChunkHeader, CliError> {
        let mut head = [0u8; HEADER_LEN];
        let got = self.read_at(0, &mut head)?;
        chunk_extent(&head[..got], 0, self.len)
            .map(|e| e.header)
            .map_err(|source| CliError::Damaged {
                path: self.path.clone(),
                chunk_at: None,
                source,
            })
    }

    /// The sum of the chunks' durations, in nanoseconds.
    pub fn duration_nanos(&mut self) -> Result<i64, CliError> {
        let mut total = 0i64;
        let mut at = 0u64;
        while at < self.len {
            let mut head = [0u8; HEADER_LEN];
            let got = self.read_at(at, &mut head)?;
            let e = chunk_extent(&head[..got], at, self.len - at).map_err(|source| {
                CliError::Damaged {
                    path: self.path.clone(),
                    chunk_at: None,
                    source,
                }
            })?;
            total = total.saturating_add(e.header.duration_nanos);
            at += e.size;
        }
        Ok(total)
    }
}
