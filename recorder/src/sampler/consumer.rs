//! The sampler thread: keeps a timer on every thread, drains the per-thread
//! queues, interns the stacks and writes the events.
//!
//! # One pass (when woken, see "Cadence")
//!
//! 1. *Configure*: if the settings or overrides changed, rebuild the timers
//!    at the new period (or drop them), and write `jdk.ActiveSetting`s; they
//!    are written again in every new chunk (epoch).
//! 2. *Discover*: if the process's thread count changed (or a relisting is
//!    due, see [`threads::Watch`]), list `/proc/self/task`; attach a slot and
//!    timers to new threads; detach exited ones after draining their queues.
//!    Between passes, threads that announce their birth ([`super::birth`])
//!    are attached at once, the same way.
//! 3. *Drain*: for every slot, move its samples into the stack-trace pool
//!    (refreshing the unwind tables when a frame lies outside every known
//!    module) and write one `jdk.CPUTimeSample` or `jdk.ExecutionSample`
//!    each, with the sampled thread's key; then one `jdk.CPUTimeSamplesLost`
//!    per thread whose queue overflowed.
//! 4. *Bounds*: for slots whose stack bounds are unknown, look up the
//!    mapping around the last reported stack pointer.
//!
//! Events go through [`emit_builtin`] into this thread's own buffer, which
//! tags the sampled thread and the sample's stack with the epoch of the
//! chunk the event lands in; the thread never samples itself.
//!
//! # flightrec's own threads
//!
//! Unless [`super::control::set_sample_own_threads`] asks for them, a thread named
//! `flightrec-*` (the recorder, periodic, attach, allocation, Pyroscope,
//! stream threads: they all are) is not sampled: at its first drain that
//! has samples, its name is read; if it is one of ours, its samples are
//! dropped uncounted (they are not the program's), its timers deleted and
//! it is not attached again. Its CPU time stays in
//! `flightrec.RecorderStatistics`.
//!
//! # The program's signals
//!
//! The timers send the signal [`claim::choose`] gives: the configured one
//! unless the program took it. When the program takes the armed signal
//! (found by the interposers at once, or by this thread when it arms and
//! at every pass), the timers are rebuilt on another signal, or left
//! disarmed when no signal is free; then every pass writes each thread's
//! CPU time since the last as lost samples (`jdk.CPUTimeSamplesLost` and
//! [`LossCause::SamplingSignalTaken`]). A thread that blocks the signal
//! gets no sample: every [`PER_SIGNAL_EVERY`], a thread that ran three
//! periods without a CPU-time signal has its blocked mask read; while it
//! blocks the signal its timer is deleted (so its pending signal, which
//! would stand for every expiry since, is dropped) and its CPU time is
//! written as lost ([`LossCause::SamplingSignalBlocked`]); once it
//! unblocks, it is armed again. The C library's own block of every signal
//! while a thread exits is not the program's ([`threads::Blocking`]): a
//! thread found in it is not counted, unless it blocked the signal before.
//!
//! # Cadence
//!
//! Each pass is a wakeup of this thread, which on a busy machine preempts a
//! sampled thread; a pass costs tens of microseconds (most of it the wakeup
//! itself), so passes are as rare as the work allows. The thread sleeps on
//! a bell ([`wake`]) that the signal handler rings when a queue reaches
//! half its capacity or the thread list changed, and the program rings on
//! a settings change, a thread's birth or the stop; without a ring it
//! wakes after [`wake::IDLE`], or sooner when a thread's queue could
//! otherwise fill in between ([`QUEUE_CAPACITY`] signal intervals: the
//! bell at half is the first defence, this bound the second). The signal
//! interval is the
//! timer period times the fewest expiries one CPU-time signal stood for in
//! the last pass that had samples: the kernel checks CPU timers at its tick,
//! so at periods below the tick each signal carries overruns and signals
//! arrive once per tick (4 ms at `CONFIG_HZ=250`), not once per period.
//! Taking the fewest keeps the estimate at or below the real interval.
//!
//! Invariant: a thread's slot is retired (no handler of it inside, none can
//! enter; see [`super::handler::queue`]) before its last drain, and it is reassigned
//! only after that drain, so every sample of the thread is written with the
//! thread's key and none is left for the slot's next owner; its key is
//! marked exited only after its last sample is written.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jfr_format::TypeId;
use jfr_format::write::constants::thread_state;
use jfr_format::write::events::{
    ActiveSetting, BuiltinEvent, CpuTimeSample, CpuTimeSamplesLost, ExecutionSample,
};

