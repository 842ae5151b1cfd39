//! A thread's writer state: its current block and its write section.
//!
//! # Write section
//!
//! Every event is written inside a section:
//!
//! ```text
//! section := 1                  (Relaxed store; the thread's own word)
//! compiler_fence(SeqCst)        (made a full fence, when it matters, by the
//!                                rotating thread's membarrier(2))
//! epoch := global epoch         (Relaxed load)
//! block tagged with another epoch? → seal it, take a fresh one   (cold)
//! encode the event above `committed`; publish `committed` (Release)
//! section := 0                  (Release store)
//! ```
//!
//! A record whose largest encoding is known (`Encode::MAX_LEN`, a derived
//! event's, or `Encode::max_len`, that of a type declared at run time with
//! no string field) is written after one check that the block is of the loaded
//! epoch and has that many bytes free; otherwise a cold call seals the
//! block and takes a fresh one, and the record is encoded once, into
//! whichever block it got. A record without a bound is encoded into the
//! current block and, if it did not fit, once more into a fresh one.
//!
//! No lock and no read-modify-write atomic. The rotating thread flips the
//! epoch, issues `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (an
//! asymmetric fence: every running thread executes a full barrier), then
//! waits for each slot whose section is open. After that, a writer either
//! had its section visible (and is waited for) or will load the new epoch.
//!
//! # The last stop
//!
//! The recording's last stop turns every type off, closes the pool for the
//! epoch its final flip opens, flips, and waits for open sections as any
//! rotation does. A section that loaded an epoch before that flip is
//! waited for and its event is in the last chunk; one that loaded the
//! flipped epoch finds no block of it (its own block is older, so this is
//! the cold path) and does not commit its event: [`Emitted::NotCommitted`],
//! nothing counted, as if its writer had found its type off. The epoch load
//! is the commit's point of no return either way.
//!
//! # Reentrancy
//!
//! A signal handler that emits while the thread is already inside a
//! section finds `section != 0` and drops its event, counted as
//! [`LossCause::Reentrant`], instead of interleaving bytes with the
//! half-written event.
//!
//! # No user code
//!
//! Only the recorder's own encoders run inside a section: an event with a
//! user's encoder (`FieldValue::write`, `write_fields`, a `commit_fields`
//! writer) is encoded before it, into the thread's scratch, and copied in
//! (see [`crate::event::scratch`]). A section therefore closes in bounded
//! time whatever the program's encoders do (block, sleep, exit), which is
//! what lets the rotation's wait for open sections end.
//!
//! # Unwinding
//!
//! Should a record's encoding panic all the same, the section is closed by
//! a guard that only unwinding reaches (see [`OpenSection`]): the event is
//! dropped and counted as [`LossCause::Panicked`], and the thread's later
//! events are written as usual.
//!
//! # Constant tags
//!
//! The record is encoded with the epoch the section loaded, and tags the
//! constants it references with it before it is committed (see
//! [`crate::cpool::threads`] and [`crate::cpool::stacks`]). The writer's own
//! thread is tagged when the slot takes a block of a new epoch, which every
//! thread's first event of an epoch does: the hot path's block-epoch check
//! is the tag check, and costs nothing more.
//!
//! Invariant: an event is in a block tagged with the epoch its writer loaded
//! inside the section, the constants it references are tagged with that
//! epoch before it is committed, and once the rotating thread has seen every
//! section closed after the flip, no event of the old epoch is still being
//! written.

use crate::base::loss::{LossCause, Losses};
use crate::base::sync::{Arc, AtomicPtr, AtomicU64, Ordering, compiler_fence};
use crate::buffer::block::Block;
use crate::buffer::encode::Encode;
use crate::buffer::pool::{BlockPtr, BufferPool, MIN_BLOCK_SIZE};
use crate::cpool::threads::ThreadTags;
use crate::event::sink::Packed;
use crate::runtime::Runtime;

