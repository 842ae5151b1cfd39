//! The contended path that [`Mutex`](super::Mutex) and
//! [`RwLock`](super::RwLock) share: a blocking acquire timed as a
//! `jdk.JavaMonitorEnter` wait, and the previous owner a releasing guard
//! leaves for the waiter.
//!
//! Invariant: `waiters` counts the threads between `Wait::begin` and their
//! return from the blocking acquire; `previous_owner` is written only by a
//! thread holding the lock (a guard's drop), and read only by one holding
//! it (the waiter, right after its acquire).

use super::record::{ENTER, Wait, after_record};
use crate::base::sync::global::{AtomicU64, AtomicUsize, Ordering};

/// A recorded lock's contention state, beside the lock it describes.
#[derive(Debug)]
pub(super) struct Contention {
    waiters: AtomicUsize,
    previous_owner: AtomicU64,
}

impl Contention {
    pub(super) const fn new() -> Self {
        Self {
            waiters: AtomicUsize::new(0),
            previous_owner: AtomicU64::new(0),
        }
    }

    /// Runs `acquire` (the blocking lock), timing the wait while
    /// `jdk.JavaMonitorEnter` is on and writing the event (class `name`,
    /// address `address`) if it reached the threshold. Inlined into the
    /// wrapper's contended function, whose caller's frame is where the
    /// event's stack starts (see `record`).
    #[inline(always)]
    pub(super) fn timed_wait<G>(
        &self,
        name: &'static str,
        address: usize,
        acquire: impl FnOnce() -> G,
    ) -> G {
        let Some(wait) = Wait::begin(&ENTER) else {
            return acquire();
        };
        self.waiters.fetch_add(1, Ordering::Relaxed);
        let guard = acquire();
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        let owner = self.previous_owner.load(Ordering::Relaxed);
        wait.enter(name, address, owner);
        after_record();
        guard
    }

    /// A guard's drop: one relaxed load, and the calling thread noted as
    /// the previous owner if a thread is timing a wait.
    #[inline]
    pub(super) fn released(&self) {
        if self.waiters.load(Ordering::Relaxed) != 0 {
            note_owner(&self.previous_owner);
        }
    }
}

/// Stores the calling thread's key in `previous_owner` (a lock's), if
/// waits are timed now: a guard's drop while a thread waits.
#[cold]
#[inline(never)]
fn note_owner(previous_owner: &AtomicU64) {
    if !ENTER.enabled() {
        return;
    }
    if let Some(key) = crate::runtime::get().and_then(crate::buffer::local::current_thread_key) {
        previous_owner.store(key, Ordering::Relaxed);
    }
}
