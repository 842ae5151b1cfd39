//! Array fields of primitives, strings and value types: the format carries
//! them and JDK 25 reads them (`jfr print --json`, `--xml`, `jfr summary`
//! show every element exactly), but two of its printers cannot show them.
//!
//! The trap (docs/jfr-format.md, "Arrays and the printers"): plain
//! `jfr print` passes a null field descriptor for array elements
//! (`PrettyWriter.printArray`) and throws a NullPointerException on the
//! first element that is not null, a thread, a class, a method or a stack
//! frame, exiting 1; `jfr view` expands a value-type array's fields and
//! throws a ClassCastException per event (on stderr, exit status 0). So
//! the event API offers no array fields; this crate keeps writing them, and
//! this test pins both what JDK 25 reads and where it breaks, so a JDK that
//! fixes the printers shows up here.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use flightrec_testkit as testkit;
use jfr_format::builtin::start_time;
use jfr_format::schema::{EVENT_SUPER_TYPE, FieldDesc, TypeDesc};
use jfr_format::write::encode::Sink;
use jfr_format::write::record::{begin_record, end_record};
use jfr_format::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, Metadata, TypeId};
use serde_json::{Value, json};

const POINT: TypeId = TypeId(1000);
const ARRAYS: TypeId = TypeId(1001);
const POOLED: u64 = 1;

fn ty(id: TypeId, name: &'static str, event: bool, fields: Vec<FieldDesc>) -> TypeDesc {
    TypeDesc {
        id,
        name: Cow::Borrowed(name),
        super_type: event.then_some(Cow::Borrowed(EVENT_SUPER_TYPE)),
        simple_type: false,
        fields: Cow::Owned(fields),
        annotations: Cow::Borrowed(&[]),
        settings: Cow::Borrowed(&[]),
    }
}

/// Writes one chunk with two `x.Arrays` events: all arrays empty, then
/// full. Only the arrays named in `fields` are declared and written.
fn write(path: &Path, fields: &[&str]) {
    let mut md = Metadata::builtin();
    let point = vec![
        FieldDesc::new("x", TypeId::INT),
        FieldDesc::new("label", TypeId::STRING),
    ];
    md.add(ty(POINT, "x.Point", false, point)).unwrap();
    let all = [
        ("longs", TypeId::LONG),
        ("bytes", TypeId::BYTE),
        ("doubles", TypeId::DOUBLE),
        ("booleans", TypeId::BOOLEAN),
        ("strings", TypeId::STRING),
        ("points", POINT),
    ];
    let chosen: Vec<_> = all.iter().filter(|(n, _)| fields.contains(n)).collect();
    let mut event = vec![start_time()];
    event.extend(
        chosen
            .iter()
            .map(|(n, t)| FieldDesc::new(n, *t).into_array()),
    );
    md.add(ty(ARRAYS, "x.Arrays", true, event)).unwrap();

    let mut records = Vec::new();
    for (i, full) in [false, true].into_iter().enumerate() {
        let r = begin_record(&mut records, ARRAYS);
        records.put_i64(1_000 + i as i64);
        for (name, _) in &chosen {
            match (*name, full) {
                (_, false) => records.put_varint(0),
                ("longs", true) => {
                    records.put_varint(4);
                    for v in [i64::MIN + 1, -1, 0, i64::MAX] {
                        records.put_i64(v);
                    }
                }
                ("bytes", true) => {
                    records.put_varint(3);
                    for v in [i8::MIN, 0, i8::MAX] {
                        records.put_i8(v);
                    }
                }
                ("doubles", true) => {
                    records.put_varint(2);
                    records.put_f64(0.5);
                    records.put_f64(-2.0);
                }
                ("booleans", true) => {
                    records.put_varint(2);
                    records.put_bool(true);
                    records.put_bool(false);
                }
                ("strings", true) => {
                    records.put_varint(4);
                    records.put_str("日本🦀");
                    records.put_str("");
                    records.put_opt_str(None);
                    records.put_str_ref(POOLED);
                }
                ("points", true) => {
                    records.put_varint(2);
                    records.put_i32(-7);
                    records.put_str("a");
                    records.put_i32(i32::MAX);
                    records.put_opt_str(None);
                }
                (other, _) => unreachable!("{other}"),
            }
        }
        end_record(&mut records, r);
    }

    let start = ChunkStart {
        start_nanos: 1_750_000_000_000_000_000,
        start_ticks: 0,
        ticks_per_second: 1_000_000_000,
    };
    let out = BufWriter::new(File::create(path).unwrap());
    let mut w = ChunkWriter::begin(out, start).unwrap();
    w.write_metadata(&md, 1, 0).unwrap();
    w.write_events(&records).unwrap();
    let mut cp = Checkpoint::new(0);
    cp.pool(TypeId::STRING).entry(POOLED).put_str("pooled");
    w.write_checkpoint(&cp, 2_000, 0).unwrap();
    let end = ChunkEnd {
        duration_nanos: 2_000,
        ticks_per_second: None,
        last: true,
    };
    w.finish(end)
        .unwrap()
        .into_inner()
        .unwrap()
        .sync_all()
        .unwrap();
}

