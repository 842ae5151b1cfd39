//! One event buffer: a fixed block of bytes written by its owning thread and
//! read by the recorder thread, with no lock and no read-modify-write atomic.
//!
//! # Positions
//!
//! ```text
//! 0          flushed            committed                    capacity
//! |-- in file --|-- to be written --|-- owner writes here ------|
//! ```
//!
//! * `committed` is advanced only by the owner, with a Release store after an
//!   event's bytes are complete; the recorder reads it with Acquire and may
//!   then read every byte below it.
//! * `flushed` is advanced only by the recorder thread.
//!
//! Both words pack a byte position (low 32 bits) with the number of records
//! below it (high 32 bits), so one store publishes a record and counts it:
//! the recorder learns how many events it drains, or discards after a write
//! error, without decoding a record, and the owner pays no extra store (the
//! counter rides in the word it stores anyway). Blocks are smaller than
//! 4 GiB, and a record is at least three bytes, so neither half overflows.
//!
//! # States
//!
//! ```text
//!  Free ──pool::acquire (thread T)──► Owned(T) ──seal (T)──► Sealed ──drain (recorder)──► Free
//! ```
//!
//! * Free: in the pool's free list; nobody reads or writes the bytes.
//! * Owned(T): T writes bytes at and above `committed`; the recorder reads
//!   `[flushed, committed)`.
//! * Sealed: in the pool's full queue; bytes immutable; the recorder reads
//!   `[flushed, committed)` and then resets the block.
//!
//! Invariant: the bytes below `committed` never change until the recorder
//! thread itself resets the block, so the recorder may read them at any time
//! without coordinating with the owner; and only the recorder thread resets
//! blocks, so a block it is reading is never recycled under it.

use std::ptr::NonNull;

use crate::base::sync::{AtomicU64, ByteCell as UnsafeCell, ByteShadow, Ordering};
use crate::buffer::encode::Encode;

/// The byte-position half of a `committed` or `flushed` word.
const POS_MASK: u64 = (1 << 32) - 1;
/// One record in the count half of a `committed` or `flushed` word.
const ONE_RECORD: u64 = 1 << 32;

/// The ordering that publishes `committed`. Release; the loom negative
/// control `relaxed_commit` weakens it to Relaxed so the models can show
/// they notice (see `ci/loom.sh`).
const COMMIT_ORDER: Ordering = if cfg!(flightrec_loom_weaken = "relaxed_commit") {
    Ordering::Relaxed
} else {
    Ordering::Release
};

/// A buffer block; see the module docs for who may touch what.
///
/// Aligned to two cache lines so that two threads' blocks never share a line:
/// the owner stores `committed` on every event, and a neighbour's block header
/// on the same line would bounce between their cores (adjacent-line
/// prefetching is why 128 and not 64).
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Block {
    /// `capacity` bytes: a piece of one of the pool's slabs (see
    /// `buffer::slab`), or, from `Block::new` (loom models and tests), a box of its own.
    data: NonNull<UnsafeCell>,
    capacity: usize,
    /// `data` is this block's own box (freed with the block).
    owned: bool,
    /// End of the complete events and their count (owner: Release store;
    /// readers: Acquire). See the module docs for the packing.
    committed: AtomicU64,
    /// End of what the recorder has written out, and its count (recorder
    /// only).
    flushed: AtomicU64,
    /// The epoch whose events this block holds (set while Free or by the
    /// owner before its first event).
    epoch: AtomicU64,
    /// Loom's view of the accesses to `data` (nothing outside loom).
    shadow: ByteShadow,
}

// SAFETY: the bytes are only accessed per the ownership rules in the module
// docs: the owner writes above `committed`, readers read below it after an
// Acquire load; `UnsafeCell` makes those accesses through shared references
// sound.
unsafe impl Sync for Block {}
// SAFETY: `data` is owned by the block (its own box) or by the pool's slabs
// for the pool's whole life; nothing about it is tied to a thread.
unsafe impl Send for Block {}

