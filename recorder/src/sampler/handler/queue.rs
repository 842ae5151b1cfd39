//! The protocol between the sampling signal's handler and the sampler
//! thread over the preallocated per-thread slots and their sample rings:
//! both sides' steps, in one file. The handler is the producer, the sampler
//! thread the consumer. Making the table and the slots (which allocates)
//! is `super::super::slots`; nothing here allocates, locks or waits on the
//! handler's side.
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
//!            sampler: claim(tid, gen)           sampler: retire()
//!   Free ───────────────────────────► Armed ─────────────────► Retiring
//!   (tid 0; nobody writes)             (handler of `tid` pushes,   │
//!     ▲                                 sampler pops)               │
//!     └──────── sampler: in_handler seen 0, last drain ─────────────┘
//! ```
//!
//! # Who writes what
//!
//! | word | Free | Armed | Retiring |
//! |---|---|---|---|
//! | `tid` | sampler: `claim` stores the owner (Release) | sampler: `retire` stores 0 | nobody |
//! | `generation` | sampler: `claim`, before `tid` | nobody (handler reads) | nobody |
//! | `in_handler` | handler: a late signal enters and leaves | handler: +1 on entry, −1 on leaving | handler: −1 only (admitted earlier); sampler waits for 0 |
//! | ring `tail` | nobody | handler: `push_with` | handler: the push it was admitted for |
//! | ring `head` | sampler: the last drain | sampler: `drain` | nobody (the sampler waits in `retire`) |
//! | entries `head..tail` | nobody | sampler reads | sampler reads |
//! | entries outside | nobody | handler writes the one at `tail` | handler (admitted) |
//! | ring `lost` | nobody | handler: +1 when full; sampler: `take_lost` swaps 0 | as Armed |
//! | `stack_lo`, `stack_hi` | sampler: `claim` resets | sampler: stores once found (Release); handler reads | nobody |
//! | `last_sp` | sampler: `claim` resets | handler stores; sampler reads | handler (admitted) |
//! | `last_cpu_nanos`, `cpu_signals` | sampler: `claim` resets | handler updates; sampler reads `cpu_signals` | handler (admitted) |
//! | `scratch` | nobody | handler only | handler (admitted) only |
//!
//! "Admitted" is a handler that entered while the slot was Armed for its
//! generation (see [`SlotTable::admit`]); `retire` waits it out.
//!
//! # Entering a slot (handler) and retiring it (sampler)
//!
//! A signal names a slot and the generation its timer was armed for. The
//! handler first *enters* the slot (increments `in_handler`), then checks
//! that the slot is still owned (`tid != 0`) by that generation, and leaves
//! (decrements) when done or rejected. The sampler *retires* a slot by
//! resetting `tid` to 0 and then waiting until `in_handler` is 0; only then
//! does it drain the queue for the last time and let `claim` reuse the slot.
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

use super::sample::RawSample;
use crate::base::sync::{
    AtomicPtr, AtomicU64, AtomicUsize, Ordering, UnsafeCell, fence, spin_hint,
};

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

