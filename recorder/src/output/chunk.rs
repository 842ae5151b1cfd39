//! Assembling one chunk on the recorder thread: drained event bytes in; at
//! each flush, the losses since the last report (see [`crate::base::loss`]), the
//! metadata (if types were added) and a checkpoint with the constants first
//! referenced since the previous one, then the header update; at the end,
//! the losses again, the end-of-chunk events and the final constants.
//!
//! # Live readability
//!
//! After every [`ChunkAssembler::flush`] the header on disk describes a
//! complete prefix of the chunk (metadata describing every event before it,
//! a checkpoint chain holding every constant they reference), so a streaming
//! reader can follow the chunk as it grows and a process killed after a flush
//! leaves a chunk that [`crate::repository::assemble::recover_chunk`] makes readable.
//!
//! # Events and constants
//!
//! The chunk belongs to one epoch. Drained bytes are copied into it as they
//! are: the commit path writes final JFR, start times included, and no
//! record is decoded here. Its constants are the threads and stack traces
//! tagged with its epoch (see [`crate::cpool::threads`] and
//! [`crate::cpool::stacks`]), plus the methods, classes, packages and
//! symbols those stacks resolve to: every flush writes the ones tagged since
//! the last. A constant is tagged before the event referencing it is
//! committed, and a flush drains before it collects the tags, so the
//! checkpoint after a drained event holds its constants.
//!
//! Invariant: every constant referenced by an event before the header's size
//! is defined in a checkpoint before it, and no key is defined twice with
//! different values (a key, once written in this chunk, is not written again;
//! method and symbol constants may repeat, always with the same value).

use crate::output::chunk_out::ChunkOut;
use std::collections::BTreeSet;
use std::io::{self, Write as _};

use jfr_format::write::constants::{frame_type, thread_state, write_simple_string};
use jfr_format::write::events::{ActiveSetting, BuiltinEvent};
use jfr_format::write::header::HEADER_LEN;
use jfr_format::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, TypeId};

use crate::base::clock;
use crate::base::loss::LossReporter;
use crate::buffer::block::Block;
use crate::config::settings;
use crate::cpool::methods::FrameTables;
use crate::event::registry::registry;
use crate::feature::ChunkPart;
use crate::runtime::Runtime;

/// The chunk being written.
#[derive(Debug)]
pub(crate) struct ChunkAssembler {
    writer: ChunkWriter<ChunkOut>,
    start: clock::Instant,
    /// The epoch whose events and constants the chunk holds.
    epoch: u64,
    written_threads: BTreeSet<u64>,
    written_stacks: BTreeSet<u64>,
    statics_written: bool,
    /// Panic classes this chunk defines (see `crate::process::panics`).
    panic_classes_written: usize,
    /// What each feature adds to the chunk (see [`crate::feature`]).
    parts: Vec<Box<dyn ChunkPart>>,
    /// Registered-type count described by the last metadata written, if any.
    metadata_types: Option<usize>,
    scratch: Vec<u8>,
    /// Events and bytes handed to the file since the last successful flush:
    /// lost if the file fails before the next one.
    pending: (u64, u64),
    /// Event records drained into this chunk so far.
    records: u64,
    /// The chunk as its last successful flush left it on disk: its length
    /// and its header marked finished (what a chunk that fails later is
    /// cut back to; see `recorder_thread::write_error`).
    last_good: Option<(u64, [u8; HEADER_LEN])>,
}

/// What a chunk whose file failed can be cut back to: see
/// [`ChunkAssembler::salvage_point`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct SalvagePoint {
    /// The chunk's epoch.
    pub(crate) epoch: u64,
    /// Wall clock at the chunk's start.
    pub(crate) start_nanos: i64,
    /// Events and bytes written since the last successful flush: lost.
    pub(crate) pending: (u64, u64),
    /// Event records drained into the chunk in all.
    pub(crate) records: u64,
    /// The length and the finished header of the last successful flush.
    pub(crate) last_good: Option<(u64, [u8; HEADER_LEN])>,
}

impl ChunkAssembler {
    /// Starts the chunk of `epoch` at the current position of `out`.
    pub(crate) fn begin(out: ChunkOut, epoch: u64) -> io::Result<Self> {
        let start = clock::now();
        let writer = ChunkWriter::begin(
            out,
            ChunkStart {
                start_nanos: start.wall_nanos,
                start_ticks: start.ticks,
                ticks_per_second: clock::ticks_per_second(),
            },
        )?;
        Ok(Self {
            writer,
            start,
            epoch,
            written_threads: BTreeSet::new(),
            written_stacks: BTreeSet::new(),
            statics_written: false,
            panic_classes_written: 0,
            parts: crate::feature::all()
                .iter()
                .filter_map(|f| f.chunk_part())
                .collect(),
            metadata_types: None,
            scratch: Vec::new(),
            pending: (0, 0),
            records: 0,
            last_good: None,
        })
    }

