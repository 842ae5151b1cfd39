//! `sigaction`, `signal`, `bsd_signal`, `sysv_signal` and `sigset`,
//! defined by `libflightrec.so` and `libflightrec.a`: the program's own
//! signal dispositions are seen before they take effect, so a signal the
//! sampling timers send never reaches a handler of the program's (nor its
//! `SIG_DFL`, which for `SIGPROF` ends the process).
//!
//! # Mechanism
//!
//! Each function first tells the recorder which disposition the program
//! sets (the recorder's `sampler::claim::take`): if the timers send that
//! signal, the sampler thread deletes them and re-arms them on a free
//! real-time signal (or leaves them disarmed, counting the lost samples)
//! before `take` returns. Then it calls the C library's own function,
//! found with `dlsym(RTLD_NEXT)` (the next definition after this library,
//! as for [`crate::thread_hook`]), with the caller's arguments unchanged,
//! and returns what that returns. A query (`sigaction` with no new action)
//! changes nothing and only forwards. The recorder's own handlers are
//! installed with the C library's `sigaction` directly, never through
//! these.
//!
//! Which definition a program binds to: the same rules as for
//! `pthread_create` (see [`crate::thread_hook`]). The C library's internal
//! calls to itself (its `signal` sets the action through an internal
//! `sigaction`) are not interposed, so each program call is seen once.
//!
//! # Signal safety
//!
//! Programs call these inside signal handlers (GNU `sort` resets a signal
//! to `SIG_DFL` and re-raises it). The functions take no lock and do not
//! allocate once the C library's function was looked up (`dlsym`, on the
//! first call of each; a program calls `sigaction` or `signal` at start-up
//! long before a handler of its runs); `take` only does atomics, a futex
//! wake and `nanosleep` (see its docs).
//!
//! No panic can leave these functions: nothing in them indexes, unwraps
//! or takes a poisoning lock.

use std::ffi::{CStr, c_int};
use std::sync::atomic::{AtomicUsize, Ordering};

use recorder::__signal_hook::{is_relayed, real_sigaction, sampler_previous, take};

type SignalFn = unsafe extern "C" fn(c_int, libc::sighandler_t) -> libc::sighandler_t;

/// `SIG_HOLD` (glibc's `signal.h`): `sigset`'s "block it".
const SIG_HOLD: libc::sighandler_t = 2;

/// The C library's function `name` (cached in `cell`; 0 if it has none).
fn next(cell: &AtomicUsize, name: &CStr) -> usize {
    let mut f = cell.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: RTLD_NEXT with a NUL-terminated name.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
        cell.store(f, Ordering::Release);
    }
    f
}

/// The handler a program would have seen bare where the kernel's is the
/// sampling handler (module docs, "Reports").
fn as_bare(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: an all-zero sigaction is a valid value.
    let mut current: libc::sigaction = unsafe { std::mem::zeroed() };
    current.sa_sigaction = handler;
    sampler_previous(sig, &current).map_or(handler, |p| p.sa_sigaction)
}

/// Calls the C library's `signal`-like function `name` after the claim.
///
/// # Safety
///
/// The C library's contract for `name`, which must have `SignalFn`'s
/// signature.
unsafe fn forward_signal(
    cell: &AtomicUsize,
    name: &CStr,
    sig: c_int,
    handler: libc::sighandler_t,
) -> libc::sighandler_t {
    take(sig, handler);
    let f = next(cell, name);
    if f == 0 {
        // SAFETY: errno is this thread's, always writable.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return libc::SIG_ERR;
    }
    // SAFETY: `f` is the C library's `name`, of signature `SignalFn`.
    let f = unsafe { std::mem::transmute::<usize, SignalFn>(f) };
    // SAFETY: the caller's arguments, passed on unchanged.
    let old = unsafe { f(sig, handler) };
    if old == libc::SIG_ERR {
        old
    } else {
        as_bare(sig, old)
    }
}

