//! Issue 19's lock half, end to end: `alloc_lock` runs threads contending
//! on the lock `orders` with holds far over and far under the 20 ms
//! threshold and prints how many of its waits reached it; JDK 25's `jfr
//! view contention-by-site` shows the waiting site with that count (the
//! issue allows ±10 %), and `jfr print --json` shows every event with the
//! lock's name as its class, a duration at or over the threshold, the
//! thread that held the lock before, and one address.
//!
//! Needs `cargo build --release --examples` first.

use std::collections::BTreeSet;

use flightrec_testkit::{self as testkit, run_example};
use serde_json::Value;

#[test]
fn contention_by_site_counts_the_waits_over_the_threshold() {
    let dir = testkit::temp_dir("alloc_lock_contention");
    let path = dir.join("alloc_lock.jfr");
    let printed = run_example(
        "alloc_lock",
        &["--out", path.to_str().unwrap(), "--seconds", "5"],
    );
    let waits = printed["contended"]["orders"]
        .as_u64()
        .unwrap_or_else(|| panic!("no `orders` count: {printed}"));
    // 5 s of rounds of about 70 ms, two waiters behind every third hold.
    assert!(waits >= 40, "too few waits for a 5 s run: {waits}");
    testkit::assert_prints(&path);

    // The view: the waiting function's stack, with the example's count.
    let view = testkit::view("contention-by-site", &path);
    let row = view
        .lines()
        .find(|l| l.contains("take_order"))
        .unwrap_or_else(|| panic!("no take_order row in:\n{view}"));
    let count: u64 = row
        .split_whitespace()
        .find_map(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no count in `{row}`"));
    let diff = count.abs_diff(waits) as f64;
    assert!(
        diff <= 0.10 * waits as f64,
        "contention-by-site counts {count}, the example {waits}:\n{view}"
    );
    let by_class = testkit::view("contention-by-class", &path);
    assert!(
        by_class
            .lines()
            .any(|l| l.trim_start().starts_with("orders ")),
        "no `orders` row in:\n{by_class}"
    );

    // Exact: every event, field by field.
    let all = testkit::print_json(&path);
    let events: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.JavaMonitorEnter")
        .map(|e| &e["values"])
        .collect();
    assert_eq!(events.len() as u64, waits, "events vs the example's waits");
    let mut addresses = BTreeSet::new();
    for e in &events {
        assert_eq!(e["monitorClass"]["name"], "orders", "{e}");
        let d = testkit::json_duration_nanos(e["duration"].as_str().unwrap()) as u64;
        assert!(d >= 20_000_000, "a wait under the threshold: {d} ns");
        let me = e["eventThread"]["javaName"].as_str().unwrap();
        assert!(me.starts_with("order-waiter-"), "{me}");
        let owner = e["previousOwner"]["javaName"]
            .as_str()
            .unwrap_or_else(|| panic!("no previousOwner: {e}"));
        assert_ne!(owner, me, "a thread waited behind itself");
        assert!(
            owner == "main" || owner.starts_with("order-waiter-"),
            "{owner}"
        );
        let top = &e["stackTrace"]["frames"][0]["method"];
        assert_eq!(top["name"], "take_order", "top frame: {top}");
        addresses.insert(e["address"].as_u64().unwrap());
    }
    assert_eq!(addresses.len(), 1, "one lock, one address: {addresses:?}");
}
