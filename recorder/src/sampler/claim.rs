//! The program's signals stay the program's: when the program sets a
//! disposition of its own (a handler, `SIG_DFL`, `SIG_IGN`) for the signal
//! the sampling timers send, the timers leave that signal before the new
//! disposition can receive one of them.
//!
//! # Mechanism
//!
//! * *Claims.* A signal the program has set a disposition for is claimed
//!   ([`CLAIMED`], one bit per signal). The C library's `sigaction`,
//!   `signal`, `sigset`, `bsd_signal` and `sysv_signal` (`capi`'s
//!   interposers, for `LD_PRELOAD` and programs linked with
//!   `libflightrec`) claim the signal through [`take`] *before* they call
//!   the C library's own function. A Rust program that links the recorder
//!   directly has no interposer: the sampler thread finds another handler
//!   in place of ours when it arms timers and at every pass
//!   ([`super::signal::is_installed`]) and claims the signal itself
//!   ([`mark`]); the signals sent until then went to that handler.
//! * *The move.* The sampler thread publishes the signal its timers send
//!   ([`ARMED`], 0 while none are armed). [`take`] of the armed signal
//!   rings the sampler's bell and waits (bounded by [`MOVE_WAIT`]) until the
//!   sampler has deleted every timer on it and re-armed them on a free
//!   real-time signal ([`choose`]: not claimed, default disposition or
//!   ours, blocked by no thread), or left them disarmed when there is none
//!   (then the CPU time of every thread is counted as lost samples, see
//!   `consumer`). The kernel (Linux 6.13 and later) drops a deleted or
//!   re-programmed timer's signal that is still pending, so none of ours
//!   reaches the program's handler after `take` returns; older kernels
//!   deliver such a signal, at most one per thread, where it was pending.
//!
//! Publication order (Dekker): [`take`] sets the claim, then reads
//! [`ARMED`]; the sampler stores [`ARMED`], then reads the claims (all
//! `SeqCst`). Either `take` sees the signal armed and waits for the move,
//! or the sampler sees the claim and chooses another signal before any
//! timer is armed on it.
//!
//! Invariant: once `take(s)` returned (within [`MOVE_WAIT`] of the bell),
//! no timer of ours is armed on `s` and none will be.
//!
//! # Signal safety
//!
//! [`take`] may run inside a program's signal handler (programs reset a
//! signal to `SIG_DFL` in its handler before re-raising it): it only does
//! atomic operations, the bell's `futex` wake and `nanosleep`.

use std::time::Duration;

use crate::base::sync::global::{AtomicU64, Ordering};

/// Signals the program has claimed: bit `s - 1` for signal `s`.
static CLAIMED: AtomicU64 = AtomicU64::new(0);

/// The signal the sampling timers send now (0: none armed).
static ARMED: AtomicU64 = AtomicU64::new(0);

/// Longest [`take`] waits for the sampler thread to move its timers.
pub(crate) const MOVE_WAIT: Duration = Duration::from_secs(2);

fn bit(signal: i32) -> u64 {
    if (1..=64).contains(&signal) {
        1 << (signal - 1)
    } else {
        0
    }
}

/// True if the program has claimed `signal`.
pub(crate) fn is_claimed(signal: i32) -> bool {
    CLAIMED.load(Ordering::SeqCst) & bit(signal) != 0
}

/// Claims `signal` for the program without waiting (the sampler thread's
/// own finding of another handler).
pub(crate) fn mark(signal: i32) {
    CLAIMED.fetch_or(bit(signal), Ordering::SeqCst);
}

/// The signal the timers send now (0: none).
pub(crate) fn armed() -> i32 {
    ARMED.load(Ordering::SeqCst) as i32
}

/// Sampler thread: the timers send `signal` from now on (0: none armed).
/// Returns false if the program claimed it meanwhile: the caller must not
/// arm a timer on it (module docs, "Publication order").
pub(crate) fn set_armed(signal: i32) -> bool {
    ARMED.store(signal.max(0) as u64, Ordering::SeqCst);
    signal == 0 || !is_claimed(signal)
}

