//! Putting a `SA_SIGINFO` handler in place of another and calling the one
//! it replaced: what the sampling signal ([`crate::sampler`]) and the lazy
//! attach's SIGQUIT ([`crate::attach`]) share. Each keeps the action it
//! replaced in its own atomics, published before its handler can need it.
//!
//! # Signal safety
//!
//! [`call`] runs inside handlers: it only compares and calls, and is
//! async-signal-safe as long as the handler it calls is. [`query`] and
//! [`install`] are called outside handlers (installing is a control-path
//! step, never done on the data path).
//!
//! Invariant: a handler installed here has `SA_SIGINFO` and an empty mask,
//! and [`call`] calls a replaced handler with the signature its own
//! `sa_flags` say it has.
//!
//! The C library (`capi`) defines `sigaction` itself, to see the program's
//! own dispositions (`crate::sampler`'s `claim`): [`query`] and [`install`]
//! call the C library's through [`real_sigaction`], never that one.

use std::io;

use crate::base::sync::global::{AtomicUsize, Ordering};

/// `sigaction`'s signature.
pub type Sigaction =
    unsafe extern "C" fn(libc::c_int, *const libc::sigaction, *mut libc::sigaction) -> libc::c_int;

/// The C library's `sigaction`: the next definition after the object that
/// holds this code (`dlsym(RTLD_NEXT)`), so never an interposer of the
/// same object; `libc::sigaction` if there is none (a static executable).
/// Looked up once; async-signal-safe after the first call (the recorder
/// makes that call when it installs a handler, before any program's
/// handler could call it).
pub fn real_sigaction() -> Sigaction {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut f = REAL.load(Ordering::Acquire);
    if f == 0 {
        // SAFETY: RTLD_NEXT with a NUL-terminated name.
        f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"sigaction".as_ptr()) } as usize;
        if f == 0 {
            f = libc::sigaction as Sigaction as usize;
        }
        REAL.store(f, Ordering::Release);
    }
    // SAFETY: `f` is a `sigaction` of the C library (found by name above),
    // whose signature is `Sigaction`.
    unsafe { std::mem::transmute::<usize, Sigaction>(f) }
}

/// An all-zero `sigaction`: `SIG_DFL`, no flags, an empty mask.
fn zeroed() -> libc::sigaction {
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, empty mask).
    unsafe { std::mem::zeroed() }
}

/// The action installed for `signal` now (nothing changes).
pub(crate) fn query(signal: libc::c_int) -> io::Result<libc::sigaction> {
    let mut current = zeroed();
    // SAFETY: a null new action only queries; `current` is a valid out-pointer.
    if unsafe { real_sigaction()(signal, std::ptr::null(), &mut current) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(current)
}

/// Installs `handler` (the address of an `extern "C" fn(c_int, *mut
/// siginfo_t, *mut c_void)`) for `signal` with `SA_SIGINFO | SA_RESTART`
/// and `extra_flags`, blocking no other signal while it runs; returns the
/// action it replaced.
pub(crate) fn install(
    signal: libc::c_int,
    handler: libc::sighandler_t,
    extra_flags: libc::c_int,
) -> io::Result<libc::sigaction> {
    let mut action = zeroed();
    action.sa_sigaction = handler;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | extra_flags;
    // SAFETY: `action.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    let mut prev = zeroed();
    // SAFETY: both pointers are valid `sigaction`s; the kernel fills `prev`.
    if unsafe { real_sigaction()(signal, &action, &mut prev) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(prev)
}

/// Calls handler `h`, installed with `flags`, as the kernel would have;
/// `SIG_DFL` and `SIG_IGN` do nothing (a caller that wants the default
/// action handles them first).
///
/// # Safety
///
/// `h` must be a handler address from a `sigaction` with `flags`, and the
/// remaining arguments those of the handler calling this.
pub(crate) unsafe fn call(
    h: libc::sighandler_t,
    flags: libc::c_int,
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        return;
    }
    if flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the handler was installed with this signature.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, uc);
    } else {
        // SAFETY: the handler was installed with this signature.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::sync::global::{AtomicUsize, Ordering};

    static HITS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn plain(_: libc::c_int) {
        HITS.fetch_add(1, Ordering::Relaxed);
    }

    extern "C" fn with_info(_: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
        HITS.fetch_add(10, Ordering::Relaxed);
    }

    #[test]
    fn install_returns_the_replaced_action_and_call_uses_its_signature() {
        // SIGURG: ignored by default, unused by the test harness.
        let sig = libc::SIGURG;
        let before = query(sig).unwrap();
        let first = install(sig, with_info as *const () as usize, 0).unwrap();
        assert_eq!(first.sa_sigaction, before.sa_sigaction);
        let second = install(sig, before.sa_sigaction, 0).unwrap();
        assert_eq!(second.sa_sigaction, with_info as *const () as usize);
        assert_ne!(second.sa_flags & libc::SA_SIGINFO, 0);
        let (info, uc) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: the handlers' own signatures and flags.
        unsafe {
            call(plain as *const () as usize, 0, sig, info, uc);
            call(
                with_info as *const () as usize,
                libc::SA_SIGINFO,
                sig,
                info,
                uc,
            );
            call(libc::SIG_DFL, 0, sig, info, uc);
            call(libc::SIG_IGN, libc::SA_SIGINFO, sig, info, uc);
        }
        assert_eq!(HITS.load(Ordering::Relaxed), 11);
        // Put back as it was (the restore above kept our flags).
        // SAFETY: `before` is a valid action the kernel gave us.
        let restored = unsafe { libc::sigaction(sig, &before, std::ptr::null_mut()) };
        assert_eq!(restored, 0);
    }
}
