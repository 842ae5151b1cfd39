//! Every atomic, fence, cell and thread-local of the runtime, in one place.
//!
//! Under `cfg(flightrec_loom)` these are loom's model-checked twins; otherwise
//! std's. The rest of the crate is written against loom's API (notably
//! [`UnsafeCell::with`]/[`UnsafeCell::with_mut`]), so the same code runs in
//! production and inside loom models. Sources of nondeterminism (the clock,
//! thread ids) are routed through [`crate::clock`] and [`thread_id`].

#[cfg(not(flightrec_loom))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
    pub(crate) use std::sync::Arc;
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, compiler_fence, fence,
    };
    pub(crate) use std::thread_local;

    /// `std::cell::UnsafeCell` with loom's closure API.
    #[allow(dead_code)] // used by the loom models' shared cells
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    #[allow(dead_code)]
    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Runs `f` with a shared pointer to the value.
        #[inline(always)]
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Runs `f` with a mutable pointer to the value.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// A spin-loop hint for waits that expect to be short.
    #[inline]
    pub(crate) fn spin_hint() {
        std::hint::spin_loop();
    }

    /// Access tracking of buffer bytes ([`super::ByteCell`]): nothing
    /// outside loom.
    #[derive(Debug)]
    pub(crate) struct ByteShadow;

    impl ByteShadow {
        /// Tracking for `capacity` bytes.
        #[inline(always)]
        pub(crate) fn new(_capacity: usize) -> Self {
            Self
        }

        /// Records that this thread wrote `range`.
        #[inline(always)]
        pub(crate) fn wrote(&self, _range: std::ops::Range<usize>) {}

        /// Records that this thread read `range`.
        #[inline(always)]
        pub(crate) fn read(&self, _range: std::ops::Range<usize>) {}
    }
}

#[cfg(flightrec_loom)]
mod imp {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
    };
    pub(crate) use loom::thread_local;

    /// loom's mutex with parking_lot's poison-free `lock()`.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Guard of [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// Wraps `value`.
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        /// Locks; loom models never poison.
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }

        /// The value, through exclusive access (no locking).
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().expect("loom mutex poisoned")
        }
    }

    /// loom's condition variable with parking_lot's API shape.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        /// Wakes one waiter.
        pub(crate) fn notify_one(&self) -> bool {
            self.0.notify_one();
            true
        }

        /// Wakes all waiters.
        pub(crate) fn notify_all(&self) -> usize {
            self.0.notify_all();
            0
        }
    }

    /// FIXME(loom#117): loom does not model `compiler_fence`; a full fence
    /// over-approximates it (it orders more than the real one does).
    pub(crate) fn compiler_fence(order: Ordering) {
        fence(order)
    }

    /// Loom's scheduler is unfair: spinning must yield to let others run.
    #[inline]
    pub(crate) fn spin_hint() {
        loom::thread::yield_now();
    }

    /// One loom cell per buffer byte, touched (not holding the data) at each
    /// access of the real bytes, so loom reports a read of bytes that does
    /// not happen-after their write (or a write racing a read) as a
    /// causality violation, which it cannot do for the std cells.
    #[derive(Debug)]
    pub(crate) struct ByteShadow(Box<[UnsafeCell<()>]>);

    impl ByteShadow {
        /// Tracking for `capacity` bytes.
        pub(crate) fn new(capacity: usize) -> Self {
            Self((0..capacity).map(|_| UnsafeCell::new(())).collect())
        }

        /// Records that this thread wrote `range`.
        pub(crate) fn wrote(&self, range: std::ops::Range<usize>) {
            for cell in &self.0[range] {
                cell.with_mut(|_| ());
            }
        }

        /// Records that this thread read `range`.
        pub(crate) fn read(&self, range: std::ops::Range<usize>) {
            for cell in &self.0[range] {
                cell.with(|_| ());
            }
        }
    }
}

pub(crate) use imp::*;

/// The cell type of buffer bytes. Always std's: a buffer is handed out as one
/// contiguous `&mut [u8]`, which loom's per-cell tracking cannot express.
/// Loom checks the positions (`committed`, `flushed`) that order every access
/// to these bytes, and [`ByteShadow`] mirrors each access onto one loom cell
/// per byte so that a missing happens-before edge is reported.
pub(crate) type ByteCell = std::cell::UnsafeCell<u8>;

/// Locks `m` for a `fork()` and keeps it locked (the guard is forgotten):
/// `pthread_atfork`'s prepare handler, so that no other thread is inside
/// it when the process is copied. Undone by [`fork_unlock`].
#[cfg(not(flightrec_loom))]
pub(crate) fn fork_lock<T>(m: &Mutex<T>) {
    std::mem::forget(m.lock());
}

/// The value behind a mutex that [`fork_lock`] holds.
///
/// # Safety
///
/// `m` is held by [`fork_lock`] on the calling thread (between the
/// prepare handler and [`fork_unlock`]), and no other reference to the
/// value is live: in the child no other thread exists, and in the parent
/// every other thread is kept out by the lock.
#[cfg(not(flightrec_loom))]
#[allow(clippy::mut_from_ref)]
pub(crate) unsafe fn fork_data<T>(m: &Mutex<T>) -> &mut T {
    // SAFETY: the lock is held for us (caller's contract), so this is the
    // only access to the value.
    unsafe { &mut *m.data_ptr() }
}

/// Unlocks a mutex locked by [`fork_lock`].
///
/// # Safety
///
/// `m` is held by [`fork_lock`] and no reference from [`fork_data`]
/// outlives this call.
#[cfg(not(flightrec_loom))]
pub(crate) unsafe fn fork_unlock<T>(m: &Mutex<T>) {
    // SAFETY: the caller's contract: `fork_lock` locked it and forgot the
    // guard, so unlocking it once is the guard's drop, delayed.
    unsafe { m.force_unlock() }
}

/// The calling thread's kernel thread id (`gettid`).
#[inline]
pub(crate) fn os_thread_id() -> i64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as i64 }
}
