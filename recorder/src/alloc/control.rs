//! What settings changes, the last stop and a `fork()` do to the
//! allocation sampler: the switches the wrapped allocator reads, the drain
//! thread, and the per-thread sampling state.

use super::shared::{FIRST_ADAPTIVE_MEAN, LIVE, state};
use super::{emit, sampler};
use crate::base::sync::global::Ordering;
use crate::config::settings::{Settings, Throttle};

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
static FORCE_COUNTING: crate::base::sync::global::AtomicBool =
    crate::base::sync::global::AtomicBool::new(false);

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