/// Forgets the armed signal: in a forked child, where no sampler thread
/// and no timer of the parent exists.
pub(crate) fn forget_armed() {
    ARMED.store(0, Ordering::SeqCst);
}

/// The program sets a disposition for `signal` (`handler`: its
/// `sa_sigaction`, `SIG_DFL` or `SIG_IGN`): claims it and, if the timers
/// send it, waits until the sampler thread has moved them (module docs).
/// Called by the interposed `sigaction` family before the C library's.
/// Putting our own handler back is no claim.
pub fn take(signal: i32, handler: libc::sighandler_t) {
    if bit(signal) == 0 || handler == super::handler::entry::handler_address() {
        return;
    }
    CLAIMED.fetch_or(bit(signal), Ordering::SeqCst);
    if armed() != signal {
        return;
    }
    super::handler::doorbell::BELL.ring();
    let step = libc::timespec {
        tv_sec: 0,
        tv_nsec: 200_000,
    };
    let steps = MOVE_WAIT.as_nanos() / step.tv_nsec as u128;
    for _ in 0..steps {
        if armed() != signal {
            return;
        }
        // SAFETY: a valid timespec; nanosleep is async-signal-safe.
        unsafe { libc::nanosleep(&step, std::ptr::null_mut()) };
    }
}

/// What a program's query of `sig` reports while the sampling handler is
/// the kernel's action (`current`): the action it replaced, as the program
/// would see bare (`None`: `current` is not the sampling handler).
pub fn sampler_previous(sig: i32, current: &libc::sigaction) -> Option<libc::sigaction> {
    if current.sa_sigaction != super::handler::entry::handler_address() {
        return None;
    }
    let cell = super::handler::entry::PREVIOUS.get(usize::try_from(sig).ok()?)?;
    // SAFETY: non-null pointers in PREVIOUS are leaked boxes, never freed.
    let prev = unsafe { cell.load(Ordering::Acquire).as_ref() };
    // SAFETY: an all-zero sigaction is SIG_DFL with an empty mask.
    Some(
        prev.copied()
            .unwrap_or_else(|| unsafe { std::mem::zeroed() }),
    )
}

/// The signal to arm the timers on: `preferred` (the configured one) unless
/// the program claimed it, else the highest real-time signal that is not
/// claimed, has the default disposition (or our handler) and is blocked by
/// no thread of the process; `None` if there is none.
pub(crate) fn choose(preferred: i32) -> Option<i32> {
    if !is_claimed(preferred) {
        return Some(preferred);
    }
    let blocked = super::threads::blocked_by_any();
    (libc::SIGRTMIN()..=libc::SIGRTMAX()).rev().find(|&s| {
        !is_claimed(s)
            && blocked & bit(s) == 0
            && crate::process::signals::query(s).is_ok_and(|a| {
                a.sa_sigaction == libc::SIG_DFL
                    || a.sa_sigaction == super::handler::entry::handler_address()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_signal_is_not_chosen_and_take_without_timers_returns_at_once() {
        let max = libc::SIGRTMAX();
        // Nothing is armed in this test process's sampler on SIGRTMAX.
        let t0 = std::time::Instant::now();
        take(max, libc::SIG_DFL);
        assert!(t0.elapsed() < MOVE_WAIT / 2, "waited {:?}", t0.elapsed());
        assert!(is_claimed(max));
        let chosen = choose(max).expect("a free real-time signal");
        assert_ne!(chosen, max);
        assert!((libc::SIGRTMIN()..max).contains(&chosen), "{chosen}");
        assert_eq!(choose(libc::SIGPROF), Some(libc::SIGPROF));
        assert_eq!(bit(0), 0);
        assert_eq!(bit(65), 0);
    }
}
