//! Every atomic, fence, cell and thread-local of the runtime, in one place.
//!
//! The crate root's primitives (`sync::AtomicU64`, `sync::Mutex`, `Arc`,
//! `UnsafeCell`, `fence`, `thread_local!`, ...) are loom's model-checked
//! twins under `cfg(flightrec_loom)` and std's otherwise: the one
//! `mod imp` pair below is the only place the two builds differ in their
//! primitives. The rest of the crate is written against loom's API (notably
//! [`UnsafeCell::with`]/[`UnsafeCell::with_mut`]), so the same code runs in
//! production and inside loom models. Sources of nondeterminism (the clock,
//! thread ids, hash seeds) are routed through [`crate::base::clock`],
//! [`os_thread_id`] and [`RandomState`].
//!
//! # The gating rule
//!
//! What the loom models drive (the block's commit word, a slot's section
//! word and stack tag, the epoch, the buffer pool, the sampler's slots and
//! queues, the settings words, the constants' tags) is built from the root's
//! primitives, so a model explores every interleaving of them. Loom's
//! primitives exist only inside one model execution (they are not `const`
//! and belong to it), so a `static`, and the features no model drives
//! (signals, timers, periodic events, allocation sampling, labels, the
//! attach listener, ...), use [`global`]'s: std's in both builds. Every
//! feature is therefore built under loom too, and calls into it need no
//! gate. That is sound because no model reaches that state: a model creates
//! its own runtime and registry (`loom_api`), never starts a recording,
//! and the statics it may pass (a hook list, a fallback flag) are never set
//! in a model, so their loads are constants there and hide no
//! interleaving. A primitive of a driven structure must come from the root;
//! one that is only ever a `static`, or belongs to a feature, from
//! [`global`]. Besides this pair, a loom build differs only where a model
//! needs it to: its smaller sizes, a fixed clock, the barrier of
//! `epoch::membarrier`, and the negative controls' weakenings.

/// std's primitives, in both builds: for the process-global state
/// (`static`s, which loom's primitives cannot initialise) and for the
/// features no loom model drives (see the module docs for why this is
/// sound). Outside loom these are the very types the crate root hands out.
/// Not every one has a user in the loom build.
#[allow(dead_code, unused_imports)]
pub(crate) mod global {
    pub(crate) use std::sync::Arc;
    use std::sync::PoisonError;

    /// std's mutex with a poison-free `lock()`.
    ///
    /// std's futex mutex rather than parking_lot's: a forked child unlocks
    /// the runtime's mutexes that the fork handler held (see `crate::process::fork`),
    /// and parking_lot may hand a contended lock on unlock to a waiter
    /// parked in its global table, a thread that does not exist in the
    /// child, which leaves the lock held forever. std's lock is one word.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(std::sync::Mutex<T>);

    /// Guard of [`Mutex`].
    pub(crate) type MutexGuard<'a, T> = std::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// Wraps `value`.
        pub(crate) const fn new(value: T) -> Self {
            Self(std::sync::Mutex::new(value))
        }

        /// Locks; a panic while the lock was held does not poison it (every
        /// critical section leaves its data consistent at each step).
        #[inline]
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }

        /// Locks if free now, else `None` (never waits).
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }

        /// The value, through exclusive access (no locking).
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
        }
    }

    /// std's condition variable, for [`Mutex`].
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(std::sync::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub(crate) const fn new() -> Self {
            Self(std::sync::Condvar::new())
        }

        /// Wakes one waiter.
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes all waiters.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }

        /// Waits until woken or `timeout` passes; returns the guard.
        pub(crate) fn wait_for<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: std::time::Duration,
        ) -> MutexGuard<'a, T> {
            match self.0.wait_timeout(guard, timeout) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            }
        }
    }
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, compiler_fence, fence,
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
}

#[cfg(not(flightrec_loom))]
mod imp {
    pub(crate) use super::global::{
        Arc, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering,
        UnsafeCell, compiler_fence, fence, spin_hint, thread_local,
    };
    pub(crate) use std::collections::hash_map::RandomState;

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

