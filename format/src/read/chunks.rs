//! Reading a file's chunks one after another, for tools that stream a
//! large recording: what the chunks share is parsed once, and only the
//! events a tool asks for are decoded.
//!
//! # Mechanism
//!
//! HotSpot and flightrec write the same metadata record into every chunk of
//! a recording. A [`ChunkReader`] keeps the last metadata record it parsed
//! together with its bytes and position; when the next chunk's record is
//! byte for byte the same, at the same offset, the parsed
//! [`MetadataRecord`] is shared (an [`Arc`]) instead of parsed again: a
//! `memcmp` instead of a tree walk.
//!
//! [`ChunkReader::scan`] counts records per type from their frames (size
//! and type id) without touching a payload; [`ChunkReader::read`] resolves
//! the chunk's constants and decodes only the records of the event types a
//! caller selects, handing each to a callback rather than collecting them,
//! so memory stays bounded by the chunk, not by its events.
//!
//! Invariant: a result is exactly what [`scan_chunk`] / [`read_chunk`]
//! give for the same bytes (the reuse is keyed on identical bytes at an
//! identical offset, and parsing is a function of them), and, like the rest
//! of the reader, nothing here panics or reads outside the chunk on
//! malformed input. Records of types not selected are framed (size checked)
//! but not decoded, so a damaged payload in one of them goes unnoticed.
//!
//! [`scan_chunk`]: super::scan_chunk
//! [`read_chunk`]: super::read_chunk

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decode::{Budget, Decoder, Refs};
use super::error::ReadError;
use super::event::{EventRecord, decode_event};
use super::input::Record;
use super::metadata::{ClassRecord, MetadataRecord, read_metadata};
use super::pools::{PoolSet, read_pools};
use super::scan::{ChunkExtent, RecordCount, chunk_extent};
use crate::types::TypeId;
use crate::write::header::{ChunkHeader, HEADER_LEN};

/// Type ids below this are counted in a flat table while scanning (larger
/// ones, rare, in a map).
const DENSE_IDS: usize = 4096;

/// Reads chunk after chunk, parsing a metadata record only when it differs
/// from the previous chunk's.
#[derive(Debug, Default)]
pub struct ChunkReader {
    /// The last metadata record parsed: its offset in its chunk, its bytes
    /// and what they parse to.
    last: Option<(usize, Vec<u8>, Arc<MetadataRecord>)>,
    /// Scratch counts by type id, reused from chunk to chunk (all zero
    /// between scans).
    dense: Vec<RecordCount>,
    /// The ids of `dense` a scan has counted.
    touched: Vec<usize>,
}

/// What [`ChunkReader::scan`] found in one chunk.
#[derive(Debug, Clone)]
pub struct ChunkCounts {
    /// The header.
    pub header: ChunkHeader,
    /// The chunk's metadata (the same `Arc` as the previous chunk's when
    /// the record is the same).
    pub metadata: Arc<MetadataRecord>,
    /// Records per type id, in id order (0 is the metadata record, 1
    /// checkpoints).
    pub records: BTreeMap<u64, RecordCount>,
}

/// What [`ChunkReader::read`] read of one chunk besides its events.
#[derive(Debug, Clone)]
pub struct ChunkContext {
    /// The header.
    pub header: ChunkHeader,
    /// The chunk's metadata.
    pub metadata: Arc<MetadataRecord>,
    /// Its constants, resolved.
    pub pools: PoolSet,
}

