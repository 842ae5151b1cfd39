//! What the wrapped allocator, the recorder's drain and the control share:
//! the live table of tracked blocks, the queue of samples, and the
//! switches and adaptive interval the allocation path reads.

use super::{live, queue};
use crate::base::sync::global::{AtomicBool, AtomicU64, Ordering};

/// The leak table: 512 buckets of 8 slots.
pub(super) static LIVE: live::LiveTable<512, 4096> = live::LiveTable::new();

/// Raw samples waiting for the allocation thread.
pub(super) static QUEUE: queue::Queue<1024> = queue::Queue::new();

/// What the settings in force ask of the allocator.
#[derive(Debug)]
pub(super) struct State {
    /// Samples are taken (a recording runs with allocation samples or old
    /// object samples enabled).
    pub(super) sampling: AtomicBool,
    /// `jdk.ObjectAllocationSample` events are written.
    pub(super) events: AtomicBool,
    /// Sampled blocks are tracked for `jdk.OldObjectSample`.
    pub(super) leaks: AtomicBool,
    /// Stacks are captured.
    pub(super) stacks: AtomicBool,
    /// The mean interval the throttle asks for (0: the wrapper's own).
    pub(super) adaptive_mean: AtomicU64,
    /// The throttle, in events per second (0: off).
    pub(super) throttle_per_sec: AtomicU64,
    /// `jdk.ThreadAllocationStatistics`' period in ms (0: off).
    pub(super) statistics_ms: AtomicU64,
    /// A wrapper has allocated: one is installed.
    pub(super) installed: AtomicBool,
}

static STATE: State = State {
    sampling: AtomicBool::new(false),
    events: AtomicBool::new(false),
    leaks: AtomicBool::new(false),
    stacks: AtomicBool::new(true),
    adaptive_mean: AtomicU64::new(0),
    throttle_per_sec: AtomicU64::new(0),
    statistics_ms: AtomicU64::new(0),
    installed: AtomicBool::new(false),
};

pub(super) fn state() -> &'static State {
    &STATE
}

/// The first mean of an adaptive throttle, before any rate is known.
pub(super) const FIRST_ADAPTIVE_MEAN: u64 = 512 * 1024;

impl State {
    /// The mean interval a thread arms with now: 0 while sampling is off.
    pub(super) fn mean_interval(&self, own: u64) -> u64 {
        if !self.installed.load(Ordering::Relaxed) {
            self.installed.store(true, Ordering::Relaxed);
        }
        if !self.sampling.load(Ordering::Relaxed) {
            return 0;
        }
        match self.adaptive_mean.load(Ordering::Relaxed) {
            0 => own,
            m => m,
        }
    }
}
