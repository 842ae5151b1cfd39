//! [`Condvar`]: `parking_lot::Condvar` with its waits recorded as
//! `jdk.ThreadPark` events.
//!
//! A condition-variable wait is a thread parked until another wakes it:
//! the JDK writes `java.util.concurrent` waits (`LockSupport.park`) as
//! `jdk.ThreadPark`, which `jfr view latencies-by-type`, async-profiler's
//! converter and Pyroscope read (as the block profile), so a wait that
//! reached the threshold is written in that layout: `parkedClass` is the
//! condition variable's declared name, or else the name of the mutex
//! waited with (its declared name or protected type); `timeout` (ns) for
//! `wait_for`, `until` (ms since the Unix epoch) for `wait_until`, the
//! JDK's `Long.MIN_VALUE` otherwise; `address` the condition variable's.
//! The duration includes taking the mutex back after the wake-up.
//!
//! Invariant: the wait is timed around parking_lot's own wait and nothing
//! else; no state is shared with the waker.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use super::mutex::MutexGuard;
use super::record::{NONE, PARK, Park, Wait, after_record};
use crate::base::sync::program;

/// Whether a timed wait timed out (parking_lot's type).
pub type WaitTimeoutResult = program::WaitTimeoutResult;

/// A condition variable for [`Mutex`](super::Mutex): `parking_lot::Condvar`
/// whose waits are recorded as `jdk.ThreadPark` events while a recording
/// runs.
pub struct Condvar {
    name: Option<&'static str>,
    inner: program::Condvar,
}

impl Condvar {
    /// A condition variable, named after the mutex it is waited with.
    pub const fn new() -> Self {
        Self {
            name: None,
            inner: program::Condvar::new(),
        }
    }

    /// A condition variable named `name` in events (`parkedClass`).
    pub const fn named(name: &'static str) -> Self {
        Self {
            name: Some(name),
            inner: program::Condvar::new(),
        }
    }

    /// Wakes one waiting thread; true if one was woken.
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.inner.notify_one()
    }

    /// Wakes every waiting thread; how many were woken.
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.inner.notify_all()
    }

    /// Unlocks the guard's mutex, waits to be woken, and locks it again.
    /// (Never inlined, as the other waits: the recorded stack leaves out
    /// their frame, so it starts at their caller.)
    #[inline(never)]
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        match Wait::begin(&PARK) {
            None => self.inner.wait(&mut guard.inner),
            Some(w) => self.timed_wait(w, guard, Park::none()),
        }
    }

    /// [`Condvar::wait`] while `condition` holds.
    pub fn wait_while<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: impl FnMut(&mut T) -> bool,
    ) {
        while condition(&mut *guard) {
            self.wait(guard);
        }
    }

    /// [`Condvar::wait`], for at most `timeout`.
    #[inline(never)]
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        match Wait::begin(&PARK) {
            None => self.inner.wait_for(&mut guard.inner, timeout),
            Some(w) => {
                let park = Park {
                    timeout: i64::try_from(timeout.as_nanos()).unwrap_or(i64::MAX),
                    until: NONE,
                };
                let r = self.inner.wait_for(&mut guard.inner, timeout);
                w.park(self.class(guard), self.address(), park);
                after_record();
                r
            }
        }
    }

    /// [`Condvar::wait`], until `deadline` at the latest.
    #[inline(never)]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        deadline: Instant,
    ) -> WaitTimeoutResult {
        match Wait::begin(&PARK) {
            None => self.inner.wait_until(&mut guard.inner, deadline),
            Some(w) => {
                let park = Park {
                    timeout: NONE,
                    until: wall_millis(deadline),
                };
                let r = self.inner.wait_until(&mut guard.inner, deadline);
                w.park(self.class(guard), self.address(), park);
                after_record();
                r
            }
        }
    }

    /// The timed half of [`Condvar::wait`]: its own frame, as `wait_for`'s
    /// and `wait_until`'s, so the stack starts at the caller of `wait`.
    #[inline(always)]
    fn timed_wait<T: ?Sized>(&self, w: Wait, guard: &mut MutexGuard<'_, T>, park: Park) {
        self.inner.wait(&mut guard.inner);
        w.park(self.class(guard), self.address(), park);
        after_record();
    }

    fn class<T: ?Sized>(&self, guard: &MutexGuard<'_, T>) -> &'static str {
        self.name.unwrap_or_else(|| guard.mutex().name())
    }

    fn address(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>().addr()
    }
}

impl Park {
    /// No timeout and no deadline.
    fn none() -> Self {
        Self {
            timeout: NONE,
            until: NONE,
        }
    }
}

/// `deadline` as milliseconds since the Unix epoch, by the wall clock now.
fn wall_millis(deadline: Instant) -> i64 {
    let now = Instant::now();
    let wall = SystemTime::now();
    let at = if deadline >= now {
        wall.checked_add(deadline - now)
    } else {
        wall.checked_sub(now - deadline)
    };
    at.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(NONE, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Default for Condvar {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Condvar")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