fn file(name: &str, fields: &[&str]) -> PathBuf {
    let path = testkit::temp_dir(&format!("arrays-{name}")).join("arrays.jfr");
    write(&path, fields);
    path
}

fn jfr(args: &[&str], path: &Path) -> std::process::Output {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(path.as_os_str());
    testkit::jfr().try_run(&all)
}

const ALL: [&str; 6] = ["longs", "bytes", "doubles", "booleans", "strings", "points"];

#[test]
fn json_and_xml_show_every_element_exactly() {
    let path = file("json", &ALL);
    // Not `testkit::summary`, which also runs the printers that fail here.
    let out = jfr(&["summary"], &path);
    assert!(out.status.success(), "{out:?}");
    let summary = testkit::Summary::parse(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(summary.nonzero_counts()["x.Arrays"], 2);

    let out = jfr(&["print", "--json"], &path);
    assert!(out.status.success(), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = doc["recording"]["events"].as_array().unwrap();
    assert_eq!(events.len(), 2);
    let empty = &events[0]["values"];
    for f in ALL {
        assert_eq!(empty[f], json!([]), "{f}");
    }
    let full = &events[1]["values"];
    assert_eq!(full["longs"], json!([i64::MIN + 1, -1, 0, i64::MAX]));
    assert_eq!(full["bytes"], json!([-128, 0, 127]));
    assert_eq!(full["doubles"], json!([0.5, -2.0]));
    assert_eq!(full["booleans"], json!([true, false]));
    assert_eq!(full["strings"], json!(["日本🦀", "", null, "pooled"]));
    assert_eq!(
        full["points"],
        json!([{"x": -7, "label": "a"}, {"x": i32::MAX, "label": null}])
    );

    let out = jfr(&["print", "--xml"], &path);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.contains(r#"<array name="longs" size="4">"#), "{xml}");
    assert!(
        xml.contains(r#"<value index="3">9223372036854775807</value>"#),
        "{xml}"
    );
}

#[test]
fn plain_print_throws_on_each_primitive_and_string_array() {
    for field in ["longs", "bytes", "doubles", "booleans", "strings"] {
        let path = file(&format!("print-{field}"), &[field]);
        let out = jfr(&["print", "--json"], &path);
        assert!(out.status.success(), "{field}: --json {out:?}");
        let out = jfr(&["print"], &path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success()
                && stderr.contains("NullPointerException")
                && stderr.contains("printArray"),
            "{field}[]: `jfr print` no longer fails as docs/jfr-format.md says \
             (update the notes, and consider array fields in the event API): \
             {} {stderr}",
            out.status
        );
    }
}

#[test]
fn view_throws_on_value_type_arrays_and_exits_0() {
    let path = file("view-points", &["points"]);
    let out = jfr(&["view", "all-events"], &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("ClassCastException"),
        "`jfr view all-events` on a Point[] no longer behaves as docs/jfr-format.md says: {} {stderr}",
        out.status
    );
    // A file with no array element to print passes every printer.
    let path = file("view-none", &[]);
    testkit::jfr().assert_prints(&path);
}

#[test]
fn the_testkit_print_check_rejects_these_files() {
    let path = file("hook", &["longs"]);
    let caught = std::panic::catch_unwind(|| testkit::jfr().assert_prints(&path));
    let msg = caught.expect_err("assert_prints accepted a long[] file");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("print") && msg.contains("NullPointerException"),
        "{msg}"
    );
}
