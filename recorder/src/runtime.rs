//! Process-wide state of the data path: the epoch, the buffers, the
//! threads, the constants and the losses, shared by the emitting threads and
//! the recorder thread, created by the first recording and never dropped.
//! (The type registry, which exists before any recording, is
//! [`crate::event::registry`].)
//!
//! Invariant: once [`init`] returned, [`get`] returns the same runtime for
//! the life of the process; a caller holding an enabled settings word may
//! use [`enabled`], which does not check.

use crate::base::enabled::EnabledWord;
use crate::base::loss::Losses;
use crate::base::sync::{Arc, AtomicU64, InitOnce, Mutex};
use crate::buffer::pool::BufferPool;
use crate::buffer::slot::ThreadSlot;
use crate::cpool::stacks::StackRepository;
use crate::cpool::threads::{ThreadRegistry, ThreadTags};

/// Buffers, threads, constants and losses, shared by the emitting threads
/// and the recorder thread.
#[derive(Debug)]
pub(crate) struct Runtime {
    /// The current epoch; flipped by rotation.
    pub(crate) epoch: AtomicU64,
    pub(crate) pool: BufferPool,
    pub(crate) slots: Mutex<Vec<Arc<ThreadSlot>>>,
    pub(crate) threads: ThreadRegistry,
    pub(crate) stacks: StackRepository,
    pub(crate) losses: Losses,
    /// Deepest stack captured.
    pub(crate) max_stack_depth: usize,
    /// The slot a thread past its exit writes to (see
    /// [`ThreadSlot::closed`]).
    pub(crate) closed_slot: ThreadSlot,
}

static RUNTIME: InitOnce<Runtime> = InitOnce::new();

/// The runtime, if a recording ever started.
#[inline]
pub(crate) fn get() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// The runtime, for a caller holding an enabled settings word: no check.
#[inline(always)]
pub(crate) fn enabled(word: EnabledWord) -> &'static Runtime {
    let _ = word;
    debug_assert!(RUNTIME.get().is_some());
    // SAFETY: an `EnabledWord` was loaded (Acquire) from a word that
    // `Registry::apply(.., true)` or registration during a recording
    // stored (Release), and `Recording::start` initialises RUNTIME
    // before that; RUNTIME is never emptied. (The loom models never reach
    // this: they hold runtimes of their own, and the loom builds check
    // the debug assertion above.)
    unsafe { RUNTIME.get_unchecked() }
}

/// The runtime, created with these sizes on first call. Later calls return
/// the existing runtime (buffer sizes are process-wide).
pub(crate) fn init(
    block_size: usize,
    max_blocks: usize,
    max_stack_depth: usize,
    constant_bytes: usize,
) -> &'static Runtime {
    let rt = RUNTIME
        .get_or_init(|| Runtime::new(block_size, max_blocks, max_stack_depth, constant_bytes));
    // The constants' limit follows each recording's `max_memory`.
    rt.stacks.set_limit(constant_bytes);
    rt
}

impl Runtime {
    /// A runtime in epoch 1 (the global one, or a loom model's), whose
    /// constant pools may hold `constant_bytes`.
    pub(crate) fn new(
        block_size: usize,
        max_blocks: usize,
        max_stack_depth: usize,
        constant_bytes: usize,
    ) -> Self {
        Self {
            epoch: AtomicU64::new(1),
            pool: BufferPool::new(block_size, max_blocks),
            slots: Mutex::new(Vec::new()),
            threads: ThreadRegistry::new(),
            stacks: StackRepository::new(constant_bytes),
            losses: Losses::default(),
            max_stack_depth,
            closed_slot: ThreadSlot::closed(Arc::new(ThreadTags::default())),
        }
    }
}