    /// loom's `thread_local!` (one value per model thread), which takes no
    /// `const { .. }` initialiser: this strips it, so that one declaration
    /// serves both builds (std's keeps it: no lazy initialisation there).
    macro_rules! loom_thread_local {
        () => {};
        ($(#[$m:meta])* $v:vis static $n:ident: $t:ty = const { $e:expr }; $($rest:tt)*) => {
            ::loom::thread_local! { $(#[$m])* $v static $n: $t = $e; }
            $crate::base::sync::thread_local! { $($rest)* }
        };
        ($(#[$m:meta])* $v:vis static $n:ident: $t:ty = $e:expr; $($rest:tt)*) => {
            ::loom::thread_local! { $(#[$m])* $v static $n: $t = $e; }
            $crate::base::sync::thread_local! { $($rest)* }
        };
    }
    pub(crate) use loom_thread_local as thread_local;

    /// A fixed hasher: a model must take the same branches (lock the same
    /// shards) in every execution.
    pub(crate) type RandomState =
        std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

    /// loom's mutex with a poison-free `lock()` (as the std twin's).
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

    impl<T: 'static> super::ForkLock for Mutex<T> {
        type Value = T;
        fn hold(&'static self) -> (*mut (), Box<dyn std::any::Any>) {
            let mut guard = self.lock();
            let value: *mut T = &mut *guard;
            (value.cast(), Box::new(guard))
        }
    }

    /// loom's condition variable with the std twin's API shape.
    #[derive(Debug, Default)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub(crate) fn new() -> Self {
            Self(loom::sync::Condvar::new())
        }

        /// Wakes one waiter.
        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes all waiters.
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }

        /// Waits until woken (loom has no clock: a timeout never passes).
        pub(crate) fn wait_for<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: std::time::Duration,
        ) -> MutexGuard<'a, T> {
            let (guard, _) = self
                .0
                .wait_timeout(guard, timeout)
                .expect("loom mutex poisoned");
            guard
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

// Init-once cells, channels, the swappable settings pointer and the scheduler
// calls: std's (and arc-swap's) in both builds, as before they were routed
// here. Loom does not model them; the models never block on them.
pub(crate) use arc_swap::ArcSwap;
pub(crate) use std::sync::{Arc as StdArc, Once, OnceLock, mpsc};
pub(crate) use std::thread::{available_parallelism, yield_now};

/// A value set once, like `OnceLock`, whose holder may also read it with
/// no check at all ([`get_unchecked`](InitOnce::get_unchecked)): for the
/// runtime, which the commit path reaches once it holds a proof that it
/// exists (an enabled settings word), where `OnceLock::get` would load its
/// state word on every event for nothing. std's in both builds, like
/// `OnceLock`.
pub(crate) struct InitOnce<T> {
    once: Once,
    value: std::cell::UnsafeCell<std::mem::MaybeUninit<T>>,
}

// SAFETY: the value is written once, inside `call_once`, before any reader
// can see it (`get` and `get_or_init` read it only after the `Once` says it
// completed, `get_unchecked` only under its caller's proof of the same),
// and only shared references to it are handed out: sharing it across
// threads needs `T: Sync`, and `T: Send` since the initialising thread
// need not be the one that reads it.
unsafe impl<T: Send + Sync> Sync for InitOnce<T> {}

impl<T> InitOnce<T> {
    /// An empty cell.
    pub(crate) const fn new() -> Self {
        Self {
            once: Once::new(),
            value: std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()),
        }
    }

    /// The value, made by `f` if the cell is empty.
    pub(crate) fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        self.once.call_once(|| {
            // SAFETY: `call_once` runs this once, and no reader looks at
            // the value before it completes (see the `Sync` impl).
            unsafe { (*self.value.get()).write(f()) };
        });
        // SAFETY: `call_once` returned, so the value was written.
        unsafe { self.get_unchecked() }
    }

    /// The value, if it was set.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        // SAFETY: the `Once` completed, so the value was written.
        self.once
            .is_completed()
            .then(|| unsafe { self.get_unchecked() })
    }

    /// The value, with no check.
    ///
    /// # Safety
    ///
    /// The cell was set, and the caller saw that happen: a `get` or
    /// `get_or_init` on this thread returned it, or the caller acquired a
    /// value that was released after one did.
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked(&self) -> &T {
        // SAFETY: set and visible, as the caller guarantees.
        unsafe { (*self.value.get()).assume_init_ref() }
    }
}

/// The program's locks, which the lock contention feature wraps: the
/// same in both builds (no model drives them), never used for the
/// runtime's own state (see `Mutex` above for why).
pub(crate) mod program {
    pub(crate) use parking_lot::{
        Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, WaitTimeoutResult,
    };
}

/// The cell type of buffer bytes. Always std's: a buffer is handed out as one
/// contiguous `&mut [u8]`, which loom's per-cell tracking cannot express.
/// Loom checks the positions (`committed`, `flushed`) that order every access
/// to these bytes, and [`ByteShadow`] mirrors each access onto one loom cell
/// per byte so that a missing happens-before edge is reported.
pub(crate) type ByteCell = std::cell::UnsafeCell<u8>;

/// A guard `fork_lock` holds: the mutex's address, a pointer to its value,
/// the guard.
type Held = (usize, *mut (), Box<dyn std::any::Any>);

std::thread_local! {
    /// The guards `fork_lock` holds on this thread.
    static FORK_HELD: std::cell::RefCell<Vec<Held>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A mutex [`fork_lock`] can keep locked across a `fork()`: std's, and under
/// loom the model's as well (the fork handlers are built there, never run).
pub(crate) trait ForkLock: 'static {
    /// The value behind the lock.
    type Value;
    /// Locks; returns a pointer to the value and the guard.
    fn hold(&'static self) -> (*mut (), Box<dyn std::any::Any>);
}

impl<T: 'static> ForkLock for global::Mutex<T> {
    type Value = T;
    fn hold(&'static self) -> (*mut (), Box<dyn std::any::Any>) {
        let mut guard = self.lock();
        let value: *mut T = &mut *guard;
        (value.cast(), Box::new(guard))
    }
}

