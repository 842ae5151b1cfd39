//! The rotation core: the safepoint that closes an epoch, and the drains that
//! move committed events out of the blocks. The recorder thread runs it with
//! its chunk as the sink; the loom models run the same code with a sink that
//! collects what each chunk received.
//!
//! # Safepoint
//!
//! 1. flip the epoch from the open chunk's (SeqCst compare-exchange):
//!    writers that open a section from now on load the new epoch and tag
//!    their blocks with it. A writer's seal may have flipped it already
//!    (the chunk's hard size mark, see [`crate::buffer::pool`]), with the
//!    same compare-exchange from the same epoch: whichever comes first
//!    flips, and the other finds it flipped; the recorder's failing
//!    compare-exchange reads the writer's SeqCst store, so what follows is
//!    ordered after the flip as if it had made it. Both flip under the
//!    pool's queue lock and arm the next epoch's size marks in the same
//!    step ([`BufferPool::flip`]), so no seal ever sees a new epoch
//!    without its hard mark;
//! 2. [`membarrier::barrier`]: each writer's open section is visible here, or
//!    the writer will load the new epoch (see [`crate::buffer::slot`]);
//! 3. wait until no registered slot is inside a write section (bounded:
//!    sections never block).
//!
//! # Drains
//!
//! * [`drain_live`]: the committed, unflushed part of every owned block of
//!   one epoch (blocks stay with their owners);
//! * [`drain_sealed`]: every sealed block of that epoch or older, which then
//!   returns to the free list; sealed blocks of a later epoch are requeued in
//!   order for the next chunk. The sink may keep reading a sealed block's
//!   bytes after taking it (a chunk that writes them from where they are):
//!   blocks go back to the free list, to be reset and reused, only after
//!   the sink's [`BlockSink::end_batch`], in groups of [`RELEASE_GROUP`].
//!
//! [`rotate`] is the safepoint followed by both drains of the old epoch.
//!
//! Invariant: every event committed in epoch *e* reaches the sink of the
//! rotation that closes *e* (or an earlier drain of *e*), exactly once: blocks
//! hold one epoch each, `flushed` makes every drain resume where the last one
//! stopped, and after the safepoint no block of epoch *e* can grow.

use crate::base::sync::spin_hint;
use crate::buffer::block::Block;
#[cfg(doc)]
use crate::buffer::pool::BufferPool;
use crate::epoch::membarrier;
use crate::runtime::Runtime;

/// Sealed blocks handed to a sink between two of its
/// [`BlockSink::end_batch`]es, which release them: 4 MiB of default blocks,
/// so a chunk that writes them from their own memory makes one write of
/// them, and no more than that is kept from the free list meanwhile.
pub(crate) const RELEASE_GROUP: usize = 64;

/// Where drains put blocks.
pub(crate) trait BlockSink<E> {
    /// Takes the complete, undrained records of `block`.
    fn add(&mut self, block: &Block) -> Result<(), E>;

    /// Takes the complete, undrained records of sealed `block`, as
    /// [`add`](Self::add) does; the sink may read them again until its next
    /// [`end_batch`](Self::end_batch).
    ///
    /// # Safety
    ///
    /// The caller releases `block` (which resets it) only after the next
    /// `end_batch` returns.
    unsafe fn add_sealed(&mut self, block: &Block) -> Result<(), E> {
        self.add(block)
    }

    /// Called before sealed blocks the sink took are released: until then
    /// their bytes stay as they are.
    fn end_batch(&mut self) -> Result<(), E> {
        Ok(())
    }
}

impl<E, F: FnMut(&Block) -> Result<(), E>> BlockSink<E> for F {
    fn add(&mut self, block: &Block) -> Result<(), E> {
        self(block)
    }
}

/// Skips step 3 of the safepoint: the loom negative control
/// `skip_section_wait` (see `ci/loom.sh`).
const SKIP_SECTION_WAIT: bool = cfg!(flightrec_loom_weaken = "skip_section_wait");

