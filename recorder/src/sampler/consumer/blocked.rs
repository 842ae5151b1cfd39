//! CPU time the sampling signal does not reach, written as lost samples:
//! while the program holds the signal and no other was free (the timers
//! are disarmed), and while a thread blocks it (its timer is deleted until
//! it unblocks). Both estimate the samples a thread missed as its CPU time
//! over the sampling period, keeping the remainder for the next count.
//!
//! Invariant: a thread's CPU time is counted as lost at most once: each
//! count moves its mark forward by the periods it wrote.

use super::Consumer;
use crate::base::loss::LossCause;
use crate::base::sync::Ordering;
use crate::sampler::config;
use crate::sampler::engine::Sampler;
use crate::sampler::handler::entry as handler_entry;
use crate::sampler::handler::sample::SampleKind;
use crate::sampler::threads;

impl Consumer {
    /// CPU sampling is on, but the program took the sampling signal and no
    /// other was free: writes, per thread, the samples its timer would
    /// have taken as `jdk.CPUTimeSamplesLost` (and
    /// [`LossCause::SamplingSignalTaken`]): an estimate, the thread's CPU
    /// time since the last pass over the sampling period (the timers run
    /// on CPU time).
    #[cold]
    pub(super) fn count_disarmed(&mut self) {
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

    /// Threads that block the sampling signal (module docs): one that ran
    /// three periods without a CPU-time signal has its blocked mask read;
    /// while it blocks the signal its timer is deleted and its CPU time
    /// written as lost samples, and once it unblocks it is armed again.
    /// Every [`PER_SIGNAL_EVERY`](super::PER_SIGNAL_EVERY).
    pub(super) fn check_blocked(&mut self) {
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
}