/// A `signal`-like call for a relayed signal, as the C library builds it
/// (its own `signal` calls an internal `sigaction` no interposer sees):
/// `handler` with `flags`, blocking `sig` itself while it runs if
/// `mask_self`; returns the previous handler.
fn relayed_signal(
    sig: c_int,
    handler: libc::sighandler_t,
    flags: c_int,
    mask_self: bool,
) -> libc::sighandler_t {
    if handler == libc::SIG_ERR {
        // SAFETY: errno is this thread's, always writable.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return libc::SIG_ERR;
    }
    // SAFETY: all-zero sigactions are valid values.
    let (mut act, mut old): (libc::sigaction, libc::sigaction) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    // SAFETY: `act.sa_mask` is a valid sigset.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        if mask_self {
            libc::sigaddset(&mut act.sa_mask, sig);
        }
    }
    // SAFETY: both pointers are valid for the call.
    if unsafe { recorder::__signal_hook::sigaction(sig, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// Examines and changes a signal action, as the C library's `sigaction`
/// does; first moves the sampling timers off `sig` if the program sets an
/// action for it, and keeps a relayed signal's action as the program's
/// (module docs).
///
/// # Safety
///
/// The C library's contract for `sigaction`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigaction(
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    // SAFETY: a non-null `act` points to a valid action (the contract).
    if let Some(act) = unsafe { act.as_ref() } {
        take(sig, act.sa_sigaction);
    }
    if is_relayed(sig) {
        // SAFETY: the caller's arguments, passed on unchanged.
        return unsafe { recorder::__signal_hook::sigaction(sig, act, old) };
    }
    // SAFETY: the caller's arguments, passed on unchanged.
    let r = unsafe { real_sigaction()(sig, act, old) };
    // SAFETY: a non-null `old` was just written (the contract).
    if let Some(old) = unsafe { old.as_mut() }.filter(|_| r == 0)
        && let Some(bare) = sampler_previous(sig, old)
    {
        *old = bare;
    }
    r
}

/// `signal`, as the C library's (BSD semantics in glibc); first moves the
/// sampling timers off `sig` (module docs).
///
/// # Safety
///
/// The C library's contract for `signal`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    if is_relayed(sig) {
        return relayed_signal(sig, handler, libc::SA_RESTART, true);
    }
    // SAFETY: the caller's contract; `signal` has `SignalFn`'s signature.
    unsafe { forward_signal(&REAL, c"signal", sig, handler) }
}

/// `bsd_signal`, as the C library's; first moves the sampling timers off
/// `sig` (module docs).
///
/// # Safety
///
/// The C library's contract for `bsd_signal`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bsd_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    if is_relayed(sig) {
        return relayed_signal(sig, handler, libc::SA_RESTART, true);
    }
    // SAFETY: the caller's contract; `bsd_signal` has `SignalFn`'s signature.
    unsafe { forward_signal(&REAL, c"bsd_signal", sig, handler) }
}

/// `sysv_signal`, as the C library's; first moves the sampling timers off
/// `sig` (module docs).
///
/// # Safety
///
/// The C library's contract for `sysv_signal`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sysv_signal(
    sig: c_int,
    handler: libc::sighandler_t,
) -> libc::sighandler_t {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    if is_relayed(sig) {
        return relayed_signal(sig, handler, libc::SA_RESETHAND | libc::SA_NODEFER, false);
    }
    // SAFETY: the caller's contract; `sysv_signal` has `SignalFn`'s signature.
    unsafe { forward_signal(&REAL, c"sysv_signal", sig, handler) }
}

/// `sigset` (System V), as the C library's; first moves the sampling timers
/// off `sig` (module docs; `SIG_HOLD`, which blocks the signal, moves them
/// too).
///
/// # Safety
///
/// The C library's contract for `sigset`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn sigset(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    if is_relayed(sig) {
        return relayed_sigset(sig, handler);
    }
    // SAFETY: the caller's contract; `sigset` has `SignalFn`'s signature.
    unsafe { forward_signal(&REAL, c"sigset", sig, handler) }
}

/// `sigset` for a relayed signal, as the C library's: `SIG_HOLD` blocks
/// it, anything else sets it (no flags, empty mask) and unblocks it; the
/// result is `SIG_HOLD` if it was blocked, else the previous handler.
fn relayed_sigset(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t {
    // SAFETY: all-zero sigsets are valid; each pointer is valid for its
    // call.
    let (set, mut was) = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        (set, std::mem::zeroed::<libc::sigset_t>())
    };
    let held = |was: &libc::sigset_t| {
        // SAFETY: `was` is a sigset the kernel filled.
        unsafe { libc::sigismember(was, sig) == 1 }
    };
    if handler == SIG_HOLD {
        // SAFETY: valid sets for the call.
        unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, &mut was) };
        if held(&was) {
            return SIG_HOLD;
        }
        // SAFETY: all-zero sigaction is valid; a null new action queries.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { recorder::__signal_hook::sigaction(sig, std::ptr::null(), &mut old) };
        return old.sa_sigaction;
    }
    let old = relayed_signal(sig, handler, 0, false);
    if old == libc::SIG_ERR {
        return old;
    }
    // SAFETY: valid sets for the call.
    unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, &mut was) };
    if held(&was) { SIG_HOLD } else { old }
}