use super::birth;
use super::claim;
use super::config::{self, SamplerConfig};
use super::cpu_timer_linux::{ThreadTimers, TimerClock};
use super::engine::Sampler;
use super::handler::doorbell::{self, BELL, WATCH_INDEX};
use super::handler::entry::{self as handler_entry, SLOTS};
use super::handler::queue::{QUEUE_CAPACITY, RawSample, SampleKind, SampleSlot, SlotTable};
use super::pyroscope;
use super::signal;
use super::threads;
use super::unwind::{self, ModuleWatch};
use super::wake::{self, ThreadWatch};
use crate::base::clock;
use crate::base::loss::LossCause;
use crate::base::sync::{Arc, AtomicBool, Ordering};
use crate::cpool::threads::ThreadTags;
use crate::event::commit::{BuiltinRefs, emit_builtin};
use crate::lifecycle::statistics;
use crate::process::panic_guard::{self, Place};
use crate::runtime::Runtime;

/// How often the CPU time per signal is measured (see `measure_per_signal`).
const PER_SIGNAL_EVERY: Duration = Duration::from_millis(500);

/// Signals since the last look that make a thread a steady one.
const STEADY_SIGNALS: u64 = 8;

/// How often a slot's stack bounds are looked up before giving up.
const BOUNDS_TRIES: u8 = 3;

/// A thread being sampled.
#[derive(Debug)]
struct Tracked {
    index: usize,
    generation: u64,
    /// Registered at its first sample, when the thread has named itself;
    /// with the thread's epoch tags, which its samples set.
    key: Option<(u64, Arc<ThreadTags>)>,
    bounds_tries: u8,
    /// The thread's CPU time when lost samples were last counted, while
    /// the timers are disarmed (the program took the signal).
    foreign_cpu_seen: Option<u64>,
    /// Whether its name was checked for one of flightrec's own.
    own_checked: bool,
    /// One of flightrec's own threads: its samples are dropped.
    discard: bool,
    /// Its CPU time and CPU-time signals at the last blocked-signal check.
    blocked_seen: Option<(u64, u64)>,
    /// It blocked the sampling signal at the last check (its CPU timer is
    /// deleted meanwhile).
    blocked: bool,
}

impl Tracked {
    /// Writes `lost` samples of this thread as `jdk.CPUTimeSamplesLost`
    /// and counts them under `cause`.
    fn report_lost(&mut self, rt: &Runtime, tid: u64, lost: u64, cause: LossCause) {
        let (key, tags) = self.key.get_or_insert_with(|| register(rt, tid));
        let refs = BuiltinRefs {
            thread: Some(tags),
            ..BuiltinRefs::default()
        };
        write_lost(lost, refs, *key);
        rt.losses.record_many(cause, lost, 0);
    }
}

/// The sampler thread's state.
pub(crate) struct Consumer {
    rt: &'static Runtime,
    slots: &'static SlotTable,
    own_tid: u64,
    tracked: HashMap<u64, Tracked>,
    config: Option<SamplerConfig>,
    cpu: Option<ThreadTimers>,
    wall: Option<ThreadTimers>,
    /// The process CPU-time timer that makes the handler look for new
    /// threads ([`wake`]).
    thread_watch: Option<ThreadWatch>,
    watch: ModuleWatch,
    threads: threads::Watch,
    settings_epoch: u64,
    /// Whether the last settings written had the Pyroscope shape on.
    pyroscope_seen: bool,
    /// Fewest timer expiries one CPU-time signal stood for in the last pass
    /// that drained any (1 until then): see "Cadence".
    merged: u32,
    /// Fewest expiries of the current pass so far (`u32::MAX`: none yet).
    pass_merged: u32,
    /// Reused list of the tracked thread ids (no allocation per pass).
    tids: Vec<u64>,
    /// Threads not sampled because every slot was taken (each counted
    /// once, as [`LossCause::ThreadNotSampled`]; forgotten when they exit).
    untracked: std::collections::HashSet<u64>,
    /// The signal the timers send (`None`: disarmed, or sampling off).
    signal: Option<i32>,
    /// CPU sampling is on but no signal was free: see
    /// [`Consumer::count_disarmed`].
    disarmed: bool,
    /// flightrec's own threads, not sampled (forgotten when they exit).
    excluded: std::collections::HashSet<u64>,
    /// The disarmed state was said on stderr.
    warned_disarmed: bool,
    /// Each tracked thread's CPU time and CPU-time signals at the last
    /// look, and when that was (for [`birth::publish`]).
    per_signal_seen: HashMap<u64, (u64, u64)>,
    per_signal_at: Instant,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("threads", &self.tracked.len())
            .field("config", &self.config)
            .finish()
    }
}

