//! Loss accounting: every event the recorder drops is counted by cause, and
//! the counts are written into the file (`flightrec.EventsLost` per cause and
//! `jdk.DataLoss` for bytes) at every flush and chunk end. Nothing is lost
//! silently.
//!
//! # Counting
//!
//! Counting happens on cold paths only (a drop is already the exceptional
//! case), so a read-modify-write atomic there costs nothing on the hot path.
//! The counters ([`Losses`]) only grow.
//!
//! # Reporting
//!
//! The recorder thread keeps one [`LossReporter`] per recording, holding the
//! counters as they were at its last report. At every flush and every chunk
//! end it takes *one* snapshot, writes the difference to the last report
//! into the chunk, and (once the chunk's header covers those events) makes
//! that snapshot the new last report. A new chunk takes no snapshot of its
//! own, so drops between one chunk's end and the next chunk's first flush
//! are in the next chunk's first report. A live reader and a chunk
//! recovered after a crash see every loss up to the chunk's last flush.
//!
//! # Bytes
//!
//! Bytes are counted where the dropped event's size is known. An event
//! dropped for lack of buffer never reached its encoder, so its size is
//! estimated when it is reported: for [`LossCause::PoolExhausted`], the
//! mean size of the events this recording wrote so far (8 bytes before the
//! first); for [`LossCause::TooLarge`], one thread buffer (a lower bound).
//! `jdk.DataLoss` carries the sum of the counted and estimated bytes.
//!
//! Invariant: each report covers exactly the drops between the previous
//! report's snapshot and its own, so the `events` of a recording's
//! `flightrec.EventsLost` events, summed over all its chunks, equal the
//! counters' growth from the recording's start to its last report.

use jfr_format::write::events::{BuiltinEvent, DataLoss, EventsLost};

use crate::base::sync::{AtomicU64, Ordering};

