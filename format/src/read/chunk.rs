//! Reading a whole file: chunks back to back, each header, metadata, pools
//! and events.
//!
//! # Per chunk
//!
//! 1. The 68-byte header: magic `FLR\0`, major version 2, a size that covers
//!    at least the header and no more than the rest of the file, and
//!    metadata / constant-pool offsets inside the chunk body (the metadata
//!    offset is required; a constant-pool offset of 0 means "no pools").
//! 2. The metadata record the header points at (it describes every type of
//!    the chunk, wherever the record sits).
//! 3. The checkpoint chain, into a resolved [`PoolSet`].
//! 4. Every record from the end of the header to the end of the chunk:
//!    metadata and checkpoint records are skipped (framing still checked);
//!    records of event types are decoded; records of undeclared or
//!    non-event types are skipped and counted, as the JDK does.
//!
//! The state byte and flags are not judged: a chunk whose header is
//! consistent is read whatever its state, as JMC does (the header is in
//! [`ChunkRecord::header`] for callers who care).
//!
//! # The file
//!
//! Chunks follow each other with no gap, and the file must end exactly at
//! the end of the last one: trailing bytes are an error, as in both the JDK
//! and JMC. A prefix of a file that ends exactly at a chunk boundary is
//! itself a valid file and reads as the chunks it holds; any other prefix is
//! an error.
//!
//! Invariant: each step moves forward by at least one byte (a record size
//! is at least the bytes of its own framing; a chunk is at least a header),
//! so reading ends for every input.

use super::decode::{Budget, Decoder, Refs};
use super::error::ReadError;
use super::event::{EventRecord, decode_event};
use super::input::Record;
use super::metadata::{MetadataRecord, read_metadata};
use super::pools::{PoolSet, read_pools};
use super::refs::{Unresolved, UnresolvedLog};
use crate::types::TypeId;
use crate::write::header::{ChunkHeader, HEADER_LEN, MAJOR};

/// A whole decoded file.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordingFile {
    /// The chunks, in file order.
    pub chunks: Vec<ChunkRecord>,
}

impl RecordingFile {
    /// Every event of every chunk, in file order.
    pub fn events(&self) -> impl Iterator<Item = &EventRecord> {
        self.chunks.iter().flat_map(|c| &c.events)
    }
}

/// One decoded chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRecord {
    /// File offset of the chunk's header.
    pub offset: u64,
    /// The header.
    pub header: ChunkHeader,
    /// The metadata the header points at.
    pub metadata: MetadataRecord,
    /// The constants of the chunk, resolved.
    pub pools: PoolSet,
    /// The events, in file order.
    pub events: Vec<EventRecord>,
    /// Records skipped because their type is not a declared event type.
    pub skipped_records: u64,
}

/// Reads every chunk of a recording file.
///
/// Never panics: malformed input of any kind returns a [`ReadError`] with
/// the offset where reading stopped. Time and memory are linear in the
/// input size (see [`MAX_NESTING`](super::MAX_NESTING) and
/// [`ZERO_WIDTH_BUDGET`](super::ZERO_WIDTH_BUDGET) for the constants).
///
/// ```
/// use std::io::Cursor;
/// use jfr_format::{ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata, TypeId};
/// use jfr_format::{write::encode::Sink, read::read_recording};
///
/// let start = ChunkStart { start_nanos: 0, start_ticks: 0, ticks_per_second: 1_000_000_000 };
/// let mut w = ChunkWriter::begin(Cursor::new(Vec::new()), start)?;
/// w.write_metadata(&Metadata::builtin(), 1, 0)?;
/// let mut buf = [0u8; 64];
/// let mut e = EventEncoder::begin(&mut buf, TypeId::OS_INFORMATION);
/// e.put_i64(1005);
/// e.put_str("Linux");
/// let n = e.finish().unwrap();
/// w.write_events(&buf[..n])?;
/// let end = ChunkEnd { duration_nanos: 1, ticks_per_second: None, last: true };
/// let file = w.finish(end)?.into_inner();
///
/// let rec = read_recording(&file)?;
/// let ev = &rec.chunks[0].events[0];
/// assert_eq!(&*ev.type_name, "jdk.OSInformation");
/// assert_eq!(ev.get("osVersion").and_then(|v| v.as_str()), Some("Linux"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_recording(bytes: &[u8]) -> Result<RecordingFile, ReadError> {
    let mut budget = Budget::new();
    let mut chunks = Vec::new();
    let mut at = 0;
    loop {
        let (chunk, end, _) = read_chunk_at(bytes, at, &mut budget, true)?;
        chunks.push(chunk);
        if end >= bytes.len() {
            return Ok(RecordingFile { chunks });
        }
        at = end;
    }
}

