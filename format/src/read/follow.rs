//! Reading one chunk while it is written, each byte once.
//!
//! # Mechanism
//!
//! A writer that flushes leaves, after each flush, a header whose
//! `chunk_size` ends a complete prefix of the chunk: metadata describing
//! every record before it, a checkpoint chain defining every constant they
//! use. A [`ChunkFollower`] holds the bytes of the chunk read so far (the
//! caller appends only the bytes past them, see [`ChunkFollower::append`])
//! and, at each [`advance`](ChunkFollower::advance) to a newer header:
//!
//! 1. reads the metadata record again only if the header points at a new
//!    one;
//! 2. reads only the checkpoints written since the last advance and
//!    resolves only the constants they add (see the pools module's
//!    *Growth*);
//! 3. decodes only the records between the end of the last prefix and the
//!    end of the new one, with the same rules as
//!    [`read_recording`](super::read_recording).
//!
//! So a chunk followed through many flushes costs what one read of the
//! finished chunk costs, plus one small header per advance.
//!
//! Invariant: the records decoded by successive advances are those of the
//! chunk in file order, each once, and each is decoded with the metadata
//! and constants of the prefix that contains it.

use super::decode::{Budget, Decoder, Refs};
use super::error::ReadError;
use super::event::{EventRecord, decode_event};
use super::input::Record;
use super::metadata::{MetadataRecord, read_metadata};
use super::pools::{GrowingPools, PoolSet};
use crate::types::TypeId;
use crate::write::header::{ChunkHeader, HEADER_LEN, MAJOR};

/// One chunk, read as it grows (see the module docs).
///
/// ```
/// use std::io::Cursor;
/// use jfr_format::{ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata, TypeId};
/// use jfr_format::write::encode::Sink;
/// use jfr_format::write::header::{ChunkHeader, HEADER_LEN};
/// use jfr_format::read::ChunkFollower;
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
/// let mut f = ChunkFollower::new();
/// f.append(&file);
/// let header = ChunkHeader::parse(&file[..HEADER_LEN]).unwrap();
/// let events = f.advance(&header)?;
/// assert_eq!(&*events[0].type_name, "jdk.OSInformation");
/// assert!(f.advance(&header)?.is_empty()); // nothing new
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct ChunkFollower {
    bytes: Vec<u8>,
    /// The metadata in use and the header offset it was read from.
    metadata: Option<(i64, MetadataRecord)>,
    pools: GrowingPools,
    /// Where the next record starts (0 before the first advance).
    pos: usize,
    records: u64,
}

impl ChunkFollower {
    /// A follower holding no bytes yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the chunk held, from its start: the offset at which the
    /// caller reads the next bytes to [`append`](Self::append).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True before any byte was appended.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Appends the chunk's bytes that follow those held.
    pub fn append(&mut self, more: &[u8]) {
        self.bytes.extend_from_slice(more);
    }

    /// Records (events, metadata, checkpoints, skipped ones) decoded or
    /// framed so far: each record of the chunk is counted once.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// The metadata in use, after an advance.
    pub fn metadata(&self) -> Option<&MetadataRecord> {
        self.metadata.as_ref().map(|(_, m)| m)
    }

    /// The constants read so far.
    pub fn pools(&self) -> &PoolSet {
        &self.pools.pools
    }

