//! Reading a recording one chunk at a time, for tools that must not hold a
//! whole file in memory.
//!
//! [`chunk_extent`] reads just a chunk header and says how many bytes the
//! chunk spans, so a caller can read exactly that much from a file;
//! [`read_chunk`] decodes one chunk fully (as [`read_recording`] does for
//! each of its chunks); [`scan_chunk`] reads only the metadata and the
//! record frames, counting records and bytes per type id without decoding a
//! payload, which is what `jfr summary` reports.
//!
//! Invariant: every function here reads only inside the chunk the header at
//! offset 0 of its input describes, and, like the rest of the reader, never
//! panics on malformed input.
//!
//! [`read_recording`]: super::read_recording

use std::collections::BTreeMap;

use super::chunk::{ChunkRecord, read_chunk_at};
use super::decode::Budget;
use super::error::ReadError;
use super::input::Record;
use super::metadata::{MetadataRecord, read_metadata};
use crate::write::header::{ChunkHeader, HEADER_LEN, MAJOR};

/// A chunk header and the bytes its chunk spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkExtent {
    /// The parsed header.
    pub header: ChunkHeader,
    /// The chunk's size in bytes, header included (at least [`HEADER_LEN`]).
    pub size: u64,
}

/// Parses the chunk header at the start of `head` (at least [`HEADER_LEN`]
/// bytes) and checks what can be checked without the body. `at` is the
/// header's file offset, for errors; `available` how many bytes the file
/// holds from there on.
pub fn chunk_extent(head: &[u8], at: u64, available: u64) -> Result<ChunkExtent, ReadError> {
    if head.len() < HEADER_LEN || available < HEADER_LEN as u64 {
        return Err(ReadError::Truncated {
            at,
            needed: HEADER_LEN as u64,
            available: available.min(head.len() as u64),
        });
    }
    let header = ChunkHeader::parse(head).ok_or(ReadError::BadMagic { at })?;
    if header.major != MAJOR {
        return Err(ReadError::UnsupportedVersion {
            at,
            major: header.major,
            minor: header.minor,
        });
    }
    match u64::try_from(header.chunk_size) {
        Ok(size) if (HEADER_LEN as u64..=available).contains(&size) => {
            Ok(ChunkExtent { header, size })
        }
        _ => Err(ReadError::BadChunkSize {
            at,
            size: header.chunk_size,
            available,
        }),
    }
}

/// Decodes the chunk that starts at offset 0 of `bytes`: header, metadata,
/// constants and events. Offsets in the result and in errors are relative
/// to `bytes`.
pub fn read_chunk(bytes: &[u8]) -> Result<ChunkRecord, ReadError> {
    read_chunk_at(bytes, 0, &mut Budget::new(), true).map(|(chunk, _, _)| chunk)
}

/// Records of one type in a chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordCount {
    /// How many records.
    pub count: u64,
    /// Their bytes, framing included.
    pub bytes: u64,
}

/// What [`scan_chunk`] found: the header, the metadata and the records per
/// type id (0 is the metadata record, 1 checkpoints).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkScan {
    /// The header.
    pub header: ChunkHeader,
    /// The chunk's metadata.
    pub metadata: MetadataRecord,
    /// Records per type id, in id order.
    pub records: BTreeMap<u64, RecordCount>,
}

/// Counts the records of the chunk at offset 0 of `bytes` by type id,
/// reading the metadata but no event payload.
pub fn scan_chunk(bytes: &[u8]) -> Result<ChunkScan, ReadError> {
    let ChunkExtent { header, size } = chunk_extent(bytes, 0, bytes.len() as u64)?;
    let end = size as usize;
    let metadata = match usize::try_from(header.metadata_offset) {
        Ok(at) if (HEADER_LEN..end).contains(&at) => read_metadata(bytes, at, end)?,
        _ if header.metadata_offset == 0 => return Err(ReadError::NoMetadata { at: 0 }),
        _ => {
            return Err(ReadError::BadOffset {
                at: 0,
                field: "metadata",
                offset: header.metadata_offset,
            });
        }
    };
    let mut records: BTreeMap<u64, RecordCount> = BTreeMap::new();
    let mut pos = HEADER_LEN;
    while pos < end {
        let rec = Record::read(bytes, pos, end)?;
        let n = records.entry(rec.type_id).or_default();
        n.count += 1;
        n.bytes += (rec.end - rec.start) as u64;
        pos = rec.end;
    }
    Ok(ChunkScan {
        header,
        metadata,
        records,
    })
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::write::encode::Sink;
    use crate::{ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata, TypeId};

    fn two_event_chunk() -> Vec<u8> {
        let start = ChunkStart {
            start_nanos: 0,
            start_ticks: 0,
            ticks_per_second: 1_000_000_000,
        };
        let mut w = ChunkWriter::begin(Cursor::new(Vec::new()), start).unwrap();
        w.write_metadata(&Metadata::builtin(), 1, 0).unwrap();
        let mut buf = [0u8; 64];
        for _ in 0..2 {
            let mut e = EventEncoder::begin(&mut buf, TypeId::OS_INFORMATION);
            e.put_i64(1005);
            e.put_str("Linux");
            let n = e.finish().unwrap();
            w.write_events(&buf[..n]).unwrap();
        }
        let end = ChunkEnd {
            duration_nanos: 1,
            ticks_per_second: None,
            last: true,
        };
        w.finish(end).unwrap().into_inner()
    }

    #[test]
    fn a_scan_counts_what_a_full_read_decodes() {
        let file = two_event_chunk();
        let ext = chunk_extent(&file, 0, file.len() as u64).unwrap();
        assert_eq!(ext.size, file.len() as u64);
        let scan = scan_chunk(&file).unwrap();
        let os = scan.records[&TypeId::OS_INFORMATION.0];
        assert_eq!(os.count, 2);
        assert_eq!(scan.records[&0].count, 1);
        let chunk = read_chunk(&file).unwrap();
        assert_eq!(chunk.events.len(), 2);
        let total: u64 = scan.records.values().map(|r| r.bytes).sum();
        assert_eq!(total + HEADER_LEN as u64, ext.size);
    }

    #[test]
    fn a_header_that_claims_more_than_the_file_is_refused() {
        let file = two_event_chunk();
        assert!(matches!(
            chunk_extent(&file, 0, file.len() as u64 - 1),
            Err(ReadError::BadChunkSize { .. })
        ));
        assert!(matches!(
            chunk_extent(b"FLR\0", 0, 4),
            Err(ReadError::Truncated { .. })
        ));
        let mut bad = file.clone();
        bad[0] = b'X';
        assert!(matches!(scan_chunk(&bad), Err(ReadError::BadMagic { .. })));
    }
}
