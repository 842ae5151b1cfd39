//! Stack capture inside the signal handler: DWARF CFI unwinding with
//! [`framehop`], over unwind tables prepared outside the handler
//! ([`crate::sampler::unwind`]), with validated, bounded stack reads.
//!
//! # Stack reads
//!
//! The handler reads stack memory only:
//!
//! * within the thread's stack bounds `[lo, hi)`, found by the sampler (from
//!   `/proc/self/maps`, around a stack pointer an earlier sample reported)
//!   and stored in the slot before any sample uses them; or, while they are
//!   not known or the stack pointer lies outside them (a signal stack, a
//!   coroutine),
//! * from a copy of at most [`SNAPSHOT`] bytes above the stack pointer, taken
//!   with `process_vm_readv` on the own process, which fails (`EFAULT`)
//!   instead of faulting on unmapped pages.
//!
//! Code without unwind information falls back to frame pointers
//! (`framehop`'s fallback rule), under the same read checks.
//!
//! Invariant: the handler dereferences no address outside `[sp, hi)` of a
//! mapping the sampler saw as the thread's stack, or outside its own
//! preallocated snapshot.

use std::ops::Range;

use framehop::{
    CacheNative, FrameAddress, MustNotAllocateDuringUnwind, UnwindRegsNative, Unwinder,
    UnwinderNative,
};

use super::sample::{MAX_DEPTH, RawSample};
use crate::base::sync::global::{AtomicPtr, Ordering};

/// Bytes of stack copied when the bounds are unknown.
pub(crate) const SNAPSHOT: usize = 32 << 10;

pub(crate) type NativeUnwinder = UnwinderNative<Vec<u8>, MustNotAllocateDuringUnwind>;
pub(crate) type NativeCache = CacheNative<MustNotAllocateDuringUnwind>;

/// An unwinder and the code ranges it covers.
pub(crate) struct Tables {
    pub(crate) unwinder: NativeUnwinder,
    /// Sorted executable ranges of the registered modules.
    pub(crate) code: Vec<Range<u64>>,
}

impl std::fmt::Debug for Tables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables")
            .field("modules", &self.code.len())
            .finish()
    }
}

impl Tables {
    /// True if some registered module holds `pc`.
    pub(crate) fn covers(&self, pc: u64) -> bool {
        let i = self.code.partition_point(|r| r.start <= pc);
        i > 0 && self.code[i - 1].contains(&pc)
    }
}

/// The published tables; null until the first refresh.
pub(crate) static TABLES: AtomicPtr<Tables> = AtomicPtr::new(std::ptr::null_mut());

/// Per-thread unwinding state, preallocated outside the handler.
pub(crate) struct Scratch {
    pub(crate) cache: NativeCache,
    pub(crate) snapshot: Box<[u8; SNAPSHOT]>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

/// Registers values of the interrupted context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Regs {
    pub(crate) pc: u64,
    pub(crate) sp: u64,
    pub(crate) fp: u64,
}

