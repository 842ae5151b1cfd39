//! [`Mutex`]: `parking_lot::Mutex` with its waits recorded as
//! `jdk.JavaMonitorEnter` events.
//!
//! `lock` first tries parking_lot's fast path (`try_lock`); when that
//! succeeds nothing else happens. When it fails, the contended path times
//! the wait (only while the event is on, see `record`), blocks in
//! parking_lot's `lock`, and writes an event if the wait reached the
//! threshold. Unlocking costs one relaxed load more than parking_lot's: a
//! guard dropped while some thread is timing a wait on the same lock
//! stores its thread's key as the lock's previous owner, which the waiter
//! reads once it holds the lock.
//!
//! Invariant: the contended path and the guard's drop go through the
//! lock's `contended::Contention` (whose invariant they keep).

use std::fmt;
use std::ops::{Deref, DerefMut};

use super::contended::Contention;
use crate::base::sync::program;

/// A mutual-exclusion lock: `parking_lot::Mutex` whose waits are recorded
/// as `jdk.JavaMonitorEnter` events while a recording runs (see the
/// [module docs](super)). No poisoning, as parking_lot's.
pub struct Mutex<T: ?Sized> {
    name: Option<&'static str>,
    contention: Contention,
    inner: program::Mutex<T>,
}

/// The guard of a locked [`Mutex`]; unlocks when dropped.
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized> {
    lock: &'a Mutex<T>,
    pub(super) inner: program::MutexGuard<'a, T>,
}

impl<T> Mutex<T> {
    /// A mutex holding `value`, named after `T` in events.
    pub const fn new(value: T) -> Self {
        Self::with_name(None, value)
    }

    /// A mutex holding `value`, named `name` in events (the `monitorClass`
    /// of its `jdk.JavaMonitorEnter` events).
    pub const fn named(name: &'static str, value: T) -> Self {
        Self::with_name(Some(name), value)
    }

    const fn with_name(name: Option<&'static str>, value: T) -> Self {
        Self {
            name,
            contention: Contention::new(),
            inner: program::Mutex::new(value),
        }
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Locks, blocking until the lock is free.
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        match self.inner.try_lock() {
            Some(inner) => MutexGuard { lock: self, inner },
            None => self.lock_contended(),
        }
    }

    /// Locks if the lock is free now (never waits, never records).
    #[inline]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.inner
            .try_lock()
            .map(|inner| MutexGuard { lock: self, inner })
    }

    /// The value, through exclusive access (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether the lock is held now.
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// The name events give the lock: the declared one, or the protected
    /// type's (`std::any::type_name`).
    pub fn name(&self) -> &'static str {
        self.name.unwrap_or_else(std::any::type_name::<T>)
    }

    /// The wait, timed if `jdk.JavaMonitorEnter` is on.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> MutexGuard<'_, T> {
        let inner = self
            .contention
            .timed_wait(self.name(), self.address(), || self.inner.lock());
        MutexGuard { lock: self, inner }
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>().addr()
    }
}

impl<T: ?Sized> Drop for MutexGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.contention.released();
    }
}

impl<'a, T: ?Sized> MutexGuard<'a, T> {
    /// The mutex this guard holds.
    pub fn mutex(&self) -> &'a Mutex<T> {
        self.lock
    }
}

impl<T: ?Sized> Deref for MutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for Mutex<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: ?Sized> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mutex")
            .field("name", &self.name())
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

impl<T: ?Sized + fmt::Display> fmt::Display for MutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.inner, f)
    }
}