    /// Writes `records` (complete event records the recorder made itself,
    /// such as `jdk.ActiveRecording`) into the chunk.
    pub(crate) fn write_records(&mut self, records: &[u8]) -> io::Result<()> {
        self.writer.write_events(records).map(drop)
    }

    /// Wall clock at the chunk's start.
    pub(crate) fn start_nanos(&self) -> i64 {
        self.start.wall_nanos
    }

    /// Event records drained from buffers into the chunk so far.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    /// Bytes in the chunk so far.
    pub(crate) fn len(&self) -> u64 {
        self.writer.len()
    }

    /// The epoch the chunk belongs to.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Writes the complete, unflushed events of `block` into the chunk, as
    /// they are (see the module docs). Returns the bytes written.
    pub(crate) fn add_block(&mut self, block: &Block) -> io::Result<usize> {
        self.drain(block, |writer, bytes| writer.write_events(bytes).map(drop))
    }

    /// [`add_block`](Self::add_block) for a sealed block, written from its
    /// own memory where the file takes direct writes (see
    /// `chunk_out`'s *Gathered blocks*): the file is padded to the
    /// alignment with a filler first.
    ///
    /// # Safety
    ///
    /// `block` must not be reset (its bytes must stay as they are) until
    /// [`write_gathered`](Self::write_gathered) returns: `drain_sealed`
    /// releases the blocks it hands over only after the sink's
    /// `end_batch`, which calls it.
    pub(crate) unsafe fn add_sealed_block(&mut self, block: &Block) -> io::Result<usize> {
        self.drain(block, |writer, bytes| {
            match writer.output().gather_align() {
                Some(a) if bytes.len() >= a && (bytes.as_ptr() as usize).is_multiple_of(a) => {
                    writer.pad_to(a as u64)?;
                    writer
                        .write_events_with(bytes.len(), |out| {
                            // SAFETY: `bytes` are the block's committed records,
                            // unchanged until the block is reset, which this
                            // function's caller defers past `write_gathered`.
                            if !unsafe { out.gather(bytes) }? {
                                out.write_all(bytes)?;
                            }
                            Ok(())
                        })
                        .map(drop)
                }
                _ => writer.write_events(bytes).map(drop),
            }
        })
    }

    /// Hands `block`'s complete, unflushed records to `write` and counts
    /// them as written (and pending until the next flush). Returns the
    /// bytes written.
    fn drain(
        &mut self,
        block: &Block,
        write: impl FnOnce(&mut ChunkWriter<ChunkOut>, &[u8]) -> io::Result<()>,
    ) -> io::Result<usize> {
        let (writer, pending, total) = (&mut self.writer, &mut self.pending, &mut self.records);
        let written = block.drain_with(|bytes, records| {
            write(writer, bytes)?;
            pending.0 += records;
            *total += records;
            pending.1 += bytes.len() as u64;
            Ok(bytes.len())
        });
        written.unwrap_or(Ok(0))
    }

    /// Writes the blocks queued by [`add_sealed_block`](Self::add_sealed_block)
    /// (nothing if none is).
    pub(crate) fn write_gathered(&mut self) -> io::Result<()> {
        self.writer.output_mut().write_gathered()
    }

    /// Makes everything written so far readable: metadata if types were
    /// added, a checkpoint with the new constants, the losses since the
    /// last report, the header.
    pub(crate) fn flush(
        &mut self,
        rt: &Runtime,
        frames: &mut FrameTables,
        losses: &mut LossReporter,
    ) -> io::Result<()> {
        let now = clock::now();
        self.write_metadata_if_changed(now.ticks)?;
        // Constants first: writing them may count stacks dropped (see
        // `cpool::stacks`), which this report must include.
        self.write_new_constants(rt, frames, now.ticks)?;
        // One snapshot per report; committed once the header covers it.
        losses.note_written(self.pending.0, self.pending.1);
        self.scratch.clear();
        let report = losses.encode(&mut self.scratch, now.ticks, rt.losses.snapshot());
        self.writer.write_events(&self.scratch)?;
        self.writer
            .flush_header((now.wall_nanos - self.start.wall_nanos).max(0))?;
        losses.commit(report);
        self.pending = (0, 0);
        let mut header = *self.writer.header();
        header.state = jfr_format::write::header::STATE_FINISHED;
        self.last_good = Some((self.writer.len(), header.to_bytes()));
        Ok(())
    }

    /// What the chunk's file can be cut back to if writing it fails now
    /// (the state of its last successful flush), and what that loses.
    pub(crate) fn salvage_point(&self) -> SalvagePoint {
        SalvagePoint {
            epoch: self.epoch,
            start_nanos: self.start.wall_nanos,
            pending: self.pending,
            records: self.records,
            last_good: self.last_good,
        }
    }

    /// Events (and bytes) written since the last successful flush, which a
    /// failure of the file loses.
    pub(crate) fn pending(&self) -> (u64, u64) {
        self.pending
    }

