//! Stack capture inside the signal handler: DWARF CFI unwinding with
//! [`framehop`], over unwind tables prepared outside the handler, with
//! validated, bounded stack reads.
//!
//! # Tables
//!
//! [`refresh_modules`] (sampler thread, never the handler) walks the loaded
//! objects with `dl_iterate_phdr`, copies each one's `.eh_frame_hdr` and
//! `.eh_frame` into owned memory, builds a `framehop` unwinder over them and
//! publishes it through one `AtomicPtr`. A copy (rather than a view of the
//! mapped object) keeps the tables valid even if the object is `dlclose`d.
//! When a sample holds a program counter no module covers (a library was
//! `dlopen`ed), the sampler refreshes again (at most once per
//! [`REFRESH_INTERVAL`]) and swaps the new unwinder in: it stores the new
//! pointer, then waits until no handler that could have loaded the old one
//! is still running (each slot's `in_handler` count), and only then frees the
//! old one. The handler never waits.
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
use std::time::{Duration, Instant};

use framehop::{
    CacheNative, ExplicitModuleSectionInfo, FrameAddress, Module, MustNotAllocateDuringUnwind,
    UnwindRegsNative, Unwinder, UnwinderNative,
};

use super::queue::{MAX_DEPTH, RawSample, SlotTable};
use crate::base::sync::{AtomicPtr, Ordering};

/// Bytes of stack copied when the bounds are unknown.
pub(crate) const SNAPSHOT: usize = 32 << 10;

/// Shortest time between two module rescans.
pub(crate) const REFRESH_INTERVAL: Duration = Duration::from_millis(500);

type NativeUnwinder = UnwinderNative<Vec<u8>, MustNotAllocateDuringUnwind>;
type NativeCache = CacheNative<MustNotAllocateDuringUnwind>;

/// An unwinder and the code ranges it covers.
pub(crate) struct Tables {
    unwinder: NativeUnwinder,
    /// Sorted executable ranges of the registered modules.
    code: Vec<Range<u64>>,
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
static TABLES: AtomicPtr<Tables> = AtomicPtr::new(std::ptr::null_mut());

/// Per-thread unwinding state, preallocated outside the handler.
pub(crate) struct Scratch {
    cache: NativeCache,
    snapshot: Box<[u8; SNAPSHOT]>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

impl Scratch {
    pub(crate) fn new() -> Self {
        Self {
            cache: NativeCache::new_in(),
            snapshot: vec![0u8; SNAPSHOT]
                .into_boxed_slice()
                .try_into()
                .expect("exact length"),
        }
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

// === module registration (sampler thread only) ===

/// Builds the tables for every loaded object.
fn build_tables() -> Tables {
    let mut modules: Vec<Module<Vec<u8>>> = Vec::new();
    let mut code = Vec::new();
    // SAFETY: `collect` matches dl_iterate_phdr's callback signature and only
    // reads the headers and mapped sections it is given, while the loader
    // lock keeps them mapped; `data` is our `Vec` for the whole call.
    unsafe {
        libc::dl_iterate_phdr(Some(collect), (&mut modules as *mut Vec<_>).cast());
    }
    let mut unwinder = NativeUnwinder::new();
    for m in modules {
        code.push(m.avma_range());
        unwinder.add_module(m);
    }
    code.sort_by_key(|r| r.start);
    Tables { unwinder, code }
}

/// `dl_iterate_phdr` callback: one module per object with `.eh_frame_hdr`.
///
/// # Safety
///
/// `info` must be a valid `dl_phdr_info` and `data` the `Vec<Module>` passed
/// by [`build_tables`].
unsafe extern "C" fn collect(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: caller's contract.
    let (info, modules) = unsafe { (&*info, &mut *(data as *mut Vec<Module<Vec<u8>>>)) };
    if info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: the loader gives `dlpi_phnum` headers at `dlpi_phdr`.
    let phdrs = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let bias = info.dlpi_addr;
    let mut text: Option<Range<u64>> = None;
    let mut hdr: Option<Range<u64>> = None;
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
            let r = ph.p_vaddr..ph.p_vaddr + ph.p_memsz;
            text = Some(match text {
                Some(t) => t.start.min(r.start)..t.end.max(r.end),
                None => r,
            });
        } else if ph.p_type == libc::PT_GNU_EH_FRAME {
            hdr = Some(ph.p_vaddr..ph.p_vaddr + ph.p_memsz);
        }
    }
    let (Some(text), Some(hdr)) = (text, hdr) else {
        return 0;
    };
    if hdr.end - hdr.start < 8 {
        return 0;
    }
    // SAFETY: PT_GNU_EH_FRAME lies in a loaded segment, mapped readable
    // while the loader lock is held.
    let hdr_bytes = unsafe {
        std::slice::from_raw_parts(
            (bias + hdr.start) as *const u8,
            (hdr.end - hdr.start) as usize,
        )
    };
    let Some(eh_frame_svma) = eh_frame_address(hdr.start, hdr_bytes) else {
        return 0;
    };
    // `.eh_frame` runs at most to the end of the segment that holds it; its
    // entries are found through the header's table, so trailing bytes of
    // other sections are never parsed.
    let Some(seg_end) = phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD)
        .map(|p| p.p_vaddr..p.p_vaddr + p.p_memsz)
        .find(|r| r.contains(&eh_frame_svma))
        .map(|r| r.end)
    else {
        return 0;
    };
    // SAFETY: inside a loaded segment, mapped while the loader lock is held.
    let eh_frame = unsafe {
        std::slice::from_raw_parts(
            (bias + eh_frame_svma) as *const u8,
            (seg_end - eh_frame_svma) as usize,
        )
    };
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a NUL-terminated string owned by the loader.
        unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    let section_info = ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma: Some(text.clone()),
        eh_frame_hdr_svma: Some(hdr.clone()),
        eh_frame_hdr: Some(hdr_bytes.to_vec()),
        eh_frame_svma: Some(eh_frame_svma..seg_end),
        eh_frame: Some(eh_frame.to_vec()),
        ..Default::default()
    };
    modules.push(Module::new(
        name,
        bias + text.start..bias + text.end,
        bias,
        section_info,
    ));
    0
}

