//! The program's dispositions of SIGINT, SIGTERM, SIGHUP and SIGQUIT, kept
//! as the program set them while flightrec's handler stands in front: the
//! program sees the signal world it would see without flightrec.
//!
//! # The two dispositions
//!
//! For each relayed signal a [`Slot`] holds the *program's* disposition
//! (handler, `sa_flags`, `sa_mask`): the one it inherited when the slot was
//! first touched, then whatever it sets. The interposed `sigaction` family
//! (`capi`) reads and writes the slot instead of the kernel's action
//! ([`sigaction`]), so a runtime that checks what it inherited (Python
//! installs its SIGINT handler only over `SIG_DFL`, shells and supervisors
//! keep an ignored signal ignored) sees what it would see bare. The
//! *kernel's* action is derived from the slot ([`kernel_action`]):
//!
//! * `SIG_IGN`: the real `SIG_IGN` (the kernel drops the signal, and an
//!   `exec`ed child inherits it), unless flightrec looks at every copy of
//!   the signal ([`Slot::first`], the lazy attach's SIGQUIT);
//! * `SIG_DFL`: flightrec's handler if flightrec acts on the default
//!   ([`Slot::dfl`]: the shutdown's "write the file, then die of the
//!   signal", the lazy attach's note), else the real `SIG_DFL`;
//! * a handler: flightrec's handler, installed with the program's
//!   `sa_mask`, `SA_NODEFER`, `SA_ONSTACK` and `SA_RESTART`, so the kernel
//!   blocks, restarts and switches stacks as it would for the program's.
//!
//! # Delivery
//!
//! [`on_relayed`] runs first: it drops a duplicate copy of a signal
//! `flightrec record` forwarded ([`super::forwarded`]), gives the lazy
//! attach its look ([`Slot::first`]), then acts as the kernel would have
//! for the program's disposition: nothing for `SIG_IGN`, flightrec's
//! default action or the kernel's (the real `SIG_DFL` put back, the signal
//! raised again) for `SIG_DFL`, and for a handler, a call with the
//! signature its `SA_SIGINFO` says and the `siginfo` the program would have
//! seen. `SA_RESETHAND` is done here (the slot goes back to `SIG_DFL`
//! before the call; of two threads racing, one calls the handler), since
//! the kernel would reset flightrec's handler instead.
//!
//! # Consistency
//!
//! A slot is a seqlock: writers (the interposed calls, [`adopt`], the
//! `SA_RESETHAND` reset) block every signal in their thread, take the
//! sequence word odd, change the slot and the kernel's action, and make it
//! even. A reader in a handler retries while the word is odd or moved, so
//! it never sees half of a disposition; it never waits for its own thread
//! (that thread has every signal blocked while it writes) and at most for
//! another thread's few stores and one `sigaction` call.
//!
//! # Signal safety
//!
//! The handler and every writer call only `sigaction` (the C library's),
//! `pthread_sigmask`, `raise`, `clock_gettime`, `getpid`, atomics and the
//! program's handler: no allocation, lock or thread-local.
//!
//! Invariant: for a relayed signal, the program's query reports the last
//! disposition the program set (or the inherited one), and a signal the
//! kernel delivers is acted on as that disposition says, at most once per
//! copy sent.

use std::io;

use crate::base::sync::global::{AtomicU64, AtomicUsize, Ordering, fence};
use crate::base::sync::spin_hint;
use crate::process::signals::real_sigaction;

/// `SA_RESTORER` (the kernel's `asm/signal.h`; the C library sets it on
/// every action it installs, and a query reports it).
const SA_RESTORER: libc::c_int = 0x0400_0000;

/// The relayed signals, in [`Slot`] order.
pub(crate) const RELAYED: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// flightrec's look at a signal before the program's disposition: true if
/// it took the signal (the program never sees it).
pub(crate) type First = fn(libc::c_int) -> bool;
/// flightrec's action for a signal whose disposition is `SIG_DFL`.
pub(crate) type Default = fn(libc::c_int);

