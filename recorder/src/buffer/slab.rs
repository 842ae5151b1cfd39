//! Where the pool's block bytes come from: slabs of whole huge pages, cut
//! into blocks.
//!
//! # Why
//!
//! A block's bytes are touched for the first time by the thread that
//! writes its first events, so every new block costs its writer one page
//! fault per 4 KiB (16 for a default 64 KiB block) and the kernel's
//! zeroing of each page. When the pool grows under a burst (the recorder
//! thread behind its writers) that is most of what the writers pay beyond
//! their commits. A slab is one allocation of 2 MiB (or one block, if
//! blocks are larger), aligned to a huge page and advised
//! `MADV_HUGEPAGE`: where transparent huge pages are on (`always` or
//! `madvise`), the first write to any of its blocks faults in the whole
//! slab at once, one fault instead of 512. Elsewhere it is ordinary
//! memory, faulted as before.
//!
//! The bytes are not written here: fresh anonymous memory is zero, and
//! nothing reads a block's bytes above its `committed` position, so they
//! need no initialisation.
//!
//! The writer that cuts the first block of a slab pays its fault (zeroing
//! 2 MiB), once per 32 default blocks. Faulting the next slab in on the
//! recorder thread instead was tried: it delayed the recorder's rotations
//! enough that chunks overshot their size limit under load
//! (`recorder/tests/chunk_size.rs`), so it is not done.
//!
//! Invariant: slabs are never freed while the pool lives, each block's
//! bytes are one piece of one slab that no other block shares, and no more
//! pieces are cut than the pool asks for (at most `max_blocks`), so the
//! memory the pool may hold is still `max_blocks × block_size` (a slab is
//! only as large as the blocks the pool may still allocate); what is
//! resident may exceed the blocks in use by the uncut rest of one slab.

use std::ptr::NonNull;

use crate::base::sync::ByteCell;

/// A transparent huge page (x86-64, aarch64 with 4 KiB pages).
const HUGE: usize = 2 << 20;

/// The slabs of one pool, and the unused rest of the newest.
#[derive(Debug, Default)]
pub(crate) struct Slabs {
    /// Every slab, to free when the pool drops.
    slabs: Vec<(NonNull<u8>, usize)>,
    /// The next uncut piece of the newest slab, and how many are left.
    next: Option<NonNull<u8>>,
    left: usize,
}

// SAFETY: `Slabs` owns its allocations (like a `Vec<Box<[u8]>>`); the
// pieces it hands out are owned by their blocks from then on.
unsafe impl Send for Slabs {}

impl Slabs {
    /// `block_size` bytes for a new block, cut from the newest slab, or
    /// from a new one of at most `may_allocate` blocks (the blocks the pool
    /// may still allocate, this one included; at least 1).
    pub(crate) fn block(&mut self, block_size: usize, may_allocate: usize) -> NonNull<ByteCell> {
        if self.left == 0 {
            let per_slab = (HUGE / block_size).clamp(1, may_allocate.max(1));
            let len = per_slab * block_size;
            let ptr = map(len, len.is_multiple_of(HUGE));
            self.slabs.push((ptr, len));
            self.next = Some(ptr);
            self.left = per_slab;
        }
        let piece = self.next.expect("a slab with pieces left");
        self.left -= 1;
        // SAFETY: `left` pieces remained after `piece`, so the next one is
        // inside the same allocation (or one past its end when none is
        // left, never dereferenced: the next call makes a new slab).
        self.next = Some(unsafe { piece.add(block_size) });
        piece.cast()
    }
}

impl Drop for Slabs {
    fn drop(&mut self) {
        for (ptr, len) in self.slabs.drain(..) {
            // SAFETY: mapped by `map` with this length, unmapped once,
            // here, when the pool (and so every block cut from it) goes.
            unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
        }
    }
}

/// `len` bytes of fresh anonymous memory (zero, untouched), aligned to a
/// huge page and advised `MADV_HUGEPAGE` if `huge`. Mapped directly, not
/// through the allocator: `alloc_zeroed` with a huge page's alignment
/// writes the zeros itself, faulting every 4 KiB page in before the advice
/// could apply.
pub(crate) fn map(len: usize, huge: bool) -> NonNull<u8> {
    let extra = if huge { HUGE } else { 0 };
    // SAFETY: a new private anonymous mapping; no existing memory is named.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + extra,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let layout = std::alloc::Layout::from_size_align(len, 4096).expect("a slab's layout");
        std::alloc::handle_alloc_error(layout)
    }
    let base = p.cast::<u8>();
    if !huge {
        return NonNull::new(base).expect("mmap succeeded");
    }
    let head = base.align_offset(HUGE);
    // SAFETY: `head < HUGE = extra`, so both trimmed ranges lie inside the
    // mapping just made (page-aligned: mmap returns pages, HUGE is a
    // multiple of the page size); what stays is `len` bytes, HUGE-aligned.
    unsafe {
        let start = base.add(head);
        if head > 0 {
            libc::munmap(base.cast(), head);
        }
        let tail = extra - head;
        if tail > 0 {
            libc::munmap(start.add(len).cast(), tail);
        }
        // The advice changes no contents (a refusal only costs speed).
        libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE);
        NonNull::new(start).expect("inside the mapping")
    }
}