/// The references of one chunk that do not resolve (see
/// [`check_references`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkReferences {
    /// File offset of the chunk.
    pub offset: u64,
    /// Its metadata (to name the types of [`unresolved`](Self::unresolved)).
    pub metadata: MetadataRecord,
    /// Events in the chunk.
    pub events: u64,
    /// References, from events and from constants, to keys the chunk does
    /// not define (key 0, null, is not one).
    pub unresolved: UnresolvedLog,
}

impl ChunkReferences {
    /// `java.lang.Thread id 2 (used by jdk.ThreadEnd)`.
    pub fn describe(&self, r: &Unresolved) -> String {
        let name = |t: TypeId| {
            self.metadata
                .class(t)
                .map_or_else(|| format!("type {}", t.0), |c| c.name.to_string())
        };
        format!(
            "{} id {} (used by {})",
            name(r.type_id),
            r.key,
            name(r.used_by)
        )
    }
}

/// Reads every chunk of `bytes` as [`read_recording`] does, without keeping
/// the events, and returns per chunk the constant-pool references that do
/// not resolve in it: a reader resolves a reference only in its own chunk.
pub fn check_references(bytes: &[u8]) -> Result<Vec<ChunkReferences>, ReadError> {
    let mut budget = Budget::new();
    let mut chunks = Vec::new();
    let mut at = 0;
    loop {
        let (chunk, end, events) = read_chunk_at(bytes, at, &mut budget, false)?;
        let mut unresolved = chunk.pools.unresolved().clone();
        unresolved.absorb(&events.1);
        chunks.push(ChunkReferences {
            offset: chunk.offset,
            metadata: chunk.metadata,
            events: events.0,
            unresolved,
        });
        if end >= bytes.len() {
            return Ok(chunks);
        }
        at = end;
    }
}

/// Reads the chunk at `start`; returns it and its end offset.
/// Reads the chunk at `start`: the chunk (its events only if `keep`), its
/// end, and how many events it has with the unresolved references they
/// hold.
pub(super) fn read_chunk_at(
    buf: &[u8],
    start: usize,
    budget: &mut Budget,
    keep: bool,
) -> Result<(ChunkRecord, usize, (u64, UnresolvedLog)), ReadError> {
    let at = start as u64;
    let available = buf.len().saturating_sub(start);
    let bytes = buf.get(start..).unwrap_or_default();
    if available < HEADER_LEN {
        return Err(ReadError::Truncated {
            at,
            needed: HEADER_LEN as u64,
            available: available as u64,
        });
    }
    let header = ChunkHeader::parse(bytes).ok_or(ReadError::BadMagic { at })?;
    if header.major != MAJOR {
        return Err(ReadError::UnsupportedVersion {
            at,
            major: header.major,
            minor: header.minor,
        });
    }
    let size = match usize::try_from(header.chunk_size) {
        Ok(size) if (HEADER_LEN..=available).contains(&size) => size,
        _ => {
            return Err(ReadError::BadChunkSize {
                at,
                size: header.chunk_size,
                available: available as u64,
            });
        }
    };
    let end = start + size;
    // An offset into the chunk body, made absolute.
    let offset = |field: &'static str, value: i64| match usize::try_from(value) {
        Ok(v) if (HEADER_LEN..size).contains(&v) => Ok(start + v),
        _ => Err(ReadError::BadOffset {
            at,
            field,
            offset: value,
        }),
    };
    if header.metadata_offset == 0 {
        return Err(ReadError::NoMetadata { at });
    }
    let metadata = read_metadata(buf, offset("metadata", header.metadata_offset)?, end)?;
    let pools = match header.constant_pool_offset {
        0 => PoolSet::default(),
        cp => {
            let last = offset("constant pool", cp)?;
            read_pools(buf, start, end, last, &metadata, budget)?
        }
    };

    let mut decoder = Decoder::new(&metadata, Refs::Resolved(&pools), budget);
    let mut events = Vec::new();
    let mut count = 0;
    let mut skipped_records = 0;
    let mut pos = start + HEADER_LEN;
    while pos < end {
        let rec = Record::read(buf, pos, end)?;
        let next = rec.end;
        match rec.type_id {
            0 | 1 => {}
            id => match metadata.class(TypeId(id)).filter(|c| c.is_event()) {
                Some(class) => {
                    let event = decode_event(rec, class, &mut decoder)?;
                    count += 1;
                    if keep {
                        events.push(event);
                    }
                }
                None => skipped_records += 1,
            },
        }
        pos = next;
    }
    let unresolved = std::mem::take(&mut decoder.unresolved);
    let chunk = ChunkRecord {
        offset: at,
        header,
        metadata,
        pools,
        events,
        skipped_records,
    };
    Ok((chunk, end, (count, unresolved)))
}
