//! `recorder::lock`: waits recorded as JDK events, checked with JDK 25's
//! `jfr print --json`.
//!
//! * A threshold changed while recording applies to the waits after it:
//!   the same 5 ms waits are not written under the default 20 ms, and are
//!   under `1 ms`.
//! * A condition-variable wait is a `jdk.ThreadPark` named after the
//!   condition variable (or its mutex's type), with the JDK's timeout and
//!   `until` conventions; an `RwLock` wait is a `jdk.JavaMonitorEnter`.
//! * Waits while no recording runs write nothing, into no later recording.
//! * A panic while holding a lock does not poison it (parking_lot's
//!   semantics).
//!
//! One recording per process at a time, so the scenarios run in order in
//! one test.
#![cfg(not(flightrec_loom))]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use flightrec_testkit as testkit;
use recorder::lock::{Condvar, Mutex, RwLock};
use recorder::{Recording, RecordingConfig};
use serde_json::Value;

/// `n` waits of this thread for `lock`, each behind another thread that
/// holds it for `hold`; the waits as this thread measured them.
fn contend(lock: &Arc<Mutex<u64>>, hold: Duration, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let barrier = Arc::new(Barrier::new(2));
            let holder = {
                let (lock, barrier) = (lock.clone(), barrier.clone());
                thread::spawn(move || {
                    let mut g = lock.lock();
                    barrier.wait();
                    thread::sleep(hold);
                    *g += 1;
                })
            };
            barrier.wait();
            let t0 = Instant::now();
            let g = lock.lock();
            let waited = t0.elapsed();
            drop(g);
            holder.join().unwrap();
            waited
        })
        .collect()
}

/// `Long.MIN_VALUE` (the JDK's "none") as `jfr print --json` shows a
/// nanosecond timespan and a millisecond timestamp.
const NO_TIMEOUT: &str = "PT-2562047788015215H-30M-8S";
const NO_UNTIL: &str = "-999999999-01-01T00:00+18:00";

fn over(waits: &[Duration], threshold: Duration) -> u64 {
    waits.iter().filter(|w| **w >= threshold).count() as u64
}

fn events<'a>(all: &'a Value, ty: &str) -> Vec<&'a Value> {
    all.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| &e["values"])
        .collect()
}

/// Events of `ty` per class name (`field` holds the class).
fn by_class(all: &Value, ty: &str, field: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in events(all, ty) {
        let name = e[field]["name"].as_str().unwrap_or("?").to_owned();
        *m.entry(name).or_insert(0) += 1;
    }
    m
}

fn count_of(path: &Path, ty: &str) -> u64 {
    testkit::summary(path).counts.get(ty).copied().unwrap_or(0)
}