/// One relayed signal (module docs).
struct Slot {
    /// Odd while a writer changes the slot; 0 until it was first touched.
    seq: AtomicU64,
    /// The program's handler (`SIG_DFL`, `SIG_IGN` or a function).
    handler: AtomicUsize,
    /// The program's `sa_flags`, as a query reports them.
    flags: AtomicUsize,
    /// The program's `sa_mask` (signals 1 to 64).
    mask: AtomicU64,
    /// A [`First`], 0 if none.
    first: AtomicUsize,
    /// A [`Default`], 0 for the kernel's default action.
    dfl: AtomicUsize,
}

static SLOTS: [Slot; 4] = [const {
    Slot {
        seq: AtomicU64::new(0),
        handler: AtomicUsize::new(libc::SIG_DFL),
        flags: AtomicUsize::new(0),
        mask: AtomicU64::new(0),
        first: AtomicUsize::new(0),
        dfl: AtomicUsize::new(0),
    }
}; 4];

/// The program's disposition of a signal, as kept in its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Disposition {
    pub(crate) handler: libc::sighandler_t,
    pub(crate) flags: libc::c_int,
    pub(crate) mask: u64,
}

fn slot(sig: libc::c_int) -> Option<&'static Slot> {
    RELAYED.iter().position(|&s| s == sig).map(|i| &SLOTS[i])
}

/// True if `sig` is relayed (its disposition is kept here).
pub fn is_relayed(sig: libc::c_int) -> bool {
    slot(sig).is_some()
}

/// The address of flightrec's handler of the relayed signals.
pub(crate) fn handler_address() -> libc::sighandler_t {
    on_relayed as *const () as usize
}

fn zeroed() -> libc::sigaction {
    // SAFETY: an all-zero `sigaction` is a valid value (SIG_DFL, empty mask).
    unsafe { std::mem::zeroed() }
}

/// The first 64 signals of `set` (all the kernel has on Linux).
fn mask_bits(set: &libc::sigset_t) -> u64 {
    // SAFETY: a `sigset_t` is at least 8 bytes; the kernel's 64-bit mask is
    // its first word.
    unsafe { std::ptr::read_unaligned((set as *const libc::sigset_t).cast::<u64>()) }
}

fn mask_set(bits: u64) -> libc::sigset_t {
    // SAFETY: an all-zero sigset is the empty set.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as in `mask_bits`: the first word is the kernel's mask.
    unsafe { std::ptr::write_unaligned((&raw mut set).cast::<u64>(), bits) };
    set
}

// === impl Slot ===

impl Slot {
    /// Runs `f` as the slot's only writer, with every signal blocked in
    /// this thread (module docs, "Consistency"); first touch: the slot
    /// takes the kernel's action as the program's.
    fn write<R>(&self, sig: libc::c_int, f: impl FnOnce(&Slot) -> R) -> R {
        // SAFETY: all-zero sigsets are valid; `all` is filled, `old` is
        // written by pthread_sigmask; both calls are async-signal-safe.
        let old = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
            old
        };
        let start = loop {
            let s = self.seq.load(Ordering::Relaxed);
            // Acquire: the previous writer's stores before ours.
            if s & 1 == 0
                && self
                    .seq
                    .compare_exchange_weak(s, s | 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break s;
            }
            spin_hint();
        };
        // Release: the odd word is seen before any field we change.
        fence(Ordering::Release);
        if start == 0 {
            let current = kernel_query(sig);
            // A slot inherited through `fork` is never 0: the kernel's
            // action here is the program's or flightrec's own (which can
            // only be there once the slot was touched).
            if current.sa_sigaction != handler_address() {
                self.store(Disposition {
                    handler: current.sa_sigaction,
                    flags: current.sa_flags,
                    mask: mask_bits(&current.sa_mask),
                });
            }
        }
        let r = f(self);
        // Release: the fields before the even word readers check.
        self.seq.store(start + 2, Ordering::Release);
        // SAFETY: puts back the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        r
    }

    fn store(&self, d: Disposition) {
        self.handler.store(d.handler, Ordering::Relaxed);
        self.flags.store(d.flags as u32 as usize, Ordering::Relaxed);
        self.mask.store(d.mask, Ordering::Relaxed);
    }

    /// The fields, for a writer (which holds the slot).
    fn load(&self) -> Disposition {
        Disposition {
            handler: self.handler.load(Ordering::Relaxed),
            flags: self.flags.load(Ordering::Relaxed) as u32 as libc::c_int,
            mask: self.mask.load(Ordering::Relaxed),
        }
    }

    /// The program's disposition, read without writing (a handler's read;
    /// `None` if the slot was never touched).
    fn read(&self) -> Option<Disposition> {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 == 0 {
                return None;
            }
            if s1 & 1 == 0 {
                let d = self.load();
                // Acquire: the field loads above happen before the re-check.
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return Some(d);
                }
            }
            spin_hint();
        }
    }

    /// Puts the kernel's action for `sig` in line with the slot.
    fn apply(&self, sig: libc::c_int) -> libc::c_int {
        let action = kernel_action(self, self.load());
        // SAFETY: a valid action; a null old action.
        unsafe { real_sigaction()(sig, &action, std::ptr::null_mut()) }
    }
}

