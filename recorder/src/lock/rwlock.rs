//! [`RwLock`]: `parking_lot::RwLock` with its waits recorded as
//! `jdk.JavaMonitorEnter` events.
//!
//! The JDK has no event for a reader-writer lock; a wait to read and a
//! wait to write are both a wait to enter the lock, so both are written as
//! `jdk.JavaMonitorEnter` (`jfr view contention-by-site` shows them with
//! the mutexes' waits, by stack). `read` and `write` work as
//! [`Mutex::lock`](super::Mutex::lock): parking_lot's fast path
//! (`try_read`, `try_write`), then, when it fails, the timed wait. A guard
//! of either kind dropped while a thread is timing a wait stores its
//! thread as the previous owner (with readers, the last one out).
//!
//! Invariant: as `Mutex`'s: the contended paths and the guards' drops go
//! through the lock's `contended::Contention`.

use std::fmt;
use std::ops::{Deref, DerefMut};

use super::contended::Contention;
use crate::base::sync::program;

/// A reader-writer lock: `parking_lot::RwLock` whose waits are recorded as
/// `jdk.JavaMonitorEnter` events while a recording runs. No poisoning.
pub struct RwLock<T: ?Sized> {
    name: Option<&'static str>,
    contention: Contention,
    inner: program::RwLock<T>,
}

/// The guard of a [`RwLock`] locked for reading.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    inner: program::RwLockReadGuard<'a, T>,
}

/// The guard of a [`RwLock`] locked for writing.
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
    inner: program::RwLockWriteGuard<'a, T>,
}

impl<T> RwLock<T> {
    /// A lock holding `value`, named after `T` in events.
    pub const fn new(value: T) -> Self {
        Self::with_name(None, value)
    }

    /// A lock holding `value`, named `name` in events.
    pub const fn named(name: &'static str, value: T) -> Self {
        Self::with_name(Some(name), value)
    }

    const fn with_name(name: Option<&'static str>, value: T) -> Self {
        Self {
            name,
            contention: Contention::new(),
            inner: program::RwLock::new(value),
        }
    }

    /// The value, consuming the lock.
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks for reading, blocking while a writer holds or waits for it.
    #[inline]
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        match self.inner.try_read() {
            Some(inner) => RwLockReadGuard { lock: self, inner },
            None => self.read_contended(),
        }
    }

    /// Locks for writing, blocking until no one holds it.
    #[inline]
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        match self.inner.try_write() {
            Some(inner) => RwLockWriteGuard { lock: self, inner },
            None => self.write_contended(),
        }
    }

    /// Locks for reading if that is possible now (never waits).
    #[inline]
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        self.inner
            .try_read()
            .map(|inner| RwLockReadGuard { lock: self, inner })
    }

    /// Locks for writing if the lock is free now (never waits).
    #[inline]
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        self.inner
            .try_write()
            .map(|inner| RwLockWriteGuard { lock: self, inner })
    }

    /// The value, through exclusive access (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// Whether the lock is held now (for reading or writing).
    pub fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    /// The name events give the lock: the declared one, or the protected
    /// type's (`std::any::type_name`).
    pub fn name(&self) -> &'static str {
        self.name.unwrap_or_else(std::any::type_name::<T>)
    }

    #[cold]
    #[inline(never)]
    fn read_contended(&self) -> RwLockReadGuard<'_, T> {
        let inner = self
            .contention
            .timed_wait(self.name(), self.address(), || self.inner.read());
        RwLockReadGuard { lock: self, inner }
    }

    #[cold]
    #[inline(never)]
    fn write_contended(&self) -> RwLockWriteGuard<'_, T> {
        let inner = self
            .contention
            .timed_wait(self.name(), self.address(), || self.inner.write());
        RwLockWriteGuard { lock: self, inner }
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>().addr()
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.contention.released();
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.contention.released();
    }
}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for RwLock<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: ?Sized> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("name", &self.name())
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}
