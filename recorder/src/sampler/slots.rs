//! Making the slots and queues the handler writes into: the table, each
//! slot (allocated the first time a thread needs it, never freed) and its
//! ring, and finding a slot to assign to a thread. The protocol both sides
//! follow over them, the sampler's steps included, is
//! [`super::handler::queue`]; this file is the part that allocates, so it
//! lives outside `handler/`. Never called from the signal handler.
//!
//! Invariant: a slot's pointer is published (Release) only after the slot
//! is fully initialised, and it is never freed while the process lives.

use super::handler::queue::{
    MAX_THREADS, QUEUE_CAPACITY, SampleQueue, SampleSlot, Scratch, SlotTable,
};
use super::handler::sample::RawSample;
use crate::base::sync::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, UnsafeCell};

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
            if slot.claim(tid, generation) {
                return Some((i, generation));
            }
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
}
