//! The thread-local handle: finds the calling thread's [`ThreadSlot`],
//! attaching the thread on its first event and retiring it when it exits.
//!
//! The handle is a `const`-initialised thread-local holding a raw pointer, so
//! reading it is one TLS load (no lazy initialisation on the hot path). A
//! thread attaches on its first event (cold): it registers its
//! `java.lang.Thread` constant and its slot. Its thread-local destructor seals
//! the thread's block, so the events of an exiting thread reach the file.
//!
//! Invariant: a slot pointer in the handle is an `Arc<ThreadSlot>` leaked by
//! `attach` and reclaimed only by the handle's destructor, on the same thread.

use std::cell::Cell;
use std::ptr::NonNull;

use crate::buffer::slot::ThreadSlot;
use crate::runtime::Runtime;
use crate::sync::{Arc, Ordering};

struct LocalHandle {
    slot: Cell<*const ThreadSlot>,
}

impl Drop for LocalHandle {
    fn drop(&mut self) {
        let p = self.slot.replace(std::ptr::null());
        if p.is_null() {
            return;
        }
        // SAFETY: `p` came from Arc::into_raw in `attach` on this thread and
        // is reclaimed exactly once, here.
        let slot = unsafe { Arc::from_raw(p) };
        if let Some(rt) = crate::runtime::get() {
            exit(rt, &slot);
        }
    }
}

/// The exit of the thread owning `slot` (its handle's destructor): marks its
/// thread constant exited in the current epoch, seals its block.
pub(crate) fn exit(rt: &Runtime, slot: &ThreadSlot) {
    rt.threads
        .exited(slot.thread_key, rt.epoch.load(Ordering::Relaxed));
    slot.retire(&rt.pool);
    rt.pool.wakeup.notify_one();
}

/// Registers a writer slot for the thread with constant key `key`.
pub(crate) fn register(rt: &Runtime, key: u64) -> Arc<ThreadSlot> {
    let slot = Arc::new(ThreadSlot::new(key));
    rt.slots.lock().push(slot.clone());
    slot
}

#[cfg(not(flightrec_loom))]
crate::sync::thread_local! {
    static LOCAL: LocalHandle = const { LocalHandle { slot: Cell::new(std::ptr::null()) } };
}

#[cfg(flightrec_loom)]
crate::sync::thread_local! {
    static LOCAL: LocalHandle = LocalHandle { slot: Cell::new(std::ptr::null()) };
}

/// Runs `f` with the calling thread's slot, attaching the thread first if
/// needed. `None` if the thread's locals are already destroyed (it is exiting).
#[inline(always)]
pub(crate) fn with_slot<R>(rt: &'static Runtime, f: impl FnOnce(&ThreadSlot) -> R) -> Option<R> {
    let p = current_slot(rt)?;
    // SAFETY: `p` is the live Arc leaked by `attach`; only this thread's
    // handle destructor reclaims it, and that cannot run while `f` runs on
    // this thread.
    Some(f(unsafe { p.as_ref() }))
}

/// The calling thread's slot, attaching the thread first if needed; `None`
/// if the thread's locals are already destroyed (it is exiting). No closure,
/// so the hot path inlines around it.
///
/// The pointer is valid on this thread until its thread-local destructors
/// run (which cannot happen during the caller's frame); it must not be kept
/// beyond the caller's frame or handed to another thread.
#[inline(always)]
pub(crate) fn current_slot(rt: &'static Runtime) -> Option<NonNull<ThreadSlot>> {
    let p = LOCAL.try_with(|local| local.slot.get()).ok()?;
    match NonNull::new(p.cast_mut()) {
        Some(p) => Some(p),
        None => LOCAL.try_with(|local| attach(rt, local)).ok(),
    }
}

/// The calling thread's constant key, attaching it if needed.
pub(crate) fn current_thread_key(rt: &'static Runtime) -> Option<u64> {
    with_slot(rt, |s| s.thread_key)
}

#[cold]
#[inline(never)]
fn attach(rt: &'static Runtime, local: &LocalHandle) -> NonNull<ThreadSlot> {
    let key = rt.threads.key_for_tid(
        crate::sync::os_thread_id(),
        crate::cpool::threads::current_thread_name,
    );
    let p = Arc::into_raw(register(rt, key));
    local.slot.set(p);
    NonNull::from(
        // SAFETY: `p` was just leaked from a live Arc by `Arc::into_raw`.
        unsafe { &*p },
    )
}
