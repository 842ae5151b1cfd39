//! The global buffer pool: a bounded set of [`Block`]s, a free list, and the
//! queue of sealed blocks waiting for the recorder thread.
//!
//! # Acquire, seal, drain
//!
//! A thread that needs a buffer takes one from the free list, or allocates a
//! new one while fewer than `max_blocks` exist. When its block is full, when
//! the epoch changes, or when it exits, it *seals* the block into the full
//! queue. The recorder thread drains sealed blocks into the chunk and returns
//! them to the free list.
//!
//! These are cold paths (once per buffer-full of events), so a short mutex is
//! fine here; the hot path (writing into an owned block) takes no lock.
//!
//! # Bytes waiting
//!
//! The queue also counts the bytes its blocks hold that are not yet in a
//! chunk, updated under its lock at every seal, take and requeue, and the
//! bytes sealed since the recorder thread last told the pool its chunk's
//! length ([`BufferPool::arm`]: those waiting then, plus every seal since;
//! a take does not lower it, as the bytes taken go on into that chunk).
//! The recorder thread tells the pool how many such bytes would bring its
//! chunk to the point where it must close; the seal that reaches it wakes
//! the recorder, whatever the drain batch.
//! The chunk's size is thus checked at the seal that matters, on the
//! emitting thread, not at the recorder's next look. A second, higher mark
//! ([`BufferPool::arm`]'s `flip_at`) is the hard one: the seal that reaches
//! it flips the epoch itself (a compare-exchange from the open chunk's
//! epoch, under the queue's lock), so the chunk stops growing even when the
//! recorder thread is not running, or is still finishing the chunk before
//! (but never to an epoch more than two past the oldest chunk not finished:
//! constants carry the tags of three epochs, see [`crate::cpool::threads`];
//! [`BufferPool::chunks_finished_before`] moves that limit); the
//! recorder's safepoint then finds the epoch flipped and goes on from its
//! step 2 (see
//! [`crate::epoch::rotation`] and [`crate::output::recorder_thread`] for
//! what that bounds).
//!
//! Invariant: at most `max_blocks` blocks ever exist, so the memory held by
//! event buffers is bounded by `max_blocks × block_size`; a thread that finds
//! the pool exhausted drops its event and counts it, it never waits.

use std::collections::VecDeque;

use super::block::Block;
use super::slab::Slabs;
use crate::base::sync::{AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};

/// Sealed bytes that make the recorder thread drain (unless a quarter of the
/// pool is less). Large enough that the recorder wakes a few hundred times a
/// second at most under heavy load, small enough that recycled blocks are
/// still in the last-level cache when their owners write them again.
const DRAIN_BATCH_BYTES: usize = 4 << 20;

/// The smallest block a pool hands out: at least the largest record the
/// commit path writes after one check of the block's free space (see
/// `buffer::slot`), so an empty block always has room for such a record.
/// The configured thread buffer is never smaller
/// (`config::builder::MIN_THREAD_BUFFER`). The loom models' blocks hold two
/// records of a few bytes, and they write no bounded record.
pub(crate) const MIN_BLOCK_SIZE: usize = if cfg!(flightrec_loom) { 1 } else { 256 };

const _: () = assert!(crate::config::builder::MIN_THREAD_BUFFER >= MIN_BLOCK_SIZE);

/// Leaves the pool open at the last stop ([`BufferPool::close_from`]): the
/// loom negative control `skip_pool_close` (see `ci/loom.sh`).
const SKIP_POOL_CLOSE: bool = cfg!(flightrec_loom_weaken = "skip_pool_close");

/// Raw pointer to a block that lives as long as the pool (blocks are never
/// freed while the pool exists; they move between free list, owners and
/// the full queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockPtr(pub(crate) *const Block);

// SAFETY: a BlockPtr is a handle to a `Block` (which is Sync) owned by the
// pool for the pool's whole life; moving the handle between threads is how
// ownership of the block moves, per the state machine in `block.rs`.
unsafe impl Send for BlockPtr {}

impl BlockPtr {
    /// The block.
    #[inline]
    pub(crate) fn get(&self) -> &Block {
        // SAFETY: blocks are allocated by `BufferPool::acquire` and freed only
        // when the pool drops; every BlockPtr comes from a live pool.
        unsafe { &*self.0 }
    }
}

