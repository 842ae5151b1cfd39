//! `jdk.ActiveSetting` reports the settings in force while each chunk's
//! events were recorded, the last chunk included (issue 12: the stop used
//! to turn events off before the last chunk was written, so every type read
//! `enabled=false`), and times print as given (`2 us`, not `1999 ns`).

use std::collections::BTreeMap;
use std::time::Duration;

use flightrec_derive::Event;
use recorder::{Event, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Slow", label = "Slow", duration)]
struct Slow {
    n: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.Mark", label = "Mark")]
struct Mark {
    n: u64,
}

/// (event type id, setting) → value of every `jdk.ActiveSetting` in `chunk`.
fn active_settings(chunk: &std::path::Path) -> BTreeMap<(i64, String), String> {
    let events = flightrec_testkit::print_json(chunk);
    let mut out = BTreeMap::new();
    for e in events.as_array().unwrap() {
        if e["type"] != "jdk.ActiveSetting" {
            continue;
        }
        let v = &e["values"];
        out.insert(
            (
                v["id"].as_i64().unwrap(),
                v["name"].as_str().unwrap().to_owned(),
            ),
            v["value"].as_str().unwrap().to_owned(),
        );
    }
    out
}

#[test]
fn the_last_chunk_reports_the_settings_given() {
    let dir = flightrec_testkit::temp_dir("active_settings");
    let out = dir.join("rec.jfr");
    let mut settings = Settings::new();
    settings
        .threshold("test.Slow", Duration::from_micros(2))
        .stack_trace("test.Slow", true)
        .enable("test.Mark", true);
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    Slow::begin().commit(&Slow { n: 1 });
    Mark { n: 1 }.commit();
    rec.rotate().unwrap();
    Mark { n: 2 }.commit();
    rec.set("test.Slow", "threshold", "20 ms").unwrap();
    rec.stop().unwrap();

    let chunks = flightrec_testkit::disassemble(&out, &dir.join("chunks"));
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    // `jfr view active-settings` on the last chunk alone: the types the
    // recording enabled are enabled, with the threshold as given.
    let last = chunks.last().unwrap();
    let view = flightrec_testkit::view("active-settings", last);
    let row = |label: &str| {
        view.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row `{label}` in:\n{view}"))
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("Slow"), ["true", "20", "ms", "true"], "{view}");
    assert_eq!(row("Mark"), ["true", "false"], "{view}");

    // Exact values in each chunk: the first had the 2 us threshold (not
    // `1999 ns`), the last the 20 ms set while recording; in both, every
    // type the recording enabled reads enabled.
    for (chunk, threshold) in [(&chunks[0], "2 us"), (last, "20 ms")] {
        let all = active_settings(chunk);
        let thresholds: Vec<&String> = all
            .iter()
            .filter(|((_, name), _)| name == "threshold")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(thresholds, [threshold], "{all:?}");
        let enabled: Vec<&String> = all
            .iter()
            .filter(|((_, name), _)| name == "enabled")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(enabled, ["true", "true"], "{all:?}");
    }
}