impl ChunkReader {
    /// A reader with nothing cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Frames the chunk at offset 0 of `bytes` and returns its header,
    /// size and metadata (parsed, or the previous chunk's if identical).
    fn open(
        &mut self,
        bytes: &[u8],
    ) -> Result<(ChunkHeader, usize, Arc<MetadataRecord>), ReadError> {
        let ChunkExtent { header, size } = chunk_extent(bytes, 0, bytes.len() as u64)?;
        let end = size as usize;
        let at = match usize::try_from(header.metadata_offset) {
            Ok(at) if (HEADER_LEN..end).contains(&at) => at,
            _ if header.metadata_offset == 0 => return Err(ReadError::NoMetadata { at: 0 }),
            _ => {
                return Err(ReadError::BadOffset {
                    at: 0,
                    field: "metadata",
                    offset: header.metadata_offset,
                });
            }
        };
        let rec = Record::read(bytes, at, end)?;
        let raw = &bytes[rec.start..rec.end];
        if let Some((last_at, last_raw, meta)) = &self.last
            && *last_at == at
            && last_raw.as_slice() == raw
        {
            return Ok((header, end, meta.clone()));
        }
        let meta = Arc::new(read_metadata(bytes, at, end)?);
        self.last = Some((at, raw.to_vec(), meta.clone()));
        Ok((header, end, meta))
    }

    /// Counts the records of the chunk at offset 0 of `bytes` by type id,
    /// reading the metadata (unless it is the previous chunk's) but no
    /// event payload: what [`scan_chunk`](super::scan_chunk) returns.
    pub fn scan(&mut self, bytes: &[u8]) -> Result<ChunkCounts, ReadError> {
        let (header, end, metadata) = self.open(bytes)?;
        self.dense.resize(DENSE_IDS, RecordCount::default());
        let mut records: BTreeMap<u64, RecordCount> = BTreeMap::new();
        let mut pos = HEADER_LEN;
        let walked = loop {
            if pos >= end {
                break Ok(());
            }
            let rec = match Record::read(bytes, pos, end) {
                Ok(rec) => rec,
                Err(e) => break Err(e),
            };
            let n = match usize::try_from(rec.type_id) {
                Ok(i) if i < DENSE_IDS => {
                    if self.dense[i].count == 0 {
                        self.touched.push(i);
                    }
                    &mut self.dense[i]
                }
                _ => records.entry(rec.type_id).or_default(),
            };
            n.count += 1;
            n.bytes += (rec.end - rec.start) as u64;
            pos = rec.end;
        };
        // Moved out whether or not the walk ended well: zero for the next.
        for i in self.touched.drain(..) {
            records.insert(i as u64, std::mem::take(&mut self.dense[i]));
        }
        walked?;
        Ok(ChunkCounts {
            header,
            metadata,
            records,
        })
    }

