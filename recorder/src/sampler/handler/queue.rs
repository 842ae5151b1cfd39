//! Preallocated per-thread sample queues and the table of sampled threads.
//!
//! # Slots
//!
//! [`SlotTable`] has [`MAX_THREADS`] entries, each an `AtomicPtr` to a
//! [`SampleSlot`]. A slot is allocated by the sampler thread the first time it
//! is needed and never freed while the process lives: a timer signal already
//! queued for a thread may still arrive after its timer was deleted, and the
//! handler must then find valid memory. When a thread exits, its slot is
//! released (its `tid` reset to 0) and reused for the next new thread, under a
//! new generation number.
//!
//! ```text
//!            sampler: assign(tid, gen)          sampler: retire(), drain
//!   Free ───────────────────────────► Armed ─────────────────────────► Free
//!   (tid 0; nobody writes)             (handler of `tid` pushes,
//!                                       sampler pops)
//! ```
//!
//! # Entering a slot (handler) and retiring it (sampler)
//!
//! A signal names a slot and the generation its timer was armed for. The
//! handler first *enters* the slot (increments `in_handler`), then checks
//! that the slot is still owned (`tid != 0`) by that generation, and leaves
//! (decrements) when done or rejected. The sampler *retires* a slot by
//! resetting `tid` to 0 and then waiting until `in_handler` is 0; only then
//! does it drain the queue for the last time and let `assign` reuse the slot.
//! The handler's increment and the sampler's `tid` store are each followed by
//! a `SeqCst` fence before the other side's variable is read (Dekker), so
//! either the handler sees `tid == 0` (and drops its sample) or the sampler
//! sees the handler inside (and waits for it to push and leave). Hence:
//!
//! Invariant: once `retire` returns, no signal of the retired owner writes
//! into the slot, so the last drain takes every sample of that owner and the
//! next owner's queue starts with none of them. The handler never waits; the
//! sampler waits at most one handler's bounded run.
//!
//! # Queue
//!
//! Each slot holds a single-producer single-consumer ring of [`RawSample`]s.
//! The producer is the signal handler running on the slot's thread (a timer
//! signal is blocked while its handler runs, so there is one producer at a
//! time; retiring keeps a late signal of a previous owner from being a
//! second one); the consumer is the sampler thread. `tail` is written only
//! by the producer, `head` only by the consumer. A full ring drops the sample
//! and increments `lost`.
//!
//! Invariant: entries `head..tail` (mod capacity) are fully written samples
//! that only the consumer reads; entries outside are only touched by the
//! producer.

use crate::base::sync::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, UnsafeCell, fence};

/// Retiring a slot skips the wait for handlers inside it: the loom negative
/// control `skip_retire_wait` (see `ci/loom.sh`).
pub(crate) const SKIP_RETIRE_WAIT: bool = cfg!(flightrec_loom_weaken = "skip_retire_wait");

/// Most threads sampled at once; more are not sampled (and counted).
pub(crate) const MAX_THREADS: usize = if cfg!(any(flightrec_loom, miri)) {
    4
} else {
    4096
};

/// The handler's per-slot unwinder state (the loom models never unwind:
/// the unwinder only touches the scratch of its own thread's slot).
pub(crate) type Scratch = super::capture::Scratch;

/// Deepest stack a sample records.
pub(crate) const MAX_DEPTH: usize = 128;

/// Samples a thread's queue holds before the sampler drains it.
pub(crate) const QUEUE_CAPACITY: usize = if cfg!(any(flightrec_loom, miri)) {
    2
} else {
    32
};

/// What made a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SampleKind {
    /// The thread's CPU-time timer expired.
    CpuTime = 0,
    /// The wall-clock timer expired.
    Wall = 1,
}

/// One captured sample, as the handler writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawSample {
    /// `clock::ticks()` in the handler.
    pub(crate) ticks: i64,
    pub(crate) kind: SampleKind,
    /// The thread consumed CPU since its previous wall-clock sample.
    pub(crate) running: bool,
    /// The unwind stopped early (unreadable memory, no unwind info).
    pub(crate) failed: bool,
    /// The stack had more than [`MAX_DEPTH`] frames.
    pub(crate) truncated: bool,
    pub(crate) len: u16,
    /// Expiries merged into this one signal (the kernel checks CPU timers
    /// at its tick, so periods shorter than a tick arrive as overruns).
    pub(crate) overrun: u32,
    /// Ticks the handler spent on this sample, from its entry to the end
    /// of the unwind (summed into `crate::lifecycle::statistics` by the consumer).
    pub(crate) handler_ticks: u64,
    /// The thread's label context id when the signal came (see
    /// `crate::labels`); 0 for none.
    pub(crate) context: u64,
    /// Lookup addresses, innermost first: the interrupted PC unadjusted,
    /// then return addresses minus one.
    pub(crate) frames: [u64; MAX_DEPTH],
}

impl RawSample {
    pub(crate) const EMPTY: RawSample = RawSample {
        ticks: 0,
        kind: SampleKind::CpuTime,
        running: false,
        failed: false,
        truncated: false,
        len: 0,
        overrun: 0,
        handler_ticks: 0,
        context: 0,
        frames: [0; MAX_DEPTH],
    };

    /// The recorded frames.
    pub(crate) fn frames(&self) -> &[u64] {
        &self.frames[..self.len as usize]
    }
}

/// A single-producer single-consumer ring of samples.
#[derive(Debug)]
pub(crate) struct SampleQueue {
    /// Next entry the consumer reads (consumer-owned).
    pub(crate) head: AtomicUsize,
    /// Next entry the producer writes (producer-owned).
    pub(crate) tail: AtomicUsize,
    /// Samples dropped because the ring was full.
    pub(crate) lost: AtomicU64,
    pub(crate) entries: Box<[UnsafeCell<RawSample>]>,
}