/// The pool.
#[derive(Debug)]
pub(crate) struct BufferPool {
    block_size: usize,
    max_blocks: usize,
    allocated: AtomicUsize,
    free: Mutex<Vec<BlockPtr>>,
    full: Mutex<VecDeque<BlockPtr>>,
    /// Signalled when the full queue reaches `wake_at` blocks.
    pub(crate) wakeup: Condvar,
    /// Sealed blocks that make a drain due (see [`Self::set_drain_batch`]).
    wake_at: AtomicUsize,
    /// Undrained bytes of the blocks in `full` (changed under its lock).
    queued_bytes: AtomicU64,
    /// Bytes of the armed epoch or later queued at the last [`Self::arm`],
    /// plus those sealed since.
    since_arm: AtomicU64,
    /// `since_arm` bytes that make a rotation due (see [`Self::arm`]).
    rotate_at: AtomicU64,
    /// `since_arm` bytes at which a seal flips the epoch (see [`Self::arm`]).
    flip_at: AtomicU64,
    /// The epoch the marks are for: a seal flips only from it, and counts
    /// only blocks of it or later.
    open_epoch: AtomicU64,
    /// The marks [`Self::seal`] arms for the next epoch when it flips.
    fresh_rotate_at: AtomicU64,
    fresh_flip_at: AtomicU64,
    /// The newest epoch a seal may flip to (see
    /// [`Self::chunks_finished_before`]); 0 until the recorder says.
    flip_limit: AtomicU64,
    /// No block is handed out for this epoch or a later one (see
    /// [`Self::close_from`]); `u64::MAX` while a recording runs. Changed
    /// under `free`'s lock, read under it.
    closed_from: AtomicU64,
    /// Every block ever allocated (to free them when the pool drops).
    all: Mutex<Vec<BlockPtr>>,
    /// Where their bytes come from (under loom, each block's own box, so
    /// that every execution starts from fresh memory).
    slabs: Mutex<Slabs>,
}

impl BufferPool {
    /// A pool of at most `max_blocks` blocks of `block_size` bytes (at
    /// least [`MIN_BLOCK_SIZE`]).
    pub(crate) fn new(block_size: usize, max_blocks: usize) -> Self {
        assert!(
            block_size >= MIN_BLOCK_SIZE,
            "a block of {block_size} bytes: at least {MIN_BLOCK_SIZE}"
        );
        Self {
            block_size,
            max_blocks,
            allocated: AtomicUsize::new(0),
            free: Mutex::new(Vec::new()),
            full: Mutex::new(VecDeque::new()),
            wakeup: Condvar::new(),
            wake_at: AtomicUsize::new(Self::batch_blocks(block_size, max_blocks, usize::MAX)),
            queued_bytes: AtomicU64::new(0),
            since_arm: AtomicU64::new(0),
            rotate_at: AtomicU64::new(u64::MAX),
            flip_at: AtomicU64::new(u64::MAX),
            open_epoch: AtomicU64::new(u64::MAX),
            fresh_rotate_at: AtomicU64::new(u64::MAX),
            fresh_flip_at: AtomicU64::new(u64::MAX),
            flip_limit: AtomicU64::new(0),
            closed_from: AtomicU64::new(u64::MAX),
            all: Mutex::new(Vec::new()),
            slabs: Mutex::new(Slabs::default()),
        }
    }

    /// Bytes per block.
    pub(crate) fn block_size(&self) -> usize {
        self.block_size
    }

    /// A free block tagged with `epoch`, or `None` if the pool is exhausted
    /// or closed for `epoch` ([`Self::close_from`]; see
    /// [`Self::closed_for`]).
    #[cold]
    pub(crate) fn acquire(&self, epoch: u64) -> Option<BlockPtr> {
        let popped = {
            let mut free = self.free.lock();
            // Relaxed: changed under this lock only.
            if epoch >= self.closed_from.load(Ordering::Relaxed) {
                return None;
            }
            free.pop()
        };
        let block = match popped {
            Some(b) => b,
            None => self.allocate()?,
        };
        block.get().set_epoch(epoch);
        Some(block)
    }

    /// Hands out no block for `epoch` or a later one: the last stop, before
    /// its last flip (to `epoch`), so that no event lands in a block no
    /// chunk will drain. Under `free`'s lock, before the flip: a writer that
    /// loaded the flipped epoch takes that lock after this (its load cannot
    /// read a flip that a lock it held before ordered after it), so it sees
    /// the pool closed. Recorder thread.
    pub(crate) fn close_from(&self, epoch: u64) {
        let _free = self.free.lock();
        if !SKIP_POOL_CLOSE {
            self.closed_from.store(epoch, Ordering::Relaxed);
        }
    }

    /// Hands out blocks for every epoch again (a recording starts).
    pub(crate) fn reopen(&self) {
        let _free = self.free.lock();
        self.closed_from.store(u64::MAX, Ordering::Relaxed);
    }

