//! Hooks for the loom models in `loom-tests/`: thin handles over the
//! recorder's real protocol code (the runtime, writer slots, the rotation
//! core, the constants' epoch tags, the registry's settings words, the
//! sampler's queue).
//! Built only under `cfg(flightrec_loom)`; not part of the API, no semver.
//!
//! Everything here is created inside a `loom::model` closure: the loom
//! atomics and mutexes inside belong to one execution, so nothing global is
//! used (the models never touch `runtime::get()` or `registry()`).

use jfr_format::TypeId;
use jfr_format::write::encode::Sink;
use jfr_format::write::record::EventEncoder;

use crate::base::enabled as settings_word;
use crate::base::loss::LossCounts;
use crate::base::sync::{Arc, Ordering};
use crate::buffer::block::Block;
use crate::buffer::encode::Encode;
use crate::buffer::local;
use crate::buffer::slot::{Emitted, ThreadSlot};
use crate::config::builder::{DEFAULT_MAX_MEMORY, DEFAULT_THREAD_BUFFER};
use crate::config::settings::Settings;
use crate::epoch::rotation;
use crate::event::descriptor::{EventKind, EventType};
use crate::runtime;
use crate::sampler::handler::queue;

/// Bytes per block in the models (the shrunk default thread buffer).
pub const BLOCK_SIZE: usize = DEFAULT_THREAD_BUFFER;
/// Blocks the models' pool may allocate.
pub const MAX_BLOCKS: usize = DEFAULT_MAX_MEMORY / DEFAULT_THREAD_BUFFER;
/// Samples a sampler queue holds.
pub const QUEUE_CAPACITY: usize = queue::QUEUE_CAPACITY;

// === records ===

/// Encodes one model event record as the recorder's encoder writes it:
/// size, type id, then `thread` and `stack` constant keys and `value`, all
/// varints.
pub fn record(type_id: u64, thread: u64, stack: u64, value: u64) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = encode(&mut buf, type_id, thread, stack, value).expect("fits 64 bytes");
    buf[..n].to_vec()
}

fn encode(buf: &mut [u8], type_id: u64, thread: u64, stack: u64, value: u64) -> Option<usize> {
    let mut e = EventEncoder::begin(buf, TypeId(type_id));
    e.put_varint(thread);
    e.put_varint(stack);
    e.put_varint(value);
    e.finish()
}

/// Splits drained bytes into [`record`]s and returns their `value`s, with
/// their thread and stack keys.
pub fn decode(bytes: &[u8]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let size = bytes[pos] as usize;
        assert!(
            size > 0 && pos + size <= bytes.len(),
            "torn record at {pos}"
        );
        let r = &bytes[pos..pos + size];
        // size, type, thread, stack, value: one byte each for small keys.
        assert_eq!(r.len(), 5, "model records use one-byte varints");
        out.push((r[2], r[3], r[4]));
        pos += size;
    }
    out.into_iter()
        .map(|(t, s, v)| (u64::from(t), u64::from(s), u64::from(v)))
        .collect()
}

// === runtime ===

/// One drain into a chunk: the drained bytes and the epoch tag of the block
/// they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drained {
    /// The epoch the block was tagged with.
    pub block_epoch: u64,
    /// The bytes drained (whole records).
    pub bytes: Vec<u8>,
}

