//! Configuring the sampler thread's timers: the signal they send (one the
//! program has not taken, see [`claim`]), a CPU-time and a wall-clock timer
//! per tracked thread at the configured periods, the process timer that
//! makes the handler look for new threads, and the `jdk.ActiveSetting`s
//! that say what is armed.
//!
//! Invariant: the old timers are deleted before a new signal is chosen, so
//! no timer fires on a signal the program is taking.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jfr_format::TypeId;

use super::Consumer;
use super::records::write_setting;
use crate::base::sync::Ordering;
use crate::sampler::birth;
use crate::sampler::claim;
use crate::sampler::config::{self, SamplerConfig};
use crate::sampler::cpu_timer_linux::{ThreadTimers, TimerClock};
use crate::sampler::engine::Sampler;
use crate::sampler::handler::doorbell::WATCH_INDEX;
use crate::sampler::handler::entry as handler_entry;
use crate::sampler::handler::sample::SampleKind;
use crate::sampler::pyroscope;
use crate::sampler::signal;
use crate::sampler::threads;
use crate::sampler::wake::ThreadWatch;

/// Signals since the last look that make a thread a steady one.
const STEADY_SIGNALS: u64 = 8;

impl Consumer {
    pub(super) fn configure(&mut self, config: SamplerConfig) {
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

    pub(super) fn arm(&mut self, tid: u64, index: usize, generation: u64) -> bool {
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

    /// The CPU time one CPU-time signal stands for on threads that run
    /// steadily (at least [`STEADY_SIGNALS`] signals since the last look):
    /// their CPU time over their signals, published for [`birth`]. One CPU
    /// clock read per tracked thread, every [`PER_SIGNAL_EVERY`](super::PER_SIGNAL_EVERY).
    pub(super) fn measure_per_signal(&mut self) {
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

    pub(super) fn write_settings(&mut self) {
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
