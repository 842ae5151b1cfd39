//! Writing one chunk: header placeholder, records, checkpoints chained by
//! `delta`, live header updates, and the final patch.
//!
//! # Lifecycle
//!
//! ```text
//! begin ──► Open (state = generation 1..=254, size/offsets of the last flush)
//!             │  write_event / write_metadata / write_checkpoint
//!             │  flush_header: state 255, fields, next generation
//!             ▼
//!           finish: state 255, final fields, then state 0 ──► Finished
//! ```
//!
//! Times are passed in: this crate has no clock. The caller keeps one tick
//! clock for all chunks of a file (the JDK converts every chunk's ticks with
//! the first chunk's header).
//!
//! Invariant: the header on disk always describes a prefix of the chunk that
//! is complete (size, last checkpoint and metadata offsets point at bytes
//! already written), and the state byte is written after the other fields,
//! so a reader never sees "finished" with stale fields.

use std::io::{self, Seek, SeekFrom, Write};

use crate::write::checkpoint::Checkpoint;
use crate::write::header::{
    ChunkHeader, FLAG_FINAL_CHUNK, HEADER_LEN, STATE_FINISHED, STATE_OFFSET, STATE_UPDATING,
};
use crate::write::metadata::{EncodedMetadata, Metadata};

/// Where and when a chunk starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkStart {
    /// Wall clock, ns since the Unix epoch.
    pub start_nanos: i64,
    /// The tick clock at the same instant.
    pub start_ticks: i64,
    /// Tick frequency.
    pub ticks_per_second: i64,
}

/// How a chunk ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkEnd {
    /// Wall-clock duration of the chunk in ns.
    pub duration_nanos: i64,
    /// The tick frequency, if re-measured since the start (written over the
    /// start value); `None` keeps it.
    pub ticks_per_second: Option<i64>,
    /// True for the last chunk of a recording (sets the final-chunk flag).
    pub last: bool,
}

/// Writes one chunk into `W`, starting at `W`'s position when created.
#[derive(Debug)]
pub struct ChunkWriter<W: Write + Seek> {
    out: W,
    /// Absolute position of the chunk's first byte in `out`.
    base: u64,
    /// Bytes written so far, header included (= offset of the next record).
    len: u64,
    header: ChunkHeader,
    last_checkpoint: Option<u64>,
    scratch: Vec<u8>,
}

impl<W: Write + Seek> ChunkWriter<W> {
    /// Writes the placeholder header (size 68, no offsets, generation 1).
    pub fn begin(mut out: W, start: ChunkStart) -> io::Result<Self> {
        let base = out.stream_position()?;
        let header =
            ChunkHeader::open(start.start_nanos, start.start_ticks, start.ticks_per_second);
        out.write_all(&header.to_bytes())?;
        Ok(Self {
            out,
            base,
            len: HEADER_LEN as u64,
            header,
            last_checkpoint: None,
            scratch: Vec::new(),
        })
    }

    /// Absolute position of the chunk's first byte in the sink.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Bytes in the chunk so far, header included.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Always false: a chunk holds at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The output.
    pub fn output(&self) -> &W {
        &self.out
    }

    /// The output, to act on it outside the chunk's own writes (say, to
    /// flush what it buffers); what is written through it directly is not
    /// counted in [`len`](Self::len).
    pub fn output_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// The header as it will be patched at the next flush.
    pub fn header(&self) -> &ChunkHeader {
        &self.header
    }

    /// Appends already-framed event records (e.g. a drained thread buffer).
    /// Returns the offset at which they start.
    pub fn write_events(&mut self, records: &[u8]) -> io::Result<u64> {
        let at = self.len;
        self.out.write_all(records)?;
        self.len += records.len() as u64;
        Ok(at)
    }

