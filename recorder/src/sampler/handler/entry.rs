//! The sampling signal's handler: finds the slot a signal names, takes the
//! sample into it, and chains a signal that is not ours to the handler it
//! replaced.
//!
//! # What the handler may do
//!
//! The handler calls only: atomic loads and stores on preallocated slots,
//! `clock::ticks()` (`rdtsc` or `clock_gettime`, after `clock::init`; read
//! at entry and after the unwind, the sample's own cost for
//! `flightrec.RecorderStatistics`),
//! `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, `process_vm_readv` and `getpid`
//! (in [`super::capture`]), `fstat` and `futex(FUTEX_WAKE)` (waking the
//! sampler thread, in [`super::doorbell`]), framehop's unwinder with a
//! `MustNotAllocateDuringUnwind` cache preallocated per slot, bounds-checked
//! reads of the own stack, the label context lookup (`labels::context_of`:
//! bounded atomic loads in a static table), and the previous handler
//! ([`crate::process::signals::call`]). It never allocates, locks, touches a lazily
//! initialised thread-local, or blocks; its work is
//! bounded by [`MAX_DEPTH`](super::sample::MAX_DEPTH) frames. `errno` is saved
//! on entry and restored on exit.
//!
//! Invariant: the handler writes only into the queue and scratch of the slot
//! named by a current-generation signal value, on that slot's own thread,
//! and only while it is inside the slot (`SlotTable::admit`), so the sampler
//! retiring the slot waits for it (see [`super::queue`]).
//!

use crate::base::sync::OnceLock;

use super::capture::{self, Regs};
use super::queue::SlotTable;
use super::sample::SampleKind;
use crate::base::clock;
use crate::base::sync::global::{AtomicPtr, Ordering};

/// High 16 bits of every value our timers carry.
const TAG: u64 = 0xf1e7;

/// Encodes a signal value for slot `index` of `generation`.
pub(crate) fn encode(index: usize, generation: u64, kind: SampleKind) -> u64 {
    TAG << 48 | (generation & 0xffff) << 32 | (kind as u64) << 31 | index as u64 & 0x7fff_ffff
}

fn decode(v: u64) -> Option<(usize, u64, SampleKind)> {
    if v >> 48 != TAG {
        return None;
    }
    let kind = if v >> 31 & 1 == 1 {
        SampleKind::Wall
    } else {
        SampleKind::CpuTime
    };
    Some(((v & 0x7fff_ffff) as usize, v >> 32 & 0xffff, kind))
}

/// The slot table the handler samples into (set before the first timer).
pub(crate) static SLOTS: OnceLock<SlotTable> = OnceLock::new();

/// The handlers replaced by ours, per signal number (leaked `sigaction`s).
pub(crate) static PREVIOUS: [AtomicPtr<libc::sigaction>; 65] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; 65];

/// The address of the sampling handler, as `sa_sigaction` holds it.
pub(crate) fn handler_address() -> libc::sighandler_t {
    on_signal as *const () as usize
}

