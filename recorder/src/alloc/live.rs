//! The leak table: sampled allocations not freed yet, in a fixed array of
//! slots (buckets of [`WAYS`] slots, the bucket chosen by a hash of the
//! address), so the table is bounded and needs no allocation or lock.
//!
//! * Track (sampled path, rare): claim a free slot of the address's bucket
//!   by a compare-and-swap of its address word (0 → `CLAIMED`), bump its
//!   generation, write the fields, publish the address (Release). A full
//!   bucket: the allocation is not tracked, and counted.
//! * Untrack (every free while anything is tracked): read the bucket's
//!   address words (one cache line); the slot holding the freed address is
//!   released by a compare-and-swap back to 0. While nothing is tracked a
//!   free costs one relaxed load of [`LiveTable::is_empty`]'s counter.
//! * Read (recorder thread, chunk end): a slot is read like a seqlock:
//!   generation and address before and after the fields; a slot that
//!   changed meanwhile is skipped (it was freed, so it is not a leak).
//!
//! The allocating thread untracks before it hands the memory back to the
//! inner allocator, so an address reused by another thread's allocation is
//! never untracked by the old free.
//!
//! Invariant: a slot's address word is 0 (free), `CLAIMED` (being written
//! by the thread that claimed it) or the address of a live sampled block
//! whose fields, of generation `seq`, were written before it was published.

use crate::sync::{AtomicU64, AtomicUsize, Ordering, fence};

/// Slots per bucket: their address words fill one 64-byte line, so a
/// free's lookup reads one line.
pub(super) const WAYS: usize = 8;
const CLAIMED: usize = 1;

/// What is known of one tracked allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LiveEntry {
    pub(super) addr: usize,
    pub(super) size: u64,
    pub(super) weight: u64,
    pub(super) ticks: i64,
    /// Filled in by the drain (0 until then): the stack, the thread and
    /// the class keys.
    pub(super) stack: u64,
    pub(super) thread: u64,
    pub(super) class: u64,
}

/// The address words of one bucket, on a line of their own.
#[derive(Debug)]
#[repr(align(64))]
struct Bucket([AtomicUsize; WAYS]);

#[derive(Debug)]
struct Slot {
    seq: AtomicU64,
    size: AtomicU64,
    weight: AtomicU64,
    ticks: AtomicU64,
    stack: AtomicU64,
    thread: AtomicU64,
    class: AtomicU64,
    /// The generation whose keys the drain filled in (0: none).
    ready: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Self {
            seq: AtomicU64::new(0),
            size: AtomicU64::new(0),
            weight: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            stack: AtomicU64::new(0),
            thread: AtomicU64::new(0),
            class: AtomicU64::new(0),
            ready: AtomicU64::new(0),
        }
    }
}

/// The table: `B` buckets of [`WAYS`] slots.
#[derive(Debug)]
pub(super) struct LiveTable<const B: usize, const N: usize> {
    count: AtomicUsize,
    buckets: [Bucket; B],
    slots: [Slot; N],
}

fn bucket_of(addr: usize, buckets: usize) -> usize {
    // Fibonacci hashing of the address (its low bits are alignment).
    let h = (addr as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 32) as usize % buckets
}

impl<const B: usize, const N: usize> LiveTable<B, N> {
    /// An empty table (`N` must be `B * WAYS`).
    pub(super) const fn new() -> Self {
        assert!(N == B * WAYS && B > 0);
        Self {
            count: AtomicUsize::new(0),
            buckets: [const { Bucket([const { AtomicUsize::new(0) }; WAYS]) }; B],
            slots: [const { Slot::new() }; N],
        }
    }

    fn addr_word(&self, index: usize) -> &AtomicUsize {
        &self.buckets[index / WAYS].0[index % WAYS]
    }

    /// The most allocations the table can track.
    #[cfg(test)]
    pub(super) const fn capacity(&self) -> usize {
        N
    }