/// The kernel's action for `sig` now (the C library's query).
fn kernel_query(sig: libc::c_int) -> libc::sigaction {
    let mut current = zeroed();
    // SAFETY: a null new action only queries; `current` is a valid out-pointer.
    unsafe { real_sigaction()(sig, std::ptr::null(), &mut current) };
    current
}

/// The kernel's action for the program's disposition `d` (module docs,
/// "The two dispositions").
fn kernel_action(slot: &Slot, d: Disposition) -> libc::sigaction {
    let mut a = zeroed();
    let first = slot.first.load(Ordering::Relaxed) != 0;
    let dfl = slot.dfl.load(Ordering::Relaxed) != 0;
    let kept = libc::SA_NODEFER | libc::SA_ONSTACK | libc::SA_RESTART;
    match d.handler {
        libc::SIG_IGN if !first => {
            a.sa_sigaction = libc::SIG_IGN;
        }
        libc::SIG_DFL if !first && !dfl => {
            a.sa_sigaction = libc::SIG_DFL;
        }
        libc::SIG_IGN | libc::SIG_DFL => {
            a.sa_sigaction = handler_address();
            a.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        }
        _ => {
            a.sa_sigaction = handler_address();
            a.sa_flags = libc::SA_SIGINFO | (d.flags & kept);
            a.sa_mask = mask_set(d.mask);
        }
    }
    a
}