    /// Appends `len` bytes of already-framed event records that `write`
    /// puts at the end of the output itself (a writer that hands the
    /// output memory to write later, say, instead of copying it through
    /// `write_all`). `write` must append exactly `len` bytes, or fail.
    /// Returns the offset at which they start.
    pub fn write_events_with(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut W) -> io::Result<()>,
    ) -> io::Result<u64> {
        let at = self.len;
        write(&mut self.out)?;
        self.len += len as u64;
        Ok(at)
    }

    /// Appends a filler record (see [`crate::write::checkpoint::filler`]) so that
    /// the absolute position in the output becomes a multiple of `align`
    /// (a power of two of at most 1 MiB). Returns the bytes added: 0 if
    /// the position is aligned already, else at least
    /// [`FILLER_MIN`](crate::write::checkpoint::FILLER_MIN) (a gap shorter than
    /// that takes one more `align`).
    pub fn pad_to(&mut self, align: u64) -> io::Result<usize> {
        use crate::write::checkpoint::{FILLER_MIN, filler};
        debug_assert!(align.is_power_of_two() && align <= 1 << 20);
        let end = self.base + self.len;
        let mut gap = (align - end % align) % align;
        if gap == 0 {
            return Ok(0);
        }
        if gap < FILLER_MIN as u64 {
            gap += align;
        }
        self.scratch.clear();
        self.scratch.resize(gap as usize, 0);
        let written = filler(&mut self.scratch);
        debug_assert!(written, "a gap of {gap} bytes takes one filler");
        self.out.write_all(&self.scratch)?;
        self.len += gap;
        Ok(gap as usize)
    }

    /// Appends the metadata event and points the header at it.
    pub fn write_metadata(
        &mut self,
        metadata: &Metadata,
        metadata_id: u64,
        ticks: i64,
    ) -> io::Result<()> {
        self.write_encoded_metadata(&metadata.encode_body(), metadata_id, ticks)
    }

    /// [`write_metadata`](Self::write_metadata) with a body encoded before
    /// ([`Metadata::encode_body`]), for a writer that keeps it across
    /// chunks while its types do not change.
    pub fn write_encoded_metadata(
        &mut self,
        metadata: &EncodedMetadata,
        metadata_id: u64,
        ticks: i64,
    ) -> io::Result<()> {
        self.scratch.clear();
        metadata.encode(&mut self.scratch, metadata_id, ticks);
        let at = self.len;
        self.out.write_all(&self.scratch)?;
        self.len += self.scratch.len() as u64;
        self.header.metadata_offset = at as i64;
        Ok(())
    }

    /// Appends a checkpoint, chained to the previous one, and points the
    /// header at it. An empty checkpoint is still written (a chunk needs at
    /// least one to be followed by others); it holds no pools.
    pub fn write_checkpoint(
        &mut self,
        cp: &Checkpoint,
        ticks: i64,
        duration_ticks: i64,
    ) -> io::Result<()> {
        let at = self.len;
        let delta = self
            .last_checkpoint
            .map_or(0, |prev| prev as i64 - at as i64);
        self.scratch.clear();
        cp.encode(&mut self.scratch, ticks, duration_ticks, delta);
        self.out.write_all(&self.scratch)?;
        self.len += self.scratch.len() as u64;
        self.last_checkpoint = Some(at);
        self.header.constant_pool_offset = at as i64;
        Ok(())
    }

    /// Rewrites the header in place so a live reader sees everything written
    /// so far, and advances the generation (1..=254). `duration_nanos` is the
    /// time since the chunk started.
    pub fn flush_header(&mut self, duration_nanos: i64) -> io::Result<()> {
        self.header.chunk_size = self.len as i64;
        self.header.duration_nanos = duration_nanos;
        self.header.state = if self.header.state >= 254 {
            1
        } else {
            self.header.state + 1
        };
        self.patch_header()?;
        self.out.seek(SeekFrom::Start(self.base + self.len))?;
        self.out.flush()
    }

    /// Patches the final header (state 0 written last) and returns the sink,
    /// positioned at the end of the chunk, where the next chunk may begin.
    ///
    /// A chunk must hold a metadata event and a checkpoint to be readable;
    /// if none was written, an empty checkpoint is added here.
    pub fn finish(mut self, end: ChunkEnd) -> io::Result<W> {
        if self.last_checkpoint.is_none() {
            self.write_checkpoint(
                &Checkpoint::new(crate::write::checkpoint::FLAG_FLUSH),
                self.header.start_ticks,
                0,
            )?;
        }
        self.header.chunk_size = self.len as i64;
        self.header.duration_nanos = end.duration_nanos;
        if let Some(tps) = end.ticks_per_second {
            self.header.ticks_per_second = tps;
        }
        if end.last {
            self.header.flags |= FLAG_FINAL_CHUNK;
        }
        self.header.state = STATE_FINISHED;
        self.patch_header()?;
        self.out.seek(SeekFrom::Start(self.base + self.len))?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Guard byte, then the mutable fields, then the state and flags.
    fn patch_header(&mut self) -> io::Result<()> {
        let state_at = self.base + STATE_OFFSET as u64;
        self.out.seek(SeekFrom::Start(state_at))?;
        self.out.write_all(&[STATE_UPDATING])?;
        self.out.flush()?;
        self.out.seek(SeekFrom::Start(self.base + 8))?;
        self.out.write_all(&self.header.mutable_bytes())?;
        self.out.flush()?;
        let bytes = self.header.to_bytes();
        self.out.seek(SeekFrom::Start(state_at + 1))?;
        self.out.write_all(&bytes[STATE_OFFSET + 1..])?;
        self.out.flush()?;
        self.out.seek(SeekFrom::Start(state_at))?;
        self.out.write_all(&[self.header.state])?;
        Ok(())
    }

    /// The sink (for tests and error recovery); the chunk stays unfinished.
    pub fn into_inner(self) -> W {
        self.out
    }
}
