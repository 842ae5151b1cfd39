//! Issue 20: the label table is bounded. Label sets past
//! `labels::MAX_CONTEXTS` get context 0 and are counted as losses, which
//! the file reports (`flightrec.EventsLost`, cause "labels dropped"); the
//! sets already interned keep their ids. (Its own test binary: it fills
//! the process-wide table.)

use recorder::labels::{self, LabelsSnapshot, MAX_CONTEXTS};
use recorder::{LossCause, Recording, RecordingConfig};

#[test]
fn sets_past_the_bound_get_no_id_and_are_counted_in_the_file() {
    let dir = flightrec_testkit::temp_dir("labels_bound");
    let out = dir.join("bound.jfr");
    let rec = Recording::start(RecordingConfig::new(&out)).unwrap();
    const EXTRA: usize = 7;
    // Sets {a=i%128, b=i/128}: MAX_CONTEXTS + EXTRA sets from few strings,
    // so the context bound is the one reached.
    let mut ids = Vec::new();
    for i in 0..MAX_CONTEXTS + EXTRA {
        let (a, b) = ((i % 128).to_string(), (i / 128).to_string());
        let _g = labels::scope(&[("a", &a), ("b", &b)]);
        ids.push(labels::current());
    }
    assert!(ids[..MAX_CONTEXTS].iter().all(|&id| id != 0));
    let distinct: std::collections::BTreeSet<u64> = ids[..MAX_CONTEXTS].iter().copied().collect();
    assert_eq!(distinct.len(), MAX_CONTEXTS, "each set its own id");
    assert_eq!(&ids[MAX_CONTEXTS..], [0; EXTRA], "no room: no labels");
    // A known set still resolves, with the id it had.
    {
        let _g = labels::scope(&[("b", "0"), ("a", "5")]);
        assert_eq!(labels::current(), ids[5]);
    }
    assert_eq!(labels::current(), 0);
    let snap = LabelsSnapshot::decode(&labels::snapshot().encode()).unwrap();
    assert_eq!(snap.contexts.len(), MAX_CONTEXTS);
    assert_eq!(snap.labels_of(ids[300]).unwrap(), [("a", "44"), ("b", "2")]);

    let summary = rec.stop().unwrap();
    let _ = summary;
    let mut dropped = 0;
    let cause = LossCause::LabelsDropped.name();
    for e in flightrec_testkit::print_json(&out).as_array().unwrap() {
        if e["type"] == "flightrec.EventsLost" && e["values"]["cause"] == cause {
            dropped += e["values"]["events"].as_u64().unwrap();
        }
    }
    assert_eq!(
        dropped, EXTRA as u64,
        "every set that did not fit, counted once"
    );
}