/// Flips the epoch from `open` (unless a writer's seal did), arming
/// `next`'s size marks (wake-up, hard) for `open + 1` in the same step,
/// fences, and waits out every open write section. Returns `open`, the
/// epoch it closed. Recorder thread only.
pub(crate) fn safepoint(rt: &Runtime, open: u64, next: Option<(u64, u64)>) -> u64 {
    let old = open;
    // SeqCst (in `flip`): pairs with the writers' (membarrier-upgraded)
    // fences between their section store and their epoch load; on failure,
    // reads (and is ordered after) the SeqCst flip of a writer's seal.
    let flipped = rt.pool.flip(&rt.epoch, old, next);
    debug_assert!(flipped.is_ok_and(|e| e == old) || flipped.is_err_and(|e| e > old));
    membarrier::barrier();
    if SKIP_SECTION_WAIT {
        return old;
    }
    let slots: Vec<_> = rt.slots.lock().clone();
    for slot in &slots {
        // Acquire (in `in_section`): pairs with the section's Release close,
        // so the writer's committed position is visible once it reads 0.
        while slot.in_section() {
            spin_hint();
            crate::base::sync::yield_now();
        }
    }
    old
}

/// The safepoint closing epoch `open` (arming `next`'s size marks for
/// `open + 1` with the flip), then every live and sealed block of `open`
/// into `sink`. Returns `open`. Recorder thread only.
pub(crate) fn rotate<E>(
    rt: &Runtime,
    open: u64,
    next: Option<(u64, u64)>,
    sink: &mut impl BlockSink<E>,
) -> Result<u64, E> {
    let old = safepoint(rt, open, next);
    drain_live(rt, old, sink)?;
    drain_sealed(rt, old, sink)?;
    Ok(old)
}

/// Drains sealed blocks of epoch `<= epoch` into `sink` and frees them;
/// later ones, and any the sink failed on (with all after it), go back to the
/// queue in order. Recorder thread only.
pub(crate) fn drain_sealed<E>(
    rt: &Runtime,
    epoch: u64,
    sink: &mut impl BlockSink<E>,
) -> Result<(), E> {
    let sealed = rt.pool.take_sealed();
    let mut later = Vec::new();
    let mut taken = Vec::with_capacity(RELEASE_GROUP);
    let mut result = Ok(());
    for b in sealed {
        if b.get().epoch() > epoch || result.is_err() {
            later.push(b);
            continue;
        }
        // SAFETY: `b` is released below, only after the sink's next
        // `end_batch` (a full group's, or the last one).
        match unsafe { sink.add_sealed(b.get()) } {
            Ok(()) => taken.push(b),
            Err(e) => {
                later.push(b);
                result = Err(e);
            }
        }
        if taken.len() == RELEASE_GROUP {
            result = result.and(sink.end_batch());
            taken.drain(..).for_each(|b| rt.pool.release(b));
        }
    }
    // The sink is done with every block it took, written or failed (a
    // failed write's records are the chunk's loss to report): all go back.
    let ended = sink.end_batch();
    taken.into_iter().for_each(|b| rt.pool.release(b));
    rt.pool.requeue(later);
    result.and(ended)
}

/// Drains the committed part of every live block of epoch `epoch` into
/// `sink`, and forgets slots of exited threads whose block is sealed.
/// Recorder thread only.
pub(crate) fn drain_live<E>(
    rt: &Runtime,
    epoch: u64,
    sink: &mut impl BlockSink<E>,
) -> Result<(), E> {
    let slots: Vec<_> = {
        let mut slots = rt.slots.lock();
        slots.retain(|s| !(s.has_exited() && s.current_block().is_none()));
        slots.clone()
    };
    for slot in slots {
        let Some(b) = slot.current_block() else {
            continue;
        };
        if b.get().epoch() == epoch {
            sink.add(b.get())?;
        }
    }
    Ok(())
}
