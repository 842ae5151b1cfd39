//! Lock contention: drop-in wrappers of `parking_lot`'s [`Mutex`],
//! [`RwLock`] and [`Condvar`] that record, while a recording runs, every
//! wait that reached a threshold (the JDK's default, 20 ms), in the layouts
//! of the JDK's events, so `jfr view contention-by-site`,
//! `contention-by-thread`, `contention-by-class` and `latencies-by-type`
//! show them:
//!
//! | wait | event | class field |
//! |---|---|---|
//! | `Mutex::lock`, `RwLock::read`, `RwLock::write` | `jdk.JavaMonitorEnter` | `monitorClass` |
//! | `Condvar::wait`, `wait_for`, `wait_until`, `wait_while` | `jdk.ThreadPark` | `parkedClass` |
//!
//! The class is a `java.lang.Class` named after the lock: its declared
//! name (`Mutex::named("orders", v)`), or else the Rust type it protects
//! (`std::any::type_name::<T>()`, such as `alloc::vec::Vec<u64>`); a
//! condition variable's is its own declared name, or else its mutex's.
//! Settings: `jdk.JavaMonitorEnter#threshold=5 ms`, `#enabled`,
//! `#stackTrace`, the same for `jdk.ThreadPark`; they change while
//! recording as every setting does.
//!
//! # Cost
//!
//! Taking a free lock is parking_lot's fast path and nothing else; the
//! clock is read only after it failed, and only while the event type is
//! on. Unlocking adds one relaxed load of the lock's waiter count: a guard
//! dropped while a thread is timing a wait on the lock stores its thread
//! as the lock's `previousOwner` (a JDK field: the thread that held the
//! lock just before the waiter took it). The event is written by the
//! waiter once it holds the lock, so a wait over the threshold holds the
//! lock a little longer (a stack capture and a buffer write).
//!
//! Invariant: a lock wait writes at most one event, from the waiting
//! thread, only if the type was on when the wait began and still is when
//! it ended, with the threshold in force at the end.

mod condvar;
mod contended;
mod mutex;
mod plug;
mod record;
mod rwlock;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};

pub(crate) use plug::Locks;