impl Block {
    /// A zeroed block of `capacity` bytes, in a box of its own (loom
    /// models and tests; the pool cuts blocks from slabs).
    pub(crate) fn new(capacity: usize) -> Self {
        let data: Box<[UnsafeCell]> = (0..capacity).map(|_| UnsafeCell::new(0)).collect();
        let data = NonNull::new(Box::into_raw(data).cast::<UnsafeCell>()).expect("a box");
        // SAFETY: `data` is a fresh allocation of `capacity` cells that
        // only this block uses.
        let mut block = unsafe { Self::with_bytes(data, capacity) };
        block.owned = true;
        block
    }

    /// A block of the `capacity` bytes at `data`, which it does not free.
    ///
    /// # Safety
    ///
    /// `data` points to `capacity` initialised (or fresh zero) bytes that
    /// live as long as the block and that nothing else reads or writes
    /// while the block exists.
    pub(crate) unsafe fn with_bytes(data: NonNull<UnsafeCell>, capacity: usize) -> Self {
        assert!((capacity as u64) < POS_MASK, "a block is under 4 GiB");
        Self {
            data,
            capacity,
            owned: false,
            committed: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            shadow: ByteShadow::new(capacity),
        }
    }

    /// Total bytes.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The epoch of the events in this block.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Tags an empty block with `epoch` (owner, before its first event).
    #[inline]
    pub(crate) fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// Encodes `record` into the free space above `committed` (owner only),
    /// in the write section of `epoch`; the bytes it wrote are published
    /// with Release.
    ///
    /// # Safety
    ///
    /// Only the owning thread of an Owned block may call this, and not
    /// reentrantly (the slot's section guard ensures both).
    #[inline(always)]
    pub(crate) unsafe fn write_with<E: Encode + ?Sized>(
        &self,
        record: &E,
        epoch: u64,
    ) -> Option<usize> {
        let word = self.committed_word();
        // SAFETY: the caller's guarantees, and `word` was just loaded.
        unsafe { self.write_at(word, 0, record, epoch) }
    }

