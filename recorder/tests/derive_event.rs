//! `#[derive(Event)]` against the real runtime types: the static descriptors
//! it generates (names, annotations, kinds, content types, setting
//! defaults). None of these tests touches the global recorder.
//!
//! `#[event(crate = "recorder")]` points the generated paths at this crate's
//! `__private` module (users go through the `flightrec` facade). The
//! descriptor is a `static` built by `EventType::new`, which is a `const fn`
//! only outside loom, hence the cfg.
#![cfg(not(flightrec_loom))]

use std::time::{Duration, SystemTime};

use flightrec_derive::Event;
use recorder::{
    ContentType, DefaultSettings, Event, EventKind, EventTypeInfo, FieldInfo, FieldKind,
    StackTrace, ThreadRef,
};

/// The descriptor's field called `name`.
#[track_caller]
fn field(info: &EventTypeInfo, name: &str) -> FieldInfo {
    *info
        .fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field `{name}` in {info:#?}"))
}

/// Field names in descriptor order.
fn names(info: &EventTypeInfo) -> Vec<&'static str> {
    info.fields.iter().map(|f| f.name).collect()
}

// === descriptors ===

#[derive(Event)]
#[event(crate = "recorder", name = "test.derive.Tick")]
struct Tick {
    seq: u64,
}

#[test]
fn instant_event_with_defaults() {
    let ty = Tick::event_type();
    assert!(std::ptr::eq(ty, Tick::event_type()), "one static per type");
    let info = ty.info();
    assert_eq!(ty.name(), "test.derive.Tick");
    assert_eq!(info.label, None);
    assert_eq!(info.description, None);
    assert!(info.category.is_empty());
    assert!(!info.experimental);
    assert_eq!(info.kind, EventKind::Instant);
    assert_eq!(info.defaults, DefaultSettings::DEFAULT);
    let seq = field(info, "seq");
    assert_eq!(
        (seq.kind, seq.content, seq.label, seq.description),
        (FieldKind::U64, None, None, None)
    );
}

/// Every container attribute, spread over two attributes.
#[derive(Event)]
#[event(crate = "recorder", name = "com.example.Request", label = "Request")]
#[event(
    description = "An HTTP request",
    category = ["Example", "HTTP"],
    experimental,
    duration,
    threshold = "10 ms",
    enabled = false,
    stack_trace
)]
struct Request<'a> {
    #[event(label = "Path", description = "Request path")]
    path: &'a str,
    host: Option<&'a str>,
    status: u16,
}

#[test]
fn duration_event_with_every_container_attribute() {
    let info = Request::event_type().info();
    assert_eq!(info.name, "com.example.Request");
    assert_eq!(info.label, Some("Request"));
    assert_eq!(info.description, Some("An HTTP request"));
    assert_eq!(info.category, ["Example", "HTTP"]);
    assert!(info.experimental);
    assert_eq!(info.kind, EventKind::Duration);
    assert_eq!(
        info.defaults,
        DefaultSettings {
            enabled: false,
            threshold: Duration::from_millis(10),
            stack_trace: true
        }
    );
    assert_eq!(names(info), ["path", "host", "status"]);
    let path = field(info, "path");
    assert_eq!(path.kind, FieldKind::String);
    assert_eq!(path.label, Some("Path"));
    assert_eq!(path.description, Some("Request path"));
    assert_eq!(field(info, "host").kind, FieldKind::String);
    assert_eq!(field(info, "status").kind, FieldKind::U16);
}

#[derive(Event)]
#[event(
    crate = "recorder",
    name = "test.derive.Thresholds",
    duration,
    threshold = "1500 us",
    category = "One"
)]
struct Thresholds;

#[test]
fn unit_struct_single_category_and_sub_unit_threshold() {
    let info = Thresholds::event_type().info();
    assert!(info.fields.is_empty());
    assert_eq!(info.category, ["One"]);
    assert_eq!(info.defaults.threshold, Duration::from_micros(1500));
    assert!(info.defaults.enabled && !info.defaults.stack_trace);
}

/// Every content attribute, and the content types that come with a type.
#[derive(Event)]
#[event(crate = "recorder", name = "test.derive.Contents")]
struct Contents<'a> {
    #[event(timespan)]
    span_default: u64,
    #[event(timespan = "ns")]
    span_ns: i64,
    #[event(timespan = "ticks")]
    span_ticks: i64,
    #[event(timespan = "ms")]
    span_ms: u32,
    #[event(timestamp)]
    at_default: i64,
    #[event(timestamp = "millis")]
    at_millis: i64,
    #[event(timestamp = "ticks")]
    at_ticks: i64,
    #[event(data_amount)]
    bytes: usize,
    #[event(data_amount = "bits")]
    bits: u64,
    #[event(percentage)]
    load: f64,
    #[event(frequency)]
    hz: f32,
    #[event(frequency)]
    hz_int: u64,
    #[event(memory_address)]
    address: usize,
    #[event(data_amount)]
    borrowed: &'a u64,
    took: Duration,
    wall: SystemTime,
    plain: i64,
}

