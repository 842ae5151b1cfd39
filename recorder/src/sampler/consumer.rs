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
//! Events go through
//! [`emit_builtin`](crate::event::builtin::emit_builtin) into this thread's
//! own buffer, which tags the sampled thread and the sample's stack with
//! the epoch of the chunk the event lands in; the thread never samples
//! itself.
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
//!
//! # Files
//!
//! This file holds the thread's state and its pass; the steps are
//! `timers` (configure: the signal, the timers, the settings written),
//! `discovery` (which threads are tracked), `drain` (queues to events, and
//! stack bounds), `blocked` (CPU time of threads the signal does not reach,
//! written as lost samples) and `records` (the events themselves).

mod blocked;
mod discovery;
mod drain;
mod records;
mod timers;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::birth;
use super::claim;
use super::config::SamplerConfig;
use super::cpu_timer_linux::ThreadTimers;
use super::handler::doorbell::BELL;
use super::handler::entry::SLOTS;
use super::handler::queue::{QUEUE_CAPACITY, SlotTable};
use super::pyroscope;
use super::signal;
use super::threads;
use super::unwind::ModuleWatch;
use super::wake::{self, ThreadWatch};
use crate::base::loss::LossCause;
use crate::base::sync::{Arc, AtomicBool, Ordering};
use crate::cpool::threads::ThreadTags;
use crate::event::builtin::BuiltinRefs;
use crate::process::panic_guard::{self, Place};
use crate::runtime::Runtime;
use records::write_lost;

/// How often the CPU time per signal is measured (see `measure_per_signal`).
const PER_SIGNAL_EVERY: Duration = Duration::from_millis(500);

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