#[test]
fn lock_waits_become_jdk_events() {
    let dir = testkit::temp_dir("lock_contention");
    let ms = Duration::from_millis;

    // No recording: nothing is timed or written.
    let before = Arc::new(Mutex::named("before", 0));
    let before_waits = contend(&before, ms(30), 2);
    assert!(over(&before_waits, ms(20)) > 0, "{before_waits:?}");

    let path = dir.join("locks.jfr");
    let rec = Recording::start(RecordingConfig::new(&path)).unwrap();

    // The default threshold (20 ms): 5 ms waits are not written ...
    let early = Arc::new(Mutex::named("early", 0));
    let early_waits = contend(&early, ms(5), 4);
    // ... and after the threshold changes, the same waits are.
    rec.set("jdk.JavaMonitorEnter", "threshold", "1 ms")
        .unwrap();
    let late = Arc::new(Mutex::named("late", 0));
    let late_waits = contend(&late, ms(5), 4);
    assert!(over(&late_waits, ms(1)) > 0, "{late_waits:?}");

    // A condition variable: one wait woken after 40 ms, one that times out.
    let flag = Arc::new(Mutex::new(false));
    let ready = Arc::new(Condvar::named("ready"));
    let notifier = {
        let (flag, ready) = (flag.clone(), ready.clone());
        thread::spawn(move || {
            thread::sleep(ms(40));
            *flag.lock() = true;
            ready.notify_one();
        })
    };
    let mut g = flag.lock();
    let t0 = Instant::now();
    ready.wait_while(&mut g, |set| !*set);
    let woken_after = t0.elapsed();
    drop(g);
    notifier.join().unwrap();
    let quiet = Condvar::new();
    let mut g = flag.lock();
    let timed_out = quiet.wait_for(&mut g, ms(30)).timed_out();
    drop(g);
    assert!(timed_out);
    assert!(woken_after >= ms(20), "{woken_after:?}");

    // A reader behind a writer.
    let table = Arc::new(RwLock::named("table", 0u64));
    let barrier = Arc::new(Barrier::new(2));
    let writer = {
        let (table, barrier) = (table.clone(), barrier.clone());
        thread::spawn(move || {
            let mut w = table.write();
            barrier.wait();
            thread::sleep(ms(30));
            *w += 1;
        })
    };
    barrier.wait();
    let t0 = Instant::now();
    assert_eq!(*table.read(), 1);
    let read_wait = t0.elapsed();
    writer.join().unwrap();

    rec.stop().unwrap();

    // Stopped: waits are not timed, and the next recording has none.
    let after = Arc::new(Mutex::named("after", 0));
    let after_waits = contend(&after, ms(30), 2);
    assert!(over(&after_waits, ms(20)) > 0, "{after_waits:?}");
    let empty = dir.join("empty.jfr");
    Recording::start(RecordingConfig::new(&empty))
        .unwrap()
        .stop()
        .unwrap();
    assert_eq!(count_of(&empty, "jdk.JavaMonitorEnter"), 0);
    assert_eq!(count_of(&empty, "jdk.ThreadPark"), 0);

    let all = testkit::print_json(&path);
    let enter = by_class(&all, "jdk.JavaMonitorEnter", "monitorClass");
    let mut expected = BTreeMap::new();
    for (name, n) in [
        ("early", over(&early_waits, ms(20))),
        ("late", over(&late_waits, ms(1))),
        ("table", u64::from(read_wait >= ms(1))),
    ] {
        if n > 0 {
            expected.insert(name.to_owned(), n);
        }
    }
    assert_eq!(
        enter, expected,
        "early {early_waits:?} late {late_waits:?} read {read_wait:?}"
    );
    for e in events(&all, "jdk.JavaMonitorEnter") {
        let top = &e["stackTrace"]["frames"][0]["method"]["name"];
        // The function that took the lock (`contend`'s closure, or the
        // test for the read), never the wrapper's own frames.
        assert!(
            top == "{closure#0}" || top == "lock_waits_become_jdk_events",
            "top frame {top}"
        );
        assert!(
            e["previousOwner"]["javaName"].is_string() || e["previousOwner"]["osName"].is_string(),
            "no previousOwner: {e}"
        );
    }

    // Both condition-variable waits reached the default 20 ms.
    let parks = events(&all, "jdk.ThreadPark");
    let park_classes = by_class(&all, "jdk.ThreadPark", "parkedClass");
    assert_eq!(
        park_classes,
        BTreeMap::from([("bool".to_owned(), 1), ("ready".to_owned(), 1)]),
        "{parks:?}"
    );
    for p in &parks {
        if p["parkedClass"]["name"] == "bool" {
            // wait_for: a relative timeout in ns, no deadline.
            assert_eq!(p["timeout"], "PT0.03S", "{p}");
            assert_eq!(p["until"], NO_UNTIL, "{p}");
        } else {
            assert_eq!(p["timeout"], NO_TIMEOUT, "{p}");
            assert_eq!(p["until"], NO_UNTIL, "{p}");
        }
        // The stack starts at the function that waited.
        let top = &p["stackTrace"]["frames"][0]["method"]["name"];
        assert_eq!(top, "lock_waits_become_jdk_events", "{p}");
    }
}

/// The constructors are `const`, as parking_lot's.
static STATIC_LOCK: Mutex<u64> = Mutex::named("static", 0);
static STATIC_CONDVAR: Condvar = Condvar::new();

#[test]
fn a_panic_does_not_poison() {
    *STATIC_LOCK.lock() += 1;
    assert!(!STATIC_CONDVAR.notify_one());
    assert_eq!(STATIC_LOCK.name(), "static");
    assert_eq!(Mutex::new(vec![0u8]).name(), "alloc::vec::Vec<u8>");
    let lock = Arc::new(Mutex::named("poison", vec![1]));
    let l = lock.clone();
    let r = thread::spawn(move || {
        let mut g = l.lock();
        g.push(2);
        panic!("while holding the lock");
    })
    .join();
    assert!(r.is_err());
    // parking_lot's semantics: no poisoning, the data as the panic left it.
    assert_eq!(*lock.lock(), vec![1, 2]);
    let rw = RwLock::new(5);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _w = rw.write();
        panic!("while writing");
    }));
    assert_eq!(*rw.read(), 5);
}