#[test]
fn content_attributes() {
    let info = Contents::event_type().info();
    for (name, kind, content) in [
        (
            "span_default",
            FieldKind::U64,
            Some(ContentType::TimespanNanos),
        ),
        ("span_ns", FieldKind::I64, Some(ContentType::TimespanNanos)),
        (
            "span_ticks",
            FieldKind::I64,
            Some(ContentType::TimespanTicks),
        ),
        ("span_ms", FieldKind::U32, Some(ContentType::TimespanMillis)),
        (
            "at_default",
            FieldKind::I64,
            Some(ContentType::TimestampMillis),
        ),
        (
            "at_millis",
            FieldKind::I64,
            Some(ContentType::TimestampMillis),
        ),
        (
            "at_ticks",
            FieldKind::I64,
            Some(ContentType::TimestampTicks),
        ),
        ("bytes", FieldKind::U64, Some(ContentType::Bytes)),
        ("bits", FieldKind::U64, Some(ContentType::Bits)),
        ("load", FieldKind::F64, Some(ContentType::Percentage)),
        ("hz", FieldKind::F32, Some(ContentType::Frequency)),
        ("hz_int", FieldKind::U64, Some(ContentType::Frequency)),
        ("address", FieldKind::U64, Some(ContentType::MemoryAddress)),
        ("borrowed", FieldKind::U64, Some(ContentType::Bytes)),
        // From `FieldValue::CONTENT`.
        ("took", FieldKind::I64, Some(ContentType::TimespanNanos)),
        ("wall", FieldKind::I64, Some(ContentType::TimestampMillis)),
        ("plain", FieldKind::I64, None),
    ] {
        let f = field(info, name);
        assert_eq!((f.kind, f.content), (kind, content), "{name}");
        if let Some(c) = f.content {
            assert!(
                c.fits(f.kind),
                "{name}: the derive's const check must agree with `fits`"
            );
        }
    }
    assert_eq!(info.fields.len(), 17);
}

/// One field of every `FieldValue` type the recorder provides.
#[derive(Event)]
#[event(crate = "recorder", name = "test.derive.Kinds")]
struct Kinds<'a> {
    b: bool,
    c: char,
    i8: i8,
    i16: i16,
    i32: i32,
    i64: i64,
    isize: isize,
    u8: u8,
    u16: u16,
    u32: u32,
    u64: u64,
    usize: usize,
    f32: f32,
    f64: f64,
    string: String,
    str_ref: &'a str,
    opt_str: Option<&'a str>,
    opt_string: Option<String>,
    stack: StackTrace,
    thread: ThreadRef,
}

#[test]
fn field_kinds_follow_the_rust_type() {
    use FieldKind::*;
    let info = Kinds::event_type().info();
    let kinds: Vec<FieldKind> = info.fields.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            Bool, Char, I8, I16, I32, I64, I64, U8, U16, U32, U64, U64, F32, F64, String, String,
            String, String, StackTrace, Thread
        ]
    );
    assert!(info.fields.iter().all(|f| f.content.is_none()));
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.derive.Renamed")]
struct Renamed {
    #[event(rename = "bytesRead", data_amount)]
    bytes_read: u64,
    #[event(skip)]
    #[allow(dead_code)]
    scratch: Vec<u8>,
    /// A reserved name is fine once renamed.
    #[event(rename = "elapsed")]
    duration: Duration,
    r#type: u8,
}

#[test]
fn rename_skip_and_raw_identifiers() {
    let info = Renamed::event_type().info();
    assert_eq!(names(info), ["bytesRead", "elapsed", "type"]);
    assert_eq!(field(info, "bytesRead").content, Some(ContentType::Bytes));
}

#[test]
fn record_bound_sums_the_recorded_fields_kinds() {
    // u64 (9) ; Renamed: u64 (9), Duration as i64 (9), u8 (1), the skipped
    // Vec not counted; a string field makes the record unbounded.
    assert_eq!(Tick::FIELDS_MAX_LEN, Some(9));
    assert_eq!(Renamed::FIELDS_MAX_LEN, Some(19));
    assert_eq!(Kinds::FIELDS_MAX_LEN, None);
}
