//! A signal sent once reaches the recorded program once, though
//! `flightrec record` passes signals on.
//!
//! # Why there are copies
//!
//! `flightrec record` is the program's parent and shares its process
//! group. A signal sent to `flightrec`'s pid alone must be passed on (the
//! sender meant the program); a signal sent to the group (`kill -INT --
//! -PGID`, as supervisors and CI runners stop a job) reaches both, and
//! `flightrec` cannot tell the two apart: both arrive as `SI_USER` from
//! the same sender. The terminal's copy (`SI_KERNEL`) is the one case it
//! can tell, and it does not pass that on.
//!
//! # Marking and matching
//!
//! `flightrec` passes a signal on with [`forward`]: `rt_sigqueueinfo`
//! with `si_code` `SI_QUEUE`, the original sender's `si_pid` and `si_uid`,
//! and in `si_value` a marker with the original `si_code`. In the program,
//! flightrec's handler of the relayed signals ([`super::relay`]) runs
//! first and asks [`admit`]. Per signal it keeps one word: the last
//! sender's pid, a balance (copies received directly minus forwarded
//! copies received) and when it last changed. A forwarded copy is dropped
//! if the balance is positive (the sender's direct copy already arrived);
//! a direct copy is dropped if the balance is negative (its forwarded twin
//! overtook it, which happens when two threads take the two copies). An
//! entry older than [`WINDOW`], or of another sender, counts as 0. A
//! forwarded copy that is delivered is shown to the program with the
//! original `si_code` (and no `si_value`), so its handler sees what it
//! would have seen bare.
//!
//! The kernel helps: a standard signal pending merges with a second copy
//! of itself, and in a group kill the program's direct copy is queued
//! before `flightrec` is even woken, so most often the forwarded copy
//! merges and never arrives. Then the direct copy's credit stays in the
//! balance until [`WINDOW`] passes.
//!
//! Signals the program sends itself, and those the kernel sends, are
//! delivered as they are and not counted.
//!
//! Invariant: a copy `flightrec` forwards is delivered only when no direct
//! copy of the same signal from the same sender was delivered within
//! [`WINDOW`] without a twin, and a direct copy is dropped only when its
//! forwarded twin was delivered.
//!
//! # Signal safety
//!
//! [`admit`] reads the siginfo, calls `getpid` and `clock_gettime`, and
//! does one compare-and-swap loop on an atomic.

use std::io;
use std::time::Duration;

use crate::base::sync::global::{AtomicU64, Ordering};

/// How long a copy waits for its twin.
pub const WINDOW: Duration = Duration::from_secs(2);

/// The top 48 bits of a forwarded copy's `si_value`; the low 16 carry the
/// original `si_code`.
const MARK: u64 = 0x464c_5452_4543; // "FLTREC"

/// The start of `siginfo_t` as the kernel lays it out for `SI_USER`,
/// `SI_TKILL` and `SI_QUEUE` on 64-bit Linux (128 bytes in all).
#[repr(C)]
#[derive(Clone, Copy)]
struct SentInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    _pad: libc::c_int,
    pid: libc::pid_t,
    uid: libc::uid_t,
    value: u64,
    _rest: [u64; 12],
}

const _: () = assert!(size_of::<SentInfo>() == size_of::<libc::siginfo_t>());

/// One word per relayed signal (see [`super::relay::RELAYED`]): sender pid
/// (bits 40..64), balance (`i8`, bits 32..40), milliseconds (bits 0..32).
static SEEN: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

fn pack(pid: libc::pid_t, balance: i8, ms: u32) -> u64 {
    ((pid as u64 & 0xff_ffff) << 40) | (u64::from(balance as u8) << 32) | u64::from(ms)
}

fn unpack(word: u64) -> (libc::pid_t, i8, u32) {
    (
        (word >> 40) as libc::pid_t,
        (word >> 32) as u8 as i8,
        word as u32,
    )
}

fn now_ms() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid, writable timespec; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000) as u32
}

