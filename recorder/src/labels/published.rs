//! Each labelled thread's current context id, where the sampling signal
//! handler can read it.
//!
//! # Mechanism
//!
//! A preallocated open-addressing table of [`CAPACITY`] entries, each a
//! kernel thread id and a context id. A thread claims an entry the first
//! time it opens a label scope: from the slot its tid hashes to, it takes
//! the first free (never used) or released entry within [`MAX_PROBE`]
//! slots (compare-and-swap on the tid word, so two threads never take the
//! same entry). From then on only that thread stores its context id there,
//! and its thread-local's destructor releases the entry (context 0, tid
//! [`RELEASED`]) when the thread exits.
//!
//! The handler, running on the sampled thread, looks the thread's tid up
//! from the same home slot over at most [`MAX_PROBE`] entries, stopping at
//! the first free one: atomic loads only, bounded, no lock, no allocation.
//!
//! Invariant: an entry holding tid `t` was claimed by the live thread `t`
//! (released entries hold [`RELEASED`]), and only `t` writes its context,
//! so the handler on thread `t` reads the id `t` published last: the store
//! and the handler's load are on the same thread, in program order.

use crate::base::loss::LossCause;
use crate::base::sync::global::{AtomicU64, Ordering};

/// Entries in the table (a power of two).
pub(crate) const CAPACITY: usize = 4096;

/// Longest probe sequence, for claims and for the handler's lookups.
pub(crate) const MAX_PROBE: usize = 64;

/// The tid word of an entry never claimed: ends every lookup.
const FREE: u64 = 0;

/// The tid word of an entry whose thread exited: lookups go past it,
/// claims may take it.
const RELEASED: u64 = u64::MAX;

struct Slot {
    tid: AtomicU64,
    context: AtomicU64,
}

static TABLE: [Slot; CAPACITY] = [const {
    Slot {
        tid: AtomicU64::new(FREE),
        context: AtomicU64::new(0),
    }
}; CAPACITY];

/// The home slot of `tid`.
fn home(tid: u64) -> usize {
    // Fibonacci hashing: consecutive tids spread over the table.
    (tid.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % CAPACITY
}

/// A thread's claimed entry (owned by its thread-local).
#[derive(Debug)]
pub(super) struct Entry {
    index: usize,
}

impl Entry {
    /// Claims an entry for the calling thread `tid`, or counts a
    /// [`LossCause::LabelsDropped`] if none is free within [`MAX_PROBE`]
    /// slots (the thread's samples then carry no labels).
    pub(super) fn claim(tid: u64) -> Option<Entry> {
        if tid == FREE || tid == RELEASED {
            return None;
        }
        let start = home(tid);
        for i in 0..MAX_PROBE {
            let index = (start + i) % CAPACITY;
            let slot = &TABLE[index];
            let seen = slot.tid.load(Ordering::Relaxed);
            if seen == tid {
                // Left by an earlier thread with this tid that exited
                // without its destructor running: ours now.
                return Some(Entry { index });
            }
            if seen != FREE && seen != RELEASED {
                continue;
            }
            // Relaxed: the handler that reads this entry runs on this same
            // thread, after the claim in program order.
            if slot
                .tid
                .compare_exchange(seen, tid, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Entry { index });
            }
        }
        if let Some(rt) = crate::runtime::get() {
            rt.losses.record(LossCause::LabelsDropped, 0);
        }
        None
    }

    /// Publishes the thread's current context id.
    pub(super) fn set(&self, context: u64) {
        TABLE[self.index].context.store(context, Ordering::Relaxed);
    }

    /// Gives the entry back (the thread is exiting).
    pub(super) fn release(self) {
        let slot = &TABLE[self.index];
        slot.context.store(0, Ordering::Relaxed);
        slot.tid.store(RELEASED, Ordering::Relaxed);
    }
}

/// The context id thread `tid` published, 0 if none. Async-signal-safe:
/// at most [`MAX_PROBE`] pairs of atomic loads.
#[inline]
pub(crate) fn context_of(tid: u64) -> u64 {
    if tid == FREE || tid == RELEASED {
        return 0;
    }
    let start = home(tid);
    for i in 0..MAX_PROBE {
        let slot = &TABLE[(start + i) % CAPACITY];
        match slot.tid.load(Ordering::Relaxed) {
            t if t == tid => return slot.context.load(Ordering::Relaxed),
            FREE => return 0,
            _ => {}
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claimed_entries_are_found_and_released_ones_skipped() {
        // Tids far above any real one, so real threads' entries stay apart.
        let base = 1u64 << 40;
        let a = Entry::claim(base + 1).unwrap();
        let b = Entry::claim(base + 2).unwrap();
        a.set(7);
        b.set(9);
        assert_eq!(context_of(base + 1), 7);
        assert_eq!(context_of(base + 2), 9);
        assert_eq!(context_of(base + 3), 0);
        a.release();
        assert_eq!(context_of(base + 1), 0);
        assert_eq!(context_of(base + 2), 9, "found past a released entry");
        b.release();
    }

    #[test]
    fn claims_collide_within_the_probe_bound_only() {
        // Tids with the same home slot: MAX_PROBE of them fit, the next not.
        let base = 1u64 << 41;
        let target = home(base);
        let same: Vec<u64> = (base..)
            .filter(|&t| home(t) == target)
            .take(MAX_PROBE + 1)
            .collect();
        let mut held = Vec::new();
        for (i, &t) in same.iter().enumerate() {
            match Entry::claim(t) {
                Some(e) => {
                    e.set(i as u64 + 1);
                    held.push((t, e));
                }
                None => break,
            }
        }
        // Other tests' entries may take some of the probe window.
        assert!(held.len() <= MAX_PROBE && held.len() >= MAX_PROBE - 8);
        for (i, (t, _)) in held.iter().enumerate() {
            assert_eq!(context_of(*t), i as u64 + 1);
        }
        for (_, e) in held {
            e.release();
        }
    }
}