/// A model's runtime: the recorder's real [`runtime::Runtime`] (epoch, pool,
/// slots, thread and stack registries, losses) with the shrunk sizes.
#[derive(Debug)]
pub struct Runtime(runtime::Runtime);

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime {
    /// A runtime in epoch 1 with [`BLOCK_SIZE`] × [`MAX_BLOCKS`].
    pub fn new() -> Self {
        Self(runtime::Runtime::new(BLOCK_SIZE, MAX_BLOCKS, 8, 1 << 20))
    }

    /// The current epoch (Acquire).
    pub fn epoch(&self) -> u64 {
        self.0.epoch.load(Ordering::Acquire)
    }

    /// Registers a writer thread (what a thread's first event does) with
    /// kernel id `os_tid`.
    pub fn attach(&self, os_tid: i64) -> Writer {
        let key = self
            .0
            .threads
            .key_for_tid(os_tid, || format!("model-{os_tid}"));
        Writer(local::register(&self.0, key))
    }

    /// The recorder's rotation core ([`rotation::rotate`]): safepoint, then
    /// the live and sealed blocks of the old epoch into `chunk`. Returns the
    /// epoch closed.
    pub fn rotate(&self, chunk: &mut Vec<Drained>) -> u64 {
        self.rotate_epoch(self.0.epoch.load(Ordering::Acquire), chunk)
    }

    /// Arms the pool's size marks for the chunk of epoch `open` so that the
    /// seal that brings its count to `flip_at` bytes flips the epoch itself
    /// (`BufferPool::arm`; the wake-up mark is left unreachable).
    /// Every chunk before `open` counts as finished
    /// (`BufferPool::chunks_finished_before`), so the seal may flip.
    pub fn arm_seal_flip(&self, open: u64, flip_at: u64) {
        self.0.pool.chunks_finished_before(open);
        self.0.pool.arm(open, u64::MAX, flip_at);
    }

    /// The chunks of every epoch before `epoch` are finished: a seal may
    /// flip the epoch up to `epoch + 2` (`BufferPool::chunks_finished_before`).
    pub fn chunks_finished_before(&self, epoch: u64) {
        self.0.pool.chunks_finished_before(epoch);
    }

    /// [`Self::rotate`] closing epoch `open`, which a writer's seal may have
    /// flipped already (the recorder knows its chunk's epoch).
    pub fn rotate_epoch(&self, open: u64, chunk: &mut Vec<Drained>) -> u64 {
        let r: Result<u64, ()> = rotation::rotate(&self.0, open, None, &mut |b: &_| {
            collect(b, chunk);
            Ok(())
        });
        r.expect("the model sink never fails")
    }

    /// The recording's last stop as `Recorder::finish_chunk` runs it for
    /// the last chunk, of epoch `open`: the pool closed for `open + 1`
    /// (`BufferPool::close_from`), then the rotation core closing `open`.
    /// The models' writers play events whose type check passed before
    /// the stop turned their types off. Returns the epoch closed.
    pub fn stop(&self, open: u64, chunk: &mut Vec<Drained>) -> u64 {
        self.0.pool.close_from(open + 1);
        self.rotate_epoch(open, chunk)
    }

    /// [`Self::rotate_epoch`] as `Recorder::finish_chunk` runs it: with
    /// the flip it arms the next epoch's hard mark at `flip_at` bytes, so a writer's seal may flip that epoch too while the chunk
    /// of `open` is still being finished.
    pub fn rotate_epoch_arming_next(
        &self,
        open: u64,
        flip_at: u64,
        chunk: &mut Vec<Drained>,
    ) -> u64 {
        let r: Result<u64, ()> =
            rotation::rotate(&self.0, open, Some((u64::MAX, flip_at)), &mut |b: &_| {
                collect(b, chunk);
                Ok(())
            });
        r.expect("the model sink never fails")
    }

    /// The recorder's periodic flush (`Recorder::step` with a flush due):
    /// sealed blocks, then live blocks, of the current epoch into `chunk`.
    pub fn flush(&self, chunk: &mut Vec<Drained>) {
        let epoch = self.0.epoch.load(Ordering::Acquire);
        let r: Result<(), ()> = rotation::drain_sealed(&self.0, epoch, &mut |b: &_| {
            collect(b, chunk);
            Ok(())
        })
        .and_then(|()| {
            rotation::drain_live(&self.0, epoch, &mut |b: &_| {
                collect(b, chunk);
                Ok(())
            })
        });
        r.expect("the model sink never fails");
    }

    /// Interns a stack (the commit path's `capture_stack`); returns its key.
    pub fn intern_stack(&self, frames: &[u64]) -> u64 {
        let epoch = self.0.epoch.load(Ordering::Relaxed);
        self.0.stacks.intern(frames, false, epoch).unwrap_or(0)
    }

    /// What the commit path does for an event with a stack trace before its
    /// write section (`capture_stack`, `stack_keys`): interns `frames` with
    /// the epoch read now and notes the stack in `writer`'s slot. Returns
    /// its key.
    pub fn intern_stack_for(&self, writer: &Writer, frames: &[u64]) -> u64 {
        let epoch = self.0.epoch.load(Ordering::Relaxed);
        let key = self.0.stacks.intern(frames, false, epoch).unwrap_or(0);
        writer.0.note_stack(key, epoch);
        key
    }

    /// The threads tagged with `epoch`: what the chunk of `epoch` writes.
    pub fn tagged_threads(&self, epoch: u64) -> Vec<u64> {
        self.0.threads.tagged(epoch)
    }

    /// The stacks tagged with `epoch`: what the chunk of `epoch` writes.
    pub fn tagged_stacks(&self, epoch: u64) -> Vec<u64> {
        self.0.stacks.tagged(epoch)
    }

    /// What `Recorder::rotate` does once the chunk of `closed` is written:
    /// releases the stacks not tagged since the flip.
    pub fn release_stacks_after(&self, closed: u64) {
        self.0.stacks.release_before(closed + 1);
    }

    /// True if the stack repository can resolve `key` (what the chunk's
    /// stack-trace pool is written from).
    pub fn stack_known(&self, key: u64) -> bool {
        self.0.stacks.get(key).is_some()
    }

    /// True if the thread registry can resolve `key` (what the chunk's
    /// thread pool is written from).
    pub fn thread_known(&self, key: u64) -> bool {
        self.0.threads.is_known(key)
    }

    /// Threads exited before `epoch` are forgotten (end of a rotation).
    pub fn prune_exited_before(&self, epoch: u64) {
        self.0.threads.prune_exited_before(epoch);
    }

    /// Registered writer slots (exited ones are forgotten by drains).
    pub fn slot_count(&self) -> usize {
        self.0.slots.lock().len()
    }

    /// Blocks in sealed queue.
    pub fn sealed_count(&self) -> usize {
        self.0.pool.full_queue().len()
    }

    /// Dropped events so far.
    pub fn losses(&self) -> LossCounts {
        self.0.losses.snapshot()
    }
}

