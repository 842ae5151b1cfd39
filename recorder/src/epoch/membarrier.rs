//! The asymmetric fence of the rotation protocol.
//!
//! Emitting threads order "section open" before "load epoch" with only a
//! compiler fence. The rotating thread calls [`barrier`] after flipping the
//! epoch: `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` interrupts every
//! running thread of the process with a full memory barrier, which upgrades
//! each writer's compiler fence to a real one at that point. Where the
//! expedited command is unavailable (old kernels, seccomp), writers are told
//! to issue a real `fence(SeqCst)` themselves ([`writers_need_fence`]).
//!
//! # Under loom
//!
//! Loom has no membarrier. There, `compiler_fence` is a real `fence(SeqCst)`
//! (see [`crate::base::sync`]) and [`barrier`] is the caller's `fence(SeqCst)`
//! (a loom fence) alone: the two SeqCst fences are the usual model of the
//! asymmetric pair (what membarrier promotes each writer's compiler fence
//! to). The flags are std statics, never set there (no model registers), so
//! [`writers_need_fence`] is false.
//!
//! Invariant: after [`barrier`] returns, every writer either has its open
//! section visible to the caller or will load the new epoch.

use crate::base::sync::global::AtomicBool;
use crate::base::sync::{Ordering, fence};

const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// True when membarrier is unavailable and writers must fence themselves.
static WRITERS_FENCE: AtomicBool = AtomicBool::new(false);
static REGISTERED: AtomicBool = AtomicBool::new(false);

fn membarrier(cmd: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory
    // of ours; failure is reported through the return value.
    unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0) == 0 }
}

/// Registers the process for expedited barriers (once, at recording start).
#[cold]
pub(crate) fn register() {
    if REGISTERED.swap(true, Ordering::AcqRel) {
        return;
    }
    if !membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) {
        WRITERS_FENCE.store(true, Ordering::SeqCst);
    }
}

/// In a forked child: registers again at the child's first recording (the
/// registration belongs to the parent's memory map).
pub(crate) fn forget_registration() {
    REGISTERED.store(false, Ordering::Relaxed);
}

/// True if writers must issue a full fence after opening a section.
#[inline]
pub(crate) fn writers_need_fence() -> bool {
    WRITERS_FENCE.load(Ordering::Relaxed)
}

/// Makes every running thread execute a full memory barrier.
pub(crate) fn barrier() {
    fence(Ordering::SeqCst);
    if cfg!(flightrec_loom) {
        return; // the fence above is the whole barrier (module docs)
    }
    if !writers_need_fence() && !membarrier(CMD_PRIVATE_EXPEDITED) {
        // Registered but refused now: writers fence themselves from here on.
        // A writer that opened its section before seeing this flag did so
        // with only a compiler fence; its store leaves the store buffer
        // within nanoseconds, so a short pause before the caller inspects
        // the sections stands in for the barrier this one time.
        WRITERS_FENCE.store(true, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
