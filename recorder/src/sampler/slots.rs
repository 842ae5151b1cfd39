//! The sampler's side of the slots and queues the handler writes into
//! ([`super::handler::queue`], where the protocol is described): making
//! them, assigning a slot to a thread (allocating it the first time),
//! draining a queue, and retiring a slot once no handler is inside it.
//! Never called from the signal handler.

use super::handler::queue::{
    MAX_THREADS, QUEUE_CAPACITY, RawSample, SKIP_RETIRE_WAIT, SampleQueue, SampleSlot, Scratch,
    SlotTable,
};
use crate::base::sync::{
    AtomicPtr, AtomicU64, AtomicUsize, Ordering, UnsafeCell, fence, spin_hint,
};

impl SampleQueue {
    pub(crate) fn new() -> Self {
        Self {
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            lost: AtomicU64::new(0),
            entries: (0..QUEUE_CAPACITY)
                .map(|_| UnsafeCell::new(RawSample::EMPTY))
                .collect(),
        }
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

impl SampleSlot {
    fn new() -> Self {
        Self {
            tid: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            stack_lo: AtomicU64::new(0),
            stack_hi: AtomicU64::new(0),
            last_sp: AtomicU64::new(0),
            last_cpu_nanos: AtomicU64::new(0),
            cpu_signals: AtomicU64::new(0),
            in_handler: AtomicUsize::new(0),
            queue: SampleQueue::new(),
            scratch: UnsafeCell::new(Scratch::new()),
        }
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

impl SlotTable {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..MAX_THREADS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            next_generation: AtomicU64::new(1),
        }
    }

    /// Sampler: claims a free slot for `tid`, allocating one if needed.
    /// Returns its index and generation, or `None` if the table is full.
    pub(crate) fn assign(&self, tid: u64) -> Option<(usize, u64)> {
        let generation = self.next_generation.fetch_add(1, Ordering::Relaxed) & 0xffff;
        for (i, cell) in self.slots.iter().enumerate() {
            let p = cell.load(Ordering::Acquire);
            let slot = if p.is_null() {
                let fresh = Box::into_raw(Box::new(SampleSlot::new()));
                // Release: the slot's initial contents before its pointer.
                cell.store(fresh, Ordering::Release);
                // SAFETY: just created from a Box; never freed.
                unsafe { &*fresh }
            } else {
                // SAFETY: as in `get`.
                unsafe { &*p }
            };
            if slot.tid.load(Ordering::Relaxed) != 0 {
                continue;
            }
            slot.stack_lo.store(0, Ordering::Relaxed);
            slot.stack_hi.store(0, Ordering::Relaxed);
            slot.last_sp.store(0, Ordering::Relaxed);
            slot.last_cpu_nanos.store(0, Ordering::Relaxed);
            slot.cpu_signals.store(0, Ordering::Relaxed);
            slot.generation.store(generation, Ordering::Relaxed);
            // Release: the reset fields before the signal that names them
            // (the timer is created after this store).
            slot.tid.store(tid, Ordering::Release);
            return Some((i, generation));
        }
        None
    }

    /// Every allocated slot, with its index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &SampleSlot)> {
        (0..self.slots.len()).filter_map(|i| self.get(i).map(|s| (i, s)))
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
    fn slots_are_reused_with_new_generations() {
        let t = SlotTable::new();
        let (a, ga) = t.assign(10).unwrap();
        let (b, _) = t.assign(11).unwrap();
        assert_ne!(a, b);
        t.get(a).unwrap().retire();
        let (c, gc) = t.assign(12).unwrap();
        assert_eq!(c, a);
        assert_ne!(ga, gc);
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