fn collect(b: &Block, chunk: &mut Vec<Drained>) {
    let block_epoch = b.epoch();
    let _ = b.drain_with(|bytes, _| {
        chunk.push(Drained {
            block_epoch,
            bytes: bytes.to_vec(),
        });
        Ok::<(), ()>(())
    });
}

/// A registered writer thread's slot.
#[derive(Debug)]
pub struct Writer(Arc<ThreadSlot>);

impl Writer {
    /// The thread's constant key.
    pub fn key(&self) -> u64 {
        self.0.thread_key
    }

    /// Commits `rec` through the real write section ([`ThreadSlot::emit`]).
    /// True if written, false if dropped (and counted).
    pub fn emit(&self, rt: &Runtime, rec: &[u8]) -> bool {
        let copy = |buf: &mut [u8]| {
            let dst = buf.get_mut(..rec.len())?;
            dst.copy_from_slice(rec);
            Some(rec.len())
        };
        let r = self.0.emit(&rt.0.epoch, &rt.0.pool, &rt.0.losses, &copy);
        matches!(r, Emitted::Written(_))
    }

    /// [`Self::emit`], saying what became of the event.
    pub fn commit(&self, rt: &Runtime, rec: &[u8]) -> Outcome {
        let copy = |buf: &mut [u8]| {
            let dst = buf.get_mut(..rec.len())?;
            dst.copy_from_slice(rec);
            Some(rec.len())
        };
        match self.0.emit(&rt.0.epoch, &rt.0.pool, &rt.0.losses, &copy) {
            Emitted::Written(_) => Outcome::Written,
            Emitted::Dropped => Outcome::Dropped,
            Emitted::NotCommitted => Outcome::NotCommitted,
        }
    }

    /// Commits a model event (thread, stack, `value`, as [`record`] lays
    /// it out) of type `type_id` through the real write section, as the
    /// commit path's `EventRecord` does: its stack, noted by
    /// [`Runtime::intern_stack_for`], goes through the section's stack tag
    /// (`ThreadSlot::stack_in_section`), and the writer's thread is tagged
    /// by its slot. Returns whether it was written (the stack key written
    /// is 0 if the stack was released before the section).
    pub fn emit_event(&self, rt: &Runtime, type_id: u64, stack: u64, value: u64) -> bool {
        let ev = ModelEvent {
            rt: &rt.0,
            slot: &self.0,
            type_id,
            stack,
            value,
        };
        let r = self.0.emit(&rt.0.epoch, &rt.0.pool, &rt.0.losses, &ev);
        matches!(r, Emitted::Written(_))
    }

    /// The thread exits (its handle's destructor): thread constant marked
    /// exited, block sealed, slot retired.
    pub fn exit(self, rt: &Runtime) {
        local::exit(&rt.0, &self.0);
    }
}

/// What became of one commit ([`Writer::commit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Written into the writer's block.
    Written,
    /// Dropped, and counted as lost.
    Dropped,
    /// Not committed, not counted: the section came after the last stop's
    /// final flip (`Emitted::NotCommitted`).
    NotCommitted,
}

/// A model event with the commit path's constant handling.
struct ModelEvent<'a> {
    rt: &'a runtime::Runtime,
    slot: &'a ThreadSlot,
    type_id: u64,
    stack: u64,
    value: u64,
}

impl Encode for ModelEvent<'_> {
    fn encode(&self, buf: &mut [u8], epoch: u64) -> Option<usize> {
        let stack = if self.stack != 0 {
            self.slot.stack_in_section(self.rt, self.stack, epoch)
        } else {
            0
        };
        encode(buf, self.type_id, self.slot.thread_key, stack, self.value)
    }
}

// === settings ===

