//! The bounded hand-off between the recorder thread (which offers each
//! finished chunk) and the uploader thread (which takes them all).
//!
//! Both sides hold the lock only to push, pop or count: no I/O and no
//! wait happens under it, so the recorder thread's offer never waits on
//! the network. The uploader sleeps on the condition variable.
//!
//! The queue also knows the batch the uploader has taken and not yet
//! settled (`in_flight`), so a stop can wait for the uploader to be idle
//! and, if it is not by the deadline (a server that never answers),
//! [`abandon`](Queue::abandon) everything: the queued chunks, the pending
//! drop counts and the batch in flight become the stopper's to count, and
//! the uploader's late outcome for that batch is discarded by
//! [`settle`](Queue::settle), so no chunk is counted twice or never.
//!
//! Invariant: `bytes` is the sum of the queued chunks' sizes, and at most
//! `max_chunks` chunks and `max_bytes` bytes are queued after every push
//! (the oldest are dropped and counted first; a chunk larger than
//! `max_bytes` by itself is dropped at once). Every chunk pushed is, exactly
//! once, taken and settled by the uploader, reported in a `Dropped`, or
//! handed to the stopper by `abandon`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::base::sync::global::{Arc, Condvar, Mutex};

/// One finished chunk: its bytes and its span (ns since the epoch).
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub(crate) bytes: Arc<[u8]>,
    pub(crate) start: i64,
    pub(crate) end: i64,
}

/// Chunks dropped by the queue since the uploader last asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) chunks: u64,
    pub(crate) bytes: u64,
}

#[derive(Debug, Default)]
struct State {
    chunks: VecDeque<Chunk>,
    bytes: usize,
    dropped: Dropped,
    /// Set by the stop: the uploader sends what is queued, then ends.
    stopping: Option<Instant>,
    /// The batch taken by the uploader and not yet settled.
    in_flight: Dropped,
    /// The batch in flight was counted by `abandon`: its outcome is not
    /// the uploader's to count.
    abandoned: bool,
    /// `abandon` ran: chunks offered since are not queued (the caller
    /// counts them).
    given_up: bool,
}

/// What [`Queue::abandon`] hands over to be counted as dropped.
#[derive(Debug, Default)]
pub(crate) struct Abandoned {
    /// Chunks still queued.
    pub(crate) queued: Dropped,
    /// Drops the uploader had not reported yet.
    pub(crate) unreported: Dropped,
    /// The batch the uploader is still sending.
    pub(crate) in_flight: Dropped,
}

/// The queue.
#[derive(Debug)]
pub(crate) struct Queue {
    state: Mutex<State>,
    wake: Condvar,
    max_chunks: usize,
    max_bytes: usize,
}