/// One registered writer thread.
///
/// Aligned like [`Block`]: the owner stores
/// `section` twice per event, so no other thread's slot may share its line.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct ThreadSlot {
    /// 1 while the owner is inside a write section, else 0.
    section: AtomicU64,
    /// The owner's current block (null if none). Written by the owner, read
    /// by the recorder thread.
    current: AtomicPtr<Block>,
    /// The epoch of `current`, or [`NO_BLOCK`] while it is null. Owner
    /// only: its write path compares the epoch it loaded with this word in
    /// the slot's own line, instead of testing `current` for null and
    /// loading the block's epoch (a block's epoch does not change while it
    /// is a thread's current block).
    current_epoch: AtomicU64,
    /// The `java.lang.Thread` constant key of the owner.
    pub(crate) thread_key: u64,
    /// `thread_key` then stack-trace key 0 (none), pre-encoded: the two
    /// implicit fields of most events in one store. Always there, so the
    /// commit path's test of its keys for "not pre-encoded" folds away for
    /// every event without a stack trace.
    pub(crate) thread_no_stack: Packed,
    /// Set when the owner exits; its block was sealed.
    pub(crate) exited: AtomicU64,
    /// The epochs the owner's thread constant was used in, shared with the
    /// thread registry.
    tags: Arc<ThreadTags>,
    /// The stack the owner interned last for an event's implicit stack
    /// trace, and the epoch it was tagged with there (owner only; see
    /// [`ThreadSlot::stack_in_section`]).
    stack_key: AtomicU64,
    stack_epoch: AtomicU64,
}

/// The largest bound (`Encode::MAX_LEN`) that takes the bounded write: a
/// block that has fewer bytes left than a record's bound is sealed, so a
/// larger bound would leave more of each block unused. No block is
/// smaller (`BufferPool::new` holds every pool to it), but the loom
/// models', which write no bounded record.
const BOUNDED_RECORD: usize = 256;

const _: () = assert!(cfg!(flightrec_loom) || MIN_BLOCK_SIZE >= BOUNDED_RECORD);

/// `ThreadSlot::current_epoch` while the slot has no block: no epoch is
/// ever this large (epochs count up from 1, one per rotation).
const NO_BLOCK: u64 = u64::MAX;

/// Skips the section's stack tag: the loom negative control
/// `skip_stack_tag` (see `ci/loom.sh`).
const SKIP_STACK_TAG: bool = cfg!(flightrec_loom_weaken = "skip_stack_tag");

/// Tags stack `key` with `epoch`, the epoch of the caller's open write
/// section; the key the event may reference: `key`, or 0 (counted as a
/// dropped stack) if the stack was released since it was interned (see
/// [`crate::cpool::stacks`]).
#[cold]
#[inline(never)]
pub(crate) fn tag_stack(rt: &Runtime, key: u64, epoch: u64) -> u64 {
    if SKIP_STACK_TAG || rt.stacks.tag(key, epoch) {
        key
    } else {
        rt.losses.record(LossCause::StackDropped, 0);
        0
    }
}

/// Counts a dropped event.
#[cold]
#[inline(never)]
fn dropped(losses: &Losses, cause: LossCause) -> Emitted {
    losses.record(cause, 0);
    Emitted::Dropped
}

/// No block for a record of `epoch`: the pool is exhausted (the event is
/// dropped, counted), or it was closed for `epoch` by the recording's last
/// stop (the event is not committed: see [`Emitted::NotCommitted`]).
#[cold]
#[inline(never)]
fn refused(losses: &Losses, pool: &BufferPool, epoch: u64) -> Emitted {
    if pool.closed_for(epoch) {
        Emitted::NotCommitted
    } else {
        dropped(losses, LossCause::PoolExhausted)
    }
}

/// Result of one attempt to write an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emitted {
    /// Written, this many bytes.
    Written(usize),
    /// Dropped and counted.
    Dropped,
    /// Not committed, and not counted: the section loaded an epoch past
    /// the recording's last chunk (the last stop closed the pool for it
    /// before its final flip, and had turned every type off before that),
    /// so the event comes after the stop, as one whose type the writer
    /// found off. The stop's file holds every event whose section loaded
    /// an earlier epoch (see `docs/rotation-protocol.md`).
    NotCommitted,
}

