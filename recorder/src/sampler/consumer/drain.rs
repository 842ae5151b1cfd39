//! Draining one thread's queue into events. Each raw sample goes through
//! the same steps, one function each:
//!
//! 1. the thread's key, registered at its first sample ([`super::register`]);
//! 2. [`watch_modules`]: a frame outside every known module refreshes the
//!    unwind tables;
//! 3. [`note_expiries`]: the fewest expiries one CPU-time signal stood for
//!    this pass (the signal interval, see the parent's "Cadence");
//! 4. [`Tally`]: the handler's cost and the samples written, for
//!    `flightrec.RecorderStatistics`;
//! 5. [`Shape::wants`]: samples of a kind that is off are dropped here;
//! 6. [`intern_stack`]: the stack, to the recording's depth limit;
//! 7. [`Shape::write`]: the event, and Pyroscope's weighted copies
//!    ([`write_pyroscope_weight`]).
//!
//! Then the queue's overflow is written as one `jdk.CPUTimeSamplesLost`
//! ([`write_overflow`]). The stack bounds of a slot are looked up here too
//! ([`Consumer::find_bounds`]), after its drain.
//!
//! Invariant: every sample taken out of a queue is written, or dropped
//! because its kind is off or its thread is one of flightrec's own; one
//! whose stack the pool cannot take is written without it, counted as
//! `StackDropped`.

use super::records::{write_cpu_sample, write_execution_sample, write_lost};
use super::{Consumer, register};
use crate::base::clock;
use crate::base::loss::LossCause;
use crate::base::sync::{Arc, Ordering};
use crate::cpool::threads::ThreadTags;
use crate::event::builtin::BuiltinRefs;
use crate::lifecycle::statistics;
use crate::runtime::Runtime;
use crate::sampler::handler::queue::{SampleSlot, SlotTable};
use crate::sampler::handler::sample::{RawSample, SampleKind};
use crate::sampler::pyroscope;
use crate::sampler::unwind::{self, ModuleWatch};

/// How often a slot's stack bounds are looked up before giving up.
const BOUNDS_TRIES: u8 = 3;

/// A thread's key and epoch tags, once registered.
type Key = Option<(u64, Arc<ThreadTags>)>;

impl Consumer {
    /// Writes every sample in `tid`'s queue, then its overflow.
    pub(super) fn drain(&mut self, tid: u64) {
        let slots = self.slots;
        let Some(t) = self.tracked.get(&tid) else {
            return;
        };
        let Some(slot) = slots.get(t.index) else {
            return;
        };
        if t.discard {
            // SAFETY: this thread is the only consumer of every queue.
            unsafe { slot.queue.drain(|_| {}) };
            slot.queue.take_lost();
            return;
        }
        if !t.own_checked && slot.queue.len() > 0 && self.exclude_own(tid) {
            return;
        }
        let Some(t) = self.tracked.get(&tid) else {
            return;
        };
        let mut key = t.key.clone();
        let shape = Shape::of(self);
        let (rt, watch) = (self.rt, &mut self.watch);
        let fewest = &mut self.pass_merged;
        let mut tally = Tally::new(tid);
        // SAFETY: this thread is the only consumer of every queue.
        unsafe {
            slot.queue.drain(|s: &RawSample| {
                let (key, tags) = key.get_or_insert_with(|| register(rt, tid));
                watch_modules(watch, slots, s);
                note_expiries(fewest, s);
                tally.handler(s);
                if !shape.wants(s.kind) {
                    return;
                }
                let (stack, stack_epoch) = intern_stack(rt, s);
                let refs = BuiltinRefs {
                    thread: Some(tags),
                    stack,
                    stack_epoch,
                };
                tally.wrote(shape.write(s, refs, *key));
            })
        };
        tally.publish();
        write_overflow(self.rt, tid, slot, &mut key);
        if let Some(t) = self.tracked.get_mut(&tid) {
            t.key = key;
        }
    }

    /// Looks up the stack bounds of `tid`'s slot around the last reported
    /// stack pointer, while they are unknown (at most [`BOUNDS_TRIES`]).
    pub(super) fn find_bounds(&mut self, tid: u64) {
        let Some(t) = self.tracked.get_mut(&tid) else {
            return;
        };
        let Some(slot): Option<&SampleSlot> = self.slots.get(t.index) else {
            return;
        };
        if t.bounds_tries >= BOUNDS_TRIES || slot.stack_hi.load(Ordering::Relaxed) != 0 {
            return;
        }
        let sp = slot.last_sp.load(Ordering::Relaxed);
        if sp == 0 {
            return;
        }
        t.bounds_tries += 1;
        if let Some((lo, hi)) = unwind::stack_bounds(sp) {
            // Release: pairs with the handler's Acquire loads. Either order
            // of the two stores is safe: a torn read gives `lo = 0` (reads
            // from `sp` up to the right `hi`) or `hi = 0` (snapshot path).
            slot.stack_hi.store(hi, Ordering::Release);
            slot.stack_lo.store(lo, Ordering::Release);
        }
    }
}

