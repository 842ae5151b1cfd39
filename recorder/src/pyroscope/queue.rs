//! The bounded hand-off between the recorder thread (which offers each
//! finished chunk) and the uploader thread (which takes them all).
//!
//! Both sides hold the lock only to push, pop or count: no I/O and no
//! wait happens under it, so the recorder thread's offer never waits on
//! the network. The uploader sleeps on the condition variable.
//!
//! Invariant: `bytes` is the sum of the queued chunks' sizes, and at most
//! `max_chunks` chunks and `max_bytes` bytes are queued after every push
//! (the oldest are dropped and counted first; a chunk larger than
//! `max_bytes` by itself is dropped at once).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::sync::{Arc, Condvar, Mutex};

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

    /// Queues `chunk`, dropping the oldest while over a bound.
    pub(crate) fn push(&self, chunk: Chunk) {
        let mut s = self.state.lock();
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
        self.wake.notify_one();
    }

    /// Counts a chunk that could not be read as dropped.
    pub(crate) fn count_dropped(&self, bytes: u64) {
        let mut s = self.state.lock();
        s.dropped.chunks += 1;
        s.dropped.bytes += bytes;
        drop(s);
        self.wake.notify_one();
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
        let dropped = std::mem::take(&mut s.dropped);
        (chunks, dropped, s.stopping)
    }

    /// The stop's deadline, once asked.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.state.lock().stopping
    }

    /// Sleeps `d`, or less once the stop is asked (until its deadline).
    /// Returns the deadline if the stop was asked.
    pub(crate) fn sleep(&self, d: Duration) -> Option<Instant> {
        let until = Instant::now() + d;
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
