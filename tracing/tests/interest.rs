//! The layer follows the settings in force: callsites hit before a
//! recording starts, while their type is disabled, and after the stop are
//! not recorded (the interest cache is rebuilt at each change), and the
//! rest are, exactly; field types fixed at first use convert later values
//! or count them.

use recorder::{Recording, RecordingConfig, Settings};
use tracing_subscriber::prelude::*;

#[inline(never)]
fn tick(round: u64) {
    tracing::info!(name: "tick", target: "interest::probe", round, "tick");
}

#[inline(never)]
fn typed(v: &dyn Fn(&tracing::Span)) {
    let span = tracing::info_span!(target: "interest::probe", "typed", n = tracing::field::Empty, x = 1u64);
    v(&span);
    let _e = span.enter();
}

#[test]
fn interest_follows_start_settings_and_stop() {
    tracing_subscriber::registry()
        .with(flightrec_tracing::layer())
        .init();
    let dir = flightrec_testkit::temp_dir("tracing_interest");
    let out = dir.join("interest.jfr");

    tick(0); // nothing records: Interest::never
    assert_eq!(
        flightrec_tracing::callsite_types()
            .iter()
            .map(|t| t.type_name)
            .collect::<Vec<_>>(),
        ["tracing.interest.probe.tick"]
    );
    let rec = Recording::start(RecordingConfig::new(&out)).expect("start");
    for r in 0..5 {
        tick(r);
    }
    let mut off = Settings::new();
    off.enable("tracing.interest.probe.tick", false);
    rec.apply_settings(off);
    for r in 0..7 {
        tick(r);
    }
    rec.apply_settings(Settings::new());
    for r in 0..3 {
        tick(r);
    }
    // `n` is Empty at creation: a String; `x` is u64, so -1 cannot be kept.
    typed(&|s| {
        s.record("n", 42u64);
    });
    typed(&|s| {
        s.record("x", -1i64);
        s.record("n", "text");
    });
    rec.stop().expect("stop");
    tick(99);

    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("tracing.interest.probe.tick"), Some(&8));
    assert_eq!(summary.counts.get("tracing.interest.probe.typed"), Some(&2));
    let stats = flightrec_tracing::stats();
    assert_eq!(stats.mismatched_values, 1);
    assert_eq!(stats.rejected_types, 0);

    let json = flightrec_testkit::print_json(&out);
    let typed: Vec<_> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tracing.interest.probe.typed")
        .map(|e| (e["values"]["n"].clone(), e["values"]["x"].clone()))
        .collect();
    assert_eq!(
        typed,
        [
            (serde_json::json!("42"), serde_json::json!(1)),
            (serde_json::json!("text"), serde_json::json!(0)),
        ]
    );
    let rounds: Vec<u64> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tracing.interest.probe.tick")
        .map(|e| e["values"]["round"].as_u64().unwrap())
        .collect();
    assert_eq!(rounds, [0, 1, 2, 3, 4, 0, 1, 2]);
}
