//! Per-thread POSIX timers that signal one thread each: on the thread's own
//! CPU-time clock (CPU-time sampling) or on `CLOCK_MONOTONIC` (wall-clock
//! sampling).
//!
//! # Mechanism
//!
//! For thread `tid`, `timer_create` on the clock `(!tid << 3) | 6` (the
//! kernel's `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, the same clock
//! `pthread_getcpuclockid` returns, addressable from any thread of the
//! process) with `SIGEV_THREAD_ID`, so the signal goes to that thread and
//! no other. The timer fires every `period` of that thread's CPU time; its
//! first expiry is drawn uniformly within one period, so threads started
//! together are not sampled in lockstep. Timers are deleted when the thread
//! exits or sampling stops.
//!
//! Invariant: each attached thread has exactly one timer of this sampler,
//! and it signals only that thread.

use std::collections::HashMap;
use std::io;
use std::time::Duration;

use super::engine::Sampler;

/// Which clock drives the timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerClock {
    /// The thread's CPU time.
    ThreadCpu,
    /// Wall-clock time.
    Wall,
}

/// One timer per attached thread.
#[derive(Debug)]
pub(crate) struct ThreadTimers {
    clock: TimerClock,
    period: Duration,
    signal: i32,
    timers: HashMap<u64, Timer>,
    rng: u64,
}

#[derive(Debug)]
struct Timer(libc::timer_t);

// SAFETY: a timer id is a process-wide handle usable from any thread.
unsafe impl Send for Timer {}

impl Drop for Timer {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from a successful timer_create and is deleted
        // exactly once, here.
        unsafe { libc::timer_delete(self.0) };
    }
}

impl ThreadTimers {
    pub(crate) fn new(clock: TimerClock, period: Duration, signal: i32) -> Self {
        Self {
            clock,
            period: period.max(Duration::from_micros(100)),
            signal,
            timers: HashMap::new(),
            rng: crate::base::clock::ticks() as u64 | 1,
        }
    }

    /// The period every timer fires at.
    pub(crate) fn period(&self) -> Duration {
        self.period
    }

    /// xorshift64*: the first-expiry offsets need spread, not quality.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn clock_id(&self, tid: u64) -> libc::clockid_t {
        match self.clock {
            TimerClock::ThreadCpu => (!(tid as libc::clockid_t) << 3) | 6,
            TimerClock::Wall => libc::CLOCK_MONOTONIC,
        }
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

impl Sampler for ThreadTimers {
    fn attach(&mut self, tid: u64, value: u64) -> io::Result<()> {
        if self.timers.contains_key(&tid) {
            return Ok(());
        }
        // SAFETY: an all-zero sigevent is valid; the fields are set below.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = self.signal;
        sev.sigev_value = libc::sigval {
            sival_ptr: value as usize as *mut libc::c_void,
        };
        sev.sigev_notify_thread_id = tid as libc::c_int;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call.
        if unsafe { libc::timer_create(self.clock_id(tid), &mut sev, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let timer = Timer(id);
        let period_ns = self.period.as_nanos() as u64;
        let first = Duration::from_nanos(1 + self.next_random() % period_ns);
        let spec = libc::itimerspec {
            it_interval: timespec(self.period),
            it_value: timespec(first),
        };
        // SAFETY: `timer.0` is a live timer; `spec` is valid.
        if unsafe { libc::timer_settime(timer.0, 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.timers.insert(tid, timer);
        Ok(())
    }

    fn detach(&mut self, tid: u64) {
        self.timers.remove(&tid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_clock_ids_match_pthread_getcpuclockid() {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self is this thread; `id` is a valid out-pointer.
        let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        assert_eq!(r, 0);
        let t = ThreadTimers::new(TimerClock::ThreadCpu, Duration::from_millis(10), 0);
        // glibc encodes the calling thread's clock by its tid as well.
        let tid = crate::base::sync::os_thread_id() as u64;
        let ours = t.clock_id(tid);
        let mut a = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid clock id and out-pointer.
        assert_eq!(unsafe { libc::clock_gettime(ours, &mut a) }, 0);
        assert!(id == ours || id < 0, "{id} vs {ours}");
    }
}
