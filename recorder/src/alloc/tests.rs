//! The wrapper around allocators that fail or panic, used directly (not as
//! the global allocator): results pass through, the sampling flag is never
//! left set.

use crate::sync::{AtomicBool, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

use super::{SamplingAllocator, sampler};

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
    super::force_counting_for_tests();
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
    super::force_counting_for_tests();
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
