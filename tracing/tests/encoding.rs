//! Event fields encoded as they are visited (the layer's fast path) give
//! exactly what the sorted path gives: later values converted to the types
//! fixed at first use or counted, skipped fields null / zero, `Debug`
//! values formatted, values arriving out of field order still in their
//! fields; and a span's exit writes the values recorded while it was
//! entered.

use recorder::{Recording, RecordingConfig};
use serde_json::{Value as Json, json};
use tracing::field::{Empty, Value, debug};
use tracing_core::callsite::DefaultCallsite;
use tracing_core::field::FieldSet;
use tracing_core::{Kind, Level, Metadata, identify_callsite};
use tracing_subscriber::prelude::*;

#[inline(never)]
fn conv(a: &dyn Value, b: &dyn Value, c: &dyn Value) {
    tracing::info!(name: "conv", target: "enc", a, b, c);
}

#[inline(never)]
fn gap(b: Option<u64>) {
    tracing::info!(name: "gap", target: "enc", a = 1u64, b, c = 3i64, d = Empty);
}

static OOO_CS: DefaultCallsite = DefaultCallsite::new(&OOO);
static OOO: Metadata<'static> = Metadata::new(
    "ooo",
    "enc",
    Level::INFO,
    None,
    None,
    None,
    FieldSet::new(&["a", "b"], identify_callsite!(&OOO_CS)),
    Kind::EVENT,
);

/// An event whose values come in the order `b`, `a` (as a hand-built
/// `ValueSet` may give them), the way the `tracing` macros dispatch one.
fn out_of_order(a: u64, b: u64) {
    if OOO_CS.interest().is_never() {
        return;
    }
    let fields = OOO.fields();
    let (fa, fb) = (fields.field("a").unwrap(), fields.field("b").unwrap());
    let values = [(&fb, Some(&b as &dyn Value)), (&fa, Some(&a as &dyn Value))];
    let set = fields.value_set(&values);
    tracing::dispatcher::get_default(|d| {
        if d.enabled(&OOO) {
            tracing_core::Event::dispatch(&OOO, &set);
        }
    });
}

fn values_of(json: &Json, ty: &str, keys: &[&str]) -> Vec<Vec<Json>> {
    json.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| keys.iter().map(|k| e["values"][*k].clone()).collect())
        .collect()
}

#[test]
fn values_encoded_as_visited_match_the_types_fixed_at_first_use() {
    tracing_subscriber::registry()
        .with(flightrec_tracing::layer())
        .init();
    let dir = flightrec_testkit::temp_dir("tracing_encoding");
    let out = dir.join("encoding.jfr");
    let rec = Recording::start(RecordingConfig::new(&out)).expect("start");

    // Fixes a: long, b: String, c: unsigned long.
    conv(&5i64, &"x", &1u64);
    // u64 into long, a number into String, -1 into unsigned: 0, counted.
    conv(&7u64, &3i64, &-1i64);
    // f64 into long: 0, counted; Debug text; a bool into String.
    conv(&1.5f64, &debug(vec![1, 2]), &9u64);
    conv(&i64::MIN, &true, &u64::MAX);
    // Text into a number field: 0, counted.
    conv(&"no", &"y", &debug("no"));

    gap(Some(2)); // d is Empty: a String, null
    gap(None); // b skipped: 0

    out_of_order(1, 2); // the type's first event: sorted
    out_of_order(3, 4); // abandoned as visited, then sorted

    let span = tracing::info_span!(target: "enc", "rec", v = Empty, w = 1u64);
    {
        let _e = span.enter();
        span.record("v", 5u64);
        span.record("w", 6u64);
    }
    drop(span);
    rec.stop().expect("stop");

    let stats = flightrec_tracing::stats();
    assert_eq!(stats.mismatched_values, 4, "{stats:?}");
    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("tracing.enc.conv"), Some(&5));
    assert_eq!(summary.counts.get("tracing.enc.gap"), Some(&2));
    assert_eq!(summary.counts.get("tracing.enc.ooo"), Some(&2));
    assert_eq!(summary.counts.get("tracing.enc.rec"), Some(&1));

    let json = flightrec_testkit::print_json(&out);
    assert_eq!(
        values_of(&json, "tracing.enc.conv", &["a", "b", "c"]),
        [
            [json!(5), json!("x"), json!(1)],
            [json!(7), json!("3"), json!(0)],
            [json!(0), json!("[1, 2]"), json!(9)],
            [json!(i64::MIN), json!("true"), json!(u64::MAX)],
            [json!(0), json!("y"), json!(0)],
        ]
    );
    assert_eq!(
        values_of(&json, "tracing.enc.gap", &["a", "b", "c", "d"]),
        [
            [json!(1), json!(2), json!(3), Json::Null],
            [json!(1), json!(0), json!(3), Json::Null],
        ]
    );
    assert_eq!(
        values_of(&json, "tracing.enc.ooo", &["a", "b"]),
        [[json!(1), json!(2)], [json!(3), json!(4)]]
    );
    assert_eq!(
        values_of(&json, "tracing.enc.rec", &["v", "w"]),
        [[json!("5"), json!(6)]]
    );
}