impl Consumer {
    pub(crate) fn new(rt: &'static Runtime) -> Self {
        let slots = SLOTS.get_or_init(SlotTable::new);
        let mut watch = ModuleWatch::new();
        watch.ensure(slots);
        wake::open_task_dir();
        Self {
            rt,
            slots,
            own_tid: crate::base::sync::os_thread_id() as u64,
            tracked: HashMap::new(),
            config: None,
            cpu: None,
            wall: None,
            thread_watch: None,
            watch,
            threads: threads::Watch::new(),
            settings_epoch: 0,
            pyroscope_seen: false,
            merged: 1,
            pass_merged: u32::MAX,
            tids: Vec::new(),
            untracked: std::collections::HashSet::new(),
            signal: None,
            disarmed: false,
            excluded: std::collections::HashSet::new(),
            warned_disarmed: false,
            per_signal_seen: HashMap::new(),
            per_signal_at: Instant::now(),
        }
    }

    /// Runs passes until `stop` is set, then detaches every thread and
    /// writes what is left.
    pub(crate) fn run(&mut self, stop: &AtomicBool, config: impl Fn() -> SamplerConfig) {
        loop {
            // Taken before looking at anything a ring announces: a ring
            // during the pass makes the wait below return at once.
            let ticket = BELL.ticket();
            // Acquire: pairs with the Release store in `shutdown`.
            let stopping = stop.load(Ordering::Acquire);
            let pass = panic_guard::catch(Place::SamplerPass, || {
                panic_guard::injection_point(Place::SamplerPass);
                self.pass(config(), !stopping)
            });
            if pass.is_err() {
                // Sampling ends for this recording (the panic was reported
                // and counted); the timers go, the program runs on.
                let _ = panic_guard::catch(Place::SamplerPass, || self.detach_all());
                return;
            }
            if stopping {
                break;
            }
            let served = panic_guard::catch(Place::SamplerPass, || {
                let served = birth::serve(|tid| self.track(tid));
                if served {
                    // A thread born since may already be gone, with the
                    // thread count back where it was: list at the next pass.
                    self.threads.relist();
                }
                served
            });
            match served {
                Err(_) => {
                    let _ = panic_guard::catch(Place::SamplerPass, || self.detach_all());
                    return;
                }
                Ok(true) => {}
                Ok(false) => BELL.wait(ticket, self.pass_interval()),
            }
        }
        self.detach_all();
    }

    /// Deletes every timer and detaches every tracked thread, writing what
    /// their queues still hold.
    fn detach_all(&mut self) {
        birth::set_active(false);
        pyroscope::publish_mode(None, None);
        self.thread_watch = None;
        self.cpu = None;
        self.wall = None;
        claim::set_armed(0);
        let tids: Vec<u64> = self.tracked.keys().copied().collect();
        for tid in tids {
            self.release(tid);
        }
    }

    fn pass_interval(&self) -> Duration {
        let cpu = self
            .cpu
            .as_ref()
            .map(|t| t.period().saturating_mul(self.merged));
        let wall = self.wall.as_ref().map(|t| t.period());
        let fastest = cpu.into_iter().chain(wall).min().unwrap_or(wake::IDLE);
        // Drain before a busy thread's queue can fill, should the bell at
        // half of it not be heard (module docs, "Cadence").
        (fastest * QUEUE_CAPACITY as u32).min(wake::IDLE)
    }

