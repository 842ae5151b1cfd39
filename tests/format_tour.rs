//! The format tour (`examples/format_tour`) read back by JDK 25's `jfr`:
//! every count, every value, every declared annotation, each chunk on its
//! own and all of them together.

#[allow(dead_code)] // The example uses the parts these tests do not.
#[path = "../examples/format_tour/tour.rs"]
mod tour;

#[path = "format_tour/expect.rs"]
mod expect;
#[path = "format_tour/java_fmt.rs"]
mod java_fmt;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use flightrec::jfr_format::schema::ANNOTATION_SUPER_TYPE;
use flightrec::jfr_format::write::header::{
    ChunkHeader, FLAG_COMPRESSED_INTS, FLAG_FINAL_CHUNK, HEADER_LEN,
};
use flightrec::jfr_format::{Annotation, TypeDesc, TypeId};
use flightrec_testkit as testkit;

use expect::{Renderer, check};
use java_fmt::{JavaDuration, offset_date_time_utc};
use tour::{ChunkPlan, Tour, Value, Written};

/// 2025-06-01T12:00:00.123456789Z: sub-millisecond digits on purpose.
const START_NANOS: i64 = 1_748_779_200_123_456_789;

struct Fixture {
    tour: Tour,
    path: PathBuf,
    written: Written,
}

/// The tour, written once per test process.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tour = Tour::new(START_NANOS);
        let path = testkit::temp_dir("format-tour").join("tour.jfr");
        let written = tour.write(&path).expect("write the tour");
        Fixture {
            tour,
            path,
            written,
        }
    })
}

#[test]
fn summary_counts_every_event_of_every_chunk() {
    let f = fixture();
    let summary = testkit::summary(&f.path);
    assert!(summary.chunks >= 3, "{summary:?}");
    assert_eq!(summary.chunks, f.tour.chunks.len() as u64);
    assert_eq!(summary.version, "2.1");
    assert_eq!(summary.nonzero_counts(), f.tour.counts());
    assert_eq!(summary.counts["jdk.Metadata"], f.tour.chunks.len() as u64);
    let checkpoints: usize = f.written.checkpoints.iter().sum();
    assert_eq!(summary.counts["jdk.Checkpoint"], checkpoints as u64);
    // Declared built-in event types are listed even without events.
    assert_eq!(summary.counts.get("jdk.ExecutionSample"), Some(&0));

    // The example's stdout line is exactly these counts.
    let line = f.tour.counts_json();
    assert!(!line.contains('\n'));
    let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
    let counts: BTreeMap<String, u64> =
        serde_json::from_value(parsed["counts"].clone()).expect("counts object");
    assert_eq!(counts, summary.nonzero_counts());
}