/// The address (SVMA) of `.eh_frame` from its header (`eh_frame_ptr`).
fn eh_frame_address(hdr_svma: u64, hdr: &[u8]) -> Option<u64> {
    const PCREL: u8 = 0x10;
    const DATAREL: u8 = 0x30;
    if hdr[0] != 1 {
        return None;
    }
    let enc = hdr[1];
    let field = hdr_svma + 4;
    let raw: i64 = match enc & 0x0f {
        0x03 => u32::from_le_bytes(hdr[4..8].try_into().ok()?) as i64,
        0x0b => i32::from_le_bytes(hdr[4..8].try_into().ok()?) as i64,
        0x04 | 0x0c | 0x00 => i64::from_le_bytes(hdr.get(4..12)?.try_into().ok()?),
        _ => return None,
    };
    let base = match enc & 0x70 {
        0 => 0,
        PCREL => field as i64,
        DATAREL => hdr_svma as i64,
        _ => return None,
    };
    Some(base.wrapping_add(raw) as u64)
}

/// Builds fresh tables and publishes them, freeing the previous ones once no
/// handler can be using them. Sampler thread only.
pub(crate) fn refresh_modules(slots: &SlotTable) {
    let fresh = Box::into_raw(Box::new(build_tables()));
    // SeqCst: a handler that raised `in_handler` (SeqCst) after this store
    // sees the new pointer; one that raised it before is waited for below.
    let old = TABLES.swap(fresh, Ordering::SeqCst);
    if old.is_null() {
        return;
    }
    for (_, slot) in slots.iter() {
        slot.wait_for_handlers();
    }
    // SAFETY: `old` came from Box::into_raw above (an earlier call); it is
    // unpublished and no handler still holds it (waited above).
    drop(unsafe { Box::from_raw(old) });
}

/// Rate-limited refresh for program counters outside every known module.
#[derive(Debug)]
pub(crate) struct ModuleWatch {
    last: Option<Instant>,
}

impl ModuleWatch {
    pub(crate) fn new() -> Self {
        Self { last: None }
    }

    /// Publishes tables if none exist yet.
    pub(crate) fn ensure(&mut self, slots: &SlotTable) {
        if TABLES.load(Ordering::Acquire).is_null() {
            refresh_modules(slots);
            self.last = Some(Instant::now());
        }
    }

    /// Refreshes if `pc` is outside every module and the last refresh is
    /// old enough. Returns true if it refreshed.
    pub(crate) fn check(&mut self, pc: u64, slots: &SlotTable) -> bool {
        // SAFETY: only this (sampler) thread frees tables, so the pointer
        // stays valid for this call.
        let known =
            unsafe { TABLES.load(Ordering::Acquire).as_ref() }.is_some_and(|t| t.covers(pc));
        if known || self.last.is_some_and(|t| t.elapsed() < REFRESH_INTERVAL) {
            return false;
        }
        refresh_modules(slots);
        self.last = Some(Instant::now());
        true
    }
}

/// The stack mapping around `sp` from `/proc/self/maps`: a `[stack]`
/// mapping, or a read-write anonymous mapping directly above a guard page
/// (how thread libraries allocate stacks). Sampler thread only.
pub(crate) fn stack_bounds(sp: u64) -> Option<(u64, u64)> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let mut prev: Option<(u64, u64, String)> = None;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let range = parts.next()?;
        let perms = parts.next()?.to_owned();
        let path = parts.nth(3).unwrap_or("");
        let (a, b) = range.split_once('-')?;
        let (lo, hi) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        if (lo..hi).contains(&sp) {
            let guarded = prev
                .as_ref()
                .is_some_and(|(_, phi, pperms)| *phi == lo && pperms.starts_with("---"));
            let ok = perms.starts_with("rw") && (path == "[stack]" || (path.is_empty() && guarded));
            return ok.then_some((lo, hi));
        }
        prev = Some((lo, hi, perms));
    }
    None
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn tables_cover_this_function() {
        let t = build_tables();
        let pc = tables_cover_this_function as fn() as usize as u64;
        assert!(t.covers(pc + 1));
        assert!(!t.covers(8));
    }

    #[test]
    fn copy_stops_at_unmapped_memory() {
        let mut buf = vec![0u8; 8192];
        assert_eq!(copy_stack(8, &mut buf), 0);
        let x = [7u64; 4];
        let n = copy_stack(x.as_ptr() as u64, &mut buf);
        assert!(n >= 32);
        assert_eq!(buf[..8], 7u64.to_ne_bytes());
    }

    #[test]
    fn finds_this_threads_stack() {
        let local = 0u64;
        let sp = &local as *const u64 as u64;
        let (lo, hi) = stack_bounds(sp).expect("stack mapping");
        assert!(lo <= sp && sp < hi);
    }
}
