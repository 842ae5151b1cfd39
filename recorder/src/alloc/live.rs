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
//!   free costs one relaxed load of [`LiveTable::is_empty`]'s counter;
//!   while something is, a free first reads its bucket's occupancy count
//!   (a small array that stays in cache) and reads the bucket's line only
//!   if that is not 0.
//! * Read (recorder thread, chunk end): a slot is read like a seqlock:
//!   generation and address before and after the fields; a slot that
//!   changed meanwhile is skipped (it was freed, so it is not a leak).
//! * Move (`realloc` of a tracked block): before the inner call the slot's
//!   address word goes back to `CLAIMED` (held: no free of the old address,
//!   reused by then, can match it); after it, a block that moved is tracked
//!   in a slot of its new address's bucket with the same weight and time,
//!   and the old slot is released. The drain may not have filled in the
//!   old slot's keys yet: the mover leaves a forward (old slot and
//!   generation → new ones) in a small ring of recent moves and then copies
//!   the keys if they are there; the drain, after filling a slot (or
//!   finding its generation gone), follows a forward from it if the ring
//!   holds one. Each side writes, then reads the other's word (`SeqCst`),
//!   so at least one of them carries the keys over. (A ring and not a word
//!   per slot: a freed address is often the next allocation's, whose block
//!   lands in the same slot and may move too before the drain comes.)
//!
//! The allocating thread untracks before it hands the memory back to the
//! inner allocator, so an address reused by another thread's allocation is
//! never untracked by the old free.
//!
//! Invariant: a slot's address word is 0 (free), `CLAIMED` (being written
//! or moved by the thread that claimed it) or the address of a live
//! sampled block whose fields, of generation `seq`, were written before it
//! was published.

use crate::base::sync::global::{AtomicU64, AtomicUsize, Ordering, fence};

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

/// A forward, packed in one word: generation `from_seq` of slot `from`
/// moved to generation `to_seq` of slot `to` (generations compared on their
/// low 19 bits: a slot is not reused 2^19 times while the drain is behind;
/// slots fit 12 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Forward {
    from: usize,
    from_seq: u64,
    to: usize,
    to_seq: u64,
}

const SEQ_MASK: u64 = (1 << 19) - 1;
const SLOT_MASK: u64 = (1 << 12) - 1;

/// Forwards kept: the moves of the last 20 ms before the drain came.
const FORWARDS: usize = 256;

impl Forward {
    fn pack(self) -> u64 {
        1 << 63
            | (self.from as u64 & SLOT_MASK) << 51
            | (self.from_seq & SEQ_MASK) << 32
            | (self.to as u64 & SLOT_MASK) << 19
            | self.to_seq & SEQ_MASK
    }

    fn unpack(w: u64) -> Option<Self> {
        (w >> 63 == 1).then_some(Self {
            from: ((w >> 51) & SLOT_MASK) as usize,
            from_seq: (w >> 32) & SEQ_MASK,
            to: ((w >> 19) & SLOT_MASK) as usize,
            to_seq: w & SEQ_MASK,
        })
    }
}

/// A tracked block being moved by `realloc`: its slot is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Moving {
    index: usize,
    addr: usize,
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
    /// Per bucket, its slots not free (claimed or tracked).
    occupied: [AtomicUsize; B],
    buckets: [Bucket; B],
    slots: [Slot; N],
    /// The ring of recent moves ([`Forward`]s; 0: empty).
    forwards: [AtomicU64; FORWARDS],
    next_forward: AtomicUsize,
}

fn bucket_of(addr: usize, buckets: usize) -> usize {
    // Fibonacci hashing of the address (its low bits are alignment).
    let h = (addr as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 32) as usize % buckets
}

impl<const B: usize, const N: usize> LiveTable<B, N> {
    /// An empty table (`N` must be `B * WAYS`, at most 4096).
    pub(super) const fn new() -> Self {
        assert!(N == B * WAYS && B > 0 && N as u64 <= SLOT_MASK + 1);
        Self {
            count: AtomicUsize::new(0),
            occupied: [const { AtomicUsize::new(0) }; B],
            buckets: [const { Bucket([const { AtomicUsize::new(0) }; WAYS]) }; B],
            slots: [const { Slot::new() }; N],
            forwards: [const { AtomicU64::new(0) }; FORWARDS],
            next_forward: AtomicUsize::new(0),
        }
    }