    /// One pass: configure, discover, drain, look up bounds.
    pub(crate) fn pass(&mut self, config: SamplerConfig, discover: bool) {
        if self.config.as_ref() != Some(&config) {
            self.configure(config);
        }
        let epoch = self.rt.epoch.load(Ordering::Relaxed);
        if epoch != self.settings_epoch || pyroscope::pyroscope_events() != self.pyroscope_seen {
            self.write_settings();
            self.settings_epoch = epoch;
        }
        if discover {
            self.discover();
        }
        if let Some(s) = self.signal
            && (claim::is_claimed(s) || !signal::is_installed(s))
            && let Some(c) = self.config.clone()
        {
            // The program took the signal (its `sigaction` through the
            // interposer, or a handler found in place of ours): move.
            claim::mark(s);
            self.configure(c);
        }
        if self.disarmed {
            self.count_disarmed();
        }
        let mut tids = std::mem::take(&mut self.tids);
        tids.clear();
        tids.extend(self.tracked.keys().copied());
        self.pass_merged = u32::MAX;
        for &tid in &tids {
            self.drain(tid);
            self.find_bounds(tid);
        }
        if self.pass_merged != u32::MAX {
            self.merged = self.pass_merged;
        }
        if self.per_signal_at.elapsed() >= PER_SIGNAL_EVERY {
            self.measure_per_signal();
            self.check_blocked();
        }
        self.tids = tids;
    }

    /// CPU sampling is on, but the program took the sampling signal and no
    /// other was free: writes, per thread, the samples its timer would
    /// have taken as `jdk.CPUTimeSamplesLost` (and
    /// [`LossCause::SamplingSignalTaken`]): an estimate, the thread's CPU
    /// time since the last pass over the sampling period (the timers run
    /// on CPU time).
    #[cold]
    fn count_disarmed(&mut self) {
        let Some(period) = self.config.as_ref().and_then(|c| c.cpu).map(|t| {
            let cpus = crate::base::sync::available_parallelism().map_or(1, |n| n.get());
            config::cpu_period(t, cpus).as_nanos() as u64
        }) else {
            return;
        };
        let tids: Vec<u64> = self.tracked.keys().copied().collect();
        for tid in tids {
            let cpu = crate::base::clock::thread_cpu_time_ns(tid);
            if self.exclude_own(tid) {
                continue;
            }
            let Some(t) = self.tracked.get_mut(&tid) else {
                continue;
            };
            let (Some(now), Some(seen)) = (cpu, t.foreign_cpu_seen) else {
                t.foreign_cpu_seen = cpu;
                continue;
            };
            let lost = now.saturating_sub(seen) / period.max(1);
            // Keep the remainder for the next pass.
            t.foreign_cpu_seen = Some(seen + lost * period);
            if lost > 0 {
                t.report_lost(self.rt, tid, lost, LossCause::SamplingSignalTaken);
            }
        }
    }

