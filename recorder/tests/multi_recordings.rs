//! Several recordings at once (issues 13 and 16): the union of their
//! settings applies while they overlap, and each file holds the chunks of
//! its own recording's life.
//!
//! The rule checked: starting or stopping a recording while another runs
//! rotates, so a recording's file holds exactly the events committed
//! between its start and its stop, each selected by the union of the
//! settings of the recordings live when it was committed. Counts are read
//! back with JDK 25's `jfr`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use flightrec_derive::Event;
use recorder::{Event, Recording, RecordingConfig, Settings, StartError};

/// The tests start recordings of their own: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[derive(Event)]
#[event(crate = "recorder", name = "multi.X", label = "X")]
struct X {
    phase: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "multi.Y", label = "Y")]
struct Y {
    phase: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "multi.Slow", label = "Slow", duration)]
struct Slow {
    phase: u64,
    long: bool,
}

/// One X, one Y, one short and one 30 ms `Slow`, tagged with `phase`.
fn emit(phase: u64) {
    X { phase }.commit();
    Y { phase }.commit();
    Slow::begin().commit(&Slow { phase, long: false });
    let t = Slow::begin();
    std::thread::sleep(Duration::from_millis(30));
    t.commit(&Slow { phase, long: true });
}

/// `(type, phase, long)` → count of the test's events in `path`.
fn events(path: &Path) -> BTreeMap<(String, u64, bool), u64> {
    let mut out = BTreeMap::new();
    for e in flightrec_testkit::print_json(path).as_array().unwrap() {
        let ty = e["type"].as_str().unwrap();
        if !ty.starts_with("multi.") {
            continue;
        }
        let v = &e["values"];
        let key = (
            ty.to_owned(),
            v["phase"].as_u64().unwrap(),
            v["long"].as_bool().unwrap_or(false),
        );
        *out.entry(key).or_default() += 1;
    }
    out
}

fn expect(items: &[(&str, u64, bool)]) -> BTreeMap<(String, u64, bool), u64> {
    items
        .iter()
        .map(|(t, p, l)| ((format!("multi.{t}"), *p, *l), 1))
        .collect()
}

/// `jdk.ActiveRecording` names in `path`, sorted and deduplicated.
fn active_recordings(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = flightrec_testkit::print_json(path)
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.ActiveRecording")
        .map(|e| e["values"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn overlapping_recordings_each_hold_their_own_window_under_the_union() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("multi_recordings");
    let (fa, fb) = (dir.join("a.jfr"), dir.join("b.jfr"));
    // a: X on, Y off, Slow over 10 ms. b: X off, Y on, every Slow.
    let mut sa = Settings::new();
    sa.enable("multi.X", true)
        .enable("multi.Y", false)
        .threshold("multi.Slow", Duration::from_millis(10));
    let mut sb = Settings::new();
    sb.enable("multi.X", false)
        .enable("multi.Y", true)
        .threshold("multi.Slow", Duration::ZERO);

    emit(0); // nothing records
    let a = Recording::start(RecordingConfig::new(&fa).name("a").settings(sa)).unwrap();
    emit(1); // a alone
    // A second recording with a's name is refused, naming it.
    match Recording::start(RecordingConfig::repository_only().name("a").disk(false)) {
        Err(StartError::NameInUse { name, id }) => {
            assert_eq!((name.as_str(), id), ("a", a.id()));
        }
        other => panic!("expected NameInUse, got {other:?}"),
    }
    let b = Recording::start(RecordingConfig::new(&fb).name("b").settings(sb)).unwrap();
    assert_ne!(a.id(), b.id());
    emit(2); // both: the union (X, Y, every Slow)
    let sa = a.stop().unwrap();
    assert_eq!(sa.destination.as_deref(), Some(fa.as_path()));
    emit(3); // b alone, still recording
    b.stop().unwrap();
    emit(4); // nothing records

    let slow = |p, l| ("Slow", p, l);
    assert_eq!(
        events(&fa),
        expect(&[
            ("X", 1, false),
            slow(1, true),
            ("X", 2, false),
            ("Y", 2, false),
            slow(2, false),
            slow(2, true),
        ]),
        "a: its own settings alone, then the union"
    );
    assert_eq!(
        events(&fb),
        expect(&[
            ("X", 2, false),
            ("Y", 2, false),
            slow(2, false),
            slow(2, true),
            ("Y", 3, false),
            slow(3, false),
            slow(3, true),
        ]),
        "b: the union, then its own settings alone"
    );
    assert_eq!(active_recordings(&fa), ["a", "b"]);
    assert_eq!(active_recordings(&fb), ["a", "b"]);
    flightrec_testkit::assert_prints(&fa);
    flightrec_testkit::assert_prints(&fb);
}

#[test]
fn a_set_on_one_recording_leaves_the_other_and_a_dump_is_its_own() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("multi_recordings_set");
    let (fa, fb, dump) = (dir.join("a.jfr"), dir.join("b.jfr"), dir.join("d.jfr"));
    let mut off = Settings::new();
    off.enable("multi.X", false)
        .enable("multi.Y", false)
        .enable("multi.Slow", false);
    let a = Recording::start(
        RecordingConfig::new(&fa)
            .name("set-a")
            .disk(false)
            .settings(off.clone()),
    )
    .unwrap();
    let b = Recording::start(RecordingConfig::new(&fb).name("set-b").settings(off)).unwrap();
    emit(10); // neither enables anything
    b.set("multi.Y", "enabled", "true").unwrap();
    emit(11); // Y through b's setting
    a.dump(&dump).unwrap();
    b.set("multi.Y", "enabled", "false").unwrap();
    emit(12);
    b.stop().unwrap();
    a.stop().unwrap();
    assert_eq!(events(&fa), expect(&[("Y", 11, false)]));
    assert_eq!(events(&fb), expect(&[("Y", 11, false)]));
    assert_eq!(events(&dump), expect(&[("Y", 11, false)]));
}
