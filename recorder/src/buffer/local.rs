//! The thread-local handle: finds the calling thread's [`ThreadSlot`],
//! attaching the thread on its first event and retiring it when it exits.
//!
//! Two thread-locals. `SLOT` holds a raw pointer, is `const`-initialised
//! and has no destructor, so reading it is one TLS load: no lazy
//! initialisation and no destructor-state check on the hot path. `GUARD`
//! owns the attachment: touched once, when the thread attaches (cold), so
//! its destructor is registered then; when the thread exits it seals the
//! thread's block, so the events of an exiting thread reach the file, and
//! frees the thread's encoding scratch ([`crate::event::scratch`]).
//!
//! ```text
//!  SLOT: null ──first event: attach──► slot ──GUARD's destructor──► EXITED
//! ```
//!
//! An event emitted after the guard's destructor ran (from another
//! thread-local's destructor) finds `EXITED` and is counted as lost, never
//! written to a retired slot.
//!
//! Invariant: a slot pointer in `SLOT` (neither null nor `EXITED`) is an
//! `Arc<ThreadSlot>` leaked by `attach` and reclaimed only by the guard's
//! destructor, on the same thread.

use std::cell::Cell;
use std::ptr::NonNull;

use crate::base::loss::LossCause;
use crate::base::sync::{Arc, Ordering};
use crate::buffer::slot::ThreadSlot;
use crate::runtime::Runtime;

/// `SLOT` once the thread's guard has retired its slot.
const EXITED: *const ThreadSlot = std::ptr::without_provenance(1);

/// Retires the thread's slot when the thread exits; see the module docs.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        // The scratch of the thread's user encoders (see
        // `event::scratch`): the slot's exit below ends the thread's emits.
        crate::event::scratch::release();
        let Ok(p) = SLOT.try_with(|s| s.replace(EXITED)) else {
            return;
        };
        if p.is_null() || p == EXITED {
            return;
        }
        // SAFETY: `p` came from Arc::into_raw in `attach` on this thread and
        // is reclaimed exactly once, here (SLOT now holds EXITED).
        let slot = unsafe { Arc::from_raw(p) };
        if let Some(rt) = crate::runtime::get() {
            exit(rt, &slot);
        }
    }
}

/// The exit of the thread owning `slot` (its guard's destructor): marks its
/// thread constant exited in the current epoch, seals its block.
pub(crate) fn exit(rt: &Runtime, slot: &ThreadSlot) {
    if slot.in_section() {
        left_inside_section(rt, slot);
        return;
    }
    rt.threads
        .exited(slot.thread_key, rt.epoch.load(Ordering::Relaxed));
    slot.retire(&rt.pool);
    rt.pool.wakeup.notify_one();
}

/// The guard is destroyed while its thread is inside a write section: the
/// thread is leaving from within the event's encoding, by `exit()` (which
/// runs the calling thread's destructors first) or `pthread_exit`, called
/// from a signal handler that interrupted the commit or from a user
/// encoder. Neither returns, so the section would never close and every
/// later rotation would wait for it: it is closed here, and the half-written
/// event (above `committed`, never drained) is counted as
/// [`LossCause::ThreadExiting`].
///
/// Nothing else is done, and no lock is taken: the interrupted commit may
/// hold the pool's or the thread registry's. The block stays published and
/// the slot registered, so the recorder drains the thread's committed
/// events as a live thread's (a thread leaving this way is not announced
/// as ended).
#[cold]
fn left_inside_section(rt: &Runtime, slot: &ThreadSlot) {
    if slot.abandon_section() {
        rt.losses.record(LossCause::ThreadExiting, 0);
    }
}

/// Registers a writer slot for the thread with constant key `key`.
pub(crate) fn register(rt: &Runtime, key: u64) -> Arc<ThreadSlot> {
    let tags = rt
        .threads
        .tags_of(key)
        .unwrap_or_else(|| Arc::new(Default::default()));
    let slot = Arc::new(ThreadSlot::new(key, tags));
    rt.slots.lock().push(slot.clone());
    slot
}