/// Compares every event of `chunks` with `jfr print --json` of `path`.
fn assert_printed_as_written(path: &Path, tour: &Tour, chunks: &[&ChunkPlan]) {
    let printed = testkit::print_json(path);
    let printed = printed.as_array().expect("events array");
    let mut by_key: BTreeMap<(String, String), &serde_json::Value> = BTreeMap::new();
    for e in printed {
        let ty = e["type"].as_str().expect("type").to_owned();
        let start = e["values"]["startTime"]
            .as_str()
            .expect("startTime")
            .to_owned();
        let dup = by_key.insert((ty.clone(), start.clone()), e);
        assert!(dup.is_none(), "two {ty} events at {start}");
    }
    let expected: usize = chunks.iter().map(|c| c.events.len()).sum();
    assert_eq!(printed.len(), expected, "number of printed events");

    let r = Renderer::new(tour);
    let mut errors = Vec::new();
    for chunk in chunks {
        for e in &chunk.events {
            let (ty, start, values) = r.event(chunk, e);
            match by_key.get(&(ty.clone(), start.clone())) {
                Some(p) => check(&format!("{ty}@{start}"), &values, &p["values"], &mut errors),
                None => errors.push(format!("{ty}@{start}: not printed")),
            }
        }
    }
    assert!(
        errors.is_empty(),
        "{} differences between what was written and what `jfr print --json` shows:\n{}",
        errors.len(),
        errors
            .iter()
            .take(60)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn print_json_shows_every_value_as_written() {
    let f = fixture();
    let chunks: Vec<&ChunkPlan> = f.tour.chunks.iter().collect();
    assert_printed_as_written(&f.path, &f.tour, &chunks);
}

#[test]
fn every_chunk_reads_alone() {
    // Each chunk carries its own metadata and every constant its events use:
    // split apart by `jfr disassemble`, each prints exactly its own events.
    let f = fixture();
    let dir = testkit::temp_dir("format-tour-chunks");
    let files = testkit::disassemble(&f.path, &dir);
    assert_eq!(files.len(), f.tour.chunks.len(), "{files:?}");
    for (file, chunk) in files.iter().zip(&f.tour.chunks) {
        assert_printed_as_written(file, &f.tour, &[chunk]);
    }
}

#[test]
fn headers_chain_the_chunks_on_one_clock() {
    let f = fixture();
    let bytes = std::fs::read(&f.path).unwrap();
    let mut at = 0usize;
    let first = f.tour.chunks[0].start;
    for i in 0..f.tour.chunks.len() {
        assert_eq!(f.written.chunk_offsets[i], at as u64);
        let h = ChunkHeader::parse(&bytes[at..]).expect("chunk header");
        let last = i + 1 == f.tour.chunks.len();
        assert_eq!((h.major, h.minor), (2, 1));
        assert_eq!(h.state, 0, "chunk {i} finished");
        let flags = FLAG_COMPRESSED_INTS | if last { FLAG_FINAL_CHUNK } else { 0 };
        assert_eq!(h.flags, flags, "chunk {i} flags");
        assert!(h.metadata_offset >= HEADER_LEN as i64 && h.metadata_offset < h.chunk_size);
        assert!(h.constant_pool_offset >= HEADER_LEN as i64);
        assert!(h.constant_pool_offset < h.chunk_size);
        // One tick clock: a chunk's start ticks are the first chunk's clock
        // at its start time.
        assert_eq!(h.ticks_per_second, first.ticks_per_second);
        assert_eq!(
            h.start_ticks - first.start_ticks,
            h.start_nanos - first.start_nanos,
            "chunk {i} restarts the tick clock"
        );
        at += h.chunk_size as usize;
    }
    assert_eq!(at, bytes.len(), "no bytes after the last chunk");
    // Same metadata bytes, same id; changed metadata, new id.
    assert_eq!(f.written.metadata_ids, [1, 1, 2]);
    assert_eq!(f.written.checkpoints, [1, 2, 1]);
}

/// `(type, startTime) → [(value name, text)]` from `jfr print --xml`,
/// which prints floats with `String.valueOf` (NaN, Infinity, -Infinity).
fn xml_values(xml: &str) -> BTreeMap<(String, String), Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    for line in xml.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("<event type=\"") {
            let ty = rest.split('"').next().unwrap_or_default().to_owned();
            current = Some((ty, Vec::new()));
        } else if line == "</event>" {
            let (ty, values) = current.take().expect("event open");
            let start = values
                .iter()
                .find(|(n, _)| n == "startTime")
                .map(|(_, v)| v.clone())
                .expect("startTime");
            out.insert((ty, start), values);
        } else if let Some(rest) = line.strip_prefix("<value name=\"")
            && let (Some((name, rest)), Some(cur)) = (rest.split_once("\">"), current.as_mut())
        {
            let text = rest.strip_suffix("</value>").unwrap_or(rest);
            cur.1.push((name.to_owned(), text.to_owned()));
        }
    }
    out
}

