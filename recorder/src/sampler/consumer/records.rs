//! The events the sampler thread writes, each through [`emit_builtin`]
//! into the thread's own buffer: `jdk.CPUTimeSample`,
//! `jdk.ExecutionSample`, `jdk.CPUTimeSamplesLost` and `jdk.ActiveSetting`.
//!
//! Invariant: every field is the sample's own (taken in the handler) or
//! the consumer's at the time of writing; nothing here reads the queue.

use jfr_format::TypeId;
use jfr_format::write::constants::thread_state;
use jfr_format::write::events::{
    ActiveSetting, BuiltinEvent, CpuTimeSample, CpuTimeSamplesLost, ExecutionSample,
};

use crate::base::clock;
use crate::event::builtin::{BuiltinRefs, emit_builtin};
use crate::sampler::handler::sample::{RawSample, SampleKind};

/// `jdk.CPUTimeSample`: ts, stackTrace, eventThread, failed,
/// samplingPeriod (ticks), biased, and contextId while labels are in the
/// samples ([`crate::labels::latch::in_samples`]). The period covers the expiries
/// the signal stands for (1 + overruns): the CPU time the sample
/// represents.
pub(super) fn write_cpu_sample(
    s: &RawSample,
    refs: BuiltinRefs<'_>,
    thread: u64,
    period_ticks: i64,
) -> bool {
    let period_ticks = period_ticks.saturating_mul(1 + i64::from(s.overrun));
    let context = crate::labels::latch::in_samples();
    emit_builtin(refs, |buf, stack| {
        CpuTimeSample {
            start_time: s.ticks,
            stack_trace: stack,
            event_thread: thread,
            failed: s.failed,
            sampling_period: period_ticks,
            biased: false,
            context_id: context.then_some(s.context as i64),
        }
        .encode(buf)
    })
}

/// `jdk.ExecutionSample`: ts, sampledThread, stackTrace, state, and
/// contextId while labels are in the samples. CPU-time samples are always
/// `STATE_RUNNABLE`.
pub(super) fn write_execution_sample(s: &RawSample, refs: BuiltinRefs<'_>, thread: u64) -> bool {
    let context = crate::labels::latch::in_samples();
    let state = if s.running || s.kind == SampleKind::CpuTime {
        thread_state::RUNNABLE.0
    } else {
        thread_state::SLEEPING.0
    };
    emit_builtin(refs, |buf, stack| {
        ExecutionSample {
            start_time: s.ticks,
            sampled_thread: thread,
            stack_trace: stack,
            state,
            context_id: context.then_some(s.context as i64),
        }
        .encode(buf)
    })
}

/// `jdk.CPUTimeSamplesLost`: ts, lostSamples, eventThread.
pub(super) fn write_lost(lost: u64, refs: BuiltinRefs<'_>, thread: u64) {
    emit_builtin(refs, |buf, _| {
        CpuTimeSamplesLost {
            start_time: clock::ticks(),
            lost_samples: lost.min(i32::MAX as u64) as i32,
            event_thread: thread,
        }
        .encode(buf)
    });
}

/// `jdk.ActiveSetting`: ts, id (the event type's id), name, value.
pub(super) fn write_setting(ty: TypeId, name: &str, value: &str) {
    emit_builtin(BuiltinRefs::default(), |buf, _| {
        ActiveSetting {
            start_time: clock::ticks(),
            id: ty.0 as i64,
            name,
            value,
        }
        .encode(buf)
    });
}