impl Emitted {
    /// True if the record was written (a record is never empty: 0 bytes is
    /// one its fields abandoned).
    #[inline(always)]
    pub(crate) fn written(self) -> bool {
        matches!(self, Self::Written(n) if n > 0)
    }
}

/// Closes a write section whose record's encoding panicked.
///
/// Created after the section opens and forgotten once `write` returns, so
/// its `drop` runs only while unwinding: the half-written event is dropped
/// (its bytes sit above `committed`, which was not advanced, and the next
/// event overwrites them), counted as [`LossCause::Panicked`], and the
/// section is closed so the thread keeps recording and no rotation waits on
/// it. On the normal path it costs nothing but the unwinding table entry.
struct OpenSection<'a> {
    slot: &'a ThreadSlot,
    losses: &'a Losses,
}

impl Drop for OpenSection<'_> {
    #[cold]
    fn drop(&mut self) {
        self.losses.record(LossCause::Panicked, 0);
        self.slot.section.store(0, Ordering::Release);
    }
}

impl ThreadSlot {
    /// A slot for the thread with constant key `thread_key`, whose epoch
    /// tags are `tags`.
    pub(crate) fn new(thread_key: u64, tags: Arc<ThreadTags>) -> Self {
        Self {
            tags,
            section: AtomicU64::new(0),
            current: AtomicPtr::new(std::ptr::null_mut()),
            current_epoch: AtomicU64::new(NO_BLOCK),
            thread_key,
            // Keys count up from 1, one per thread the process ever had:
            // 2^42 of them is beyond any process.
            thread_no_stack: Packed::varints(&[thread_key, 0])
                .expect("a thread key of at most 42 bits"),
            exited: AtomicU64::new(0),
            stack_key: AtomicU64::new(0),
            stack_epoch: AtomicU64::new(0),
        }
    }

    /// The slot of threads that have none (see [`crate::buffer::local`]):
    /// its section is always open and it is marked exited, so an event
    /// written to it is turned away by the reentrancy test every write
    /// makes anyway, and counted as [`LossCause::ThreadExiting`]. Not in
    /// the runtime's list of slots: no rotation waits for it.
    pub(crate) fn closed(tags: Arc<ThreadTags>) -> Self {
        let slot = Self::new(0, tags);
        slot.section.store(1, Ordering::Relaxed);
        slot.exited.store(1, Ordering::Relaxed);
        slot
    }

    /// Whether an event written now would be turned away: the section is
    /// open (the owner is inside another write, or this is the closed
    /// slot). Owner only: for it, nothing changes the answer before its
    /// next write (a signal handler's write closes what it opened).
    #[inline]
    pub(crate) fn turns_away(&self) -> bool {
        self.section.load(Ordering::Relaxed) != 0
    }

    /// An event that found the section open: written from inside another
    /// (a signal handler's, counted as [`LossCause::Reentrant`]) or to the
    /// closed slot (a thread past its exit, [`LossCause::ThreadExiting`]).
    #[cold]
    #[inline(never)]
    fn turned_away(&self, losses: &Losses) -> Emitted {
        let cause = if self.exited.load(Ordering::Relaxed) != 0 {
            LossCause::ThreadExiting
        } else {
            LossCause::Reentrant
        };
        losses.record(cause, 0);
        Emitted::Dropped
    }

    /// Notes the stack just interned, in `epoch`, for the owner's next
    /// event (before its write section). Owner only.
    #[inline]
    pub(crate) fn note_stack(&self, key: u64, epoch: u64) {
        self.stack_key.store(key, Ordering::Relaxed);
        self.stack_epoch.store(epoch, Ordering::Relaxed);
    }