/// A model's type registry: the real [`crate::event::registry::Registry`], not the global.
#[derive(Debug)]
pub struct Registry(crate::event::registry::Registry);

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry, not recording.
    pub fn new() -> Self {
        Self(crate::event::registry::Registry::new())
    }

    /// Registers `ty` and returns its settings word.
    pub fn register(&self, ty: &'static EventType) -> u64 {
        self.0.register(ty)
    }

    /// `Registry::apply`: installs `settings`, rewrites every type's word.
    pub fn apply(&self, settings: Settings, recording: bool) {
        self.0.apply(settings, recording);
    }
}

/// The hot path's read of a registered type's word
/// (`EventType::enabled_word`), 0 when the type is disabled. `ty` must be
/// registered (else the global registry would be used).
pub fn word(ty: &'static EventType) -> u64 {
    assert!(
        ty.word.load(Ordering::Relaxed) & settings_word::REGISTERED != 0,
        "register the type with the model's Registry first"
    );
    ty.enabled_word().map_or(0, |w| w.bits())
}

/// A word's `(enabled, stack_trace, threshold_ticks)`.
pub fn unpack(word: u64) -> (bool, bool, u64) {
    (
        word & settings_word::ENABLED != 0,
        word & settings_word::STACK_TRACE != 0,
        settings_word::threshold_ticks(word),
    )
}

/// The word `Registry` computes for these settings, for a type of `kind`
/// (under loom the clock is never the TSC).
pub fn pack(kind: EventKind, enabled: bool, stack_trace: bool, threshold_ticks: u64) -> u64 {
    let fixed = match kind {
        EventKind::Duration => settings_word::DURATION,
        EventKind::Instant => 0,
    };
    settings_word::pack(enabled, stack_trace, threshold_ticks, fixed)
}

/// Ticks of `d` (the registry's conversion of thresholds).
pub fn duration_to_ticks(d: std::time::Duration) -> u64 {
    crate::base::clock::duration_to_ticks(d) as u64
}

// === sampler queue ===

/// The sampler's slot table ([`queue::SlotTable`]), real code.
#[derive(Debug)]
pub struct SampleSlots(queue::SlotTable);

impl Default for SampleSlots {
    fn default() -> Self {
        Self::new()
    }
}

impl SampleSlots {
    /// An empty table.
    pub fn new() -> Self {
        Self(queue::SlotTable::new())
    }

    /// Sampler: claims a slot for `tid` (`SlotTable::assign`); returns its
    /// index and generation (what the timer's signal value carries).
    pub fn assign(&self, tid: u64) -> Option<(usize, u64)> {
        self.0.assign(tid)
    }

    /// What the signal handler does with a signal for (`index`,
    /// `generation`), minus unwinding: `SlotTable::admit` (entering the
    /// slot), `SampleQueue::push_with` of a sample stamped `ticks` whose
    /// frames are `ticks` repeated `len` times, and leaving the slot.
    /// Returns whether the sample was queued.
    ///
    /// Loom has no model of signals: the caller runs this on an extra loom
    /// thread, which can interleave with the sampled thread's own code in
    /// ways a handler (which runs *instead of* it) cannot. That
    /// over-approximates the real interleavings, so a model that passes
    /// still holds for the real handler.
    pub fn handler(&self, index: usize, generation: u64, ticks: i64, len: u16) -> bool {
        let Some(slot) = self.0.admit(index, generation) else {
            return false;
        };
        // SAFETY: the model runs one handler thread per slot, as the real
        // handler is the only producer of its thread's slot.
        unsafe {
            slot.queue.push_with(|s| {
                s.ticks = ticks;
                s.len = len;
                for f in &mut s.frames[..usize::from(len)] {
                    *f = ticks as u64;
                }
            })
        }
    }

    /// Sampler: drains the queue of slot `index` (`SampleQueue::drain`);
    /// returns `(ticks, frames)` of each sample, oldest first.
    pub fn drain(&self, index: usize) -> Vec<(i64, Vec<u64>)> {
        let Some(slot) = self.0.get(index) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        // SAFETY: the model's sampler thread is the only consumer.
        unsafe {
            slot.queue
                .drain(|s| out.push((s.ticks, s.frames().to_vec())))
        };
        out
    }

    /// Sampler: takes the count of samples lost to a full queue.
    pub fn take_lost(&self, index: usize) -> u64 {
        self.0.get(index).map_or(0, |s| s.queue.take_lost())
    }

    /// Sampler: frees slot `index` as `Consumer::release` does after
    /// deleting the timers: `SampleSlot::retire` (its `tid` reset, then the
    /// wait for handlers inside it), then the last drain, whose samples it
    /// returns as [`drain`](Self::drain) does.
    pub fn release(&self, index: usize) -> Vec<(i64, Vec<u64>)> {
        if let Some(slot) = self.0.get(index) {
            slot.retire();
        }
        self.drain(index)
    }
}