    /// Why [`Self::acquire`] just refused a block for `epoch`: true if the
    /// pool was closed for it by the last stop (the writer's event is not
    /// committed), false if every block is in use (it is lost, counted).
    #[cold]
    pub(crate) fn closed_for(&self, epoch: u64) -> bool {
        let _free = self.free.lock();
        epoch >= self.closed_from.load(Ordering::Relaxed)
    }

    fn allocate(&self) -> Option<BlockPtr> {
        let n = self.allocated.fetch_add(1, Ordering::Relaxed);
        if n >= self.max_blocks {
            self.allocated.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let block = if cfg!(flightrec_loom) {
            Block::new(self.block_size)
        } else {
            let bytes = self
                .slabs
                .lock()
                .block(self.block_size, self.max_blocks - n);
            // SAFETY: `Slabs::block` hands out each piece once, and slabs
            // live until the pool drops, after its blocks (`Drop` below).
            unsafe { Block::with_bytes(bytes, self.block_size) }
        };
        let ptr = BlockPtr(Box::into_raw(Box::new(block)));
        self.all.lock().push(ptr);
        Some(ptr)
    }

    /// Hands a sealed block to the recorder thread. With `epoch_word` (the
    /// runtime's epoch, from a writer), a seal that reaches the hard mark
    /// of [`Self::arm`] flips it from the open epoch.
    #[cold]
    pub(crate) fn seal(&self, block: BlockPtr, epoch_word: Option<&AtomicU64>) {
        let (len, rotate) = {
            let mut full = self.full.lock();
            full.push_back(block);
            // Relaxed: every update of these words is made under the lock.
            let bytes = block.get().unflushed();
            let queued = self.queued_bytes.load(Ordering::Relaxed) + bytes;
            self.queued_bytes.store(queued, Ordering::Relaxed);
            let open = self.open_epoch.load(Ordering::Relaxed);
            let mut counted = self.since_arm.load(Ordering::Relaxed);
            let mut flipped = false;
            if block.get().epoch() >= open {
                counted += bytes;
                self.since_arm.store(counted, Ordering::Relaxed);
            }
            if let Some(word) = epoch_word
                && counted >= self.flip_at.load(Ordering::Relaxed)
                && open < self.flip_limit.load(Ordering::Relaxed)
                // SeqCst, as the recorder's own flip (`rotation::safepoint`);
                // fails when the epoch moved on already, so an epoch flips
                // once.
                && word
                    .compare_exchange(open, open + 1, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
            {
                flipped = true;
                // The next epoch counts from its first seal, against the
                // marks of a chunk just opened. Whether a seal may flip it
                // in turn is asked then (`flip_limit`): constants carry the
                // tags of three epochs (see `crate::cpool::threads`).
                self.set_marks(
                    open + 1,
                    0,
                    self.fresh_rotate_at.load(Ordering::Relaxed),
                    self.fresh_flip_at.load(Ordering::Relaxed),
                );
                counted = 0;
            }
            // A flip wakes the recorder thread: the chunk it closed is due.
            (full.len(), flipped || self.rotation_due_at(counted))
        };
        if len >= self.wake_at() || rotate {
            self.wakeup.notify_one();
        }
    }

    /// Returns an unused (empty) block to the free list.
    pub(crate) fn release(&self, block: BlockPtr) {
        block.get().reset();
        self.free.lock().push(block);
    }

    /// Takes every sealed block out of the queue (recorder thread).
    pub(crate) fn take_sealed(&self) -> Vec<BlockPtr> {
        let mut full = self.full.lock();
        self.queued_bytes.store(0, Ordering::Relaxed);
        full.drain(..).collect()
    }

    /// Puts sealed blocks back at the front of the queue, in order
    /// (recorder thread; for blocks of a later epoch than the one drained).
    pub(crate) fn requeue(&self, blocks: Vec<BlockPtr>) {
        let mut full = self.full.lock();
        let mut queued = self.queued_bytes.load(Ordering::Relaxed);
        for b in blocks.into_iter().rev() {
            queued += b.get().unflushed();
            full.push_front(b);
        }
        self.queued_bytes.store(queued, Ordering::Relaxed);
    }

    /// Undrained bytes of the sealed blocks waiting for the recorder.
    pub(crate) fn queued_bytes(&self) -> u64 {
        // Relaxed: an estimate for the recorder's decision; the lock's
        // holder sees the exact value.
        self.queued_bytes.load(Ordering::Relaxed)
    }

    /// The recorder's flip (step 1 of its safepoint): `word` from `open`
    /// to `open + 1` (SeqCst compare-exchange, as a seal's), under the
    /// queue's lock, with `next`'s marks (wake-up, hard) armed for
    /// `open + 1` in the same step (as [`Self::arm`]: ignored when a seal
    /// flipped further already), so a seal never finds the new epoch
    /// without its hard mark. Returns the compare-exchange's result.
    pub(crate) fn flip(
        &self,
        word: &AtomicU64,
        open: u64,
        next: Option<(u64, u64)>,
    ) -> Result<u64, u64> {
        let full = self.full.lock();
        let r = word.compare_exchange(open, open + 1, Ordering::SeqCst, Ordering::SeqCst);
        if let Some((rotate_at, flip_at)) = next {
            self.arm_locked(&full, open + 1, rotate_at, flip_at);
        }
        r
    }

    /// The marks for a chunk from its epoch's flip by a seal, before it
    /// is open (its length unknown: counted as 0). Recorder thread, when
    /// the limits change.
    pub(crate) fn set_fresh_marks(&self, rotate_at: u64, flip_at: u64) {
        let _full = self.full.lock();
        self.fresh_rotate_at.store(rotate_at, Ordering::Relaxed);
        self.fresh_flip_at.store(flip_at, Ordering::Relaxed);
    }

    /// The chunks of every epoch before `epoch` are finished (their
    /// constants written): a seal may flip the epoch up to `epoch + 2`,
    /// the third epoch whose tags the constants hold besides the older
    /// ones' (see [`crate::cpool::threads`]). Recorder thread, when a chunk
    /// is finished and when one opens; the limit never goes back.
    pub(crate) fn chunks_finished_before(&self, epoch: u64) {
        let _full = self.full.lock();
        let limit = epoch.saturating_add(crate::cpool::threads::TAG_SLOTS - 1);
        if limit > self.flip_limit.load(Ordering::Relaxed) {
            self.flip_limit.store(limit, Ordering::Relaxed);
        }
    }

    /// Arms the marks for the chunk of epoch `open`, counting the bytes
    /// of that epoch or later queued now: the seal that brings the count to
    /// `rotate_at` (at least one byte) wakes the recorder thread to rotate,
    /// and the one that brings it to `flip_at` flips the epoch from `open`
    /// to `open + 1` itself. Recorder thread, after each change of its
    /// chunk's length, and right after it flips; under the queue's lock,
    /// so a seal sees the marks, the count and the epoch together. Ignored
    /// for an epoch older than the one armed (a seal flipped past the
    /// recorder's chunk: the marks of the newer epoch stay).
    pub(crate) fn arm(&self, open: u64, rotate_at: u64, flip_at: u64) {
        let full = self.full.lock();
        self.arm_locked(&full, open, rotate_at, flip_at);
    }

    /// [`Self::arm`], the queue locked.
    fn arm_locked(&self, full: &VecDeque<BlockPtr>, open: u64, rotate_at: u64, flip_at: u64) {
        let armed = self.open_epoch.load(Ordering::Relaxed);
        if armed != u64::MAX && open < armed {
            return;
        }
        let counted = full
            .iter()
            .filter(|b| b.get().epoch() >= open)
            .map(|b| b.get().unflushed())
            .sum();
        self.set_marks(open, counted, rotate_at, flip_at);
    }

    /// No marks: no seal wakes the recorder or flips (a failed or stopped
    /// recording).
    pub(crate) fn disarm(&self) {
        let _full = self.full.lock();
        self.set_marks(u64::MAX, 0, u64::MAX, u64::MAX);
    }

    /// Under the queue's lock.
    fn set_marks(&self, open: u64, counted: u64, rotate_at: u64, flip_at: u64) {
        self.since_arm.store(counted, Ordering::Relaxed);
        self.rotate_at.store(rotate_at.max(1), Ordering::Relaxed);
        self.flip_at.store(flip_at.max(1), Ordering::Relaxed);
        self.open_epoch.store(open, Ordering::Relaxed);
    }

    /// True when the queued bytes reached the `rotate_at` mark of [`Self::arm`]
    /// (call with the queue locked, as the recorder does before it waits).
    pub(crate) fn rotation_due(&self) -> bool {
        self.rotation_due_at(self.since_arm.load(Ordering::Relaxed))
    }

    fn rotation_due_at(&self, counted: u64) -> bool {
        counted >= self.rotate_at.load(Ordering::Relaxed)
    }

    /// True when enough blocks are sealed that the recorder thread should
    /// write them out now rather than at its next periodic flush.
    pub(crate) fn drain_due(queue: &VecDeque<BlockPtr>, wake_at: usize) -> bool {
        queue.len() >= wake_at
    }

    /// How many sealed blocks make a drain due: a quarter of the pool,
    /// [`DRAIN_BATCH_BYTES`], or the recording's own limit (see
    /// [`Self::set_drain_batch`]), whichever is least.
    pub(crate) fn wake_at(&self) -> usize {
        // Relaxed: a hint for when to wake; a stale value only changes
        // the batch size of one drain.
        self.wake_at.load(Ordering::Relaxed)
    }

    /// Makes drains due after `bytes` of sealed blocks at most (at least
    /// one block): a recording with small chunks drains (and checks its
    /// chunk's size) often enough to rotate close to its limit.
    pub(crate) fn set_drain_batch(&self, bytes: usize) {
        let blocks = Self::batch_blocks(self.block_size, self.max_blocks, bytes);
        self.wake_at.store(blocks, Ordering::Relaxed);
    }

    fn batch_blocks(block_size: usize, max_blocks: usize, bytes: usize) -> usize {
        let bytes = bytes.min(DRAIN_BATCH_BYTES);
        (max_blocks / 4).clamp(1, (bytes / block_size).max(1))
    }

    /// Bytes of the blocks allocated so far, and the most there may be.
    pub(crate) fn memory(&self) -> (usize, usize) {
        (
            self.allocated.load(Ordering::Relaxed) * self.block_size,
            self.max_blocks * self.block_size,
        )
    }

    /// Locks the full-queue mutex (for waiting on [`Self::wakeup`]).
    /// Share of the pool's blocks in use (held by threads or sealed and
    /// waiting for the recorder), 0 to 1.
    pub(crate) fn occupancy(&self) -> f64 {
        let allocated = self.allocated.load(Ordering::Relaxed);
        let free = self.free.lock().len();
        allocated.saturating_sub(free) as f64 / self.max_blocks.max(1) as f64
    }

    pub(crate) fn full_queue(&self) -> crate::base::sync::MutexGuard<'_, VecDeque<BlockPtr>> {
        self.full.lock()
    }

    /// Wakes the recorder thread for a command sent just before. Passing
    /// through the queue's lock orders the send before the recorder's
    /// last look at its channel (taken under that lock before it waits),
    /// so the wake-up cannot fall between that look and the wait.
    pub(crate) fn wake_for_command(&self) {
        drop(self.full.lock());
        self.wakeup.notify_all();
    }
}

/// Fork handling (see `crate::process::fork`).
impl BufferPool {
    /// Holds every lock of the pool across a `fork()`.
    pub(crate) fn fork_lock(&'static self) {
        crate::base::sync::fork_lock(&self.full);
        crate::base::sync::fork_lock(&self.free);
        crate::base::sync::fork_lock(&self.all);
        crate::base::sync::fork_lock(&self.slabs);
    }

