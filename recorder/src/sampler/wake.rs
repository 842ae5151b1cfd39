//! When the sampler thread wakes: only when there is something to do,
//! instead of every 20 ms.
//!
//! # Mechanism
//!
//! The sampler thread sleeps on [`BELL`](super::handler::doorbell::BELL) (a futex word, see
//! [`Doorbell`](crate::base::sync::Doorbell)) for at most [`IDLE`], or less when a queue could fill
//! sooner (see `consumer`). Three things ring it early:
//!
//! 1. *A queue filling up.* The signal handler, after pushing a sample that
//!    brings its thread's queue to [`HIGH_WATER`](super::handler::doorbell::HIGH_WATER) (half of
//!    [`QUEUE_CAPACITY`](super::handler::queue::QUEUE_CAPACITY)), rings the bell: the drain comes while the other
//!    half of the queue is still free, so a busy thread loses no sample
//!    however long the thread slept. (A full queue still counts what it
//!    drops.)
//! 2. *The thread list changing.* A thread that is not sampled yet has no
//!    timer, so nothing of it reaches the handler. The handler, on any
//!    signal but at most once per [`CHECK_EVERY`] (one clock read and a
//!    compare otherwise), `fstat`s the open `/proc/self/task` and compares
//!    its link count (2 + the thread count) with the one at the sampler's
//!    last listing ([`listed`](super::handler::doorbell::listed)); a difference rings the bell. A process
//!    CPU-time timer ([`ThreadWatch`], every [`CHECK_EVERY`] of the
//!    process's CPU time) makes such a signal arrive on whichever thread
//!    runs, so a new thread that burns CPU is found within about
//!    [`CHECK_EVERY`] of CPU even when no sampled thread runs; an idle
//!    process gets none of these signals and the sampler sleeps.
//! 3. *The program:* a settings change, a thread announcing its birth
//!    (`birth`), or the stop ring it.
//!
//! The handler's side (the bell, the queue's high-water mark, the
//! thread-list check) is in [`super::handler::doorbell`].
//!
//! Why the handler may ring: [`Doorbell::ring`](crate::base::sync::Doorbell::ring) is an atomic add, an
//! atomic load and at most one `futex(FUTEX_WAKE)` system call, and the
//! check is an atomic compare-exchange and `fstat`, both async-signal-safe
//! system calls (the handler saves and restores `errno`); nothing
//! allocates, locks or waits.
//!
//! Invariant: a queue at [`HIGH_WATER`](super::handler::doorbell::HIGH_WATER) or more, or a thread list that
//! differs from the last listing, leads to a pass within [`CHECK_EVERY`]
//! of the next signal; otherwise a pass comes at least every [`IDLE`].

use std::os::fd::IntoRawFd;
use std::time::Duration;

use super::handler::doorbell::{CHECK_EVERY, CHECK_TICKS, TASK_FD};
use crate::base::clock;
use crate::base::sync::global::Ordering;

/// Longest sleep of the sampler thread.
pub(crate) const IDLE: Duration = Duration::from_millis(250);

/// Sampler thread, at its start: opens this process's `/proc/self/task`
/// for the handler (after a fork, the child's own) and enables the check.
pub(crate) fn open_task_dir() {
    CHECK_TICKS.store(
        clock::duration_to_ticks(CHECK_EVERY).max(1) as u64,
        Ordering::Relaxed,
    );
    let fd = match std::fs::File::open("/proc/self/task") {
        Ok(f) => f.into_raw_fd() as u64,
        Err(_) => u64::MAX,
    };
    // Release: the open file before its number.
    let old = TASK_FD.swap(fd, Ordering::Release);
    if old != u64::MAX {
        // A handler still inside `check_threads` with the old number gets
        // EBADF or another file's count: at worst one spurious ring.
        // SAFETY: `old` came from `into_raw_fd` above and is closed once.
        unsafe { libc::close(old as i32) };
    }
}

/// A timer on the process's CPU-time clock whose signal (the sampling
/// signal, value [`WATCH_INDEX`](super::handler::doorbell::WATCH_INDEX)) only runs [`check_threads`](super::handler::doorbell::check_threads) on whichever
/// thread of the process runs when it expires (Linux ≥ 6.3 prefers the
/// running thread; before, any thread not blocking the signal). Deleted
/// when dropped.
#[derive(Debug)]
pub(crate) struct ThreadWatch(libc::timer_t);

// SAFETY: a timer id is a process-wide handle usable from any thread.
unsafe impl Send for ThreadWatch {}

impl ThreadWatch {
    /// Arms the watch, sending `signal` with `value`; `None` if the kernel
    /// refused (the sampler then finds new threads at its passes only).
    pub(crate) fn new(signal: i32, value: u64) -> Option<Self> {
        // SAFETY: an all-zero sigevent is valid; the fields are set below.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_SIGNAL;
        sev.sigev_signo = signal;
        sev.sigev_value = libc::sigval {
            sival_ptr: value as usize as *mut libc::c_void,
        };
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid clock id, sigevent and out-pointer.
        if unsafe { libc::timer_create(libc::CLOCK_PROCESS_CPUTIME_ID, &mut sev, &mut id) } != 0 {
            return None;
        }
        let watch = ThreadWatch(id);
        let every = libc::timespec {
            tv_sec: 0,
            tv_nsec: CHECK_EVERY.as_nanos() as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: every,
            it_value: every,
        };
        // SAFETY: `id` is a live timer; `spec` is valid.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } != 0 {
            return None; // dropped: deleted
        }
        Some(watch)
    }
}

impl Drop for ThreadWatch {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from a successful timer_create and is
        // deleted exactly once, here.
        unsafe { libc::timer_delete(self.0) };
    }
}
