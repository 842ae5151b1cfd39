//! The unwind tables the handler's capture ([`super::handler::capture`])
//! reads, built and swapped outside the handler, and the stack bounds the
//! sampler finds for each thread.
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

use std::ops::Range;
use std::time::{Duration, Instant};

use framehop::{ExplicitModuleSectionInfo, Module, Unwinder};

use super::handler::queue::SlotTable;
use crate::base::sync::global::Ordering;

use super::handler::capture::{NativeCache, NativeUnwinder, SNAPSHOT, Scratch, TABLES, Tables};

/// Shortest time between two module rescans.
pub(crate) const REFRESH_INTERVAL: Duration = Duration::from_millis(500);

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

#[cfg(test)]
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
    fn finds_this_threads_stack() {
        let local = 0u64;
        let sp = &local as *const u64 as u64;
        let (lo, hi) = stack_bounds(sp).expect("stack mapping");
        assert!(lo <= sp && sp < hi);
    }
}