    fn configure(&mut self, config: SamplerConfig) {
        if self
            .config
            .as_ref()
            .is_some_and(|c| c.own_threads != config.own_threads)
        {
            self.excluded.clear();
            for t in self.tracked.values_mut() {
                t.own_checked = false;
            }
        }
        // The old timers go first (dropping deletes them): none may fire
        // on a signal the program is taking (see `claim`).
        self.cpu = None;
        self.wall = None;
        self.thread_watch = None;
        claim::set_armed(0);
        let signal = if config.any() {
            self.choose_signal(config.signal)
        } else {
            None
        };
        self.signal = signal;
        self.disarmed = config.cpu.is_some() && signal.is_none();
        if self.disarmed && !self.warned_disarmed {
            self.warned_disarmed = true;
            eprintln!(
                "flightrec: the program set its own disposition for signal {}, which CPU \
                 sampling used, and no real-time signal is free to move to; CPU samples are \
                 lost from now on (counted as jdk.CPUTimeSamplesLost).",
                config.signal
            );
        }
        for t in self.tracked.values_mut() {
            t.foreign_cpu_seen = None;
            t.blocked_seen = None;
            t.blocked = false;
        }
        if let Some(signal) = signal {
            let cpus = crate::base::sync::available_parallelism().map_or(1, |n| n.get());
            self.cpu = config.cpu.map(|t| {
                ThreadTimers::new(TimerClock::ThreadCpu, config::cpu_period(t, cpus), signal)
            });
            self.wall = config
                .wall
                .map(|p| ThreadTimers::new(TimerClock::Wall, p, signal));
            let value = handler_entry::encode(WATCH_INDEX, 0, SampleKind::CpuTime);
            self.thread_watch = ThreadWatch::new(signal, value);
        }
        let tracked: Vec<(u64, usize, u64)> = self
            .tracked
            .iter()
            .map(|(&tid, t)| (tid, t.index, t.generation))
            .collect();
        for (tid, index, generation) in tracked {
            self.arm(tid, index, generation);
        }
        birth::keep_hook();
        if let (Some(t), Some(signal)) = (&self.cpu, signal) {
            birth::publish_config(signal, t.period());
        }
        self.per_signal_seen.clear();
        birth::set_active(signal.is_some());
        self.config = Some(config);
        self.merged = 1;
        // Threads may have started while sampling was off: list them now.
        self.threads = threads::Watch::new();
        self.write_settings();
    }

    /// The signal to arm on (see [`claim`]), published as armed, with our
    /// handler installed; `None` (said once on stderr) when the program
    /// took every usable one.
    fn choose_signal(&mut self, preferred: i32) -> Option<i32> {
        // Each round that loses a race to a claim leaves one more signal
        // claimed: at most 64 rounds.
        for _ in 0..=64 {
            let s = claim::choose(preferred)?;
            if !claim::set_armed(s) {
                claim::set_armed(0);
                continue;
            }
            if signal::install(s).is_ok() {
                return Some(s);
            }
            claim::set_armed(0);
            claim::mark(s);
        }
        None
    }

    fn arm(&mut self, tid: u64, index: usize, generation: u64) -> bool {
        let mut ok = true;
        if let Some(t) = &mut self.cpu {
            ok &= t
                .attach(
                    tid,
                    handler_entry::encode(index, generation, SampleKind::CpuTime),
                )
                .is_ok();
        }
        if let Some(t) = &mut self.wall {
            ok &= t
                .attach(
                    tid,
                    handler_entry::encode(index, generation, SampleKind::Wall),
                )
                .is_ok();
        }
        ok
    }

    fn discover(&mut self) {
        if !self.config.as_ref().is_some_and(|c| c.any()) {
            return;
        }
        let Some(now) = self.threads.poll(Instant::now()) else {
            return;
        };
        doorbell::listed(self.threads.links());
        let gone: Vec<u64> = self
            .tracked
            .keys()
            .filter(|tid| !now.contains(tid))
            .copied()
            .collect();
        let fresh = now.iter().any(|t| {
            *t != self.own_tid
                && !self.tracked.contains_key(t)
                && !self.untracked.contains(t)
                && !self.excluded.contains(t)
        });
        if fresh || !gone.is_empty() {
            // The thread-start poll hears of it now, not at its next round.
            crate::periodic::control::threads_changed();
        }
        for tid in gone {
            self.release(tid);
        }
        self.untracked.retain(|tid| now.contains(tid));
        self.excluded.retain(|tid| now.contains(tid));
        for tid in now {
            let _ = self.track(tid);
        }
    }

    /// The CPU time one CPU-time signal stands for on threads that run
    /// steadily (at least [`STEADY_SIGNALS`] signals since the last look):
    /// their CPU time over their signals, published for [`birth`]. One CPU
    /// clock read per tracked thread, every [`PER_SIGNAL_EVERY`].
    fn measure_per_signal(&mut self) {
        self.per_signal_at = Instant::now();
        let (Some(t), Some(c)) = (&self.cpu, &self.config) else {
            return;
        };
        let (period, signal) = (t.period(), c.signal);
        let (mut cpu, mut signals) = (0u64, 0u64);
        let mut seen = HashMap::with_capacity(self.tracked.len());
        for (&tid, tr) in &self.tracked {
            let (Some(now), Some(slot)) = (
                crate::base::clock::thread_cpu_time_ns(tid),
                self.slots.get(tr.index),
            ) else {
                continue;
            };
            let k = slot.cpu_signals.load(Ordering::Relaxed);
            if let Some(&(c0, k0)) = self.per_signal_seen.get(&tid)
                && k.saturating_sub(k0) >= STEADY_SIGNALS
            {
                cpu += now.saturating_sub(c0);
                signals += k - k0;
            }
            seen.insert(tid, (now, k));
        }
        self.per_signal_seen = seen;
        if let Some(per_signal) = cpu.checked_div(signals) {
            birth::publish(signal, period, Duration::from_nanos(per_signal));
        }
    }