impl Queue {
    pub(crate) fn new(max_chunks: usize, max_bytes: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            max_chunks,
            max_bytes,
        }
    }

    /// Queues `chunk`, dropping the oldest while over a bound. Returns
    /// `false` (queuing nothing) once [`abandon`](Self::abandon) ran: the
    /// caller counts the chunk dropped.
    pub(crate) fn push(&self, chunk: Chunk) -> bool {
        let mut s = self.state.lock();
        if s.given_up {
            return false;
        }
        if chunk.bytes.len() > self.max_bytes {
            s.dropped.chunks += 1;
            s.dropped.bytes += chunk.bytes.len() as u64;
        } else {
            s.bytes += chunk.bytes.len();
            s.chunks.push_back(chunk);
            while s.chunks.len() > self.max_chunks || s.bytes > self.max_bytes {
                let Some(old) = s.chunks.pop_front() else {
                    break;
                };
                s.bytes -= old.bytes.len();
                s.dropped.chunks += 1;
                s.dropped.bytes += old.bytes.len() as u64;
            }
        }
        drop(s);
        self.wake.notify_all();
        true
    }

    /// Counts a chunk that could not be read as dropped.
    pub(crate) fn count_dropped(&self, bytes: u64) {
        let mut s = self.state.lock();
        s.dropped.chunks += 1;
        s.dropped.bytes += bytes;
        drop(s);
        self.wake.notify_all();
    }

    /// Waits until a chunk is queued, a drop is to be reported, or the
    /// stop was asked; then takes every chunk queued and the drops.
    /// Returns the stop's deadline once asked.
    pub(crate) fn take(&self) -> (Vec<Chunk>, Dropped, Option<Instant>) {
        let mut s = self.state.lock();
        while s.chunks.is_empty() && s.dropped == Dropped::default() && s.stopping.is_none() {
            s = self.wake.wait_for(s, Duration::from_secs(3600));
        }
        let chunks: Vec<Chunk> = s.chunks.drain(..).collect();
        s.bytes = 0;
        s.in_flight = Dropped {
            chunks: chunks.len() as u64,
            bytes: chunks.iter().map(|c| c.bytes.len() as u64).sum(),
        };
        s.abandoned = false;
        let dropped = std::mem::take(&mut s.dropped);
        (chunks, dropped, s.stopping)
    }

    /// The uploader decided its batch's outcome: returns whether it is
    /// still the uploader's to count (`false`: [`abandon`](Self::abandon)
    /// counted it).
    pub(crate) fn settle(&self) -> bool {
        let mut s = self.state.lock();
        let ours = !s.abandoned;
        s.abandoned = false;
        s.in_flight = Dropped::default();
        drop(s);
        self.wake.notify_all();
        ours
    }

    /// Waits until nothing is queued, in flight or unreported, or until
    /// `deadline`; returns whether the queue is idle.
    pub(crate) fn wait_idle(&self, deadline: Instant) -> bool {
        let mut s = self.state.lock();
        loop {
            let idle = s.chunks.is_empty()
                && s.in_flight == Dropped::default()
                && s.dropped == Dropped::default();
            let now = Instant::now();
            if idle || now >= deadline {
                return idle;
            }
            s = self.wake.wait_for(s, deadline - now);
        }
    }

    /// Gives up on the uploader: hands over everything queued, unreported
    /// or in flight to be counted dropped by the caller; later pushes are
    /// refused.
    pub(crate) fn abandon(&self) -> Abandoned {
        let mut s = self.state.lock();
        s.given_up = true;
        let queued = Dropped {
            chunks: s.chunks.len() as u64,
            bytes: s.bytes as u64,
        };
        s.chunks.clear();
        s.bytes = 0;
        let in_flight = std::mem::take(&mut s.in_flight);
        s.abandoned = in_flight != Dropped::default();
        Abandoned {
            queued,
            unreported: std::mem::take(&mut s.dropped),
            in_flight,
        }
    }

    /// The stop's deadline, once asked.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.state.lock().stopping
    }

    /// Sleeps `d`, or less once the stop is asked (until its deadline).
    /// Returns the deadline if the stop was asked.
    pub(crate) fn sleep(&self, d: Duration) -> Option<Instant> {
        // A period past what `Instant` holds sleeps "forever" (until the
        // stop), instead of panicking on the overflow.
        let now = Instant::now();
        let until = now
            .checked_add(d)
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400));
        let mut s = self.state.lock();
        loop {
            let end = match s.stopping {
                Some(deadline) => until.min(deadline),
                None => until,
            };
            let now = Instant::now();
            if now >= end {
                return s.stopping;
            }
            s = self.wake.wait_for(s, end - now);
        }
    }

    /// Whether [`abandon`](Self::abandon) ran.
    pub(crate) fn given_up(&self) -> bool {
        self.state.lock().given_up
    }

    /// Asks the uploader to send what is queued by `deadline` and end.
    pub(crate) fn stop(&self, deadline: Instant) {
        self.state.lock().stopping = Some(deadline);
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: usize) -> Chunk {
        Chunk {
            bytes: vec![0u8; n].into(),
            start: 0,
            end: 0,
        }
    }

    #[test]
    fn bounds_drop_the_oldest_and_count_them() {
        let q = Queue::new(3, 100);
        for n in [10, 20, 30, 40] {
            q.push(chunk(n));
        }
        let (taken, dropped, stop) = q.take();
        assert_eq!(
            taken.iter().map(|c| c.bytes.len()).collect::<Vec<_>>(),
            [20, 30, 40]
        );
        assert_eq!(
            dropped,
            Dropped {
                chunks: 1,
                bytes: 10
            }
        );
        assert!(stop.is_none());
        // bytes: 60 + 50 > 100 drops the 60
        q.push(chunk(60));
        q.push(chunk(50));
        q.push(chunk(101)); // alone over the bound
        let (taken, dropped, _) = q.take();
        assert_eq!(
            taken.iter().map(|c| c.bytes.len()).collect::<Vec<_>>(),
            [50]
        );
        assert_eq!(
            dropped,
            Dropped {
                chunks: 2,
                bytes: 161
            }
        );
    }

    #[test]
    fn an_abandoned_batch_is_counted_once() {
        let q = Queue::new(10, 1000);
        q.push(chunk(10));
        let (taken, _, _) = q.take();
        assert_eq!(taken.len(), 1);
        q.push(chunk(20));
        q.count_dropped(5);
        assert!(!q.wait_idle(Instant::now() + Duration::from_millis(20)));
        let a = q.abandon();
        assert_eq!(
            a.in_flight,
            Dropped {
                chunks: 1,
                bytes: 10
            }
        );
        assert_eq!(
            a.queued,
            Dropped {
                chunks: 1,
                bytes: 20
            }
        );
        assert_eq!(
            a.unreported,
            Dropped {
                chunks: 1,
                bytes: 5
            }
        );
        // The uploader's late outcome is not its to count; later chunks
        // are refused.
        assert!(!q.settle());
        assert!(!q.push(chunk(1)));
        assert!(q.wait_idle(Instant::now()));
        // Without an abandon, the uploader counts its own batch.
        let q = Queue::new(10, 1000);
        q.push(chunk(1));
        q.take();
        assert!(q.settle());
        assert!(q.wait_idle(Instant::now()));
    }

    #[test]
    fn stop_wakes_take_and_sleep() {
        let q = Queue::new(1, 1);
        let deadline = Instant::now() + Duration::from_millis(50);
        q.stop(deadline);
        let (taken, dropped, stop) = q.take();
        assert!(taken.is_empty() && dropped == Dropped::default());
        assert_eq!(stop, Some(deadline));
        let t = Instant::now();
        assert_eq!(q.sleep(Duration::from_secs(60)), Some(deadline));
        assert!(t.elapsed() < Duration::from_secs(30));
    }
}
