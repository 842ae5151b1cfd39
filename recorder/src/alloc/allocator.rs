//! [`SamplingAllocator`]: the `#[global_allocator]` wrapper, and
//! [`with_type`], which names the allocations of a closure.
//!
//! Invariant: every call is passed to the inner allocator unchanged and
//! its result returned unchanged; the wrapper only counts bytes and, on a
//! sample, records it (see the [module docs](super)).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

use super::live::Moving;
use super::sampler::{self, Decision};
use super::shared::{LIVE, state};

/// A global allocator that samples the allocations made through the
/// allocator `A` it wraps (see the [module docs](super)):
///
/// ```no_run
/// # use recorder as flightrec;
/// use std::alloc::System;
/// use flightrec::alloc::SamplingAllocator;
///
/// #[global_allocator]
/// static GLOBAL: SamplingAllocator<System> = SamplingAllocator::new(System);
/// ```
///
/// Any `GlobalAlloc` can be wrapped: `SamplingAllocator::new(tikv_jemallocator::Jemalloc)`,
/// `SamplingAllocator::new(mimalloc::MiMalloc)`.
#[derive(Debug, Default)]
pub struct SamplingAllocator<A> {
    inner: A,
    mean: u64,
}

/// The mean sampling interval of [`SamplingAllocator::new`], in bytes
/// (tcmalloc's and pprof's default), used while
/// `jdk.ObjectAllocationSample#throttle` is `off`.
pub const DEFAULT_MEAN_INTERVAL: u64 = 512 * 1024;

impl<A> SamplingAllocator<A> {
    /// Wraps `inner`; with `throttle=off` one sample per 512 KiB allocated
    /// on average.
    pub const fn new(inner: A) -> Self {
        Self {
            inner,
            mean: DEFAULT_MEAN_INTERVAL,
        }
    }

    /// Wraps `inner`; with `throttle=off` one sample per `bytes` allocated
    /// on average (at least 1).
    pub const fn with_mean_interval(inner: A, bytes: u64) -> Self {
        Self {
            inner,
            mean: if bytes == 0 { 1 } else { bytes },
        }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }

    /// Counts `size` bytes at `ptr` (the mode counts), and records a sample
    /// if they reach the thread's countdown (`track`: a sample is tracked
    /// for leaks; false for a block that is tracked already).
    #[inline(always)]
    fn account(&self, ptr: *mut u8, size: usize, track: bool) {
        if sampler::count_down(size) {
            self.slow(ptr, size, track);
        }
    }

    #[cold]
    #[inline(never)]
    fn slow(&self, ptr: *mut u8, size: usize, track: bool) {
        if !sampler::first_use() {
            return;
        }
        let st = state();
        let mean = st.mean_interval(self.mean);
        let published = super::threads::own_counter();
        if let Decision::Sample { weight } = sampler::slow_path(size, mean, published) {
            sampler::suspended(|| super::record::record(ptr, size as u64, weight, track));
        }
    }
}

impl<A: GlobalAlloc> SamplingAllocator<A> {
    /// `dealloc` of a block whose leak-table bucket holds something: the
    /// block is untracked if it is tracked, before the memory goes back
    /// (then the address may be reused). Out of line, with the inner call:
    /// the common path keeps nothing across a call.
    ///
    /// # Safety
    ///
    /// [`GlobalAlloc::dealloc`]'s.
    #[inline(never)]
    unsafe fn dealloc_watched(&self, ptr: *mut u8, layout: Layout) {
        LIVE.untrack(ptr.addr());
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    /// `realloc` of a block whose leak-table bucket holds something: if
    /// the block is tracked it stays tracked where it goes (its slot is
    /// held meanwhile, and released if the inner allocator unwinds). Out of
    /// line: only a free's bucket check is on the common path.
    ///
    /// # Safety
    ///
    /// [`GlobalAlloc::realloc`]'s.
    #[inline(never)]
    unsafe fn realloc_watched(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moving = MoveGuard(LIVE.begin_move(ptr.addr()));
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        let tracked = moving.0.is_some();
        if let Some(m) = moving.defuse() {
            super::record::moved(m, ptr, p, layout.size(), new_size);
        }
        if !p.is_null() && sampler::counting() {
            // Its bytes are counted (and may be sampled) as an allocation.
            self.account(p, new_size, !tracked);
        }
        p
    }
}

// SAFETY: every method forwards to `A` with the caller's arguments and
// returns its result unchanged; the bookkeeping around the calls never
// touches the memory handed out.
//
// The common paths are a relaxed load and a branch before the inner call:
// `alloc` reads the mode word (nothing counted: straight to `A`, nothing
// kept across the call), `dealloc` the leak table's count (nothing tracked:
// straight to `A`), `realloc` both. `#[inline]`: a caller through the
// global allocator or a generic `A` sees `A`'s call and these checks only.
unsafe impl<A: GlobalAlloc> GlobalAlloc for SamplingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !sampler::counting() {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.alloc(layout) };
        }
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            self.account(p, layout.size(), true);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !sampler::counting() {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.alloc_zeroed(layout) };
        }
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            self.account(p, layout.size(), true);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Whatever the mode: a block sampled while counting is untracked
        // at its free after counting stopped.
        if LIVE.may_track(ptr.addr()) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.dealloc_watched(ptr, layout) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if LIVE.may_track(ptr.addr()) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.realloc_watched(ptr, layout, new_size) };
        }
        if !sampler::counting() {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.realloc(ptr, layout, new_size) };
        }
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Its bytes are counted (and may be sampled) as an allocation.
            self.account(p, new_size, true);
        }
        p
    }
}

/// A leak-table slot held across `realloc`'s inner call, released if that
/// unwinds.
struct MoveGuard(Option<Moving>);

impl MoveGuard {
    fn defuse(mut self) -> Option<Moving> {
        self.0.take()
    }
}

impl Drop for MoveGuard {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            LIVE.cancel_move(m);
        }
    }
}

crate::base::sync::global::thread_local! {
    /// The type `with_type` names for this thread's allocations now.
    static TYPE_NAME: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// Runs `f`; allocations it samples are of class
/// `std::any::type_name::<T>()` (instead of their size class) in
/// `jdk.ObjectAllocationSample` and `jdk.OldObjectSample`. Nests; the
/// previous name is restored when `f` returns or unwinds.
///
/// ```
/// # use recorder as flightrec;
/// # struct Order;
/// let orders: Box<[Order]> = flightrec::alloc::with_type::<Order, _>(|| {
///     (0..16).map(|_| Order).collect()
/// });
/// ```
pub fn with_type<T: ?Sized, R>(f: impl FnOnce() -> R) -> R {
    struct Restore(Option<&'static str>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TYPE_NAME.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(TYPE_NAME.with(|t| t.replace(Some(std::any::type_name::<T>()))));
    f()
}

/// `Box::new(value)`, the allocation named `T` (see [`with_type`]).
pub fn boxed<T>(value: T) -> Box<T> {
    with_type::<T, _>(|| Box::new(value))
}

/// The type name `with_type` gives now, if any.
pub(super) fn current_type_name() -> Option<&'static str> {
    TYPE_NAME.with(Cell::get)
}