/// Unwinds the interrupted context into `out`. Runs in the signal handler:
/// no allocation, no lock, bounded by [`MAX_DEPTH`] frames.
///
/// # Safety
///
/// Must run on the thread whose context `regs` is, with exclusive use of
/// `scratch`, and inside the slot (its `in_handler` count raised, so the
/// tables it loads are not freed under it). `[lo, hi)` must be `0..0` or a mapping the
/// sampler found to be this thread's stack.
pub(crate) unsafe fn capture(
    regs: Regs,
    lo: u64,
    hi: u64,
    scratch: &mut Scratch,
    out: &mut RawSample,
) {
    out.frames[0] = regs.pc;
    out.len = 1;
    out.failed = false;
    out.truncated = false;
    // SeqCst: pairs with the swap in `publish` (see the module docs).
    let tables = TABLES.load(Ordering::SeqCst);
    // SAFETY: a published pointer stays valid while `in_handler` is raised
    // (caller's contract; `publish` waits for the flag before freeing).
    let Some(tables) = (unsafe { tables.as_ref() }) else {
        out.failed = true;
        return;
    };
    let sp = regs.sp;
    let Scratch { cache, snapshot } = scratch;
    // The readable window: the known stack, else a fresh copy.
    let (base, len, in_place) = if lo < hi && (lo..hi).contains(&sp) {
        (sp, hi - sp, true)
    } else {
        (sp, copy_stack(sp, &mut snapshot[..]) as u64, false)
    };
    let snap: &[u8] = &snapshot[..];
    let mut read = |addr: u64| -> Result<u64, ()> {
        if !addr.is_multiple_of(8) || addr < base || addr.checked_add(8).ok_or(())? > base + len {
            return Err(());
        }
        if in_place {
            // SAFETY: `[base, base + len)` = `[sp, hi)` lies inside the
            // thread's own stack mapping (caller's contract), which stays
            // mapped while the thread runs; the address is aligned.
            Ok(unsafe { std::ptr::read_volatile(addr as *const u64) })
        } else {
            let off = (addr - base) as usize;
            Ok(u64::from_ne_bytes(
                snap[off..off + 8].try_into().map_err(|_| ())?,
            ))
        }
    };
    let mut iter = tables.unwinder.iter_frames(
        regs.pc,
        UnwindRegsNative::new(regs.pc, regs.sp, regs.fp),
        cache,
        &mut read,
    );
    let mut len = 0usize;
    loop {
        match iter.next() {
            Ok(Some(frame)) => {
                if len == MAX_DEPTH {
                    out.truncated = true;
                    break;
                }
                let addr = match frame {
                    FrameAddress::InstructionPointer(pc) => pc,
                    // Step back into the call instruction.
                    FrameAddress::ReturnAddress(ra) => u64::from(ra) - 1,
                };
                out.frames[len] = addr;
                len += 1;
            }
            Ok(None) => break,
            Err(_) => {
                // A stack that ends without a recognised root: keep what was
                // found; only a walk that found no caller counts as failed.
                out.failed = len < 2;
                break;
            }
        }
    }
    out.len = len.max(1) as u16;
}

/// Copies up to `buf.len()` bytes of the own stack from `sp` up with
/// `process_vm_readv`, page by page, so an unmapped page ends the copy
/// instead of faulting. Returns the bytes copied. Async-signal-safe (one
/// system call).
fn copy_stack(sp: u64, buf: &mut [u8]) -> usize {
    const PAGE: u64 = 4096;
    const MAX_IOV: usize = 16;
    let mut local = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX_IOV];
    let mut remote = local;
    let mut n = 0;
    let mut addr = sp;
    let mut off = 0usize;
    while n < MAX_IOV && off < buf.len() {
        let page_end = (addr / PAGE + 1) * PAGE;
        let chunk = ((page_end - addr) as usize).min(buf.len() - off);
        local[n] = libc::iovec {
            iov_base: buf[off..].as_mut_ptr().cast(),
            iov_len: chunk,
        };
        remote[n] = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: chunk,
        };
        n += 1;
        off += chunk;
        addr += chunk as u64;
    }
    // SAFETY: the local iovecs cover `buf`, which we own exclusively; the
    // kernel validates the remote ones and reports a partial copy on the
    // first unmapped page rather than faulting.
    let r = unsafe {
        libc::process_vm_readv(
            libc::getpid(),
            local.as_ptr(),
            n as libc::c_ulong,
            remote.as_ptr(),
            n as libc::c_ulong,
            0,
        )
    };
    r.max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_stops_at_unmapped_memory() {
        let mut buf = vec![0u8; 8192];
        assert_eq!(copy_stack(8, &mut buf), 0);
        let x = [7u64; 4];
        let n = copy_stack(x.as_ptr() as u64, &mut buf);
        assert!(n >= 32);
        assert_eq!(buf[..8], 7u64.to_ne_bytes());
    }
}
