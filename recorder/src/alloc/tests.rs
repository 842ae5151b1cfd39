//! The wrapper used directly (not as the global allocator): around
//! allocators that fail or panic, results pass through and the sampling
//! flag is never left set; with nothing counted, a tracked block is still
//! untracked at its free or `realloc`.

use crate::base::sync::global::{AtomicBool, Mutex, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

use super::shared::LIVE;
use super::{SamplingAllocator, sampler};

/// The tests here that set the mode take turns.
static MODE_SET: Mutex<()> = Mutex::new(());

/// Returns null for every request.
struct Null;

// SAFETY: never hands out memory.
unsafe impl GlobalAlloc for Null {
    unsafe fn alloc(&self, _: Layout) -> *mut u8 {
        std::ptr::null_mut()
    }
    unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
}

/// Panics while `PANIC` is set, else the system allocator.
struct Panicky;
static PANIC: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to `System` (or panics before allocating).
unsafe impl GlobalAlloc for Panicky {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if PANIC.load(Ordering::Relaxed) {
            panic!("inner allocator failed");
        }
        // SAFETY: the caller's contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(p, l) }
    }
}

#[test]
fn null_passes_through_and_counts_nothing() {
    let _turn = MODE_SET.lock();
    super::control::force_counting_for_tests();
    let a = SamplingAllocator::with_mean_interval(Null, 1);
    let before = sampler::allocated_now();
    for size in [1usize, 64, 1 << 20] {
        let l = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: a non-zero layout.
        assert!(unsafe { a.alloc(l) }.is_null());
        // SAFETY: as above.
        assert!(unsafe { a.alloc_zeroed(l) }.is_null());
    }
    assert_eq!(sampler::allocated_now(), before);
}

#[test]
fn a_panicking_inner_allocator_unwinds_through_and_leaves_no_flag() {
    let _turn = MODE_SET.lock();
    super::control::force_counting_for_tests();
    let a = SamplingAllocator::with_mean_interval(Panicky, 1);
    let l = Layout::from_size_align(256, 8).unwrap();
    PANIC.store(true, Ordering::Relaxed);
    let r = std::panic::catch_unwind(|| {
        // SAFETY: a non-zero layout.
        unsafe { a.alloc(l) }
    });
    PANIC.store(false, Ordering::Relaxed);
    assert!(r.is_err());
    assert!(!sampler::in_sampler());
    // The wrapper still works, and counts.
    let before = sampler::allocated_now();
    // SAFETY: a non-zero layout; freed with the same layout.
    unsafe {
        let p = a.alloc(l);
        assert!(!p.is_null());
        a.dealloc(p, l);
    }
    assert_eq!(sampler::allocated_now() - before, 256);
}

/// A block tracked while counting (tracked here by hand, as a sample
/// would) and freed or reallocated after counting stopped: the off path
/// still takes it out of the leak table, so no stale slot can name its
/// address once it is reused. (A recording started by another test of
/// this binary may set the mode meanwhile; the frees must untrack in
/// every mode.)
#[test]
fn with_nothing_counted_a_tracked_block_is_untracked_at_free_and_realloc() {
    let _turn = MODE_SET.lock();
    sampler::set_mode(false, true);
    assert!(!sampler::counting(), "the mode is idle");
    let a = SamplingAllocator::new(System);
    let small = Layout::from_size_align(64, 8).unwrap();
    // SAFETY: non-zero layouts; every block is freed with its layout.
    unsafe {
        let p = a.alloc(small);
        assert!(!p.is_null());
        assert!(LIVE.track(p.addr(), 64, 64, 1).is_some());
        assert!(LIVE.may_track(p.addr()));
        a.dealloc(p, small);
        assert!(!LIVE.untrack(p.addr()), "freed: untracked");

        let q = a.alloc(small);
        assert!(LIVE.track(q.addr(), 64, 64, 1).is_some());
        // 1 MiB: a new mapping, so the block moves.
        let r = a.realloc(q, small, 1 << 20);
        assert!(!r.is_null());
        assert_ne!(q, r);
        assert!(!LIVE.untrack(q.addr()), "moved: the old address untracked");
        a.dealloc(r, Layout::from_size_align(1 << 20, 8).unwrap());
        assert!(!LIVE.untrack(r.addr()), "freed after the move: untracked");
    }
    sampler::set_mode(super::control::counting_forced(), true);
}