crate::base::sync::thread_local! {
    static SLOT: Cell<*const ThreadSlot> = const { Cell::new(std::ptr::null()) };
    static GUARD: Guard = const { Guard };
}

/// Runs `f` with the calling thread's slot, attaching the thread first if
/// needed. `None` if the thread is exiting (its guard already retired its
/// slot).
#[inline(always)]
pub(crate) fn with_slot<R>(rt: &'static Runtime, f: impl FnOnce(&ThreadSlot) -> R) -> Option<R> {
    let p = current_slot(rt)?;
    // SAFETY: `p` is the live Arc leaked by `attach`; only this thread's
    // guard destructor reclaims it, and that cannot run while `f` runs on
    // this thread.
    Some(f(unsafe { p.as_ref() }))
}

/// The calling thread's slot, attaching the thread first if needed; `None`
/// if the thread is exiting (its guard already retired its slot). No
/// closure, so the hot path inlines around it.
///
/// The pointer is valid on this thread until its guard's destructor runs
/// (which cannot happen during the caller's frame); it must not be kept
/// beyond the caller's frame or handed to another thread.
#[inline(always)]
pub(crate) fn current_slot(rt: &'static Runtime) -> Option<NonNull<ThreadSlot>> {
    let p = SLOT.try_with(Cell::get).unwrap_or(EXITED);
    if p.addr() > EXITED.addr() {
        // SAFETY: neither null nor EXITED: a live slot (module invariant).
        Some(unsafe { NonNull::new_unchecked(p.cast_mut()) })
    } else {
        attach(rt, p)
    }
}

/// The slot the calling thread writes its event to: its own, attaching
/// the thread first if needed, or the runtime's closed slot if the thread
/// is exiting (see [`ThreadSlot::closed`]). Never none, so the commit path
/// tests the thread-local once, and an exiting thread's event is turned
/// away by the test of the section every write makes anyway. The pointer
/// is valid as [`current_slot`]'s is.
#[inline(always)]
pub(crate) fn slot_for_event(rt: &'static Runtime) -> NonNull<ThreadSlot> {
    let p = SLOT.try_with(Cell::get).unwrap_or(EXITED);
    if p.addr() > EXITED.addr() {
        // SAFETY: neither null nor EXITED: a live slot (module invariant).
        unsafe { NonNull::new_unchecked(p.cast_mut()) }
    } else {
        attach_or_closed(rt, p)
    }
}

/// `slot_for_event`'s cold half.
#[cold]
#[inline(never)]
fn attach_or_closed(rt: &'static Runtime, p: *const ThreadSlot) -> NonNull<ThreadSlot> {
    attach(rt, p).unwrap_or_else(|| NonNull::from(&rt.closed_slot))
}

/// The calling thread's slot pointer as it stands (null if it never
/// attached), without attaching: for the fork handler.
pub(crate) fn own_slot_ptr() -> *const ThreadSlot {
    SLOT.try_with(Cell::get).unwrap_or(std::ptr::null())
}

/// The calling thread's constant key, attaching it if needed.
pub(crate) fn current_thread_key(rt: &'static Runtime) -> Option<u64> {
    with_slot(rt, |s| s.thread_key)
}

/// `current_slot`'s cold half: `p` is null (attach now) or EXITED.
#[cold]
#[inline(never)]
fn attach(rt: &'static Runtime, p: *const ThreadSlot) -> Option<NonNull<ThreadSlot>> {
    if p == EXITED {
        return None;
    }
    // Registers the guard's destructor before the slot exists, so a slot
    // is never left without one; fails once the thread's locals are being
    // destroyed (an emit from a late destructor: counted as lost).
    GUARD.try_with(|_| ()).ok()?;
    let key = rt.threads.key_for_own_thread(
        crate::base::sync::os_thread_id(),
        crate::cpool::threads::current_thread_name,
    );
    let p = Arc::into_raw(register(rt, key));
    if SLOT.try_with(|s| s.set(p)).is_err() {
        // SAFETY: `p` was leaked just above and never published.
        let slot = unsafe { Arc::from_raw(p) };
        exit(rt, &slot);
        return None;
    }
    NonNull::new(p.cast_mut())
}
