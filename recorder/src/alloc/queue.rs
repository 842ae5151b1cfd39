//! The raw samples between the allocating threads and the allocation
//! thread: a bounded lock-free queue (Vyukov's array queue: each slot's
//! sequence number says whose turn it is), its slots preallocated.
//!
//! A producer (any thread, inside the allocator) claims a slot with one
//! compare-and-swap of the tail, captures the stack straight into it, and
//! publishes it with a Release store of its sequence; it never waits and
//! takes no lock, so it cannot deadlock against anything the thread holds.
//! When every slot is taken the sample is dropped and counted. The one
//! consumer (the drain, under its lock) reads published slots in order and
//! hands them back.
//!
//! Invariant: a slot's data is written only by the producer that claimed it
//! (between the tail CAS and its sequence's Release store) and read only by
//! the consumer after an Acquire load of that sequence.

use crate::base::sync::global::{AtomicUsize, Ordering, UnsafeCell};

/// Deepest allocation stack kept (frames past it: truncated).
pub(super) const MAX_FRAMES: usize = 64;

/// One raw sample.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawSample {
    pub(super) ticks: i64,
    pub(super) tid: i64,
    pub(super) size: u64,
    pub(super) weight: u64,
    /// The Rust type name given by `with_type`, if any.
    pub(super) type_name: Option<&'static str>,
    /// The leak-table slot and generation that track it, if tracked.
    pub(super) live: Option<(usize, u64)>,
    pub(super) frames: [u64; MAX_FRAMES],
    pub(super) len: usize,
    pub(super) truncated: bool,
}

impl RawSample {
    pub(super) const EMPTY: RawSample = RawSample {
        ticks: 0,
        tid: 0,
        size: 0,
        weight: 0,
        type_name: None,
        live: None,
        frames: [0; MAX_FRAMES],
        len: 0,
        truncated: false,
    };
}

struct Slot {
    seq: AtomicUsize,
    data: UnsafeCell<RawSample>,
}

/// The queue; `N` is a power of two.
pub(super) struct Queue<const N: usize> {
    head: AtomicUsize,
    tail: AtomicUsize,
    slots: [Slot; N],
}

impl<const N: usize> std::fmt::Debug for Queue<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("capacity", &N).finish()
    }
}

// SAFETY: a slot's data is accessed by one thread at a time, handed over by
// its sequence number (see the module invariant).
unsafe impl<const N: usize> Sync for Queue<N> {}

impl<const N: usize> Queue<N> {
    /// An empty queue.
    pub(super) const fn new() -> Self {
        assert!(N.is_power_of_two());
        let mut slots = [const {
            Slot {
                seq: AtomicUsize::new(0),
                data: UnsafeCell::new(RawSample::EMPTY),
            }
        }; N];
        let mut i = 0;
        while i < N {
            slots[i].seq = AtomicUsize::new(i);
            i += 1;
        }
        Self {
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            slots,
        }
    }

    /// Claims a slot, lets `fill` write the sample into it, publishes it.
    /// False if the queue is full (nothing written).
    pub(super) fn push(&self, fill: impl FnOnce(&mut RawSample)) -> bool {
        let mut pos = self.tail.load(Ordering::Relaxed);
        let slot = loop {
            let slot = &self.slots[pos & (N - 1)];
            let seq = slot.seq.load(Ordering::Acquire);
            let diff = seq as isize - pos as isize;
            if diff == 0 {
                match self.tail.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break slot,
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                return false;
            } else {
                pos = self.tail.load(Ordering::Relaxed);
            }
        };
        slot.data.with_mut(|p| {
            // SAFETY: the CAS above gave this producer the slot until the
            // Release store below (module invariant).
            fill(unsafe { &mut *p })
        });
        slot.seq.store(pos + 1, Ordering::Release);
        true
    }

    /// Takes the oldest published sample, if any. One consumer at a time
    /// (the caller holds the drain's lock).
    pub(super) fn pop(&self) -> Option<RawSample> {
        let pos = self.head.load(Ordering::Relaxed);
        let slot = &self.slots[pos & (N - 1)];
        if slot.seq.load(Ordering::Acquire) != pos + 1 {
            return None;
        }
        let sample = slot.data.with(|p| {
            // SAFETY: the Acquire load saw the producer's Release store:
            // the slot is the consumer's until handed back below.
            unsafe { *p }
        });
        slot.seq.store(pos + N, Ordering::Release);
        self.head.store(pos + 1, Ordering::Relaxed);
        Some(sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_bounded_and_reusable() {
        static Q: Queue<4> = Queue::new();
        for round in 0..3u64 {
            for i in 0..4 {
                assert!(Q.push(|s| s.size = round * 10 + i));
            }
            assert!(!Q.push(|s| s.size = 99), "full");
            for i in 0..4 {
                assert_eq!(Q.pop().map(|s| s.size), Some(round * 10 + i));
            }
            assert!(Q.pop().is_none());
        }
    }

    #[test]
    fn concurrent_producers_lose_nothing_that_was_accepted() {
        static Q: Queue<1024> = Queue::new();
        let accepted: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || {
                        (0..200u64)
                            .filter(|i| Q.push(|r| r.size = t * 1000 + i))
                            .count() as u64
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let mut got = 0;
        while Q.pop().is_some() {
            got += 1;
        }
        assert_eq!(got, accepted);
        assert_eq!(accepted, 800);
    }
}
