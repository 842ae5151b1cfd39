//! `fork()`: the parent records on, the child starts with recording off.
//!
//! A forked child has one thread (the one that called `fork`) and a copy of
//! everything else: buffers full of the parent's events, a recorder thread
//! and a sampler thread that do not exist in it, and every lock in
//! whatever state some parent thread had it. Left alone, the child's exit
//! handler waits forever for the missing recorder thread, and a recording
//! the child starts finds "already recording" and the parent's slots.
//!
//! # Handlers (`pthread_atfork`, installed by the first recording)
//!
//! * *prepare* (parent, before the copy): takes every lock of the runtime,
//!   in the order the code nests them: start/stop turn → physical recorder
//!   → sampler control → registry → slots → threads → stack shards → pool.
//!   The copy therefore sees no lock held by a thread that will not exist
//!   in the child. Each is held only for moments, never across a wait for
//!   the recorder thread (a start or stop holds its *turn*, a flag under
//!   the turn's lock, not the lock itself; see
//!   [`crate::lifecycle::physical`]), so a `fork()` never waits for a
//!   stop or a rotation to finish.
//! * *parent*: releases them.
//! * *child* (the only thread): frees the start/stop turn (its holder, if
//!   any, is a parent thread), turns recording off (every type disabled),
//!   empties every buffer into the free list (the parent's events are the
//!   parent's to write), marks every other thread exited and closes their
//!   write sections, forgets the parent's recorder, sampler thread and membarrier
//!   registration, then releases the locks.
//!
//! A [`Recording`](crate::Recording) handle copied into the child belongs
//! to the parent: its `stop()` (and drop, and the `FLIGHTREC` exit
//! handler) sees another pid and returns
//! [`RecordingError::InForkedChild`](crate::RecordingError::InForkedChild)
//! without touching the parent's thread or files.
//!
//! Invariant: after `fork()` returns in the child, no type is enabled, no
//! slot has an open section, no block holds data, and every lock of the
//! runtime is free; the parent's state is as before the call.

use crate::base::sync::global::{AtomicPtr, Ordering};
use crate::buffer::local;
use crate::epoch::membarrier;
use crate::runtime::Runtime;
use crate::{runtime, sampler};

/// Installs the handlers (once per process).
pub(crate) fn install() {
    static ONCE: crate::base::sync::Once = crate::base::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the three handlers are plain `extern "C" fn()`s that never
        // unwind (they only lock, unlock and store).
        let rc = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
        if rc != 0 {
            eprintln!("flightrec: pthread_atfork failed ({rc}); a forked child may hang at exit");
        }
    });
}

/// The runtime whose locks `prepare` took (null if none existed then): a
/// runtime created between `prepare` and `unlock` is not unlocked.
static LOCKED: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn prepare() {
    crate::lifecycle::physical::fork_lock();
    sampler::fork_lock();
    crate::event::registry::registry().fork_lock();
    if let Some(rt) = runtime::get() {
        crate::base::sync::fork_lock(&rt.slots);
        rt.threads.fork_lock();
        rt.stacks.fork_lock();
        rt.pool.fork_lock();
        LOCKED.store(std::ptr::from_ref(rt).cast_mut(), Ordering::Relaxed);
    }
}

/// The runtime `prepare` locked.
fn locked() -> Option<&'static Runtime> {
    // SAFETY: `LOCKED` is null or the address of the `'static` runtime.
    unsafe { LOCKED.load(Ordering::Relaxed).as_ref() }
}

/// Releases everything `prepare` took, in reverse order.
///
/// # Safety
///
/// Called once after `prepare` on the same thread (as `pthread_atfork`
/// does); with `in_child`, in the child with no other thread running.
unsafe fn unlock(in_child: bool) {
    // SAFETY: `prepare` took each of these on this thread (the caller's
    // contract), the runtime's only if it recorded it in `LOCKED`. No
    // reference into the data outlives the calls.
    unsafe {
        if let Some(rt) = locked() {
            LOCKED.store(std::ptr::null_mut(), Ordering::Relaxed);
            rt.pool.fork_unlock();
            rt.stacks.fork_unlock();
            rt.threads.fork_unlock();
            crate::base::sync::fork_unlock(&rt.slots);
        }
        crate::event::registry::registry().fork_unlock();
        sampler::fork_unlock(in_child);
        crate::lifecycle::physical::fork_unlock();
    }
}

extern "C" fn parent() {
    // SAFETY: pthread_atfork calls this once after `prepare`, on the
    // forking thread.
    unsafe { unlock(false) }
}

extern "C" fn child() {
    // SAFETY: pthread_atfork calls this in the child after `prepare` took
    // every lock, on the only thread of the child: the contract of each
    // `*_in_child`, `fork_data` and `unlock` below.
    unsafe {
        crate::lifecycle::physical::forget_in_child();
        crate::event::registry::registry().stop_in_child();
        if let Some(rt) = locked() {
            let own = local::own_slot_ptr();
            let slots = crate::base::sync::fork_data(&rt.slots);
            let mut blocks = Vec::new();
            let mut own_key = None;
            for slot in slots.iter() {
                let is_own = std::ptr::eq(crate::base::sync::Arc::as_ptr(slot), own);
                if is_own {
                    own_key = Some(slot.thread_key);
                }
                blocks.extend(slot.reset_in_child(is_own));
            }
            slots.retain(|s| std::ptr::eq(crate::base::sync::Arc::as_ptr(s), own));
            rt.pool.reset_in_child(blocks);
            rt.threads.keep_only_in_child(
                own_key,
                crate::base::sync::os_thread_id(),
                rt.epoch.load(Ordering::Relaxed),
            );
        }
        membarrier::forget_registration();
        unlock(true);
    }
}