/// Locks `m` for a `fork()` and keeps it locked (the guard is kept on this
/// thread): `pthread_atfork`'s prepare handler, so that no other thread is
/// inside it when the process is copied. Undone by [`fork_unlock`].
pub(crate) fn fork_lock<M: ForkLock>(m: &'static M) {
    let (value, guard) = m.hold();
    FORK_HELD.with(|h| {
        h.borrow_mut()
            .push((std::ptr::from_ref(m).addr(), value, guard))
    });
}

/// The value behind a mutex that [`fork_lock`] holds.
///
/// # Safety
///
/// `m` is held by [`fork_lock`] on the calling thread (between the prepare
/// handler and [`fork_unlock`]), and no other reference to the value is
/// live: in the child no other thread exists, and in the parent every other
/// thread is kept out by the lock.
#[allow(clippy::mut_from_ref)]
pub(crate) unsafe fn fork_data<M: ForkLock>(m: &M) -> &mut M::Value {
    let addr = std::ptr::from_ref(m).addr();
    let value = FORK_HELD.with(|h| {
        h.borrow()
            .iter()
            .find(|(a, _, _)| *a == addr)
            .map(|(_, v, _)| *v)
            .expect("fork_data: the mutex is held by fork_lock")
    });
    // SAFETY: `value` points at the value of `m`, whose guard `FORK_HELD`
    // keeps alive; the caller guarantees no other reference to it is live.
    unsafe { &mut *value.cast::<M::Value>() }
}

/// Unlocks a mutex locked by [`fork_lock`] (drops its guard; in a forked
/// child, where the lock word was copied locked, that makes it free).
///
/// # Safety
///
/// No reference from [`fork_data`] to `m`'s value outlives this call.
pub(crate) unsafe fn fork_unlock<M: ForkLock>(m: &M) {
    let addr = std::ptr::from_ref(m).addr();
    let guard = FORK_HELD.with(|h| {
        let mut h = h.borrow_mut();
        let at = h.iter().rposition(|(a, _, _)| *a == addr);
        at.map(|i| h.remove(i))
    });
    drop(guard);
}

/// A word one thread sleeps on and any thread, a signal handler included,
/// rings: the sampler and periodic threads sleep on one instead of polling.
///
/// `ring` is async-signal-safe: one atomic add, one atomic load and, only
/// while a thread sleeps, one `futex(FUTEX_WAKE)` system call: no lock, no
/// allocation, nothing that waits (the caller saves `errno`, which the
/// system call may set). A ring between [`ticket`](Self::ticket) and
/// [`wait`](Self::wait) is never lost: the word has moved on, so the wait
/// returns at once (the kernel compares the word under its own lock).
#[derive(Debug)]
pub(crate) struct Doorbell {
    /// Bumped by every ring (the futex word).
    rings: global::AtomicU32,
    /// Threads inside `wait` (so a ring with nobody asleep makes no call).
    sleepers: global::AtomicU32,
}

impl Doorbell {
    /// A bell nobody rang.
    pub(crate) const fn new() -> Self {
        Self {
            rings: global::AtomicU32::new(0),
            sleepers: global::AtomicU32::new(0),
        }
    }

    /// The rings so far: take it before looking at what a ring announces,
    /// then [`wait`](Self::wait) with it.
    #[inline]
    pub(crate) fn ticket(&self) -> u32 {
        // Acquire: what the ringer did before its ring is visible after.
        self.rings.load(Ordering::Acquire)
    }

    /// Sleeps until the bell rings after `ticket` was taken, or `timeout`
    /// passes (or a signal interrupts the sleep: callers loop anyway).
    pub(crate) fn wait(&self, ticket: u32, timeout: std::time::Duration) {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SeqCst: the count before the word's load in the kernel, against
        // the ringer's add before its count load (Dekker): either the
        // ringer sees us asleep and wakes us, or we see its ring.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the word is a valid, aligned u32 that outlives the call;
        // FUTEX_WAIT only reads it and sleeps while it equals `ticket`.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.rings.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                ticket,
                &raw const ts,
            )
        };
        self.sleepers.fetch_sub(1, Ordering::Release);
    }

    /// Wakes every thread waiting on the bell (async-signal-safe, see above).
    #[inline]
    pub(crate) fn ring(&self) {
        // SeqCst: see `wait`.
        self.rings.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return;
        }
        // SAFETY: as in `wait`; FUTEX_WAKE only wakes waiters on the word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.rings.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            )
        };
    }
}

/// The calling thread's kernel thread id (`gettid`).
#[inline]
pub(crate) fn os_thread_id() -> i64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as i64 }
}
