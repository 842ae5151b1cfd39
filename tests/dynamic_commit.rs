//! `EventType::commit_fields` / `commit_span_fields` of types declared at
//! run time, on both write paths: a type with no string field has a bound
//! on its record (its block is checked for room once and the record is
//! encoded once), a type with a string has none (encoded, and once more in
//! a fresh block when the first was full). Enough events that both cross
//! many blocks, some abandoned by their writer; JDK 25 `jfr` must read
//! exactly the events written, with their values.

use std::sync::Mutex;

use flightrec::{EventTypeBuilder, FieldKind, Recording, RecordingConfig};
use serde_json::Value as Json;

/// One recording per process at a time.
static ALONE: Mutex<()> = Mutex::new(());

const EVENTS: u64 = 30_000;

/// Writer `i` abandons its record when `i % ABANDON == 0`.
const ABANDON: u64 = 7;

fn kept() -> u64 {
    EVENTS - EVENTS.div_ceil(ABANDON)
}

fn events(all: &Json, ty: &str) -> Vec<Json> {
    all.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| e["values"].clone())
        .collect()
}

#[test]
fn bounded_and_unbounded_dynamic_records_cross_blocks_and_abandon_whole() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("dynamic_commit");
    let out = dir.join("dynamic.jfr");
    let scalar = EventTypeBuilder::new("test.dyn.Scalar")
        .field("i", FieldKind::I64)
        .field("small", FieldKind::U8)
        .field("x", FieldKind::F64)
        .field("flag", FieldKind::Bool)
        .field("c", FieldKind::Char)
        .build()
        .unwrap();
    let text = EventTypeBuilder::new("test.dyn.Text")
        .field("i", FieldKind::U64)
        .field("s", FieldKind::String)
        .build()
        .unwrap();
    let span = EventTypeBuilder::new("test.dyn.Span")
        .duration()
        .field("i", FieldKind::I32)
        .build()
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(&out)).unwrap();
    let mut written = [0u64; 3];
    for i in 0..EVENTS {
        let keep = i % ABANDON != 0;
        let n = i as i64;
        written[0] += u64::from(scalar.commit_fields(|w| {
            w.int(-n);
            w.byte((i % 256) as u8);
            w.f64(n as f64 * 0.5);
            w.bool(i % 2 == 1);
            w.char(u16::from(b'a') + (i % 26) as u16);
            keep
        }));
        written[1] += u64::from(text.commit_fields(|w| {
            w.uint(i);
            w.str(&format!("{i:>40}"));
            keep
        }));
        written[2] += u64::from(span.commit_span_fields(1000 + n, 1000 + 2 * n + 1, |w| {
            w.int(n);
            keep
        }));
    }
    rec.stop().unwrap();
    assert_eq!(written, [kept(); 3], "commit_fields' results");

    let summary = flightrec_testkit::summary(&out);
    for ty in ["test.dyn.Scalar", "test.dyn.Text", "test.dyn.Span"] {
        assert_eq!(summary.counts.get(ty).copied(), Some(kept()), "{ty}");
    }
    let all = flightrec_testkit::print_json(&out);
    let scalars = events(&all, "test.dyn.Scalar");
    let texts = events(&all, "test.dyn.Text");
    let spans = events(&all, "test.dyn.Span");
    // Each thread's events are in its buffer's order: the kept i, ascending.
    let ids = (0..EVENTS).filter(|i| i % ABANDON != 0);
    for (((i, s), t), d) in ids.zip(&scalars).zip(&texts).zip(&spans) {
        let n = i as i64;
        assert_eq!(s["i"], -n, "{s}");
        assert_eq!(s["small"], i % 256, "{s}");
        assert_eq!(s["x"].as_f64(), Some(n as f64 * 0.5), "{s}");
        assert_eq!(s["flag"], i % 2 == 1, "{s}");
        let c = char::from(b'a' + (i % 26) as u8).to_string();
        assert_eq!(s["c"], c.as_str(), "{s}");
        assert_eq!(t["i"], i, "{t}");
        assert_eq!(t["s"], format!("{i:>40}").as_str(), "{t}");
        assert_eq!(d["i"], n, "{d}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
