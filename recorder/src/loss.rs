//! Loss accounting: every event the recorder drops is counted by cause, and
//! the counts are written into the file (`flightrec.EventsLost` per cause and
//! `jdk.DataLoss` for bytes) at each chunk end. Nothing is lost silently.
//!
//! Counting happens on cold paths only (a drop is already the exceptional
//! case), so a read-modify-write atomic there costs nothing on the hot path.
//!
//! Invariant: `total(cause)` only grows; each chunk reports the difference
//! since the previous chunk, so the sum over a file's chunks is the total.

use crate::sync::{AtomicU64, Ordering};

const N_CAUSES: usize = 8;

/// Why an event was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossCause {
    /// Every buffer of the bounded pool was in use.
    PoolExhausted,
    /// The event was larger than a whole thread buffer.
    TooLarge,
    /// Emitted while the same thread was already inside an emit (a signal
    /// handler or a nested emit during field evaluation).
    Reentrant,
    /// Emitted by a thread whose thread-local state was already destroyed.
    ThreadExiting,
    /// Written data could not be stored (disk full, unwritable file).
    WriteError,
    /// A dynamically typed event's values did not match its declared fields.
    InvalidValues,
    /// Encoding the event's fields panicked (user code in
    /// `FieldValue::write`); the thread goes on recording.
    Panicked,
    /// The event was written, but without its stack trace: the constant
    /// pools were at their share of `max_memory` when a new stack came.
    /// Counts stacks, not lost events (see [`LossCause::loses_event`]).
    StackDropped,
}

impl LossCause {
    /// Every cause, in reporting order.
    pub const ALL: [LossCause; N_CAUSES] = [
        Self::PoolExhausted,
        Self::TooLarge,
        Self::Reentrant,
        Self::ThreadExiting,
        Self::WriteError,
        Self::InvalidValues,
        Self::Panicked,
        Self::StackDropped,
    ];

    /// The name written into the file.
    pub fn name(self) -> &'static str {
        match self {
            Self::PoolExhausted => "buffer pool exhausted",
            Self::TooLarge => "event larger than a thread buffer",
            Self::Reentrant => "reentrant emit",
            Self::ThreadExiting => "thread exiting",
            Self::WriteError => "write error",
            Self::InvalidValues => "values do not match the event type",
            Self::Panicked => "panic while encoding the event",
            Self::StackDropped => "stack trace dropped: constant pools full (event kept)",
        }
    }

    /// False for [`LossCause::StackDropped`], whose events were written
    /// (without a stack trace); true for every cause that drops the event.
    pub fn loses_event(self) -> bool {
        self != Self::StackDropped
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Per-cause counters of dropped events and bytes.
#[derive(Debug, Default)]
pub(crate) struct Losses {
    events: [AtomicU64; N_CAUSES],
    bytes: [AtomicU64; N_CAUSES],
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossCounts {
    /// Events dropped, per cause in [`LossCause::ALL`] order.
    pub events: [u64; N_CAUSES],
    /// Bytes dropped, per cause (where known).
    pub bytes: [u64; N_CAUSES],
}

impl LossCounts {
    /// Events dropped for `cause`.
    pub fn events(&self, cause: LossCause) -> u64 {
        self.events[cause.index()]
    }

    /// Total events dropped (causes that [lose the event](LossCause::loses_event)).
    pub fn total_events(&self) -> u64 {
        LossCause::ALL
            .iter()
            .filter(|c| c.loses_event())
            .map(|c| self.events[c.index()])
            .sum()
    }

    /// The counts added since `earlier`.
    pub fn since(&self, earlier: &LossCounts) -> LossCounts {
        let mut d = LossCounts::default();
        for i in 0..N_CAUSES {
            d.events[i] = self.events[i] - earlier.events[i];
            d.bytes[i] = self.bytes[i] - earlier.bytes[i];
        }
        d
    }
}

impl Losses {
    /// Counts one dropped event of `bytes` bytes (0 if unknown).
    #[cold]
    pub(crate) fn record(&self, cause: LossCause, bytes: u64) {
        self.events[cause.index()].fetch_add(1, Ordering::Relaxed);
        self.bytes[cause.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `events` dropped events totalling `bytes` bytes.
    #[cold]
    pub(crate) fn record_many(&self, cause: LossCause, events: u64, bytes: u64) {
        self.events[cause.index()].fetch_add(events, Ordering::Relaxed);
        self.bytes[cause.index()].fetch_add(bytes, Ordering::Relaxed);
    }

    /// The current totals.
    pub(crate) fn snapshot(&self) -> LossCounts {
        let mut c = LossCounts::default();
        for i in 0..N_CAUSES {
            c.events[i] = self.events[i].load(Ordering::Relaxed);
            c.bytes[i] = self.bytes[i].load(Ordering::Relaxed);
        }
        c
    }
}
