//! The handler's side of waking the sampler thread (the mechanism is in
//! [`crate::sampler::wake`]): ring [`BELL`] when a queue reaches
//! [`HIGH_WATER`], and at most once per [`CHECK_EVERY`] compare the thread
//! count (`fstat` of the open `/proc/self/task`) with the sampler's last
//! listing.
//!
//! Invariant: an atomic add, loads, one compare-exchange, `fstat` and at
//! most one `futex(FUTEX_WAKE)`; nothing allocates, locks or waits.

use std::time::Duration;

use super::queue::QUEUE_CAPACITY;
use crate::base::sync::Doorbell;
use crate::base::sync::global::{AtomicU64, Ordering};

/// The sampler thread's bell (module docs).
pub(crate) static BELL: Doorbell = Doorbell::new();

/// Queue length at which the handler rings the bell.
pub(crate) const HIGH_WATER: usize = QUEUE_CAPACITY / 2;

/// Shortest time between two thread-list checks in the handler, and the
/// process CPU time between two signals of the [`ThreadWatch`](crate::sampler::wake::ThreadWatch).
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(20);

/// `/proc/self/task`, open (-1: none), for the handler's `fstat`.
pub(crate) static TASK_FD: AtomicU64 = AtomicU64::new(u64::MAX);
/// Its link count at the sampler's last listing (0: unknown, no check).
pub(crate) static LISTED_LINKS: AtomicU64 = AtomicU64::new(0);
/// `clock::ticks()` of the last check, and [`CHECK_EVERY`] in ticks.
pub(crate) static LAST_CHECK: AtomicU64 = AtomicU64::new(0);
pub(crate) static CHECK_TICKS: AtomicU64 = AtomicU64::new(0);

/// Sampler thread, after listing the threads: the link count the listing
/// was taken at.
pub(crate) fn listed(links: u64) {
    LISTED_LINKS.store(links, Ordering::Relaxed);
}

/// Handler: the queue of the sampled thread now holds `len` samples.
/// Async-signal-safe (module docs).
#[inline]
pub(crate) fn queued(len: usize) {
    if len == HIGH_WATER {
        BELL.ring();
    }
}

/// Handler (any of our signals), at `now` (`clock::ticks()`): at most
/// once per [`CHECK_EVERY`] process-wide, rings the bell if the thread list
/// changed since the sampler's last listing. Async-signal-safe (module
/// docs).
#[inline]
pub(crate) fn check_threads(now: i64) {
    let every = CHECK_TICKS.load(Ordering::Relaxed);
    let last = LAST_CHECK.load(Ordering::Relaxed);
    if every == 0 || (now as u64).wrapping_sub(last) < every {
        return;
    }
    // One checker per interval; a loser simply skips.
    if LAST_CHECK
        .compare_exchange(last, now as u64, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    let listed = LISTED_LINKS.load(Ordering::Relaxed);
    // Acquire: pairs with the Release swap in `open_task_dir`.
    let fd = TASK_FD.load(Ordering::Acquire);
    if listed == 0 || fd == u64::MAX {
        return;
    }
    // SAFETY: an all-zero `stat` is a valid out-value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid out-pointer; fstat is async-signal-safe and
    // on a number that is not (or no longer) ours only fails or reads
    // another file's metadata.
    if unsafe { libc::fstat(fd as i32, &mut st) } != 0 {
        return;
    }
    if st.st_nlink as u64 != listed {
        BELL.ring();
    }
}

/// The value the [`ThreadWatch`](crate::sampler::wake::ThreadWatch)'s signals carry: our tag with a slot
/// index no slot has (see `signal::encode`).
pub(crate) const WATCH_INDEX: usize = 0x7fff_ffff;
