//! The allocation sampler's state and its control: the shared switches
//! the wrapped allocator reads, a sampled block's way into the queue and
//! the live table, and what settings changes, the last stop and a `fork()`
//! do to them.

use super::{allocator, emit, live, queue, sampler};
use crate::base::loss::LossCause;
use crate::base::sync::{AtomicBool, AtomicU64, Ordering};
use crate::config::settings::{Settings, Throttle};

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
const FIRST_ADAPTIVE_MEAN: u64 = 512 * 1024;

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

/// The sampled path, with the thread's sampling suspended: tracks the
/// block (if `track`: not for one tracked already), queues the raw sample
/// with its stack. Takes no lock.
pub(super) fn record(ptr: *mut u8, size: u64, weight: u64, track: bool) {
    let st = state();
    if !st.sampling.load(Ordering::Relaxed) {
        return;
    }
    let ticks = crate::base::clock::ticks();
    let addr = ptr.addr();
    let live = if track && st.leaks.load(Ordering::Relaxed) {
        let at = LIVE.track(addr, size, weight, ticks);
        if at.is_none() {
            lost(LossCause::LeakNotTracked);
        }
        at
    } else {
        None
    };
    let stacks = st.stacks.load(Ordering::Relaxed);
    let type_name = allocator::current_type_name();
    let queued = QUEUE.push(|s| {
        s.ticks = ticks;
        s.tid = crate::base::sync::os_thread_id();
        s.size = size;
        s.weight = weight;
        s.type_name = type_name;
        s.live = live;
        if stacks {
            let c = crate::stack::capture(0, &mut s.frames);
            s.len = c.len;
            s.truncated = c.truncated;
        } else {
            s.len = 0;
            s.truncated = false;
        }
    });
    if !queued {
        if live.is_some() {
            LIVE.untrack(addr);
        }
        lost(LossCause::AllocationSampleDropped);
    }
}

/// `realloc` of the tracked block `m` from `old` returned `new` (null:
/// the call failed, the block stays at `old`): it stays tracked where it
/// is now, with its first sample's stack, time and weight.
#[cold]
#[inline(never)]
pub(super) fn moved(m: live::Moving, old: *mut u8, new: *mut u8, old_size: usize, new_size: usize) {
    if !state().leaks.load(Ordering::Relaxed) {
        LIVE.cancel_move(m);
        return;
    }
    let (addr, size) = if new.is_null() {
        (old.addr(), old_size)
    } else {
        (new.addr(), new_size)
    };
    if !LIVE.end_move(m, addr, size as u64) {
        lost(LossCause::LeakNotTracked);
    }
}

fn lost(cause: LossCause) {
    if let Some(rt) = crate::runtime::get() {
        rt.losses.record(cause, 0);
    }
}

/// The settings of `event`'s `enabled`, default `on`.
fn enabled(settings: &Settings, event: &str) -> bool {
    settings.get(event).and_then(|s| s.enabled).unwrap_or(true)
}