    /// In the write section of `epoch`: the key the event may reference for
    /// stack `key`, noted by [`note_stack`](Self::note_stack). The stack
    /// is tagged with `epoch` already unless a flip fell between its intern
    /// and the section; then it is tagged now ([`tag_stack`]). A signal
    /// handler's event between the two overwrites the note: the keys then
    /// differ and the stack is tagged, or they match and the handler's
    /// intern, no earlier than ours, tagged it with an epoch no earlier than
    /// ours either. Owner only.
    #[cold]
    #[inline(never)]
    pub(crate) fn stack_in_section(&self, rt: &Runtime, key: u64, epoch: u64) -> u64 {
        if self.stack_key.load(Ordering::Relaxed) == key
            && self.stack_epoch.load(Ordering::Relaxed) == epoch
        {
            return key;
        }
        tag_stack(rt, key, epoch)
    }

    /// True while the owner is inside a write section.
    #[inline]
    pub(crate) fn in_section(&self) -> bool {
        self.section.load(Ordering::Acquire) != 0
    }

    /// The owner's current block, for the recorder's periodic flush.
    pub(crate) fn current_block(&self) -> Option<BlockPtr> {
        let p = self.current.load(Ordering::Acquire);
        (!p.is_null()).then_some(BlockPtr(p))
    }

    /// Writes one event: `record` encodes itself into the thread's block.
    ///
    /// Owner thread only. Never blocks; on failure the event is dropped and
    /// counted in `losses`, except in an epoch the last stop closed the
    /// pool for: then it is [`Emitted::NotCommitted`], found on the cold
    /// path (the writer's block is always of an older epoch then), so the
    /// common path has no check of its own.
    #[inline(always)]
    pub(crate) fn emit(
        &self,
        epoch_word: &AtomicU64,
        pool: &BufferPool,
        losses: &Losses,
        record: &impl Encode,
    ) -> Emitted {
        if self.section.load(Ordering::Relaxed) != 0 {
            return self.turned_away(losses);
        }
        self.section.store(1, Ordering::Relaxed);
        // Orders the section store before the epoch load on this thread; the
        // rotating thread's membarrier upgrades it to a full fence.
        compiler_fence(Ordering::SeqCst);
        if crate::epoch::membarrier::writers_need_fence() {
            crate::base::sync::fence(Ordering::SeqCst);
        }
        let epoch = epoch_word.load(Ordering::Relaxed);
        // Closes the section if the record's encoding unwinds; forgotten on
        // the normal path.
        let unwinding = OpenSection { slot: self, losses };
        let result = self.write(epoch, epoch_word, pool, losses, record);
        std::mem::forget(unwinding);
        // Release: the rotating thread that sees 0 also sees the committed
        // position of the event.
        self.section.store(0, Ordering::Release);
        result
    }

    /// Encodes `record` into the owner's block of `epoch`: for a record of
    /// bounded size, [`write_bounded`](Self::write_bounded); otherwise
    /// [`write_unbounded`](Self::write_unbounded). The choice is made at
    /// compile time when the bound is a constant (`Encode::MAX_LEN`), else
    /// by one compare of the record's run-time bound (`Encode::max_len`,
    /// a dynamic type's): each path then has its own inlined encoder.
    #[inline(always)]
    fn write<R: Encode>(
        &self,
        epoch: u64,
        epoch_word: &AtomicU64,
        pool: &BufferPool,
        losses: &Losses,
        record: &R,
    ) -> Emitted {
        match R::MAX_LEN {
            Some(max) if max <= BOUNDED_RECORD => {
                self.write_bounded(max, epoch, epoch_word, pool, losses, record)
            }
            Some(_) => self.write_unbounded(epoch, epoch_word, pool, losses, record),
            None => match record.max_len() {
                Some(max) if max <= BOUNDED_RECORD => {
                    self.write_bounded(max, epoch, epoch_word, pool, losses, record)
                }
                _ => self.write_unbounded(epoch, epoch_word, pool, losses, record),
            },
        }
    }