    /// Threads that block the sampling signal (module docs): one that ran
    /// three periods without a CPU-time signal has its blocked mask read;
    /// while it blocks the signal its timer is deleted and its CPU time
    /// written as lost samples, and once it unblocks it is armed again.
    /// Every [`PER_SIGNAL_EVERY`].
    fn check_blocked(&mut self) {
        let (Some(signal), Some(period)) = (self.signal, self.cpu.as_ref().map(|t| t.period()))
        else {
            return;
        };
        let period = (period.as_nanos() as u64).max(1);
        let tids: Vec<u64> = self.tracked.keys().copied().collect();
        for tid in tids {
            if self.exclude_own(tid) {
                continue;
            }
            let Some(cpu) = crate::base::clock::thread_cpu_time_ns(tid) else {
                continue;
            };
            let Some(t) = self.tracked.get_mut(&tid) else {
                continue;
            };
            let Some(slot) = self.slots.get(t.index) else {
                continue;
            };
            if t.discard {
                continue;
            }
            let signals = slot.cpu_signals.load(Ordering::Relaxed);
            let Some((cpu0, signals0)) = t.blocked_seen.replace((cpu, signals)) else {
                continue;
            };
            let ran = cpu.saturating_sub(cpu0);
            if !t.blocked && (signals != signals0 || ran < 3 * period) {
                continue;
            }
            let blocks = match threads::blocking(tid, signal) {
                threads::Blocking::ByProgram => true,
                // The C library blocks every signal while a thread exits:
                // a signal pending then is never delivered, but the thread
                // did not block it. One found blocking before still does.
                threads::Blocking::ByLibrary if t.blocked => true,
                threads::Blocking::ByLibrary => continue,
                threads::Blocking::Open | threads::Blocking::Gone => false,
            };
            let (index, generation) = (t.index, t.generation);
            if !blocks {
                if t.blocked {
                    t.blocked = false;
                    if let Some(timers) = &mut self.cpu {
                        let value = handler_entry::encode(index, generation, SampleKind::CpuTime);
                        let _ = timers.attach(tid, value);
                    }
                }
                continue;
            }
            if !t.blocked {
                t.blocked = true;
                // Its pending signal (one for every expiry since it
                // blocked) goes with the timer: counted below instead.
                if let Some(timers) = &mut self.cpu {
                    timers.detach(tid);
                }
            }
            let lost = ran / period;
            // Keep the remainder for the next check.
            t.blocked_seen = Some((cpu0 + lost * period, signals));
            if lost > 0 {
                t.report_lost(self.rt, tid, lost, LossCause::SamplingSignalBlocked);
            }
        }
    }

    /// Attaches a slot and timers to `tid`, unless it is tracked already.
    /// Returns its CPU-time signal value and slot index if it has a CPU
    /// timer (for [`birth`]).
    fn track(&mut self, tid: u64) -> Option<(u64, usize)> {
        if !self.config.as_ref().is_some_and(|c| c.any())
            || tid == self.own_tid
            || self.excluded.contains(&tid)
        {
            return None;
        }
        if !self.tracked.contains_key(&tid) {
            self.attach_new(tid);
        }
        let t = self.tracked.get(&tid)?;
        self.cpu.as_ref()?;
        Some((
            handler_entry::encode(t.index, t.generation, SampleKind::CpuTime),
            t.index,
        ))
    }