/// Keeps `sig`'s disposition here from now on (if not already) and sets
/// flightrec's look at it (`first`) and its default action (`dfl`), each
/// only if given; the kernel's action follows.
///
/// # Errors
///
/// `sig` is not relayed, or the kernel refused the action.
pub(crate) fn adopt(
    sig: libc::c_int,
    first: Option<First>,
    dfl: Option<Default>,
) -> io::Result<()> {
    let Some(slot) = slot(sig) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let r = slot.write(sig, |s| {
        if let Some(f) = first {
            s.first.store(f as usize, Ordering::Relaxed);
        }
        if let Some(f) = dfl {
            s.dfl.store(f as usize, Ordering::Relaxed);
        }
        s.apply(sig)
    });
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The interposed `sigaction` for a relayed `sig` (anything else goes to
/// the C library's): reports the program's disposition in `old` and keeps
/// `act` as the program's, setting the kernel's action from it.
///
/// # Safety
///
/// The C library's contract for `sigaction`: `act` null or valid, `old`
/// null or writable.
pub unsafe fn sigaction(
    sig: libc::c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> libc::c_int {
    let Some(slot) = slot(sig) else {
        // SAFETY: the caller's arguments, passed on unchanged.
        return unsafe { real_sigaction()(sig, act, old) };
    };
    // Read before `old` is written: the two may be the same.
    // SAFETY: a non-null `act` is valid (the contract).
    let new = unsafe { act.as_ref() }.map(|a| Disposition {
        handler: a.sa_sigaction,
        // The C library adds SA_RESTORER when it installs; a query of the
        // kernel's action reports it.
        flags: a.sa_flags | SA_RESTORER,
        mask: mask_bits(&a.sa_mask),
    });
    slot.write(sig, |s| {
        let before = s.load();
        if let Some(new) = new {
            s.store(new);
            if s.apply(sig) != 0 {
                // SAFETY: errno is this thread's; saved over the store.
                let e = unsafe { *libc::__errno_location() };
                s.store(before);
                // SAFETY: as above.
                unsafe { *libc::__errno_location() = e };
                return -1;
            }
        }
        // SAFETY: a non-null `old` is writable (the contract).
        if let Some(old) = unsafe { old.as_mut() } {
            *old = zeroed();
            old.sa_sigaction = before.handler;
            old.sa_flags = before.flags;
            old.sa_mask = mask_set(before.mask);
            if before.flags & SA_RESTORER != 0 {
                old.sa_restorer = kernel_query(sig).sa_restorer;
            }
        }
        0
    })
}

/// `SA_RESETHAND`: the slot back to `SIG_DFL` if it still holds `handler`;
/// false if another thread did it first.
fn reset(slot: &Slot, sig: libc::c_int, handler: libc::sighandler_t) -> bool {
    slot.write(sig, |s| {
        if s.handler.load(Ordering::Relaxed) != handler {
            return false;
        }
        s.store(Disposition {
            handler: libc::SIG_DFL,
            flags: 0,
            mask: 0,
        });
        s.apply(sig);
        true
    })
}

/// The kernel's default action for `sig`: the real `SIG_DFL` put back and
/// the signal raised again, unblocked, in this thread (for the four relayed
/// signals it ends the process). Async-signal-safe.
pub(crate) fn kernel_default(sig: libc::c_int) {
    let mut dfl = zeroed();
    dfl.sa_sigaction = libc::SIG_DFL;
    // SAFETY: every pointer passed is valid for its call; all of these
    // calls are async-signal-safe.
    unsafe {
        real_sigaction()(sig, &dfl, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// The program's `SIG_DFL`: flightrec's action, else the kernel's.
fn act_default(slot: &Slot, sig: libc::c_int) {
    let f = slot.dfl.load(Ordering::Acquire);
    if f == 0 {
        kernel_default(sig);
    } else {
        // SAFETY: a non-zero `dfl` is a `Default` stored by `adopt`.
        let f = unsafe { std::mem::transmute::<usize, Default>(f) };
        f(sig);
    }
}

/// flightrec's handler of the relayed signals (module docs, "Delivery").
extern "C" fn on_relayed(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: errno of this thread, saved and put back around our calls.
    let errno = unsafe { *libc::__errno_location() };
    let restore = || {
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno }
    };
    let Some(slot) = slot(sig) else {
        return restore();
    };
    // SAFETY: `info` is the kernel's siginfo for this delivery.
    let Some(mut seen) = (unsafe { super::forwarded::admit(sig, info) }) else {
        return restore();
    };
    let first = slot.first.load(Ordering::Acquire);
    if first != 0 {
        // SAFETY: a non-zero `first` is a `First` stored by `adopt`.
        let first = unsafe { std::mem::transmute::<usize, First>(first) };
        if first(sig) {
            return restore();
        }
    }
    let Some(d) = slot.read() else {
        return restore();
    };
    match d.handler {
        libc::SIG_IGN => restore(),
        libc::SIG_DFL => {
            act_default(slot, sig);
            restore();
        }
        h => {
            if d.flags & libc::SA_RESETHAND != 0 && !reset(slot, sig, h) {
                act_default(slot, sig);
                return restore();
            }
            restore();
            // SAFETY: `h` and `d.flags` are the program's action; `seen`
            // is a siginfo valid for the call, `uc` the kernel's.
            unsafe { crate::process::signals::call(h, d.flags, sig, &mut seen, uc) };
        }
    }
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn masks_survive_the_round_trip() {
        let bits = (1u64 << (libc::SIGUSR1 - 1)) | (1u64 << 63);
        assert_eq!(mask_bits(&mask_set(bits)), bits);
        assert!(is_relayed(libc::SIGINT) && !is_relayed(libc::SIGUSR1));
    }
}