/// Applies the settings in force (`recording`: a recording runs). Called
/// with every change of the union of the live recordings' settings.
pub(crate) fn apply(settings: &Settings, recording: bool) {
    let st = state();
    let events = recording && enabled(settings, "jdk.ObjectAllocationSample");
    let leaks = recording && enabled(settings, "jdk.OldObjectSample");
    let sample = settings.get("jdk.ObjectAllocationSample");
    let stacks = sample.and_then(|s| s.stack_trace).unwrap_or(true)
        || settings
            .get("jdk.OldObjectSample")
            .and_then(|s| s.stack_trace)
            .unwrap_or(true);
    let per_sec = match sample.and_then(|s| s.throttle) {
        None => 150,
        Some(Throttle::Off) => 0,
        Some(Throttle::Rate { count, per }) => ((count as f64) / per.as_secs_f64().max(1e-9))
            .round()
            .max(1.0) as u64,
        Some(Throttle::Interval(d)) => (1.0 / d.as_secs_f64().max(1e-9)).round().max(1.0) as u64,
    };
    let stats = recording && enabled(settings, "jdk.ThreadAllocationStatistics");
    let stats_ms = match settings
        .get("jdk.ThreadAllocationStatistics")
        .and_then(|s| s.period)
    {
        Some(crate::config::settings::Period::Interval(d)) => (d.as_millis() as u64).max(10),
        // Chunk-relative periods: every second (documented).
        _ => 1000,
    };
    st.events.store(events, Ordering::Relaxed);
    st.leaks.store(leaks, Ordering::Relaxed);
    st.stacks.store(stacks, Ordering::Relaxed);
    let was = st.throttle_per_sec.swap(per_sec, Ordering::Relaxed);
    if per_sec == 0 {
        st.adaptive_mean.store(0, Ordering::Relaxed);
    } else if was == 0 || st.adaptive_mean.load(Ordering::Relaxed) == 0 {
        st.adaptive_mean
            .store(FIRST_ADAPTIVE_MEAN, Ordering::Relaxed);
    }
    st.statistics_ms
        .store(if stats { stats_ms } else { 0 }, Ordering::Relaxed);
    st.sampling.store(events || leaks, Ordering::Release);
    let counting = events || leaks || stats || counting_forced();
    let installed = sampler::set_mode(counting, st.installed.load(Ordering::Relaxed));
    if installed {
        st.installed.store(true, Ordering::Relaxed);
    }
    if recording && installed && (events || leaks || stats) {
        emit::start_thread();
    }
}

/// Tests of the wrapper that run without a recording count anyway.
#[cfg(test)]
static FORCE_COUNTING: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
pub(super) fn counting_forced() -> bool {
    FORCE_COUNTING.load(Ordering::Relaxed)
}

#[cfg(not(test))]
pub(super) fn counting_forced() -> bool {
    false
}

/// Makes the countdown run from now on in this test binary, recording or
/// not (settings applied later keep it running).
#[cfg(test)]
pub(crate) fn force_counting_for_tests() {
    FORCE_COUNTING.store(true, Ordering::Relaxed);
    let st = state();
    sampler::set_mode(true, st.installed.load(Ordering::Relaxed));
}

/// The last recording is stopping: no new samples; what is queued is
/// written now (from the calling thread), so it lands in the last chunk.
pub(crate) fn shutdown() {
    let st = state();
    if !st.installed.load(Ordering::Relaxed) {
        return;
    }
    st.sampling.store(false, Ordering::Release);
    sampler::suspended(emit::drain_now);
}

/// The last recording's last chunk is written: the tracked blocks are
/// forgotten, so frees go back to the one-load path.
pub(crate) fn stopped() {
    LIVE.clear();
}

/// In a forked child: nothing samples (the child's recording starts over).
pub(crate) fn stop_in_child() {
    let st = state();
    st.sampling.store(false, Ordering::Relaxed);
    st.events.store(false, Ordering::Relaxed);
    st.leaks.store(false, Ordering::Relaxed);
    st.statistics_ms.store(0, Ordering::Relaxed);
    if sampler::set_mode(counting_forced(), st.installed.load(Ordering::Relaxed)) {
        st.installed.store(true, Ordering::Relaxed);
    }
    LIVE.clear();
}

/// The calling thread (one of flightrec's) is never sampled: its
/// allocations are the recorder's, not the program's.
pub(crate) fn never_sample_this_thread() {
    sampler::never_sample_this_thread();
}

/// Bytes the calling thread allocated through the wrapper while counting:
/// while a recording asked for `jdk.ObjectAllocationSample`,
/// `jdk.OldObjectSample` or `jdk.ThreadAllocationStatistics` (otherwise
/// the wrapper counts nothing, to cost nothing).
pub fn thread_allocated_bytes() -> u64 {
    sampler::allocated_now()
}