/// Samples a thread's queue holds before the sampler drains it.
pub(crate) const QUEUE_CAPACITY: usize = if cfg!(any(flightrec_loom, miri)) {
    2
} else {
    32
};

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

    /// Consumer: hands every queued sample to `f`, oldest first.
    ///
    /// # Safety
    ///
    /// Only one consumer may call this at a time (the sampler thread).
    pub(crate) unsafe fn drain(&self, mut f: impl FnMut(&RawSample)) -> usize {
        let head = self.head.load(Ordering::Relaxed);
        // Acquire: pairs with the producer's Release store of `tail`.
        let tail = self.tail.load(Ordering::Acquire);
        let mut i = head;
        while i != tail {
            self.entries[i % QUEUE_CAPACITY].with(|p| {
                // SAFETY: `i` is in `head..tail`: written completely and not
                // touched by the producer until `head` passes it.
                f(unsafe { &*p })
            });
            i = i.wrapping_add(1);
        }
        // Release: our reads finish before the producer reuses the entries.
        self.head.store(tail, Ordering::Release);
        tail.wrapping_sub(head)
    }

    /// Takes the count of samples lost to a full ring since the last call.
    pub(crate) fn take_lost(&self) -> u64 {
        self.lost.swap(0, Ordering::Relaxed)
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

impl SampleSlot {
    /// Sampler: takes the slot for `tid` under `generation` if it is free
    /// (Free → Armed): resets the words the previous owner left, then
    /// publishes `tid`. False if the slot is owned.
    pub(crate) fn claim(&self, tid: u64, generation: u64) -> bool {
        if self.tid.load(Ordering::Relaxed) != 0 {
            return false;
        }
        self.stack_lo.store(0, Ordering::Relaxed);
        self.stack_hi.store(0, Ordering::Relaxed);
        self.last_sp.store(0, Ordering::Relaxed);
        self.last_cpu_nanos.store(0, Ordering::Relaxed);
        self.cpu_signals.store(0, Ordering::Relaxed);
        self.generation.store(generation, Ordering::Relaxed);
        // Release: the reset fields before the signal that names them
        // (the timer is created after this store).
        self.tid.store(tid, Ordering::Release);
        true
    }

    /// Sampler: frees the slot for reuse and waits until no handler is
    /// inside it. After this, no signal of the owner it had writes into the
    /// queue (module docs), so one more drain takes its last samples.
    pub(crate) fn retire(&self) {
        self.tid.store(0, Ordering::Release);
        // SeqCst: the `tid` store before the `in_handler` load, against the
        // handler's increment before its `tid` load (module docs).
        fence(Ordering::SeqCst);
        if SKIP_RETIRE_WAIT {
            return;
        }
        self.wait_for_handlers();
    }

    /// Sampler: waits until no handler is inside the slot. A handler's run is
    /// bounded (no locks, at most `MAX_DEPTH` frames), so this is short.
    pub(crate) fn wait_for_handlers(&self) {
        let mut spins = 0u32;
        // Acquire: pairs with the Release decrement in `Admitted::drop`, so
        // everything the handler wrote happens-before what we do next.
        while self.in_handler.load(Ordering::Acquire) != 0 {
            spins = spins.saturating_add(1);
            if cfg!(not(flightrec_loom)) && spins > 64 {
                crate::base::sync::yield_now();
            } else {
                spin_hint();
            }
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_drops_and_counts_when_full() {
        let q = SampleQueue::new();
        for i in 0..QUEUE_CAPACITY + 3 {
            // SAFETY: single-threaded test: one producer.
            unsafe { q.push_with(|s| s.ticks = i as i64) };
        }
        assert_eq!(q.take_lost(), 3);
        let mut seen = Vec::new();
        // SAFETY: one consumer.
        let n = unsafe { q.drain(|s| seen.push(s.ticks)) };
        assert_eq!(n, QUEUE_CAPACITY);
        assert_eq!(seen, (0..QUEUE_CAPACITY as i64).collect::<Vec<_>>());
        // SAFETY: as above.
        assert!(unsafe { q.push_with(|s| s.ticks = 99) });
        // SAFETY: as above.
        unsafe { q.drain(|s| assert_eq!(s.ticks, 99)) };
    }

    #[test]
    fn admit_enters_only_the_current_owner_and_leaves() {
        let t = SlotTable::new();
        let (a, ga) = t.assign(10).unwrap();
        let slot = t.get(a).unwrap();
        {
            let inside = t.admit(a, ga).expect("current generation");
            assert_eq!(inside.in_handler.load(Ordering::Relaxed), 1);
            assert!(t.admit(a, ga + 1).is_none(), "another generation");
            assert_eq!(slot.in_handler.load(Ordering::Relaxed), 1);
        }
        assert_eq!(slot.in_handler.load(Ordering::Relaxed), 0);
        slot.retire();
        assert!(t.admit(a, ga).is_none(), "a late signal after retire");
        let (c, gc) = t.assign(12).unwrap();
        assert_eq!(c, a);
        assert!(t.admit(a, ga).is_none(), "the previous owner's generation");
        assert!(t.admit(a, gc).is_some());
        assert_eq!(slot.in_handler.load(Ordering::Relaxed), 0);
    }
}
