//! Assembling one chunk on the recorder thread: drained event bytes in, then
//! the end-of-chunk events, metadata and constant pools, then the header.
//!
//! Invariant: a finished chunk holds the metadata of every type registered
//! when it finished (a superset of the types of its events) and every
//! constant its events reference (collected by [`crate::scan`]).

use std::fs::File;
use std::io::{self, BufWriter};

use chunk_writer::constants::{frame_type, thread_state, write_simple_string};
use chunk_writer::encode::Sink;
use chunk_writer::record::{begin_record, end_record};
use chunk_writer::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, TypeId};

use crate::buffer::block::Block;
use crate::clock;
use crate::cpool::methods::FrameTables;
use crate::loss::{LossCause, LossCounts};
use crate::runtime::{Runtime, registry};
use crate::scan::{Referenced, Scanner};
use crate::settings;

/// The chunk being written.
#[derive(Debug)]
pub(crate) struct ChunkAssembler {
    writer: ChunkWriter<BufWriter<File>>,
    start: clock::Instant,
    refs: Referenced,
    scanner: Scanner,
    known_types: usize,
    losses_at_start: LossCounts,
    scratch: Vec<u8>,
}

impl ChunkAssembler {
    /// Starts a chunk at the current position of `out`.
    pub(crate) fn begin(out: BufWriter<File>, losses_at_start: LossCounts) -> io::Result<Self> {
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
            refs: Referenced::default(),
            scanner: Scanner::default(),
            known_types: usize::MAX, // forces the first refresh
            losses_at_start,
            scratch: Vec::new(),
        })
    }

    /// Absolute file offset where this chunk starts.
    pub(crate) fn start_offset(&self) -> u64 {
        self.writer.base()
    }

    /// Bytes in the chunk so far.
    pub(crate) fn len(&self) -> u64 {
        self.writer.len()
    }

    /// Writes the complete, unflushed events of `block` into the chunk.
    pub(crate) fn add_block(&mut self, block: &Block) -> io::Result<usize> {
        self.refresh_layouts();
        let (scanner, refs, writer) = (&self.scanner, &mut self.refs, &mut self.writer);
        let written = block.drain_with(|bytes| {
            let bytes = match scanner.scan(bytes, refs) {
                Ok(_) => bytes,
                Err(bad) => {
                    // Our own encoder wrote these bytes; a walk failure is a
                    // bug. Keep the file readable: write the records before it.
                    debug_assert!(false, "malformed record at {}", bad.at);
                    &bytes[..bad.at]
                }
            };
            writer.write_events(bytes).map(|_| bytes.len())
        });
        written.unwrap_or(Ok(0))
    }

    fn refresh_layouts(&mut self) {
        let reg = registry();
        let n = reg.type_count();
        if n != self.known_types {
            self.scanner.update(reg.layouts());
            self.known_types = n;
        }
    }

    /// Writes the end-of-chunk events, the metadata and the constants, and
    /// finishes the chunk. Returns the file, positioned after the chunk.
    pub(crate) fn finish(
        mut self,
        rt: &Runtime,
        frames: &mut FrameTables,
        last: bool,
    ) -> io::Result<BufWriter<File>> {
        let end = clock::now();
        self.scratch.clear();
        let losses = rt.losses.snapshot();
        write_loss_events(
            &mut self.scratch,
            end.ticks,
            &losses.since(&self.losses_at_start),
            &losses,
        );
        write_active_settings(&mut self.scratch, end.ticks);
        self.writer.write_events(&self.scratch)?;

        let (metadata, metadata_id) = registry().metadata();
        self.writer
            .write_metadata(&metadata, metadata_id, end.ticks)?;

        let mut cp = Checkpoint::new(chunk_writer::checkpoint::FLAG_FLUSH);
        let threads: Vec<u64> = self.refs.threads.iter().copied().collect();
        rt.threads.write_pool(&mut cp, &threads);
        let stacks: Vec<u64> = self.refs.stacks.iter().copied().collect();
        frames.write_pools(&mut cp, &rt.stacks, &stacks);
        // The enum-like pools are small and always written: samples refer to
        // thread states without the scan collecting them, and a chunk needs a
        // non-empty checkpoint to be followed by others.
        {
            let mut pool = cp.pool(TypeId::FRAME_TYPE);
            for (k, name) in frame_type::ALL {
                write_simple_string(pool.entry(k), name);
            }
        }
        {
            let mut pool = cp.pool(TypeId::THREAD_STATE);
            for (k, name) in thread_state::ALL {
                write_simple_string(pool.entry(k), name);
            }
        }
        self.writer.write_checkpoint(&cp, end.ticks, 0)?;
        let duration_nanos = (end.wall_nanos - self.start.wall_nanos).max(0);
        self.writer.finish(ChunkEnd {
            duration_nanos,
            ticks_per_second: None,
            last,
        })
    }
}

/// `flightrec.EventsLost` per cause with losses in this chunk, and one
/// `jdk.DataLoss` with the bytes.
fn write_loss_events(out: &mut Vec<u8>, ticks: i64, delta: &LossCounts, total: &LossCounts) {
    let mut bytes = 0;
    for (i, cause) in LossCause::ALL.iter().enumerate() {
        if delta.events[i] == 0 {
            continue;
        }
        bytes += delta.bytes[i];
        let r = begin_record(out, TypeId::EVENTS_LOST);
        out.put_i64(ticks);
        out.put_str(cause.name());
        out.put_i64(delta.events[i] as i64);
        out.put_i64(delta.bytes[i] as i64);
        out.put_i64(total.events[i] as i64);
        end_record(out, r);
    }
    if bytes > 0 {
        let r = begin_record(out, TypeId::DATA_LOSS);
        out.put_i64(ticks);
        out.put_i64(bytes as i64);
        out.put_i64(total.bytes.iter().sum::<u64>() as i64);
        end_record(out, r);
    }
}

/// One `jdk.ActiveSetting` per setting of every registered type.
fn write_active_settings(out: &mut Vec<u8>, ticks: i64) {
    let reg = registry();
    for ty in reg.types() {
        let word = ty.word.load(crate::sync::Ordering::Acquire);
        let mut put = |name: &str, value: &str| {
            let r = begin_record(out, TypeId::ACTIVE_SETTING);
            out.put_i64(ticks);
            out.put_i64(ty.id().0 as i64);
            out.put_str(name);
            out.put_str(value);
            end_record(out, r);
        };
        put(
            "enabled",
            if word & settings::ENABLED != 0 {
                "true"
            } else {
                "false"
            },
        );
        put(
            "stackTrace",
            if word & settings::STACK_TRACE != 0 {
                "true"
            } else {
                "false"
            },
        );
        if ty.info.kind == crate::event::descriptor::EventKind::Duration {
            let nanos = clock::ticks_to_nanos(settings::threshold_ticks(word) as i64);
            put(
                "threshold",
                &settings::format_duration(std::time::Duration::from_nanos(nanos as u64)),
            );
        }
    }
}
