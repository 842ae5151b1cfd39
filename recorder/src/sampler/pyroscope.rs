//! Samples in the shape Grafana Pyroscope's JFR ingest reads.
//!
//! Pyroscope's JFR parser builds its CPU and wall profiles from
//! `jdk.ExecutionSample` only (it never reads `jdk.CPUTimeSample`), and
//! tells the two apart by the last `jdk.ActiveSetting` named `event` it has
//! read before the samples: `wall` makes every sample a wall sample (and
//! the ones whose `state` is not `STATE_SLEEPING` CPU samples too); any
//! other value (`cpu`, `itimer`) makes the non-sleeping ones CPU samples.
//! See `docs/pyroscope-events.md`.
//!
//! # Mechanism
//!
//! Off by default. When on ([`set_pyroscope_events`]):
//!
//! * wall-clock sampling on: the samples are `jdk.ExecutionSample`s already
//!   (`STATE_RUNNABLE` or `STATE_SLEEPING`); the `event` setting says
//!   `wall`. CPU-time samples stay `jdk.CPUTimeSample`s only (Pyroscope
//!   takes CPU from the running wall samples, and writing both would count
//!   every sample twice in its wall profile).
//! * CPU-time sampling only: every CPU-time sample is written twice, as the
//!   `jdk.CPUTimeSample` the JDK's views read and as a `jdk.ExecutionSample`
//!   in state `STATE_RUNNABLE`; the `event` setting says `cpu`.
//!
//! # Weight
//!
//! Pyroscope counts each `jdk.ExecutionSample` as one sampling interval
//! (`1e9 / sampleRate` ns, the rate the upload declares, see
//! [`pyroscope_sample_rate`]). The kernel checks CPU timers at its tick, so
//! one CPU-time signal can stand for several expiries (its overruns): it is
//! written as that many `jdk.ExecutionSample`s (at most [`MAX_WEIGHT`] + 1),
//! so Pyroscope's CPU time matches the `samplingPeriod` sum of the
//! `jdk.CPUTimeSample`s.
//!
//! The `event` setting is written by the sampler whenever its settings are
//! (each new chunk, each change) and, so that it precedes every sample of a
//! chunk, by the recorder thread as the first event of each chunk
//! ([`write_event_setting`]).
//!
//! Invariant: while the switch is on and sampling runs, every chunk's first
//! event record is the `event` setting for the sampler's current mode.

use jfr_format::TypeId;
use jfr_format::write::events::{ActiveSetting, BuiltinEvent};

use super::config::SamplerConfig;
use std::time::Duration;

use crate::base::sync::global::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// The sampler's mode as the `event` setting names it: 0 none, 1 cpu, 2 wall.
static MODE: AtomicUsize = AtomicUsize::new(0);

/// Writes samples the way Pyroscope reads them (see the module docs), from
/// the sampler's next pass on. Off by default; the JDK reads the files
/// either way.
pub fn set_pyroscope_events(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether samples are written for Pyroscope ([`set_pyroscope_events`]).
pub fn pyroscope_events() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The `event` setting's value for `config`: `wall` when wall-clock
/// sampling is on, `cpu` when only CPU-time sampling is, else none.
pub(crate) fn mode_of(config: Option<&SamplerConfig>) -> Option<&'static str> {
    match config {
        Some(c) if c.wall.is_some() => Some("wall"),
        Some(c) if c.cpu.is_some() => Some("cpu"),
        _ => None,
    }
}

/// The sampling interval of the mode, in nanoseconds (0: none).
static PERIOD_NS: AtomicU64 = AtomicU64::new(0);

/// Most `jdk.ExecutionSample`s written for one CPU-time signal (one per
/// timer expiry it stands for, see "Weight" in the module docs).
pub(crate) const MAX_WEIGHT: u32 = 63;

/// Records the sampler's current mode and interval, for
/// [`write_event_setting`] and [`pyroscope_sample_rate`].
pub(crate) fn publish_mode(mode: Option<&'static str>, period: Option<Duration>) {
    let m = match mode {
        Some("cpu") => 1,
        Some("wall") => 2,
        _ => 0,
    };
    let ns = period.map_or(0, |p| p.as_nanos().min(u64::MAX as u128) as u64);
    PERIOD_NS.store(ns, Ordering::Relaxed);
    MODE.store(m, Ordering::Relaxed);
}

/// The `sampleRate` (samples per second per thread) an upload of samples
/// written now must declare: Pyroscope counts each `jdk.ExecutionSample`
/// as `1e9 / sampleRate` nanoseconds. The wall-clock interval when
/// wall-clock sampling is on, else the CPU-time interval; `None` while the
/// sampler is off. Rounded to the nearest whole rate, at least 1.
pub fn pyroscope_sample_rate() -> Option<u64> {
    if MODE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let ns = PERIOD_NS.load(Ordering::Relaxed);
    (ns > 0).then(|| ((1_000_000_000 + ns / 2) / ns).max(1))
}

/// The `event` setting to write now, if the switch is on and sampling runs.
pub(crate) fn current_event() -> Option<&'static str> {
    if !pyroscope_events() {
        return None;
    }
    match MODE.load(Ordering::Relaxed) {
        1 => Some("cpu"),
        2 => Some("wall"),
        _ => None,
    }
}

/// Appends `jdk.ActiveSetting` {id: `jdk.ExecutionSample`, name `event`,
/// value `cpu`|`wall`} to `out` if samples are written for Pyroscope.
pub(crate) fn write_event_setting(out: &mut Vec<u8>, ticks: i64) {
    if let Some(value) = current_event() {
        ActiveSetting {
            start_time: ticks,
            id: TypeId::EXECUTION_SAMPLE.0 as i64,
            name: "event",
            value,
        }
        .append(out);
    }
}