// SAFETY: entries are accessed by one producer and one consumer, which the
// head/tail protocol (module docs) keeps on disjoint entries.
unsafe impl Sync for SampleQueue {}

impl SampleQueue {
    /// Producer: writes one sample with `fill`, or counts it lost if the ring
    /// is full. Async-signal-safe: two loads, one store, no allocation.
    ///
    /// # Safety
    ///
    /// Only one producer may call this at a time (the handler on the slot's
    /// thread; the timer signal is blocked while it runs).
    #[inline]
    pub(crate) unsafe fn push_with(&self, fill: impl FnOnce(&mut RawSample)) -> bool {
        let tail = self.tail.load(Ordering::Relaxed);
        // Acquire: the consumer's reads of the entry we are about to reuse
        // happened before it advanced `head`.
        let head = self.head.load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= QUEUE_CAPACITY {
            self.lost.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.entries[tail % QUEUE_CAPACITY].with_mut(|p| {
            // SAFETY: entry `tail` is outside `head..tail`, so the consumer
            // does not read it (module invariant) and we are the only
            // producer (caller's contract).
            fill(unsafe { &mut *p })
        });
        // Release: the entry's bytes are visible before the consumer sees it.
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Samples queued now (exact on the producer's side right after a
    /// push, unless the consumer drains meanwhile).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        tail.wrapping_sub(self.head.load(Ordering::Relaxed))
    }
}

/// Everything the handler needs for one thread, allocated outside it.
#[derive(Debug)]
pub(crate) struct SampleSlot {
    /// Kernel thread id of the thread this slot samples; 0 when free.
    pub(crate) tid: AtomicU64,
    /// Bumped at each assignment; signals carry it so a late signal of a
    /// previous owner is recognised and dropped.
    pub(crate) generation: AtomicU64,
    /// The thread's stack `[lo, hi)`, found by the sampler from a stack
    /// pointer the handler reported; 0/0 while unknown.
    pub(crate) stack_lo: AtomicU64,
    pub(crate) stack_hi: AtomicU64,
    /// The last interrupted stack pointer (for the bounds lookup).
    pub(crate) last_sp: AtomicU64,
    /// The thread's CPU time at its previous wall-clock sample (nanoseconds).
    pub(crate) last_cpu_nanos: AtomicU64,
    /// CPU-time signals this thread received (for its exit, see `birth`).
    pub(crate) cpu_signals: AtomicU64,
    /// Handlers now inside this slot: entered by every signal naming the
    /// slot, current or late (module docs). Waited for by `retire` and by
    /// the unwinder swap. A count, not a flag: a late signal of the previous
    /// owner may enter while the owner's own handler is inside.
    pub(crate) in_handler: AtomicUsize,
    pub(crate) queue: SampleQueue,
    /// Per-thread unwinder cache and stack snapshot: only the handler on the
    /// slot's thread touches them.
    pub(crate) scratch: UnsafeCell<Scratch>,
}

// SAFETY: `scratch` is only accessed by the handler running on the slot's
// own thread, one invocation at a time (the signal is blocked while its
// handler runs); everything else is atomics or the SPSC queue.
unsafe impl Sync for SampleSlot {}
// SAFETY: as above; the slot owns its data and holds no thread-bound handles.
unsafe impl Send for SampleSlot {}

/// A slot a handler has entered and been admitted to (current generation,
/// owned); leaves the slot when dropped. Async-signal-safe.
#[derive(Debug)]
pub(crate) struct Admitted<'a>(&'a SampleSlot);

impl std::ops::Deref for Admitted<'_> {
    type Target = SampleSlot;

    fn deref(&self) -> &SampleSlot {
        self.0
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        // SeqCst (a Release at least): the handler's pushes and table use
        // finish before `retire` or the unwinder swap see it gone.
        self.0.in_handler.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The fixed table of slots, indexed by the number carried in the signal.
#[derive(Debug)]
pub(crate) struct SlotTable {
    pub(crate) slots: Box<[AtomicPtr<SampleSlot>]>,
    pub(crate) next_generation: AtomicU64,
}

impl SlotTable {
    /// The slot at `index`, if allocated. Async-signal-safe (one load).
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&SampleSlot> {
        let p = self.slots.get(index)?.load(Ordering::Acquire);
        // SAFETY: non-null pointers come from Box::into_raw in `assign` and
        // are never freed (module docs), so they live as long as the table.
        unsafe { p.as_ref() }
    }

    /// Handler: enters the slot a signal for slot `index` of `generation`
    /// samples into, or returns `None` (having left it again) when the slot
    /// is missing, free, or owned by another generation (a late signal of a
    /// previous owner); both are dropped. The slot is left when the returned
    /// guard drops. Async-signal-safe: one RMW, one fence, loads, no wait.
    #[inline]
    pub(crate) fn admit(&self, index: usize, generation: u64) -> Option<Admitted<'_>> {
        let slot = self.get(index)?;
        slot.in_handler.fetch_add(1, Ordering::SeqCst);
        let entered = Admitted(slot);
        // SeqCst: the increment before the `tid` load, against `retire`'s
        // `tid` store before its `in_handler` load (module docs).
        fence(Ordering::SeqCst);
        // Acquire, and `tid` before `generation`: a `tid` stored by `assign`
        // brings the generation stored before it, so a late signal never
        // pairs its old generation with the next owner's `tid`.
        let owned = slot.tid.load(Ordering::Acquire) != 0
            && slot.generation.load(Ordering::Relaxed) == generation;
        owned.then_some(entered)
    }
}