    fn attach_new(&mut self, tid: u64) {
        let Some((index, generation)) = self.slots.assign(tid) else {
            if self.untracked.insert(tid) {
                self.rt.losses.record(LossCause::ThreadNotSampled, 0);
            }
            return;
        };
        let signals = self
            .slots
            .get(index)
            .map_or(0, |s| s.cpu_signals.load(Ordering::Relaxed));
        self.tracked.insert(
            tid,
            Tracked {
                index,
                generation,
                key: None,
                bounds_tries: 0,
                foreign_cpu_seen: None,
                own_checked: false,
                discard: false,
                // From its attach on: a thread that blocks the signal from
                // its start is found at the first check.
                blocked_seen: crate::base::clock::thread_cpu_time_ns(tid).map(|cpu| (cpu, signals)),
                blocked: false,
            },
        );
        if !self.arm(tid, index, generation) {
            // The thread exited between the listing and the timer.
            self.release(tid);
        }
    }

    /// Detaches `tid`: deletes its timers, retires its slot (waiting out a
    /// late signal's handler already inside it), writes its last samples,
    /// frees the slot for reuse and marks its key exited.
    fn release(&mut self, tid: u64) {
        if let Some(t) = &mut self.cpu {
            t.detach(tid);
        }
        if let Some(t) = &mut self.wall {
            t.detach(tid);
        }
        if let Some(slot) = self.tracked.get(&tid).and_then(|t| self.slots.get(t.index)) {
            // After this no signal of `tid` writes into the slot, so the
            // drain below is its last and the next owner starts empty.
            slot.retire();
        }
        self.drain(tid);
        let Some(t) = self.tracked.remove(&tid) else {
            return;
        };
        if let Some((key, _)) = &t.key {
            self.rt
                .threads
                .exited(*key, self.rt.epoch.load(Ordering::Relaxed));
        }
    }

    /// True if `tid` is one of flightrec's own threads and they are not
    /// sampled (module docs): its samples are dropped from now on, and it
    /// is released and not attached again.
    fn exclude_own(&mut self, tid: u64) -> bool {
        if self.config.as_ref().is_none_or(|c| c.own_threads) {
            return false;
        }
        let Some(t) = self.tracked.get_mut(&tid) else {
            return false;
        };
        if t.own_checked {
            return t.discard;
        }
        t.own_checked = true;
        if !threads::comm(tid).is_some_and(|n| n.starts_with("flightrec-")) {
            return false;
        }
        t.discard = true;
        self.excluded.insert(tid);
        self.release(tid);
        true
    }

    fn drain(&mut self, tid: u64) {
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
        // Pyroscope reads CPU from `jdk.ExecutionSample`s: with wall-clock
        // sampling off, each CPU-time sample is written as one too.
        let cpu_as_execution =
            pyroscope::pyroscope_events() && self.config.as_ref().is_some_and(|c| c.wall.is_none());
        let (cpu_period, wall_on) = match &self.config {
            Some(c) => (
                self.cpu
                    .as_ref()
                    .filter(|_| c.cpu.is_some())
                    .map(|t| clock::duration_to_ticks(t.period())),
                c.wall.is_some(),
            ),
            None => (None, false),
        };
        let (rt, slots, watch) = (self.rt, self.slots, &mut self.watch);
        let merged = &mut self.pass_merged;
        // The handler's time on flightrec's own threads is in their CPU
        // time already (see `crate::lifecycle::statistics`).
        let own_thread = statistics::is_own_thread(tid);
        let (mut handler_ticks, mut written) = (0u64, 0u64);
        // SAFETY: this thread is the only consumer of every queue.
        unsafe {
            slot.queue.drain(|s: &RawSample| {
                let (key, tags) = key.get_or_insert_with(|| register(rt, tid));
                let thread = BuiltinRefs {
                    thread: Some(tags),
                    stack: 0,
                    stack_epoch: 0,
                };
                for &pc in s.frames() {
                    if watch.check(pc, slots) {
                        break;
                    }
                }
                if s.kind == SampleKind::CpuTime {
                    *merged = (*merged).min(s.overrun.saturating_add(1));
                }
                if !own_thread {
                    handler_ticks = handler_ticks.saturating_add(s.handler_ticks);
                }
                let wanted = match s.kind {
                    SampleKind::CpuTime => cpu_period.is_some(),
                    SampleKind::Wall => wall_on,
                };
                if !wanted {
                    return;
                }
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
                let refs = BuiltinRefs {
                    stack,
                    stack_epoch: epoch,
                    ..thread
                };
                let wrote = match (s.kind, cpu_period) {
                    (SampleKind::CpuTime, Some(period)) => {
                        let wrote = write_cpu_sample(s, refs, *key, period);
                        if cpu_as_execution {
                            // Pyroscope weighs each ExecutionSample as one
                            // period: one per expiry the signal stands for.
                            for _ in 0..=s.overrun.min(pyroscope::MAX_WEIGHT) {
                                write_execution_sample(s, refs, *key);
                            }
                        }
                        wrote
                    }
                    _ => write_execution_sample(s, refs, *key),
                };
                written += u64::from(wrote);
            })
        };
        statistics::add_samples(handler_ticks, written);
        let lost = slot.queue.take_lost();
        if lost > 0 {
            let (key, tags) = key.get_or_insert_with(|| register(self.rt, tid));
            write_lost(
                lost,
                BuiltinRefs {
                    thread: Some(tags),
                    ..BuiltinRefs::default()
                },
                *key,
            );
        }
        if let Some(t) = self.tracked.get_mut(&tid) {
            t.key = key;
        }
    }