    /// Where generation `seq` of slot `index` moved, if the ring knows.
    fn forward_from(&self, index: usize, seq: u64) -> Option<(usize, u64)> {
        self.forwards.iter().find_map(|w| {
            Forward::unpack(w.load(Ordering::SeqCst))
                .filter(|f| f.from == index && f.from_seq == seq)
                .map(|f| (f.to, f.to_seq))
        })
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

    /// False if `addr` is surely not tracked: nothing is, or nothing in its
    /// bucket. (A block tracked before its pointer reached the caller has
    /// counted itself in both, and only its own untrack counts it out.)
    #[inline(always)]
    pub(super) fn may_track(&self, addr: usize) -> bool {
        !self.is_empty() && self.occupied[bucket_of(addr, B)].load(Ordering::Relaxed) != 0
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
            self.occupied[base / WAYS].fetch_add(1, Ordering::Relaxed);
            let slot = &self.slots[base + i];
            // SeqCst: a drain that sees this generation sees the forward
            // the slot's previous holder left (see `fill`).
            let seq = slot.seq.fetch_add(1, Ordering::SeqCst) + 1;
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

    /// Stops tracking `addr` (being freed); true if it was tracked. A free
    /// calls it only when [`may_track`](Self::may_track).
    pub(super) fn untrack(&self, addr: usize) -> bool {
        let (_, words) = self.bucket(addr);
        for word in words {
            if word.load(Ordering::Relaxed) == addr
                && word
                    .compare_exchange(addr, 0, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                self.release(addr);
                return true;
            }
        }
        false
    }

    /// A slot of `addr`'s bucket was freed: the counts go down.
    fn release(&self, addr: usize) {
        self.occupied[bucket_of(addr, B)].fetch_sub(1, Ordering::Relaxed);
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// The drain's keys for slot `index` of generation `seq`, and for the
    /// slots that generation moved to. (A generation no longer in its slot
    /// and not moved was freed meanwhile: nothing to fill.)
    pub(super) fn fill(&self, index: usize, seq: u64, stack: u64, thread: u64, class: u64) {
        let (mut index, mut seq) = (index, seq & SEQ_MASK);
        // A block reallocated again and again before the drain came: the
        // forwards are followed a few steps, then the keys are given up.
        for _ in 0..8 {
            let slot = &self.slots[index];
            let now = slot.seq.load(Ordering::SeqCst);
            if now & SEQ_MASK == seq {
                slot.stack.store(stack, Ordering::Relaxed);
                slot.thread.store(thread, Ordering::Relaxed);
                slot.class.store(class, Ordering::Relaxed);
                // SeqCst, then the forward: see `end_move`.
                slot.ready.store(now, Ordering::SeqCst);
            }
            match self.forward_from(index, seq) {
                Some(next) => (index, seq) = next,
                None => return,
            }
        }
    }

    /// `realloc`, before the inner call: if `addr` is tracked, holds its
    /// slot (no free can match it while the block moves).
    pub(super) fn begin_move(&self, addr: usize) -> Option<Moving> {
        let (base, words) = self.bucket(addr);
        for (i, word) in words.iter().enumerate() {
            if word.load(Ordering::Relaxed) == addr
                && word
                    .compare_exchange(addr, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Some(Moving {
                    index: base + i,
                    addr,
                });
            }
        }
        None
    }

    /// `realloc` unwound, or the block moved while leaks are not tracked:
    /// the held slot is released.
    pub(super) fn cancel_move(&self, m: Moving) {
        self.addr_word(m.index).store(0, Ordering::Release);
        self.release(m.addr);
    }

    /// `realloc`, after the inner call: the block is `size` bytes at `addr`
    /// (the old address if it did not move or the call failed). Tracks it
    /// with the old slot's weight, time and keys; releases the old slot if
    /// it moved. False if it moved into a full bucket (then untracked).
    pub(super) fn end_move(&self, m: Moving, addr: usize, size: u64) -> bool {
        let old = &self.slots[m.index];
        let word = self.addr_word(m.index);
        if addr == m.addr {
            old.size.store(size, Ordering::Relaxed);
            word.store(addr, Ordering::Release);
            return true;
        }
        let seq = old.seq.load(Ordering::Relaxed);
        let weight = old.weight.load(Ordering::Relaxed);
        let ticks = old.ticks.load(Ordering::Relaxed) as i64;
        let moved = self.track(addr, size, weight, ticks);
        if let Some((to, to_seq)) = moved {
            let at = self.next_forward.fetch_add(1, Ordering::Relaxed) % FORWARDS;
            self.forwards[at].store(
                Forward {
                    from: m.index,
                    from_seq: seq & SEQ_MASK,
                    to,
                    to_seq: to_seq & SEQ_MASK,
                }
                .pack(),
                Ordering::SeqCst,
            );
            // The drain filled the old slot before it could see the
            // forward: the keys are carried over here (the slot is held,
            // so they are this generation's).
            if old.ready.load(Ordering::SeqCst) == seq {
                self.fill(
                    to,
                    to_seq,
                    old.stack.load(Ordering::Relaxed),
                    old.thread.load(Ordering::Relaxed),
                    old.class.load(Ordering::Relaxed),
                );
            }
        }
        word.store(0, Ordering::Release);
        self.release(m.addr);
        moved.is_some()
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
                    self.release(a);
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
        assert!(T.occupied.iter().all(|o| o.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn a_free_looks_at_a_bucket_only_if_it_holds_something() {
        static T: LiveTable<64, 512> = LiveTable::new();
        assert!(!T.may_track(4096));
        T.track(4096, 1, 1, 1).unwrap();
        assert!(T.may_track(4096));
        // Another address of another bucket: not looked at.
        let other = (1..1000usize)
            .map(|i| 4096 + 64 * i)
            .find(|&a| bucket_of(a, 64) != bucket_of(4096, 64))
            .unwrap();
        assert!(!T.may_track(other));
        // Moved: the old bucket empties, the new one holds it.
        let m = T.begin_move(4096).unwrap();
        assert!(T.may_track(4096), "held while it moves");
        assert!(T.end_move(m, other, 2));
        assert!(!T.may_track(4096) && T.may_track(other));
        assert!(T.untrack(other));
        assert!(!T.may_track(other) && T.is_empty());
    }

    #[test]
    fn a_moved_block_keeps_its_keys_filled_before_or_after() {
        static T: LiveTable<4, 32> = LiveTable::new();
        // Filled, then moved: the keys are copied.
        let (i, seq) = T.track(4096, 10, 100, 5).unwrap();
        T.fill(i, seq, 7, 8, 9);
        let m = T.begin_move(4096).unwrap();
        assert!(T.snapshot().is_empty(), "held while it moves");
        assert!(!T.untrack(4096), "a free of the old address cannot match");
        assert!(T.end_move(m, 8192, 20));
        let snap = T.snapshot();
        assert_eq!(snap.len(), 1);
        let e = snap[0];
        assert_eq!(
            (
                e.addr, e.size, e.weight, e.ticks, e.stack, e.thread, e.class
            ),
            (8192, 20, 100, 5, 7, 8, 9)
        );
        // Moved twice before the drain fills: the fill follows both forwards.
        let (i, seq) = T.track(1 << 20, 1, 50, 6).unwrap();
        let m = T.begin_move(1 << 20).unwrap();
        assert!(T.end_move(m, 3 << 20, 2));
        let m = T.begin_move(3 << 20).unwrap();
        assert!(T.end_move(m, 5 << 20, 4));
        // The first slot is reused meanwhile: the forward still holds.
        let reused = T.track(1 << 20, 1, 1, 1);
        T.fill(i, seq, 11, 12, 13);
        let snap = T.snapshot();
        let e = snap.iter().find(|e| e.addr == 5 << 20).unwrap();
        assert_eq!((e.size, e.weight, e.stack, e.class), (4, 50, 11, 13));
        if let Some((r, rs)) = reused {
            T.fill(r, rs, 1, 1, 1);
        }
        // In place, or a failed call: the slot stays, its size updated.
        let m = T.begin_move(8192).unwrap();
        assert!(T.end_move(m, 8192, 40));
        assert!(T.snapshot().iter().any(|e| e.addr == 8192 && e.size == 40));
        assert_eq!(T.len(), T.snapshot().len());
        for a in [8192, 5 << 20, 1 << 20] {
            assert!(T.untrack(a));
        }
        assert!(T.is_empty());
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