    fn write_metadata_if_changed(&mut self, ticks: i64) -> io::Result<()> {
        let n = registry().type_count();
        if self.metadata_types == Some(n) {
            return Ok(());
        }
        let (metadata, metadata_id) = registry().encoded_metadata();
        self.writer
            .write_encoded_metadata(&metadata, metadata_id, ticks)?;
        self.metadata_types = Some(n);
        Ok(())
    }

    /// A checkpoint with the constants referenced since the last one (and the
    /// enum-like pools, once per chunk). Written at every flush even when it
    /// holds no pool: a streaming reader delivers the events of a flush
    /// segment only when it reaches the checkpoint that ends it (the FLUSH
    /// flag), and a chunk needs a checkpoint to be followed by others.
    fn write_new_constants(
        &mut self,
        rt: &Runtime,
        frames: &mut FrameTables,
        ticks: i64,
    ) -> io::Result<()> {
        let threads: Vec<u64> = rt
            .threads
            .tagged(self.epoch)
            .into_iter()
            .filter(|k| !self.written_threads.contains(k))
            .collect();
        let stacks: Vec<u64> = rt
            .stacks
            .tagged(self.epoch)
            .into_iter()
            .filter(|k| !self.written_stacks.contains(k))
            .collect();
        let mut cp = Checkpoint::new(jfr_format::write::checkpoint::FLAG_FLUSH);
        rt.threads.write_pool(&mut cp, &threads);
        let gone = frames.write_pools(&mut cp, &rt.stacks, &stacks);
        if gone > 0 {
            rt.losses
                .record_many(crate::base::loss::LossCause::StackDropped, gone as u64, 0);
        }
        rt.stacks.set_resolved_bytes(frames.bytes());
        self.panic_classes_written =
            crate::process::panics::write_class_constants(&mut cp, self.panic_classes_written);
        for part in &mut self.parts {
            part.write_constants(&mut cp);
        }
        if !self.statics_written {
            // Small and always written: samples refer to thread states,
            // which are not tagged.
            {
                let mut pool = cp.pool(TypeId::FRAME_TYPE);
                for (k, name) in frame_type::ALL {
                    write_simple_string(pool.entry(k), name);
                }
            }
            let mut pool = cp.pool(TypeId::THREAD_STATE);
            for (k, name) in thread_state::ALL {
                write_simple_string(pool.entry(k), name);
            }
        }
        self.writer.write_checkpoint(&cp, ticks, 0)?;
        self.statics_written = true;
        self.written_threads.extend(threads);
        self.written_stacks.extend(stacks);
        Ok(())
    }

    /// Writes the end-of-chunk events, the metadata and the remaining
    /// constants, and finishes the chunk. Returns the file.
    pub(crate) fn finish(
        mut self,
        rt: &Runtime,
        frames: &mut FrameTables,
        last: bool,
        losses: &mut LossReporter,
    ) -> io::Result<ChunkOut> {
        let end = clock::now();
        self.write_metadata_if_changed(end.ticks)?;
        // The leak candidates' stacks and threads are tagged before the
        // constants are collected.
        for part in &mut self.parts {
            part.prepare_end(rt, self.epoch);
        }
        // Constants before the loss report, as in `flush`.
        self.write_new_constants(rt, frames, end.ticks)?;
        losses.note_written(self.pending.0, self.pending.1);
        self.scratch.clear();
        let report = losses.encode(&mut self.scratch, end.ticks, rt.losses.snapshot());
        write_active_settings(&mut self.scratch, end.ticks);
        for part in &mut self.parts {
            part.end_events(&mut self.scratch, end.ticks);
        }
        self.writer.write_events(&self.scratch)?;
        let duration_nanos = (end.wall_nanos - self.start.wall_nanos).max(0);
        let file = self.writer.finish(ChunkEnd {
            duration_nanos,
            ticks_per_second: None,
            last,
        })?;
        losses.commit(report);
        Ok(file)
    }
}

/// One `jdk.ActiveSetting` per setting of every registered type: the
/// settings in force while the chunk's events were recorded (the
/// recording's settings, not the settings words, which the stop has
/// already turned off when the last chunk is finished), thresholds in the
/// largest unit that states them exactly.
fn write_active_settings(out: &mut Vec<u8>, ticks: i64) {
    let reg = registry();
    for ty in reg.types() {
        let (enabled, stack_trace, threshold) = reg.in_force(ty);
        let mut put = |name: &str, value: &str| {
            ActiveSetting {
                start_time: ticks,
                id: ty.id().0 as i64,
                name,
                value,
            }
            .append(out);
        };
        put("enabled", if enabled { "true" } else { "false" });
        put("stackTrace", if stack_trace { "true" } else { "false" });
        if let Some(threshold) = threshold {
            put("threshold", &settings::format_duration(threshold));
        }
    }
}