    /// Moves to the prefix `header` describes (its `chunk_size` bytes must
    /// be held) and returns the events in it after those returned before.
    /// A header describing no more than the last one returns nothing.
    pub fn advance(&mut self, header: &ChunkHeader) -> Result<Vec<EventRecord>, ReadError> {
        if header.major != MAJOR {
            return Err(ReadError::UnsupportedVersion {
                at: 0,
                major: header.major,
                minor: header.minor,
            });
        }
        let available = self.bytes.len();
        let size = match usize::try_from(header.chunk_size) {
            Ok(size) if (HEADER_LEN..=available).contains(&size) => size,
            _ => {
                return Err(ReadError::BadChunkSize {
                    at: 0,
                    size: header.chunk_size,
                    available: available as u64,
                });
            }
        };
        let start = self.pos.max(HEADER_LEN);
        if size <= start {
            return Ok(Vec::new());
        }
        let offset = |field: &'static str, value: i64| match usize::try_from(value) {
            Ok(v) if (HEADER_LEN..size).contains(&v) => Ok(v),
            _ => Err(ReadError::BadOffset {
                at: 0,
                field,
                offset: value,
            }),
        };
        if header.metadata_offset == 0 {
            return Err(ReadError::NoMetadata { at: 0 });
        }
        let buf = &self.bytes[..size];
        if self
            .metadata
            .as_ref()
            .is_none_or(|(at, _)| *at != header.metadata_offset)
        {
            let at = offset("metadata", header.metadata_offset)?;
            self.metadata = Some((header.metadata_offset, read_metadata(buf, at, size)?));
        }
        let Some((_, metadata)) = &self.metadata else {
            return Err(ReadError::NoMetadata { at: 0 });
        };
        let mut budget = Budget::new();
        if header.constant_pool_offset != 0 {
            let last = offset("constant pool", header.constant_pool_offset)?;
            self.pools
                .extend(buf, 0, size, last, metadata, &mut budget)?;
        }
        let mut decoder = Decoder::new(metadata, Refs::Resolved(&self.pools.pools), &mut budget);
        let mut events = Vec::new();
        let mut pos = start;
        while pos < size {
            let rec = Record::read(buf, pos, size)?;
            let next = rec.end;
            self.records += 1;
            match rec.type_id {
                0 | 1 => {}
                id => {
                    if let Some(class) = metadata.class(TypeId(id)).filter(|c| c.is_event()) {
                        events.push(decode_event(rec, class, &mut decoder)?);
                    }
                }
            }
            pos = next;
        }
        self.pos = pos;
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::read_recording;
    use crate::write::constants::write_thread_group;
    use crate::write::encode::Sink;
    use crate::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata};
    use std::cell::RefCell;
    use std::io::{Cursor, Seek, SeekFrom, Write};
    use std::rc::Rc;

    /// A sink the test can look into while the writer holds it.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Cursor<Vec<u8>>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().write(b)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Seek for Shared {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.0.borrow_mut().seek(to)
        }
    }

    fn os_event(n: i64) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let mut e = EventEncoder::begin(&mut buf, TypeId::OS_INFORMATION);
        e.put_i64(n);
        e.put_str("Linux");
        let len = e.finish().unwrap();
        buf[..len].to_vec()
    }

    /// Appends what the header of `bytes` describes past what `f` holds,
    /// and advances.
    fn step(f: &mut ChunkFollower, bytes: &[u8]) -> Vec<EventRecord> {
        let header = ChunkHeader::parse(&bytes[..HEADER_LEN]).unwrap();
        let held = f.len();
        f.append(&bytes[held..header.chunk_size as usize]);
        f.advance(&header).unwrap()
    }

    /// A chunk flushed after every event, with constants added at every
    /// flush, followed flush by flush: each byte is appended once, each
    /// record read once, and the events and constants are those of a read
    /// of the finished chunk.
    #[test]
    fn a_growing_chunk_is_read_once_and_as_a_whole_read_would() {
        let start = ChunkStart {
            start_nanos: 0,
            start_ticks: 0,
            ticks_per_second: 1_000_000_000,
        };
        let sink = Shared::default();
        let mut w = ChunkWriter::begin(sink.clone(), start).unwrap();
        w.write_metadata(&Metadata::builtin(), 1, 0).unwrap();
        let mut f = ChunkFollower::new();
        let mut got = Vec::new();
        for i in 0..20 {
            w.write_events(&os_event(i)).unwrap();
            let mut cp = Checkpoint::new(crate::write::checkpoint::FLAG_FLUSH);
            write_thread_group(cp.pool(TypeId::THREAD_GROUP).entry(i as u64 + 1), 0, "g");
            w.write_checkpoint(&cp, 0, 0).unwrap();
            w.flush_header(1).unwrap();
            got.extend(step(&mut f, sink.0.borrow().get_ref()));
            assert_eq!(got.len(), i as usize + 1);
            assert_eq!(f.pools().len(), i as usize + 1);
        }
        let end = ChunkEnd {
            duration_nanos: 1,
            ticks_per_second: None,
            last: true,
        };
        drop(w.finish(end).unwrap());
        let file = sink.0.borrow().get_ref().clone();
        got.extend(step(&mut f, &file));
        assert_eq!(f.len(), file.len(), "each byte appended once");
        // 20 events, 20 checkpoints, 1 metadata.
        assert_eq!(f.records_read(), 41);
        let whole = read_recording(&file).unwrap();
        assert_eq!(got, whole.chunks[0].events);
        assert_eq!(f.pools(), &whole.chunks[0].pools);
    }
}
