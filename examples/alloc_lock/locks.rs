//! Threads contending on a named lock with known hold times: a holder
//! takes `orders`, lets two waiters try to take it, and holds it for
//! [`LONG_HOLD`] (every third round) or [`SHORT_HOLD`]. A waiter's wait is
//! about the hold, so each wait is far over the 20 ms threshold or far
//! under it, never near it. Each waiter measures its own waits and counts
//! those at or over the threshold: `run` returns that count per lock name.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use flightrec::lock::Mutex;

/// The JDK's default threshold of `jdk.JavaMonitorEnter`.
pub(crate) const THRESHOLD: Duration = Duration::from_millis(20);
/// A hold the waits behind are well over the threshold.
pub(crate) const LONG_HOLD: Duration = Duration::from_millis(60);
/// A hold the waits behind are well under it.
pub(crate) const SHORT_HOLD: Duration = Duration::from_millis(2);
/// The lock's declared name (its class in the recording).
pub(crate) const LOCK_NAME: &str = "orders";

const WAITERS: usize = 2;

/// The waiter's side: takes the lock (the contended site), keeps it
/// briefly, and counts the wait if it reached the threshold.
#[inline(never)]
fn take_order(orders: &Mutex<Vec<u64>>, over: &AtomicU64, round: u64) {
    let t0 = Instant::now();
    let mut o = orders.lock();
    let waited = t0.elapsed();
    o.push(round);
    if o.len() > 1024 {
        o.clear();
    }
    drop(o);
    if waited >= THRESHOLD {
        over.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs rounds until `until`; lock name → waits at or over the threshold.
#[allow(unreachable_pub)] // `pub` as main.rs of the merged example expects
pub fn run(until: Instant) -> BTreeMap<String, u64> {
    let orders = Arc::new(Mutex::named(LOCK_NAME, Vec::new()));
    let over = Arc::new(AtomicU64::new(0));
    // Holder and waiters meet twice per round: once the holder holds the
    // lock (then the waiters take it), once every waiter is done.
    let start = Arc::new(Barrier::new(WAITERS + 1));
    let done = Arc::new(Barrier::new(WAITERS + 1));
    let rounds = Arc::new(AtomicU64::new(u64::MAX));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|i| {
            let (orders, over, start, done, rounds) = (
                orders.clone(),
                over.clone(),
                start.clone(),
                done.clone(),
                rounds.clone(),
            );
            thread::Builder::new()
                .name(format!("order-waiter-{i}"))
                .spawn(move || {
                    let mut round = 0;
                    loop {
                        start.wait();
                        if round >= rounds.load(Ordering::Acquire) {
                            return;
                        }
                        take_order(&orders, &over, round);
                        done.wait();
                        round += 1;
                    }
                })
                .expect("spawn")
        })
        .collect();
    let mut round = 0u64;
    while Instant::now() < until {
        let hold = if round.is_multiple_of(3) {
            LONG_HOLD
        } else {
            SHORT_HOLD
        };
        let g = orders.lock();
        start.wait();
        thread::sleep(hold);
        drop(g);
        done.wait();
        round += 1;
    }
    rounds.store(round, Ordering::Release);
    start.wait();
    for w in waiters {
        w.join().expect("waiter panicked");
    }
    BTreeMap::from([(LOCK_NAME.to_owned(), over.load(Ordering::Relaxed))])
}