    fn find_bounds(&mut self, tid: u64) {
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

    fn write_settings(&mut self) {
        let pyroscope_on = pyroscope::pyroscope_events();
        self.pyroscope_seen = pyroscope_on;
        let mode = pyroscope::mode_of(self.config.as_ref());
        let period = match &self.config {
            Some(c) if c.wall.is_some() => c.wall,
            Some(c) if c.cpu.is_some() => self.cpu.as_ref().map(|t| t.period()),
            _ => None,
        };
        pyroscope::publish_mode(mode, period);
        let Some(c) = &self.config else { return };
        if let Some(value) = mode.filter(|_| pyroscope_on) {
            // Pyroscope's parser takes the mode from this setting (see
            // `super::pyroscope`).
            write_setting(TypeId::EXECUTION_SAMPLE, "event", value);
        }
        let cpu_on = if c.cpu.is_some() { "true" } else { "false" };
        let throttle = c.cpu.map_or_else(
            || crate::config::settings::format_duration(config::DEFAULT_THROTTLE),
            config::throttle_text,
        );
        write_setting(TypeId::CPU_TIME_SAMPLE, "enabled", cpu_on);
        write_setting(TypeId::CPU_TIME_SAMPLE, "throttle", &throttle);
        write_setting(TypeId::CPU_TIME_SAMPLE, "stackTrace", "true");
        let wall_on = if c.wall.is_some() { "true" } else { "false" };
        write_setting(TypeId::EXECUTION_SAMPLE, "enabled", wall_on);
        if let Some(p) = c.wall {
            write_setting(
                TypeId::EXECUTION_SAMPLE,
                "period",
                &crate::config::settings::format_duration(p),
            );
        }
    }
}

/// Registers thread `tid` (at its first sample, when it has named itself):
/// its key and its epoch tags, which its samples set.
fn register(rt: &Runtime, tid: u64) -> (u64, Arc<ThreadTags>) {
    let key = rt.threads.key_for_tid(tid as i64, || threads::name(tid));
    let tags = rt
        .threads
        .tags_of(key)
        .unwrap_or_else(|| Arc::new(ThreadTags::default()));
    (key, tags)
}

/// `jdk.CPUTimeSample`: ts, stackTrace, eventThread, failed,
/// samplingPeriod (ticks), biased, and contextId while labels are in the
/// samples ([`crate::labels::latch::in_samples`]). The period covers the expiries
/// the signal stands for (1 + overruns): the CPU time the sample
/// represents.
fn write_cpu_sample(s: &RawSample, refs: BuiltinRefs<'_>, thread: u64, period_ticks: i64) -> bool {
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
fn write_execution_sample(s: &RawSample, refs: BuiltinRefs<'_>, thread: u64) -> bool {
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
fn write_lost(lost: u64, refs: BuiltinRefs<'_>, thread: u64) {
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
fn write_setting(ty: TypeId, name: &str, value: &str) {
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
