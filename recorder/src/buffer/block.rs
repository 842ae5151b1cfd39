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

use crate::buffer::slot::Encode;
use crate::sync::{AtomicU64, AtomicUsize, ByteCell as UnsafeCell, ByteShadow, Ordering};

/// The ordering that publishes `committed`. Release; the loom negative
/// control `--cfg flightrec_loom_weaken="relaxed_commit"` weakens it to
/// Relaxed so the models can show they notice (see `loom-tests/`).
const COMMIT_ORDER: Ordering = if cfg!(all(
    flightrec_loom,
    flightrec_loom_weaken = "relaxed_commit"
)) {
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
    data: Box<[UnsafeCell]>,
    /// End of the complete events (owner: Release store; readers: Acquire).
    committed: AtomicUsize,
    /// End of what the recorder has written out (recorder only).
    flushed: AtomicUsize,
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

impl Block {
    /// A zeroed block of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            data: (0..capacity).map(|_| UnsafeCell::new(0)).collect(),
            committed: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            shadow: ByteShadow::new(capacity),
        }
    }

    /// Total bytes.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.data.len()
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

    /// The owner's write position (= committed: the owner is the only writer).
    #[inline]
    pub(crate) fn write_pos(&self) -> usize {
        self.committed.load(Ordering::Relaxed)
    }

    /// Encodes `record` into the free space above `committed` (owner only);
    /// the bytes it wrote are published with Release.
    ///
    /// # Safety
    ///
    /// Only the owning thread of an Owned block may call this, and not
    /// reentrantly (the slot's section guard ensures both).
    #[inline(always)]
    pub(crate) unsafe fn write_with<E: Encode + ?Sized>(&self, record: &E) -> Option<usize> {
        let pos = self.write_pos();
        debug_assert!(pos <= self.capacity());
        let free = self.capacity() - pos;
        // SAFETY: `committed` never exceeds the capacity (it only advances
        // by the length of a record that fitted in the free space), so `pos`
        // is at most one past the end of `data`.
        let base = unsafe { self.data.as_ptr().add(pos) };
        // SAFETY: the caller is the owner and not reentrant, so nobody else
        // writes `[pos, capacity)`, and readers only read below `committed`
        // (= pos) until the Release store below. `UnsafeCell<u8>` has the
        // layout of `u8`, so the cells form one contiguous byte slice.
        let space = unsafe { std::slice::from_raw_parts_mut(UnsafeCell::raw_get(base), free) };
        let n = record.encode(space)?;
        debug_assert!(n <= free);
        self.shadow.wrote(pos..pos + n);
        self.committed.store(pos + n, COMMIT_ORDER);
        Some(n)
    }

    /// Hands the not-yet-flushed complete events to `f` and marks them
    /// flushed if `f` succeeds. Returns `None` when there was nothing new.
    /// Recorder thread only.
    pub(crate) fn drain_with<R, E>(
        &self,
        f: impl FnOnce(&[u8]) -> Result<R, E>,
    ) -> Option<Result<R, E>> {
        let end = self.committed.load(Ordering::Acquire);
        let start = self.flushed.load(Ordering::Relaxed);
        if end <= start {
            return None;
        }
        self.shadow.read(start..end);
        let cells = &self.data[start..end];
        // SAFETY: `[start, end)` lies below `committed` (loaded with Acquire,
        // pairing with the owner's Release store), so those bytes are complete
        // and immutable until this (the recorder) thread resets the block.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                UnsafeCell::raw_get(cells.as_ptr()) as *const u8,
                end - start,
            )
        };
        let r = f(bytes);
        if r.is_ok() {
            self.flushed.store(end, Ordering::Relaxed);
        }
        Some(r)
    }

    /// Empties a drained block for reuse. Recorder thread only, on a Sealed
    /// block (or at acquire time, on a Free one).
    pub(crate) fn reset(&self) {
        self.committed.store(0, Ordering::Relaxed);
        self.flushed.store(0, Ordering::Relaxed);
    }
}