    /// Reads the chunk at offset 0 of `bytes`: its metadata and constants,
    /// and, in file order, every event whose type `want` accepts, each
    /// decoded as [`read_chunk`](super::read_chunk) decodes it and handed
    /// to `each` with the chunk's context. Returns the context.
    ///
    /// `want` is asked once per event type of the chunk.
    pub fn read(
        &mut self,
        bytes: &[u8],
        mut want: impl FnMut(&ClassRecord) -> bool,
        mut each: impl FnMut(&ChunkContext, &EventRecord),
    ) -> Result<ChunkContext, ReadError> {
        let (header, end, metadata) = self.open(bytes)?;
        let mut budget = Budget::new();
        let pools = match header.constant_pool_offset {
            0 => PoolSet::default(),
            cp => match usize::try_from(cp) {
                Ok(last) if (HEADER_LEN..end).contains(&last) => {
                    read_pools(bytes, 0, end, last, &metadata, &mut budget)?
                }
                _ => {
                    return Err(ReadError::BadOffset {
                        at: 0,
                        field: "constant pool",
                        offset: cp,
                    });
                }
            },
        };
        let ctx = ChunkContext {
            header,
            metadata: metadata.clone(),
            pools,
        };
        // Per type id, the index of its class if its records are to be
        // decoded; decided once per type (a flat table for small ids).
        let mut dense: Vec<Option<Option<usize>>> = vec![None; DENSE_IDS];
        let mut sparse: BTreeMap<u64, Option<usize>> = BTreeMap::new();
        let mut decide = |id: u64| {
            metadata
                .index(TypeId(id))
                .filter(|&i| metadata.classes[i].is_event() && want(&metadata.classes[i]))
        };
        let mut decoder = Decoder::new(&metadata, Refs::Resolved(&ctx.pools), &mut budget);
        let mut pos = HEADER_LEN;
        while pos < end {
            let rec = Record::read(bytes, pos, end)?;
            let next = rec.end;
            let id = rec.type_id;
            let class = match usize::try_from(id) {
                Ok(0 | 1) => None,
                Ok(i) if i < DENSE_IDS => *dense[i].get_or_insert_with(|| decide(id)),
                _ => *sparse.entry(id).or_insert_with(|| decide(id)),
            };
            if let Some(class) = class {
                let event = decode_event(rec, &metadata.classes[class], &mut decoder)?;
                each(&ctx, &event);
            }
            pos = next;
        }
        Ok(ctx)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::read::{read_chunk, scan_chunk};
    use crate::write::encode::Sink;
    use crate::{ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata};

    fn chunk(events: &[(TypeId, &str)]) -> Vec<u8> {
        let start = ChunkStart {
            start_nanos: 0,
            start_ticks: 0,
            ticks_per_second: 1_000_000_000,
        };
        let mut w = ChunkWriter::begin(Cursor::new(Vec::new()), start).unwrap();
        w.write_metadata(&Metadata::builtin(), 1, 0).unwrap();
        let mut buf = [0u8; 64];
        for &(t, s) in events {
            let mut e = EventEncoder::begin(&mut buf, t);
            e.put_i64(1005);
            e.put_str(s);
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
    fn scans_and_reads_agree_with_the_one_chunk_functions() {
        let a = chunk(&[
            (TypeId::OS_INFORMATION, "Linux"),
            (TypeId::OS_INFORMATION, "BSD"),
        ]);
        let mut r = ChunkReader::new();
        let s1 = r.scan(&a).unwrap();
        let s2 = r.scan(&a).unwrap();
        // The second chunk's metadata is the first's, not parsed again.
        assert!(Arc::ptr_eq(&s1.metadata, &s2.metadata));
        let one = scan_chunk(&a).unwrap();
        assert_eq!(s1.records, one.records);
        assert_eq!(*s1.metadata, one.metadata);

        let full = read_chunk(&a).unwrap();
        let mut got = Vec::new();
        r.read(&a, |_| true, |_, e| got.push(e.clone())).unwrap();
        assert_eq!(got, full.events);
        let mut none = 0;
        let ctx = r
            .read(
                &a,
                |c| c.name.as_ref() != "jdk.OSInformation",
                |_, _| none += 1,
            )
            .unwrap();
        assert_eq!(none, 0);
        assert_eq!(ctx.pools, full.pools);
    }

    #[test]
    fn a_different_metadata_record_is_parsed_afresh() {
        let a = chunk(&[(TypeId::OS_INFORMATION, "Linux")]);
        let mut r = ChunkReader::new();
        let first = r.scan(&a).unwrap().metadata;
        // The same chunk with one byte of the metadata changed in place: a
        // string of the metadata's string table.
        let mut b = a.clone();
        let h = ChunkHeader::parse(&b).unwrap();
        let at = h.metadata_offset as usize;
        let rec = Record::read(&b, at, b.len()).unwrap();
        let i = (rec.start..rec.end)
            .rev()
            .find(|&i| b[i] == b'a')
            .expect("a letter a in the metadata");
        b[i] = b'b';
        // (Or the change broke the record: still not the cached one.)
        if let Ok(s) = r.scan(&b) {
            assert!(!Arc::ptr_eq(&first, &s.metadata));
        }
        // Damaged chunks are errors, never panics.
        for cut in [0, 10, HEADER_LEN, a.len() - 1] {
            assert!(r.scan(&a[..cut]).is_err());
            assert!(r.read(&a[..cut], |_| true, |_, _| {}).is_err());
        }
    }
}
