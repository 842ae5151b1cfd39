//! Span entries find their span's state without the registry: spans
//! entered on the thread that made them, on other threads, made one after
//! another as earlier ones close (`tracing` reuses ids), and more than the
//! per-thread cache holds, each give duration events with their own
//! `spanId`, `parentId` and values.

use std::collections::{BTreeMap, BTreeSet};

use recorder::{Recording, RecordingConfig};
use serde_json::Value as Json;
use tracing_subscriber::prelude::*;

#[test]
fn entries_write_their_own_span_state() {
    tracing_subscriber::registry()
        .with(flightrec_tracing::layer())
        .init();
    let dir = flightrec_testkit::temp_dir("tracing_span_cache");
    let out = dir.join("spans.jfr");
    let rec = Recording::start(RecordingConfig::new(&out)).expect("start");

    // One after another, each closed before the next is made: 300 spans,
    // entered twice each.
    for n in 0..300u64 {
        let s = tracing::info_span!(target: "cache", "seq", n);
        drop(s.enter());
        drop(s.enter());
    }
    // 200 open at once (more than the cache's ways), entered in reverse.
    let many: Vec<_> = (0..200u64)
        .map(|n| tracing::info_span!(target: "cache", "many", n))
        .collect();
    for s in many.iter().rev() {
        drop(s.enter());
    }
    // Made here, entered on another thread, inside a parent made there.
    let here = tracing::info_span!(target: "cache", "here", n = 7u64);
    std::thread::scope(|t| {
        t.spawn(|| {
            let there = tracing::info_span!(target: "cache", "there", n = 8u64);
            let _p = there.enter();
            drop(here.enter());
            // After the inner exit, events belong to `there` again.
            tracing::info!(name: "inside", target: "cache", k = 1u64);
        });
    });
    tracing::info!(name: "outside", target: "cache", k = 2u64);
    drop(here);
    drop(many);
    rec.stop().expect("stop");

    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("tracing.cache.seq"), Some(&600));
    assert_eq!(summary.counts.get("tracing.cache.many"), Some(&200));
    assert_eq!(summary.counts.get("tracing.cache.here"), Some(&1));
    assert_eq!(summary.counts.get("tracing.cache.there"), Some(&1));

    let json = flightrec_testkit::print_json(&out);
    let events = json.as_array().unwrap();
    let of = |ty: &str| -> Vec<&Json> { events.iter().filter(|e| e["type"] == ty).collect() };
    let num = |e: &Json, k: &str| e["values"][k].as_u64().unwrap();

    // Each `seq` span: two entries with one spanId and its own n.
    let mut seq: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for e in of("tracing.cache.seq") {
        seq.entry(num(e, "spanId")).or_default().insert(num(e, "n"));
        assert_eq!(num(e, "parentId"), 0);
    }
    assert_eq!(seq.len(), 300);
    let ns: BTreeSet<u64> = seq.values().map(|v| *v.iter().next().unwrap()).collect();
    assert!(seq.values().all(|v| v.len() == 1));
    assert_eq!(ns, (0..300).collect());

    let many: BTreeMap<u64, u64> = of("tracing.cache.many")
        .into_iter()
        .map(|e| (num(e, "spanId"), num(e, "n")))
        .collect();
    assert_eq!(many.len(), 200);
    assert_eq!(
        many.values().copied().collect::<BTreeSet<_>>(),
        (0..200).collect()
    );

    let (here, there) = (of("tracing.cache.here")[0], of("tracing.cache.there")[0]);
    assert_eq!(num(here, "n"), 7);
    assert_eq!(num(there, "n"), 8);
    // `here` was made at the root: its parent is its own, not the span
    // entered around it on the other thread.
    assert_eq!(num(here, "parentId"), 0);
    assert_ne!(num(here, "spanId"), num(there, "spanId"));
    let (inside, outside) = (of("tracing.cache.inside"), of("tracing.cache.outside"));
    assert_eq!((inside.len(), outside.len()), (1, 1));
    assert_eq!(num(inside[0], "parentId"), num(there, "spanId"));
    assert_eq!(num(outside[0], "parentId"), 0);
}