#[test]
fn nan_and_infinities_are_read_exactly() {
    // JSON prints NaN and ±Infinity as null; the XML writer shows them.
    let f = fixture();
    let xml = testkit::jfr().run_text(&[
        std::ffi::OsStr::new("print"),
        "--xml".as_ref(),
        "--events".as_ref(),
        "FloatEvent,DoubleEvent,NestedEvent,ContentTypesEvent".as_ref(),
        f.path.as_os_str(),
    ]);
    let values = xml_values(&xml);
    let r = Renderer::new(&f.tour);
    let java = |x: f64, is_f32: bool| -> String {
        if x.is_nan() {
            "NaN".to_owned()
        } else if x.is_infinite() {
            if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
        } else if is_f32 {
            format!("f32:{}", x as f32)
        } else {
            format!("f64:{x}")
        }
    };
    let parse = |text: &str, is_f32: bool| -> String {
        match text {
            "NaN" | "Infinity" | "-Infinity" => text.to_owned(),
            _ => {
                let x: f64 = text.parse().unwrap_or_else(|_| panic!("number {text:?}"));
                java(x, is_f32)
            }
        }
    };
    let mut checked = 0;
    for chunk in &f.tour.chunks {
        for e in &chunk.events {
            let (ty, start, _) = r.event(chunk, e);
            let t = f.tour.metadata(chunk).get(e.type_id).unwrap();
            let mut floats: Vec<(&str, f64, bool)> = Vec::new();
            for (field, v) in t.fields.iter().zip(&e.values) {
                match v {
                    Value::Float(x) => floats.push((&field.name, f64::from(*x), true)),
                    Value::Double(x) => floats.push((&field.name, *x, false)),
                    // segment.weight
                    Value::Struct(vs) => match vs.last() {
                        Some(Value::Double(x)) if field.name == "segment" => {
                            floats.push(("weight", *x, false));
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            for (name, x, is_f32) in floats {
                let key = (ty.clone(), start.clone());
                let printed = values
                    .get(&key)
                    .and_then(|vs| vs.iter().find(|(n, _)| n == name))
                    .unwrap_or_else(|| panic!("{ty}@{start}.{name} not in the XML"));
                assert_eq!(
                    parse(&printed.1, is_f32),
                    java(x, is_f32),
                    "{ty}@{start}.{name}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 24, "only {checked} float values checked");
}

/// The block `jfr metadata` prints for a type (see the JDK's
/// `MetadataWriter`): `@Name`, the other annotations, the fields.
fn metadata_block(t: &TypeDesc, name_of: &dyn Fn(TypeId) -> String) -> String {
    let simple = |n: &str| n.rsplit('.').next().unwrap().to_owned();
    let annotation = |a: &Annotation| -> Option<String> {
        let name = simple(&name_of(a.type_id()));
        let quoted = |v: &str| format!("\"{v}\"");
        let value = match a {
            Annotation::Name(_) => return None, // printed from the type name
            Annotation::Category(path) => {
                let items: Vec<String> = path.iter().map(|p| quoted(p)).collect();
                if items.len() == 1 {
                    items[0].clone()
                } else {
                    format!("{{{}}}", items.join(", "))
                }
            }
            Annotation::Enabled(b) | Annotation::StackTrace(b) => b.to_string(),
            _ => match a.attributes().first() {
                Some((_, v)) => quoted(v),
                None => return Some(format!("@{name}")),
            },
        };
        Some(format!("@{name}({value})"))
    };
    let mut s = format!("@Name(\"{}\")\n", t.name);
    for a in t.annotations.iter().filter_map(annotation) {
        s += &format!("{a}\n");
    }
    s += &format!("class {}", simple(&t.name));
    if let Some(sup) = &t.super_type {
        s += &format!(" extends {sup}");
    }
    s += " {\n";
    for (i, f) in t.fields.iter().enumerate() {
        if i > 0 {
            s += "\n";
        }
        for a in f.annotations.iter().filter_map(annotation) {
            s += &format!("  {a}\n");
        }
        let array = if f.array { "[]" } else { "" };
        s += &format!("  {}{array} {};\n", simple(&name_of(f.type_id)), f.name);
    }
    s += "}\n";
    s
}

#[test]
fn metadata_shows_declared_labels_and_annotations() {
    let f = fixture();
    let text = testkit::metadata(&f.path);
    let md = &f.tour.extended;
    let name_of = |id: TypeId| md.get(id).expect("declared").name.to_string();
    let mut annotations_used = std::collections::BTreeSet::new();
    for t in md.types().iter().filter(|t| t.id >= TypeId::FIRST_DYNAMIC) {
        let block = metadata_block(t, &name_of);
        assert!(
            text.contains(&block),
            "`jfr metadata` lacks the block for {}:\n{block}\n--- got ---\n{}",
            t.name,
            text.split(&format!("@Name(\"{}\")", t.name))
                .nth(1)
                .unwrap_or("(type missing)")
        );
        let all = t
            .annotations
            .iter()
            .chain(t.fields.iter().flat_map(|f| f.annotations.iter()));
        annotations_used.extend(all.map(|a| name_of(a.type_id())));
    }
    // The tour uses every annotation type the built-in table declares
    // except the meta-annotations.
    let declared: std::collections::BTreeSet<String> = md
        .types()
        .iter()
        .filter(|t| t.super_type.as_deref() == Some(ANNOTATION_SUPER_TYPE))
        .map(|t| t.name.to_string())
        .filter(|n| n != "jdk.jfr.ContentType" && n != "jdk.jfr.Contextual")
        .collect();
    let missing: Vec<_> = declared.difference(&annotations_used).collect();
    assert!(
        missing.is_empty(),
        "annotations the tour does not use: {missing:?}"
    );
}

#[test]
fn view_formats_threads_and_stack_traces() {
    let f = fixture();
    let text = testkit::view("flightrec.tour.SampleEvent", &f.path);
    for needle in [
        "flightrec.tour.Widget.render(int, long, String)",
        "libc.so.6.memcpy()",
        "worker-日本-🦀",
        "io-uring-sq",
        "0.250 ms",
    ] {
        assert!(
            text.contains(needle),
            "`jfr view` lacks {needle:?}:\n{text}"
        );
    }
    // Declared JDK event types without events still make their views work
    // (§10 #21): an empty report, not "Can't find event type".
    let hot = testkit::view("hot-methods", &f.path);
    assert!(hot.contains("No events found"), "{hot}");
}

#[test]
fn java_format_ports_match_jdk_output() {
    // Outputs taken from JDK 25.
    assert_eq!(
        JavaDuration::of_nanos(1_500_000).to_java_string(),
        "PT0.0015S"
    );
    assert_eq!(JavaDuration::of_seconds(90).to_java_string(), "PT1M30S");
    assert_eq!(JavaDuration::of_millis(-1).to_java_string(), "PT-0.001S");
    assert_eq!(JavaDuration::of_nanos(1).to_java_string(), "PT0.000000001S");
    assert_eq!(
        JavaDuration::of_seconds(i64::MIN).to_java_string(),
        "PT-2562047788015215H-30M-8S"
    );
    let forever = JavaDuration {
        seconds: i64::MAX,
        nanos: 999_999_999,
    };
    assert_eq!(
        forever.to_java_string(),
        "PT2562047788015215H30M7.999999999S"
    );
    assert_eq!(offset_date_time_utc(0), "1970-01-01T00:00Z");
    assert_eq!(
        offset_date_time_utc(1_750_000_000_123 * 1_000_000),
        "2025-06-15T15:06:40.123Z"
    );
    assert_eq!(offset_date_time_utc(-1_000_000), "1969-12-31T23:59:59.999Z");
    assert_eq!(
        offset_date_time_utc(1_796_018_783_658_876_700),
        "2026-11-30T06:06:23.658876700Z"
    );
}