    /// A record of at most `max` bytes: the current block is used if it is
    /// of this epoch and has `max` bytes free, else a cold call finds the
    /// block to use; then the record is encoded once, by the one inlined
    /// copy of the encoder, told that `max` bytes are free (so its own
    /// position checks compare with a constant and fold away). The cold
    /// call never sees the record, so its fields stay in registers, and
    /// there is nothing to retry: the record cannot outgrow the room
    /// checked (an encoder that overshoots its bound is dropped as too
    /// large).
    #[inline(always)]
    fn write_bounded<R: Encode>(
        &self,
        max: usize,
        epoch: u64,
        epoch_word: &AtomicU64,
        pool: &BufferPool,
        losses: &Losses,
        record: &R,
    ) -> Emitted {
        let current = self.current.load(Ordering::Relaxed);
        let mut block = current;
        let mut word = 0;
        let ptr = BlockPtr(current);
        // A block of this epoch is a block (see `current_epoch`).
        let ready = self.current_epoch.load(Ordering::Relaxed) == epoch && {
            let b = ptr.get();
            word = b.committed_word();
            b.free_in(word) >= max
        };
        if !ready {
            block = self.block_with_room(epoch, epoch_word, pool);
            if block.is_null() {
                return refused(losses, pool, epoch);
            }
            word = BlockPtr(block).get().committed_word();
            if BlockPtr(block).get().free_in(word) < max {
                // Not reached: a fresh block is empty and no block is
                // smaller than a bounded record (`MIN_BLOCK_SIZE`). Kept
                // so the encoder below may count on `max` bytes on both
                // paths.
                return dropped(losses, LossCause::TooLarge);
            }
        }
        // The room is worth telling the encoder when it is a constant (a
        // derived event's bound): its checks then fold away. A bound known
        // only at run time (a type declared at run time) would only add the
        // arithmetic of comparing with it.
        let room = if R::MAX_LEN.is_some() { max } else { 0 };
        // SAFETY: this thread owns `block` (the slot's current block, or
        // one `block_with_room` published as such), `word` is its
        // `committed` as loaded by this thread, both paths above checked
        // `max` bytes free in it, and the section guard rules out
        // reentrancy.
        match unsafe { BlockPtr(block).get().write_at(word, room, record, epoch) } {
            Some(n) => Emitted::Written(n),
            // Over its bound.
            None => dropped(losses, LossCause::TooLarge),
        }
    }

    /// The block a record of at most `max` bytes goes to when the current
    /// one is missing, of an older epoch, or short of `max` bytes: a fresh
    /// one (null if the pool is exhausted). An empty block of this epoch
    /// always has `max` bytes, as no block is smaller than a bounded
    /// record (`MIN_BLOCK_SIZE`), so the current one is never kept.
    #[cold]
    #[inline(never)]
    fn block_with_room(&self, epoch: u64, epoch_word: &AtomicU64, pool: &BufferPool) -> *mut Block {
        self.fresh_block(epoch, epoch_word, pool)
    }

    /// A record without a bound. The common path is straight-line: the
    /// current block is of this epoch and has room, the record is encoded
    /// into it, done. Otherwise a cold call swaps blocks and the record is
    /// encoded once more into the fresh block, by a second inlined copy of
    /// the encoder: the cold path never sees the record, so the record's
    /// fields stay in registers, and no retry loop makes the compiler hoist
    /// (and spill) the fields' encodings ahead of the first attempt.
    #[inline(always)]
    fn write_unbounded(
        &self,
        epoch: u64,
        epoch_word: &AtomicU64,
        pool: &BufferPool,
        losses: &Losses,
        record: &impl Encode,
    ) -> Emitted {
        let current = self.current.load(Ordering::Relaxed);
        // A block of this epoch is a block (see `current_epoch`).
        let stale = self.current_epoch.load(Ordering::Relaxed) != epoch;
        if !stale {
            // SAFETY: this thread owns `current` (only the owner stores it)
            // and the section guard rules out reentrancy.
            if let Some(n) = unsafe { BlockPtr(current).get().write_with(record, epoch) } {
                return Emitted::Written(n);
            }
        }
        // Missing, of an older epoch, or full.
        let fresh = self.fresh_block(epoch, epoch_word, pool);
        if fresh.is_null() {
            return refused(losses, pool, epoch);
        }
        // SAFETY: `fresh_block` acquired `fresh` for this thread and
        // published it as the owner's; the section guard rules out
        // reentrancy.
        match unsafe { BlockPtr(fresh).get().write_with(record, epoch) } {
            Some(n) => Emitted::Written(n),
            // Larger than a whole empty block: it can never be written.
            None => dropped(losses, LossCause::TooLarge),
        }
    }