    /// True if nothing is tracked: the free path's one load.
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// Allocations tracked now.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    fn bucket(&self, addr: usize) -> (usize, &[AtomicUsize; WAYS]) {
        let b = bucket_of(addr, B);
        (b * WAYS, &self.buckets[b].0)
    }

    /// Tracks the live block at `addr`; its slot index and generation, or
    /// `None` if its bucket is full.
    pub(super) fn track(
        &self,
        addr: usize,
        size: u64,
        weight: u64,
        ticks: i64,
    ) -> Option<(usize, u64)> {
        debug_assert!(addr > CLAIMED);
        let (base, words) = self.bucket(addr);
        for (i, word) in words.iter().enumerate() {
            if word
                .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let slot = &self.slots[base + i];
            let seq = slot.seq.fetch_add(1, Ordering::Relaxed) + 1;
            slot.size.store(size, Ordering::Relaxed);
            slot.weight.store(weight, Ordering::Relaxed);
            slot.ticks.store(ticks as u64, Ordering::Relaxed);
            slot.stack.store(0, Ordering::Relaxed);
            slot.thread.store(0, Ordering::Relaxed);
            slot.class.store(0, Ordering::Relaxed);
            self.count.fetch_add(1, Ordering::Relaxed);
            word.store(addr, Ordering::Release);
            return Some((base + i, seq));
        }
        None
    }

    /// Stops tracking `addr` (being freed); true if it was tracked.
    #[inline]
    pub(super) fn untrack(&self, addr: usize) -> bool {
        let (_, words) = self.bucket(addr);
        for word in words {
            if word.load(Ordering::Relaxed) == addr
                && word
                    .compare_exchange(addr, 0, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                self.count.fetch_sub(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// The drain's keys for slot `index` of generation `seq` (if it still
    /// holds that generation: otherwise the block was freed meanwhile).
    pub(super) fn fill(&self, index: usize, seq: u64, stack: u64, thread: u64, class: u64) {
        let slot = &self.slots[index];
        if slot.seq.load(Ordering::Acquire) != seq {
            return;
        }
        slot.stack.store(stack, Ordering::Relaxed);
        slot.thread.store(thread, Ordering::Relaxed);
        slot.class.store(class, Ordering::Relaxed);
        slot.ready.store(seq, Ordering::Release);
    }

    /// Every tracked block whose keys the drain filled in, read
    /// consistently (see the module docs).
    pub(super) fn snapshot(&self) -> Vec<LiveEntry> {
        let mut out = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            let word = self.addr_word(i);
            let seq = slot.seq.load(Ordering::Acquire);
            let addr = word.load(Ordering::Acquire);
            if addr <= CLAIMED || slot.ready.load(Ordering::Acquire) != seq {
                continue;
            }
            let e = LiveEntry {
                addr,
                size: slot.size.load(Ordering::Relaxed),
                weight: slot.weight.load(Ordering::Relaxed),
                ticks: slot.ticks.load(Ordering::Relaxed) as i64,
                stack: slot.stack.load(Ordering::Relaxed),
                thread: slot.thread.load(Ordering::Relaxed),
                class: slot.class.load(Ordering::Relaxed),
            };
            fence(Ordering::Acquire);
            if slot.seq.load(Ordering::Relaxed) == seq && word.load(Ordering::Relaxed) == addr {
                out.push(e);
            }
        }
        out
    }

    /// Forgets every tracked block (the recording stopped): frees go back
    /// to the one-load path.
    pub(super) fn clear(&self) {
        for bucket in &self.buckets {
            for word in &bucket.0 {
                let a = word.load(Ordering::Relaxed);
                if a > CLAIMED
                    && word
                        .compare_exchange(a, 0, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    self.count.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_with_overflow_reported() {
        static T: LiveTable<8, 64> = LiveTable::new();
        let mut tracked = Vec::new();
        let mut overflow = 0;
        for i in 1..=1000usize {
            let addr = i * 64;
            match T.track(addr, 64, 100, 5) {
                Some(at) => tracked.push((addr, at)),
                None => overflow += 1,
            }
        }
        assert!(tracked.len() <= T.capacity());
        assert_eq!(tracked.len() + overflow, 1000);
        assert_eq!(T.len(), tracked.len());
        assert!(T.snapshot().is_empty(), "nothing filled in yet");
        for &(_, (i, seq)) in &tracked {
            T.fill(i, seq, 7, 8, 9);
        }
        let snap = T.snapshot();
        assert_eq!(snap.len(), tracked.len());
        assert!(snap.iter().all(|e| e.stack == 7 && e.size == 64));
        for &(addr, _) in &tracked[..10] {
            assert!(T.untrack(addr));
            assert!(!T.untrack(addr));
        }
        assert_eq!(T.snapshot().len(), tracked.len() - 10);
        T.clear();
        assert!(T.is_empty());
        assert!(T.snapshot().is_empty());
    }

    #[test]
    fn a_stale_fill_is_ignored() {
        static T: LiveTable<1, 8> = LiveTable::new();
        let (i, seq) = T.track(4096, 1, 1, 1).unwrap();
        assert!(T.untrack(4096));
        let (j, seq2) = T.track(4096, 2, 2, 2).unwrap();
        assert_eq!(i, j);
        T.fill(i, seq, 1, 1, 1);
        assert!(T.snapshot().is_empty());
        T.fill(j, seq2, 3, 3, 3);
        assert_eq!(T.snapshot()[0].size, 2);
    }
}
