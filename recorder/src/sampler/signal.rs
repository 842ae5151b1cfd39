//! Installing the sampling signal's handler (chaining the one it
//! replaces); the handler itself is in [`super::handler`].
//!
//! # Mechanism
//!
//! Each sampled thread has timers (see [`super::cpu_timer_linux`]) that send
//! the sampling signal to that thread, carrying in `si_value` a tag, the
//! index of the thread's [`SampleSlot`](super::handler::queue::SampleSlot), the slot's
//! generation and the kind of timer. The handler finds the slot from that
//! value (no lookup by thread id, no thread-local), unwinds the interrupted
//! context into the slot's queue, and returns. A signal that is not ours
//! (other `si_code`, other tag) goes to the handler that was installed
//! before ours; a late signal of a slot's previous owner (stale generation)
//! is dropped.
//!
//! The handler stays installed once installed: a timer's last signal can be
//! pending after the timer is deleted, and the default action of `SIGPROF`
//! would end the process.

use std::io;

use super::handler::entry::{PREVIOUS, TimerInfo, handler_address};
use crate::base::sync::global::Ordering;

/// Installs the handler for `signal` unless it is the current one,
/// remembering the handler it replaces so signals that are not ours reach
/// it. Called whenever sampling is (re)configured, so a handler another
/// library installed over ours meanwhile gets chained behind ours again.
pub(crate) fn install(signal: i32) -> io::Result<()> {
    let Some(prev_cell) = PREVIOUS.get(signal as usize).filter(|_| signal > 0) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let ours = handler_address();
    if crate::process::signals::query(signal)?.sa_sigaction == ours {
        return Ok(());
    }
    let prev = Box::new(crate::process::signals::install(signal, ours, 0)?);
    // Release: the previous handler's fields before the pointer. A signal
    // arriving between sigaction and this store is chained to the handler
    // remembered before (or ignored if none): our timers are not armed yet.
    // An older remembered action is leaked, not freed: a handler running on
    // another thread may still be reading it.
    prev_cell.store(Box::into_raw(prev), Ordering::Release);
    Ok(())
}

/// True if our handler is the one installed for `signal` now (a query:
/// nothing changes). A program that installs its own handler after ours
/// takes every sample signal from then on.
pub(crate) fn is_installed(signal: i32) -> bool {
    crate::process::signals::query(signal)
        .is_ok_and(|current| current.sa_sigaction == handler_address())
}

/// Sends the calling thread `signal` as its CPU timer would, carrying
/// `value` and `overrun`: a sample taken by the handler now (see `birth`).
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
pub(crate) fn sample_self(signal: i32, value: u64, overrun: u32) {
    // SAFETY: an all-zero siginfo is valid; the timer fields are set below
    // through `TimerInfo`, which lies within it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    {
        // SAFETY: `TimerInfo` is the prefix of the 128-byte siginfo.
        let t = unsafe { &mut *(&raw mut info).cast::<TimerInfo>() };
        t.si_signo = signal;
        t.si_code = libc::SI_TIMER;
        t.si_overrun = overrun.min(i32::MAX as u32) as i32;
        t.si_value = value;
    }
    // SAFETY: a valid siginfo for this process's own thread (a negative
    // si_code is allowed to one's own process); the handler runs before the
    // call returns.
    unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::gettid(),
            signal,
            &raw const info,
        )
    };
}