/// Whether a copy from `pid` is dropped, given the signal's word `word`
/// (and the new word), `forwarded` telling which copy it is.
fn decide(word: u64, pid: libc::pid_t, forwarded: bool, now: u32) -> (bool, u64) {
    let (last, balance, at) = unpack(word);
    let fresh = word != 0
        && last == (pid & 0xff_ffff)
        && u128::from(now.wrapping_sub(at)) < WINDOW.as_millis();
    let balance = if fresh { balance } else { 0 };
    let (drop, next) = if forwarded {
        (balance > 0, balance.saturating_sub(1))
    } else {
        (balance < 0, balance.saturating_add(1))
    };
    (drop, pack(pid, next, now))
}

/// What the program's disposition gets for this delivery: `None` to drop
/// it (a twin), else the `siginfo` to show (the original `si_code` for a
/// forwarded copy).
///
/// # Safety
///
/// `info` is the kernel's siginfo of a delivery of `sig` to this handler.
pub(crate) unsafe fn admit(
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
) -> Option<libc::siginfo_t> {
    // SAFETY: the kernel's siginfo is valid to read (the contract).
    let mut seen = unsafe { *info };
    let Some(word) = super::relay::RELAYED
        .iter()
        .position(|&s| s == sig)
        .map(|i| &SEEN[i])
    else {
        return Some(seen);
    };
    // SAFETY: `SentInfo` has `siginfo_t`'s size and its prefix's layout.
    let sent = unsafe { &mut *(&raw mut seen).cast::<SentInfo>() };
    // Kernel-sent (SI_KERNEL and the positive codes): not copies.
    // SAFETY: getpid has no preconditions.
    if sent.code > 0 || sent.code == libc::SI_KERNEL || sent.pid == unsafe { libc::getpid() } {
        return Some(seen);
    }
    let forwarded = sent.code == libc::SI_QUEUE && sent.value >> 16 == MARK;
    let now = now_ms();
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let (drop, next) = decide(current, sent.pid, forwarded, now);
        // Relaxed: the word is the only state; its own modification order
        // decides which copy is the twin.
        match word.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) if drop => return None,
            Ok(_) => break,
            Err(w) => current = w,
        }
    }
    if forwarded {
        sent.code = i32::from(sent.value as u16 as i16);
        sent.value = 0;
    }
    Some(seen)
}

/// Passes `info` (a signal `flightrec` received, not from the kernel) on to
/// `pid`, marked as a forwarded copy (module docs); a signal that was
/// itself queued (`SI_QUEUE`, which a group kill never is) goes on as it
/// came, its value kept.
///
/// # Errors
///
/// The kernel refused (`pid` gone, or no permission).
pub fn forward(pid: libc::pid_t, info: &libc::siginfo_t) -> io::Result<()> {
    // SAFETY: `SentInfo` has `siginfo_t`'s size and its prefix's layout.
    let mut sent: SentInfo = unsafe { std::mem::transmute_copy(info) };
    if sent.code != libc::SI_QUEUE {
        sent.value = (MARK << 16) | u64::from(sent.code as i16 as u16);
        sent.code = libc::SI_QUEUE;
    }
    sent.errno = 0;
    // SAFETY: `sent` is a complete siginfo for rt_sigqueueinfo, which only
    // reads it; a negative si_code is allowed towards another process.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigqueueinfo, pid, sent.signo, &raw const sent) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_twin_is_dropped_whichever_copy_comes_first() {
        let (p, t) = (4242, 1000);
        // Direct, then forwarded: the forwarded one is the twin.
        let (d1, w) = decide(0, p, false, t);
        let (d2, w) = decide(w, p, true, t + 5);
        assert!(!d1 && d2);
        // Forwarded first (another thread took it): the direct one is.
        let (d3, w) = decide(w, p, true, t + 10);
        let (d4, w) = decide(w, p, false, t + 11);
        assert!(!d3 && d4);
        // Another sender, or an old entry, is no twin.
        let (d5, w) = decide(w, p, false, t + 12);
        assert!(!d5);
        let (d6, w) = decide(w, p + 1, true, t + 13);
        assert!(!d6);
        let late = t + 13 + WINDOW.as_millis() as u32;
        let (d7, _) = decide(w, p + 1, false, late);
        assert!(!d7);
        assert_eq!(unpack(pack(p, -3, 7)), (p, -3, 7));
    }
}