/// The part of `siginfo_t` a POSIX timer fills (Linux, 64-bit).
#[repr(C)]
pub(crate) struct TimerInfo {
    pub(crate) si_signo: i32,
    pub(crate) si_errno: i32,
    pub(crate) si_code: i32,
    pub(crate) _pad: i32,
    pub(crate) si_tid: i32,
    pub(crate) si_overrun: i32,
    pub(crate) si_value: u64,
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: `__errno_location` returns this thread's errno, always valid.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: the kernel passes a valid siginfo and ucontext to an
    // SA_SIGINFO handler.
    let handled = unsafe { sample(info, uc) };
    if !handled {
        // SAFETY: as above; `chain` forwards them unchanged.
        unsafe { chain(sig, info, uc) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Takes one sample if the signal is one of ours. Returns false otherwise.
///
/// # Safety
///
/// `info` and `uc` must be the handler's arguments.
unsafe fn sample(info: *mut libc::siginfo_t, uc: *mut libc::c_void) -> bool {
    // SAFETY: every siginfo starts with signo/errno/code; a timer's (checked
    // through `si_code`) has the layout of `TimerInfo`.
    let info = unsafe { &*(info as *const TimerInfo) };
    if info.si_code != libc::SI_TIMER {
        return false;
    }
    // The sample's time, and the start of the handler's own cost.
    let entered = clock::ticks();
    let Some((index, generation, kind)) = decode(info.si_value) else {
        return false;
    };
    // Whether the sampler should look at the thread list (rate-limited).
    super::doorbell::check_threads(entered);
    if index == super::doorbell::WATCH_INDEX {
        return true; // the process-wide watch: nothing to sample
    }
    // Entering the slot (`in_handler`, SeqCst) comes before the tables load
    // (see unwind docs) and keeps `retire` waiting until we are done (see
    // queue docs); the guard leaves the slot when this function returns.
    let Some(slot) = SLOTS.get().and_then(|t| t.admit(index, generation)) else {
        return true; // ours, but no slot or a late signal of its previous owner: drop
    };
    // SAFETY: `uc` is the interrupted context (caller's contract).
    let regs = unsafe { regs_of(uc) };
    slot.last_sp.store(regs.sp, Ordering::Relaxed);
    let running = match kind {
        SampleKind::CpuTime => {
            slot.cpu_signals.fetch_add(1, Ordering::Relaxed);
            true
        }
        // SAFETY: `uc` is the interrupted context (caller's contract).
        SampleKind::Wall => match unsafe { blocked_in_syscall(uc, regs.pc) } {
            Some(blocked) => !blocked,
            None => {
                // No way to tell from the context: ran noticeably since the
                // last such sample. (A system call, so only here.)
                let now = thread_cpu_nanos();
                let before = slot.last_cpu_nanos.swap(now, Ordering::Relaxed);
                now.saturating_sub(before) > 200_000
            }
        },
    };
    let lo = slot.stack_lo.load(Ordering::Acquire);
    let hi = slot.stack_hi.load(Ordering::Acquire);
    // The slot's tid is this thread's (the signal names a current-generation
    // slot, on its own thread): its label context, by bounded atomic probes.
    let context = crate::labels::published::context_of(slot.tid.load(Ordering::Relaxed));
    let fill = |s: &mut super::sample::RawSample| {
        s.ticks = entered;
        s.context = context;
        s.kind = kind;
        s.running = running;
        s.overrun = info.si_overrun.max(0) as u32;
        slot.scratch.with_mut(|scratch| {
            // SAFETY: on the slot's own thread, one handler at a time (the
            // signal is blocked while it runs), inside the slot; the bounds
            // came from the sampler's stack lookup for this thread.
            unsafe { capture::capture(regs, lo, hi, &mut *scratch, s) }
        });
        s.handler_ticks = clock::ticks().saturating_sub(entered).max(0) as u64;
    };
    // SAFETY: this handler is the queue's only producer: the signal is
    // blocked while it runs, and only the slot's own thread receives it.
    if unsafe { slot.queue.push_with(fill) } {
        // Half full: the sampler drains before the rest fills.
        super::doorbell::queued(slot.queue.len());
    }
    true
}

/// The interrupted program counter, stack pointer and frame pointer.
///
/// # Safety
///
/// `uc` must point to the `ucontext_t` the kernel passed to the handler.
#[cfg(target_arch = "x86_64")]
unsafe fn regs_of(uc: *mut libc::c_void) -> Regs {
    // SAFETY: caller's contract.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    let g = &uc.uc_mcontext.gregs;
    Regs {
        pc: g[libc::REG_RIP as usize] as u64,
        sp: g[libc::REG_RSP as usize] as u64,
        fp: g[libc::REG_RBP as usize] as u64,
    }
}

/// The interrupted program counter, stack pointer and frame pointer.
///
/// # Safety
///
/// `uc` must point to the `ucontext_t` the kernel passed to the handler.
#[cfg(target_arch = "aarch64")]
unsafe fn regs_of(uc: *mut libc::c_void) -> Regs {
    // SAFETY: caller's contract.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    let m = &uc.uc_mcontext;
    Regs {
        pc: m.pc,
        sp: m.sp,
        fp: m.regs[29],
    }
}

/// Whether the thread was blocked in a system call when the signal came
/// (sleeping, waiting on a lock or on I/O), for a wall-clock sample's
/// thread state; `None` where this cannot be told from the context.
///
/// A signal that interrupts a blocking call finds it either set up to be
/// restarted (our handler has `SA_RESTART`: the kernel moves the program
/// counter back onto the `syscall` instruction) or failed with `EINTR` (the
/// calls the kernel never restarts, e.g. `epoll_wait`: the program counter
/// is just past the instruction). A thread running its own code is never at
/// either place with that result.
///
/// # Safety
///
/// `uc` must point to the `ucontext_t` the kernel passed to the handler and
/// `pc` be its interrupted program counter.
#[cfg(target_arch = "x86_64")]
unsafe fn blocked_in_syscall(uc: *mut libc::c_void, pc: u64) -> Option<bool> {
    const SYSCALL: [u8; 2] = [0x0f, 0x05];
    // SAFETY: caller's contract.
    let uc = unsafe { &*(uc as *const libc::ucontext_t) };
    let rax = uc.uc_mcontext.gregs[libc::REG_RAX as usize];
    let at = pc as *const u8;
    // SAFETY: the interrupted instruction starts at `pc`, so its first byte
    // is mapped; 0x0f opens a two-byte opcode, so then the second is too.
    let restart = unsafe { *at == SYSCALL[0] && *at.add(1) == SYSCALL[1] };
    if restart {
        return Some(true);
    }
    if rax == -i64::from(libc::EINTR) {
        if pc & 0xfff < 2 {
            return None; // the bytes before `pc` are on another page
        }
        let before = (pc - 2) as *const u8;
        // SAFETY: `pc - 2` and `pc - 1` are on the page of `pc`, which is
        // mapped (the interrupted instruction starts there).
        return Some(unsafe { *before == SYSCALL[0] && *before.add(1) == SYSCALL[1] });
    }
    Some(false)
}

/// See the x86-64 version; not told apart elsewhere yet.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn blocked_in_syscall(_uc: *mut libc::c_void, _pc: u64) -> Option<bool> {
    None
}

/// The calling thread's CPU time in nanoseconds (async-signal-safe).
pub(crate) fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Forwards a signal that is not ours to the handler we replaced.
///
/// # Safety
///
/// The arguments must be the handler's.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    let Some(cell) = PREVIOUS.get(sig as usize) else {
        return;
    };
    // SAFETY: non-null pointers are leaked boxes, never freed.
    let Some(prev) = (unsafe { cell.load(Ordering::Acquire).as_ref() }) else {
        return;
    };
    let h = prev.sa_sigaction;
    // A handler installed over ours that chains back to ours would loop
    // (ours → it → ours → …); the second entry on a thread stops here. The
    // flag is a `const`-initialised thread-local without destructor: no lazy
    // initialisation, so reading it is async-signal-safe.
    if CHAINING.with(|c| c.replace(true)) {
        return;
    }
    // SAFETY: `h` is the remembered handler, installed with `sa_flags`; the
    // arguments are ours. A stray profiling signal with no handler before
    // ours (SIG_DFL, SIG_IGN) is dropped rather than let the default
    // action end the process.
    unsafe { crate::process::signals::call(h, prev.sa_flags, sig, info, uc) };
    CHAINING.with(|c| c.set(false));
}

crate::base::sync::global::thread_local! {
    static CHAINING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let v = encode(4095, 0x1_2345, SampleKind::Wall);
        assert_eq!(decode(v), Some((4095, 0x2345, SampleKind::Wall)));
        assert_eq!(decode(7), None);
    }
}