    /// Releases what [`fork_lock`](Self::fork_lock) holds.
    ///
    /// # Safety
    ///
    /// Called once after [`fork_lock`](Self::fork_lock) on the same thread.
    pub(crate) unsafe fn fork_unlock(&self) {
        // SAFETY: the caller's contract; reverse order of `fork_lock`.
        unsafe {
            crate::base::sync::fork_unlock(&self.slabs);
            crate::base::sync::fork_unlock(&self.all);
            crate::base::sync::fork_unlock(&self.free);
            crate::base::sync::fork_unlock(&self.full);
        }
    }

    /// In a forked child: every sealed block, and `owned` (the blocks the
    /// parent's threads held), emptied and put on the free list. The
    /// parent's events are the parent's to write; the child starts empty.
    ///
    /// # Safety
    ///
    /// Called in the child between [`fork_lock`](Self::fork_lock) and
    /// [`fork_unlock`](Self::fork_unlock), with no other thread running.
    pub(crate) unsafe fn reset_in_child(&self, owned: impl IntoIterator<Item = BlockPtr>) {
        // SAFETY: the caller's contract: the locks are held for us and we
        // are the only thread.
        let (full, free) = unsafe {
            (
                crate::base::sync::fork_data(&self.full),
                crate::base::sync::fork_data(&self.free),
            )
        };
        for b in full.drain(..).chain(owned) {
            b.get().reset();
            free.push(b);
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        for b in self.all.get_mut().drain(..) {
            // SAFETY: every pointer in `all` came from Box::into_raw in
            // `allocate` and is freed exactly once, here; the pool is being
            // dropped, so no owner or reader can still hold it.
            drop(unsafe { Box::from_raw(b.0 as *mut Block) });
        }
    }
}
