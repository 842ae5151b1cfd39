//! `capture` must not allocate once warmed up: it runs on the event-commit
//! path. A counting global allocator watches the test's own thread only, so
//! allocations of the test harness on other threads do not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use recorder::stack::capture;

/// Counts allocations made by the current thread, then defers to `System`.
struct CountingAlloc;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the thread-local may already be gone at thread exit.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's arguments, so
// `System`'s guarantees carry over; the counter is a const-initialised
// thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded from our caller, who upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded from our caller, who upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded from our caller, who upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from our caller, who upholds `dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Recurses `depth` times, then captures `rounds` stacks into `out`.
#[inline(never)]
fn capture_at_depth(depth: usize, rounds: usize, out: &mut [u64]) -> usize {
    if depth > 0 {
        return black_box(capture_at_depth(depth - 1, rounds, out)) + 1;
    }
    let mut total = 0;
    for skip in 0..rounds {
        total += capture(skip % 3, out).len;
    }
    total
}

#[test]
fn capture_does_not_allocate_after_warm_up() {
    let mut ips = [0u64; 128];
    let mut few = [0u64; 4];
    // Warm up: first use of the unwinder may set up its caches.
    capture_at_depth(8, 1, &mut ips);
    capture_at_depth(8, 1, &mut few);

    let before = allocations();
    let deep = capture_at_depth(20, 100, &mut ips);
    let truncated = capture_at_depth(20, 100, &mut few);
    let after = allocations();

    assert!(deep > 100 * 20, "captured too few frames: {deep}");
    assert_eq!(truncated, 100 * few.len() + 20);
    assert_eq!(
        after - before,
        0,
        "capture allocated {} times",
        after - before
    );
}

#[test]
fn allocator_counts_this_thread() {
    // Guards the test above against a counter that never counts.
    let before = allocations();
    let v = black_box(vec![1u8; 32]);
    drop(v);
    assert!(allocations() > before);
}
