//! The write path's contracts, each checked in the file: run-time event
//! types, settings changed while recording, reentrant emits, bounded memory
//! with counted losses, and an empty recording that is still a valid file.
//! One recording at a time per process, so the scenarios run in one test
//! (buffer sizes are fixed by the first recording of a process, so the
//! small pool of the bounded-memory case comes first).

use std::path::Path;
use std::time::Duration;

use jfr_format::read::{RecordingFile, read_recording};
use recorder::{
    DefaultSettings, Event, EventKind, EventType, EventTypeBuilder, EventTypeInfo, FieldInfo,
    FieldKind, FieldValue, FieldWriter, LossCause, Recording, RecordingConfig, Value,
};

fn read(path: &Path) -> RecordingFile {
    read_recording(&std::fs::read(path).unwrap()).unwrap()
}

fn count(file: &RecordingFile, name: &str) -> usize {
    file.events().filter(|e| &*e.type_name == name).count()
}

static SPAN_INFO: EventTypeInfo = EventTypeInfo {
    name: "test.Span",
    label: Some("Span"),
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Duration,
    defaults: DefaultSettings {
        enabled: true,
        threshold: Duration::ZERO,
        stack_trace: false,
    },
    fields: &[FieldInfo::new("n", FieldKind::U64)],
};
static SPAN: EventType = EventType::new(&SPAN_INFO);
struct Span(u64);
impl Event for Span {
    fn event_type() -> &'static EventType {
        &SPAN
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        self.0.write(w);
    }
}

/// A field whose writing commits another event: the nested commit must be
/// dropped (and counted), the outer event written whole.
struct Nested;
impl FieldValue for Nested {
    const KIND: FieldKind = FieldKind::U64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        Span(999).commit();
        w.uint(42);
    }
}
static OUTER_INFO: EventTypeInfo = EventTypeInfo {
    name: "test.Outer",
    label: None,
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Instant,
    defaults: DefaultSettings::DEFAULT,
    fields: &[FieldInfo::new("v", FieldKind::U64)],
};
static OUTER: EventType = EventType::new(&OUTER_INFO);
struct Outer;
impl Event for Outer {
    fn event_type() -> &'static EventType {
        &OUTER
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        Nested.write(w);
    }
}

#[test]
fn write_path_contracts() {
    let dir = flightrec_testkit::temp_dir("write_path");

    // Run-time types: declared, committed, typed values checked.
    let dynamic = EventTypeBuilder::new("test.Dynamic")
        .label("Dynamic")
        .field("count", FieldKind::I32)
        .field("name", FieldKind::String)
        .field("ok", FieldKind::Bool)
        .build()
        .unwrap();
    assert!(EventTypeBuilder::new("bad..name").build().is_err());
    assert!(
        EventTypeBuilder::new("test.X")
            .field("stackTrace", FieldKind::I32)
            .build()
            .is_err()
    );

    let path = dir.join("contracts.jfr");
    // The pool holds two buffers: the recorder's own system events would
    // compete for them, and every drop here must be a flood event's.
    let mut quiet = recorder::Settings::new();
    for name in recorder::periodic::system_event_names() {
        quiet.enable(name, false);
    }
    let rec = Recording::start(
        RecordingConfig::new(&path)
            .settings(quiet)
            .thread_buffer_size(4096)
            // Two 4 KiB buffers after the quarter kept for constant pools.
            .max_memory(12288)
            .flush_interval(Duration::from_secs(3600)),
    )
    .unwrap();
    dynamic.commit_values(&[Value::Int(7), Value::Str(Some("seven")), Value::Bool(true)]);
    dynamic.commit_values(&[
        Value::Str(Some("wrong kind")),
        Value::Int(1),
        Value::Bool(true),
    ]);
    assert_eq!(rec.losses().events(LossCause::InvalidValues), 1);

    // Settings changed while recording: disabled, then a threshold.
    Span(1).commit();
    rec.set("test.Span", "enabled", "false").unwrap();
    Span(2).commit();
    rec.set("test.Span", "enabled", "true").unwrap();
    rec.set("test.Span", "threshold", "1 h").unwrap();
    let t = Span::begin();
    assert!(!t.commit(&Span(3)), "shorter than the threshold");
    rec.set("test.Span", "threshold", "0").unwrap();
    let t = Span::begin();
    assert!(t.commit(&Span(4)));
    assert!(rec.set("test.Span", "colour", "red").is_err());

    // Reentrant commit from inside a commit: dropped and counted.
    Outer.commit();
    assert_eq!(rec.losses().events(LossCause::Reentrant), 1);

    // Bounded memory: a few 4 KiB blocks, no periodic flush for an hour:
    // a flood from this thread fills them faster than the recorder (woken
    // per sealed block) drains them, and the rest is dropped and counted.
    // Megabytes of it, so the recorder's chunk writes, not only its
    // wake-ups, fall inside the flood: 10 000 events were sometimes all
    // drained in time.
    const FLOOD: u64 = 400_000;
    for n in 0..FLOOD {
        Span(1000 + n).commit();
    }
    let exhausted = rec.losses().events(LossCause::PoolExhausted);
    assert!(exhausted > 0);
    let summary = rec.stop().unwrap();

    let file = read(&path);
    assert_eq!(count(&file, "test.Dynamic"), 1);
    let d = file
        .events()
        .find(|e| &*e.type_name == "test.Dynamic")
        .unwrap();
    assert_eq!(d.get("count").and_then(|v| v.as_i64()), Some(7));
    assert_eq!(d.get("name").and_then(|v| v.as_str()), Some("seven"));
    let spans: Vec<i64> = file
        .events()
        .filter(|e| &*e.type_name == "test.Span")
        .map(|e| e.get("n").and_then(|v| v.as_i64()).unwrap())
        .collect();
    assert!(
        spans.starts_with(&[1, 4]),
        "{:?}",
        &spans[..spans.len().min(4)]
    );
    assert!(!spans.contains(&2) && !spans.contains(&3) && !spans.contains(&999));
    let outer = file
        .events()
        .find(|e| &*e.type_name == "test.Outer")
        .unwrap();
    assert_eq!(outer.get("v").and_then(|v| v.as_i64()), Some(42));
    // Every committed-or-dropped flood event is accounted for.
    let written = spans.iter().filter(|&&n| n >= 1000).count() as u64;
    assert_eq!(written + exhausted, FLOOD);
    // The losses are in the file, per cause, as the JDK reads them.
    let lost: u64 = file
        .events()
        .filter(|e| &*e.type_name == "flightrec.EventsLost")
        .map(|e| e.get("events").and_then(|v| v.as_i64()).unwrap() as u64)
        .sum();
    assert_eq!(lost, summary.losses.total_events());
    assert_eq!(lost, exhausted + 2);
    let jdk = flightrec_testkit::summary(&path);
    assert_eq!(jdk.counts.get("flightrec.EventsLost").copied(), Some(3));
    assert_eq!(
        jdk.counts.get("test.Span").copied(),
        Some(spans.len() as u64)
    );

    // An empty recording is a valid file.
    let empty = dir.join("empty.jfr");
    Recording::start(RecordingConfig::new(&empty))
        .unwrap()
        .stop()
        .unwrap();
    let s = flightrec_testkit::summary(&empty);
    assert_eq!(s.chunks, 1);
    assert_eq!(read(&empty).chunks.len(), 1);
}