const N_CAUSES: usize = 17;

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
    /// A thread of the process was not sampled: every sample slot was taken
    /// when the sampler found it. Counts threads, not events.
    ThreadNotSampled,
    /// A label scope's set did not fit in the bounded label table (or the
    /// thread found no entry to publish it in): its samples carry no
    /// labels. Counts scopes, not events (see [`crate::labels`]).
    LabelsDropped,
    /// An allocation sample was dropped: the queue to the allocation
    /// thread was full.
    AllocationSampleDropped,
    /// A sampled allocation was not tracked for leak profiling: its bucket
    /// of the leak table was full. Counts allocations, not lost events.
    LeakNotTracked,
    /// A periodic event's closure (`add_periodic_event`) was still running
    /// when a chunk edge or the stop stopped waiting for it (abandoned: it
    /// finishes on its own thread, its events in a later chunk), or when
    /// its next call came (skipped). Counts calls, not events.
    CallbackOverdue,
    /// A CPU-time sample was not taken: the program set its own
    /// disposition for the sampling signal and no other signal was free
    /// (estimated from the thread's CPU time; also in
    /// `jdk.CPUTimeSamplesLost`).
    SamplingSignalTaken,
    /// A CPU-time sample was not taken: the thread blocked the sampling
    /// signal (estimated from its CPU time; also in
    /// `jdk.CPUTimeSamplesLost`).
    SamplingSignalBlocked,
    /// An encoder the recorder does not own (a user's `FieldValue::write`
    /// or `Event::write_fields`, a `commit_fields` writer) wrote something
    /// other than one well-formed value of each declared field kind: too
    /// little, too much, or bytes of another kind. The event was dropped
    /// before it reached the thread's buffer.
    InvalidEncoding,
    /// The event was in the oldest chunk of a recording kept in memory
    /// (`disk(false)`), dropped to keep its chunks within
    /// `memory_size`; the drops its chunk reported count again here, as
    /// their reports went with it.
    Evicted,
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
        Self::ThreadNotSampled,
        Self::LabelsDropped,
        Self::AllocationSampleDropped,
        Self::LeakNotTracked,
        Self::CallbackOverdue,
        Self::SamplingSignalTaken,
        Self::SamplingSignalBlocked,
        Self::InvalidEncoding,
        Self::Evicted,
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
            Self::ThreadNotSampled => "thread not sampled: sample slots full (counts threads)",
            Self::LabelsDropped => "labels dropped: label table full (counts scopes)",
            Self::AllocationSampleDropped => "allocation sample dropped: queue full",
            Self::LeakNotTracked => {
                "allocation not tracked for leaks: leak table full (counts allocations)"
            }
            Self::CallbackOverdue => {
                "periodic callback overdue: abandoned or skipped (counts calls)"
            }
            Self::SamplingSignalTaken => "CPU sample lost: the program took the sampling signal",
            Self::SamplingSignalBlocked => "CPU sample lost: the thread blocks the sampling signal",
            Self::InvalidEncoding => "fields written do not match the event type",
            Self::Evicted => "evicted: oldest in-memory chunk dropped at memory_size",
        }
    }

    /// False for [`LossCause::StackDropped`] (its events were written,
    /// without a stack trace) and [`LossCause::ThreadNotSampled`] (it counts
    /// threads); true for every cause that drops an event.
    pub fn loses_event(self) -> bool {
        !matches!(
            self,
            Self::StackDropped
                | Self::ThreadNotSampled
                | Self::LabelsDropped
                | Self::LeakNotTracked
                | Self::CallbackOverdue
        )
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

    /// These counts and `other`'s, added.
    pub(crate) fn plus(&self, other: &LossCounts) -> LossCounts {
        let mut d = *self;
        for i in 0..N_CAUSES {
            d.events[i] += other.events[i];
            d.bytes[i] += other.bytes[i];
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

/// Assumed size of an event dropped for lack of buffer before any event of
/// the recording was written (module docs, "Bytes").
const FIRST_EVENT_BYTES: u64 = 8;

/// The recorder thread's side of the accounting: what the file has been
/// told so far (module docs, "Reporting"). Recorder thread only.
#[derive(Debug)]
pub(crate) struct LossReporter {
    /// The counters when the recording started.
    at_start: LossCounts,
    /// The counters at the last report that reached the file.
    reported: LossCounts,
    /// Bytes reported in `jdk.DataLoss` so far, estimates included.
    bytes_reported: u64,
    /// Events and bytes written into the recording so far.
    written: (u64, u64),
    block_size: u64,
    /// Counts to report again (see [`Self::carry`]).
    carried: LossCounts,
    /// What the reports in the current chunk said.
    in_chunk: LossCounts,
}

/// One report, encoded but not yet known to have reached the file.
#[derive(Debug)]
#[must_use = "commit the report once the chunk's header covers it"]
pub(crate) struct Report {
    snapshot: LossCounts,
    bytes: u64,
    /// The carried counts it included.
    carried: LossCounts,
    /// What it said, per cause.
    written: LossCounts,
}

impl LossReporter {
    /// Starts reporting from the counters `now` (the recording's start).
    pub(crate) fn new(now: LossCounts, block_size: usize) -> Self {
        Self {
            at_start: now,
            reported: now,
            bytes_reported: 0,
            written: (0, 0),
            block_size: block_size as u64,
            carried: LossCounts::default(),
            in_chunk: LossCounts::default(),
        }
    }

    /// Notes `events` written in `bytes` (for the size estimate).
    pub(crate) fn note_written(&mut self, events: u64, bytes: u64) {
        self.written.0 += events;
        self.written.1 += bytes;
    }

    /// Encodes into `out` the drops between the last report and `now`, and
    /// those [carried](Self::carry) from evicted chunks: one
    /// `flightrec.EventsLost` per cause with drops, one `jdk.DataLoss` if
    /// any bytes were (or are estimated) dropped.
    pub(crate) fn encode(&self, out: &mut Vec<u8>, ticks: i64, now: LossCounts) -> Report {
        let delta = now.since(&self.reported);
        let total = now.since(&self.at_start);
        let mean = match self.written {
            (0, _) => FIRST_EVENT_BYTES,
            (events, bytes) => bytes.div_ceil(events),
        };
        let mut bytes = 0;
        let mut written = LossCounts::default();
        for (i, cause) in LossCause::ALL.iter().enumerate() {
            let events = delta.events[i];
            let carried = self.carried.events[i];
            if events + carried == 0 {
                continue;
            }
            let estimate = match cause {
                LossCause::PoolExhausted => events * mean,
                LossCause::TooLarge => events * self.block_size,
                _ => 0,
            };
            let cause_bytes = delta.bytes[i] + estimate + self.carried.bytes[i];
            bytes += cause_bytes;
            written.events[i] = events + carried;
            written.bytes[i] = cause_bytes;
            write_events_lost(
                out,
                ticks,
                *cause,
                events + carried,
                cause_bytes,
                total.events[i],
            );
        }
        if bytes > 0 {
            write_data_loss(out, ticks, bytes, self.bytes_reported + bytes);
        }
        Report {
            snapshot: now,
            bytes,
            carried: self.carried,
            written,
        }
    }

    /// Reports `counts` again in the next report, without counting them
    /// anew: the loss records of a chunk dropped from memory (see
    /// [`LossCause::Evicted`]) went with it, and the file must still say
    /// what was lost.
    pub(crate) fn carry(&mut self, counts: &LossCounts) {
        self.carried = self.carried.plus(counts);
    }

    /// What the reports that reached the file since the previous call
    /// said (at a chunk's end: what its loss records hold).
    pub(crate) fn take_chunk_reported(&mut self) -> LossCounts {
        std::mem::take(&mut self.in_chunk)
    }

    /// The report reached the file: later reports start from it.
    pub(crate) fn commit(&mut self, report: Report) {
        self.reported = report.snapshot;
        self.bytes_reported += report.bytes;
        self.carried = self.carried.since(&report.carried);
        self.in_chunk = self.in_chunk.plus(&report.written);
    }
}

/// `flightrec.EventsLost`: ts, cause, events, bytes, totalEvents.
fn write_events_lost(
    out: &mut Vec<u8>,
    ticks: i64,
    cause: LossCause,
    n: u64,
    bytes: u64,
    total: u64,
) {
    EventsLost {
        start_time: ticks,
        cause: cause.name(),
        events: n as i64,
        bytes: bytes as i64,
        total_events: total as i64,
    }
    .append(out);
}

/// `jdk.DataLoss`: ts, amount, total.
fn write_data_loss(out: &mut Vec<u8>, ticks: i64, amount: u64, total: u64) {
    DataLoss {
        start_time: ticks,
        amount: amount as i64,
        total: total as i64,
    }
    .append(out);
}