    /// The block is missing, full, or of an older epoch: seals it and takes
    /// a fresh one tagged `epoch` (null if the pool is exhausted), and tags
    /// the owner's thread constant with `epoch` (see the module docs). Runs
    /// once per block-full of events, and at each thread's first event of
    /// an epoch.
    #[cold]
    #[inline(never)]
    fn fresh_block(&self, epoch: u64, epoch_word: &AtomicU64, pool: &BufferPool) -> *mut Block {
        self.tags.tag(epoch);
        self.seal_current(pool, Some(epoch_word));
        match pool.acquire(epoch) {
            Some(block) => {
                let p = block.0.cast_mut();
                self.current.store(p, Ordering::Release);
                self.current_epoch.store(epoch, Ordering::Relaxed);
                p
            }
            None => std::ptr::null_mut(),
        }
    }

    /// Seals the current block: hands it to the recorder thread, even when
    /// empty, because only the recorder thread resets blocks. Owner thread
    /// only (or the owner's exit path). With `epoch_word`, the seal may
    /// flip the epoch when the chunk is full (see [`BufferPool::seal`]).
    pub(crate) fn seal_current(&self, pool: &BufferPool, epoch_word: Option<&AtomicU64>) {
        let Some(block) = self.current_block() else {
            return;
        };
        // Queue first, then unpublish: the block is reachable from the slot
        // or the queue at every moment, so a rotation that finds the slot
        // empty (Acquire) finds the block queued. The other order left a
        // window in which an exiting thread's block was in neither, and its
        // events missed their epoch's chunk (loom model 3,
        // `loom-tests/tests/thread_exit.rs`). Reaching a block through the
        // slot after the recorder recycled it is harmless: only the recorder
        // drains and resets blocks, `flushed` keeps every byte drained once,
        // and `drain_live` checks the block's epoch.
        self.current_epoch.store(NO_BLOCK, Ordering::Relaxed);
        pool.seal(block, epoch_word);
        self.current.store(std::ptr::null_mut(), Ordering::Release);
    }

    /// Called by the owner when it exits: seals its block and marks the slot.
    pub(crate) fn retire(&self, pool: &BufferPool) {
        self.seal_current(pool, None);
        self.exited.store(1, Ordering::Release);
    }

    /// In a forked child (from the fork handler, the only thread): closes the
    /// section (its owner may have been inside one when the parent forked),
    /// unpublishes the current block and returns it for reuse, and marks
    /// the slot exited unless it is the forking thread's own.
    pub(crate) fn reset_in_child(&self, own: bool) -> Option<BlockPtr> {
        self.section.store(0, Ordering::Relaxed);
        let block = self.current_block();
        self.current.store(std::ptr::null_mut(), Ordering::Relaxed);
        self.current_epoch.store(NO_BLOCK, Ordering::Relaxed);
        if !own {
            self.exited.store(1, Ordering::Relaxed);
        }
        block
    }

    /// Closes the section of an owner that is leaving the process or its
    /// thread from inside it (see [`crate::buffer::local::exit`]); true if
    /// it was open. Owner only, on its exit path.
    pub(crate) fn abandon_section(&self) -> bool {
        // Release: a rotation that reads 0 sees the committed position.
        self.section.swap(0, Ordering::Release) != 0
    }

    /// True once the owner exited.
    pub(crate) fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Acquire) != 0
    }
}