/// Which samples a drain writes, and as what: fixed by the settings and
/// timers in force for the whole drain.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// The CPU timer's period in ticks, while CPU-time sampling is on.
    cpu_period: Option<i64>,
    /// Wall-clock sampling is on.
    wall_on: bool,
    /// Pyroscope reads CPU from `jdk.ExecutionSample`s: with wall-clock
    /// sampling off, each CPU-time sample is written as one too.
    cpu_as_execution: bool,
}

impl Shape {
    fn of(c: &Consumer) -> Self {
        let cpu_as_execution = pyroscope::pyroscope_events()
            && c.config.as_ref().is_some_and(|cfg| cfg.wall.is_none());
        let (cpu_period, wall_on) = match &c.config {
            Some(config) => (
                c.cpu
                    .as_ref()
                    .filter(|_| config.cpu.is_some())
                    .map(|t| clock::duration_to_ticks(t.period())),
                config.wall.is_some(),
            ),
            None => (None, false),
        };
        Self {
            cpu_period,
            wall_on,
            cpu_as_execution,
        }
    }

    /// Whether samples of `kind` are written (that sampling is on).
    fn wants(&self, kind: SampleKind) -> bool {
        match kind {
            SampleKind::CpuTime => self.cpu_period.is_some(),
            SampleKind::Wall => self.wall_on,
        }
    }

    /// Writes `s` as its event; true if it was written (Pyroscope's copies
    /// are not counted).
    fn write(&self, s: &RawSample, refs: BuiltinRefs<'_>, key: u64) -> bool {
        match (s.kind, self.cpu_period) {
            (SampleKind::CpuTime, Some(period)) => {
                let wrote = write_cpu_sample(s, refs, key, period);
                if self.cpu_as_execution {
                    write_pyroscope_weight(s, refs, key);
                }
                wrote
            }
            _ => write_execution_sample(s, refs, key),
        }
    }
}

/// Pyroscope weighs each `jdk.ExecutionSample` as one period: a CPU-time
/// sample is written as one per expiry the signal stands for (at most
/// [`pyroscope::MAX_WEIGHT`] + 1).
fn write_pyroscope_weight(s: &RawSample, refs: BuiltinRefs<'_>, key: u64) {
    for _ in 0..=s.overrun.min(pyroscope::MAX_WEIGHT) {
        write_execution_sample(s, refs, key);
    }
}

/// The sampler's own cost in one drain, added to
/// `crate::lifecycle::statistics` at its end.
#[derive(Debug)]
struct Tally {
    /// The handler's time on flightrec's own threads is in their CPU time
    /// already (see `crate::lifecycle::statistics`): not summed.
    own_thread: bool,
    handler_ticks: u64,
    written: u64,
}

impl Tally {
    fn new(tid: u64) -> Self {
        Self {
            own_thread: statistics::is_own_thread(tid),
            handler_ticks: 0,
            written: 0,
        }
    }

    /// Adds the handler's time for `s`.
    fn handler(&mut self, s: &RawSample) {
        if !self.own_thread {
            self.handler_ticks = self.handler_ticks.saturating_add(s.handler_ticks);
        }
    }

    fn wrote(&mut self, wrote: bool) {
        self.written += u64::from(wrote);
    }

    fn publish(self) {
        statistics::add_samples(self.handler_ticks, self.written);
    }
}

/// Refreshes the unwind tables when a frame of `s` lies outside every
/// known module (one refresh per sample at most).
fn watch_modules(watch: &mut ModuleWatch, slots: &SlotTable, s: &RawSample) {
    for &pc in s.frames() {
        if watch.check(pc, slots) {
            break;
        }
    }
}

/// Keeps in `fewest` the fewest timer expiries one CPU-time signal stood
/// for (1 + its overruns).
fn note_expiries(fewest: &mut u32, s: &RawSample) {
    if s.kind == SampleKind::CpuTime {
        *fewest = (*fewest).min(s.overrun.saturating_add(1));
    }
}

/// Interns the stack of `s`, cut at the recording's depth limit, in the
/// epoch in force: its id and that epoch. A full pool gives id 0 (no
/// stack), counted as [`LossCause::StackDropped`].
fn intern_stack(rt: &Runtime, s: &RawSample) -> (u64, u64) {
    // The recording's depth limit applies to samples too.
    let frames = s.frames();
    let depth = frames.len().min(rt.max_stack_depth);
    let epoch = rt.epoch.load(Ordering::Relaxed);
    let stack = rt
        .stacks
        .intern(&frames[..depth], s.truncated || depth < frames.len(), epoch)
        .unwrap_or_else(|| {
            rt.losses.record(LossCause::StackDropped, 0);
            0
        });
    (stack, epoch)
}

/// Writes the samples `slot`'s queue dropped while full since the last
/// drain as one `jdk.CPUTimeSamplesLost` of thread `tid`.
fn write_overflow(rt: &Runtime, tid: u64, slot: &SampleSlot, key: &mut Key) {
    let lost = slot.queue.take_lost();
    if lost > 0 {
        let (key, tags) = key.get_or_insert_with(|| register(rt, tid));
        write_lost(
            lost,
            BuiltinRefs {
                thread: Some(tags),
                ..BuiltinRefs::default()
            },
            *key,
        );
    }
}