    /// The `committed` word as the owner sees it (its own last store), for
    /// [`free_in`](Self::free_in) and [`write_at`](Self::write_at).
    #[inline(always)]
    pub(crate) fn committed_word(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// Free bytes above the position in `word`, a
    /// [`committed_word`](Self::committed_word) of this block.
    #[inline(always)]
    pub(crate) fn free_in(&self, word: u64) -> usize {
        self.capacity() - (word & POS_MASK) as usize
    }

    /// [`write_with`](Self::write_with) with `committed` already loaded
    /// (`word`), so a writer that checked the free space first loads it
    /// once; `room` is what it checked (at most the free bytes; 0 if it
    /// checked nothing), handed to [`Encode::encode_in`].
    ///
    /// # Safety
    ///
    /// As for `write_with`, and `word` is this block's `committed` word as
    /// the owner last loaded it (only the owner changes it).
    #[inline(always)]
    pub(crate) unsafe fn write_at<E: Encode + ?Sized>(
        &self,
        word: u64,
        room: usize,
        record: &E,
        epoch: u64,
    ) -> Option<usize> {
        let pos = (word & POS_MASK) as usize;
        debug_assert!(pos <= self.capacity());
        let free = self.capacity() - pos;
        // SAFETY: `committed` never exceeds the capacity (it only advances
        // by the length of a record that fitted in the free space), so `pos`
        // is at most one past the end of `data`.
        let base = unsafe { self.data.as_ptr().add(pos).cast_const() };
        // SAFETY: the caller is the owner and not reentrant, so nobody else
        // writes `[pos, capacity)`, and readers only read below `committed`
        // (= pos) until the Release store below. `UnsafeCell<u8>` has the
        // layout of `u8`, so the cells form one contiguous byte slice.
        let space = unsafe { std::slice::from_raw_parts_mut(UnsafeCell::raw_get(base), free) };
        debug_assert!(room <= free);
        let n = record.encode_in(space, room, epoch)?;
        debug_assert!(n <= free);
        self.shadow.wrote(pos..pos + n);
        // An abandoned record (0 bytes) is not counted: the record counts
        // feed the statistics and the losses of a failed write. Without a
        // branch: the hot path's records are never empty.
        let records = if E::NEVER_EMPTY {
            debug_assert!(n != 0);
            ONE_RECORD
        } else {
            ONE_RECORD * u64::from(n != 0)
        };
        self.committed
            .store(word + n as u64 + records, COMMIT_ORDER);
        Some(n)
    }

    /// Hands the not-yet-flushed complete events to `f`, with how many
    /// records they are, and marks them flushed if `f` succeeds. Returns
    /// `None` when there was nothing new. Recorder thread only.
    pub(crate) fn drain_with<R, E>(
        &self,
        f: impl FnOnce(&[u8], u64) -> Result<R, E>,
    ) -> Option<Result<R, E>> {
        let end_word = self.committed.load(Ordering::Acquire);
        let start_word = self.flushed.load(Ordering::Relaxed);
        let (end, start) = (
            (end_word & POS_MASK) as usize,
            (start_word & POS_MASK) as usize,
        );
        if end <= start {
            return None;
        }
        let records = (end_word >> 32) - (start_word >> 32);
        self.shadow.read(start..end);
        debug_assert!(end <= self.capacity);
        // SAFETY: `[start, end)` lies below `committed` (loaded with Acquire,
        // pairing with the owner's Release store), so those bytes are complete
        // and immutable until this (the recorder) thread resets the block;
        // `end` is at most the capacity, so the range is inside `data`.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                UnsafeCell::raw_get(self.data.as_ptr().add(start)) as *const u8,
                end - start,
            )
        };
        let r = f(bytes, records);
        if r.is_ok() {
            self.flushed.store(end_word, Ordering::Relaxed);
        }
        Some(r)
    }

    /// Bytes committed and not yet drained (a size estimate, no access to
    /// the bytes): exact on the recorder thread; on the owner, at least what
    /// is left (it may see an older `flushed`).
    pub(crate) fn unflushed(&self) -> u64 {
        // Relaxed: the owner wrote `committed` itself; the recorder reads a
        // sealed block, published through the queue's lock.
        let end = self.committed.load(Ordering::Relaxed) & POS_MASK;
        let start = self.flushed.load(Ordering::Relaxed) & POS_MASK;
        end.saturating_sub(start)
    }

    /// Empties a drained block for reuse. Recorder thread only, on a Sealed
    /// block (or at acquire time, on a Free one).
    pub(crate) fn reset(&self) {
        self.committed.store(0, Ordering::Relaxed);
        self.flushed.store(0, Ordering::Relaxed);
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if self.owned {
            let cells = std::ptr::slice_from_raw_parts_mut(self.data.as_ptr(), self.capacity);
            // SAFETY: an owned block's `data` came from `Box::into_raw` of
            // a slice of `capacity` cells in `new`, and is freed once, here.
            drop(unsafe { Box::from_raw(cells) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record its writer abandoned (`Some(0)`) leaves no bytes and is
    /// not counted as a record.
    #[test]
    fn an_abandoned_record_is_not_counted() {
        let b = Block::new(256);
        b.set_epoch(1);
        let abandon = |_: &mut [u8]| Some(0);
        let three = |buf: &mut [u8]| {
            buf[..3].copy_from_slice(&[3, 1, 2]);
            Some(3)
        };
        // SAFETY: this thread owns the block and nothing else writes it.
        unsafe {
            assert_eq!(b.write_with(&abandon, 1), Some(0));
            assert_eq!(b.write_with(&three, 1), Some(3));
            assert_eq!(b.write_with(&abandon, 1), Some(0));
        }
        let drained = b.drain_with(|bytes, records| Ok::<_, ()>((bytes.to_vec(), records)));
        assert_eq!(drained, Some(Ok((vec![3, 1, 2], 1))));
    }
}
