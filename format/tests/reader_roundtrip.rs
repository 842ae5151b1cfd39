//! Round trip: random schemas and values, written with the crate's writers,
//! read back with `reader`, compared exactly (floats by bits).
//!
//! Each case declares random value types (fields of every primitive kind,
//! strings, thread and stack-trace references, nested value types, arrays)
//! and event types, then writes a file of one to three chunks. Every chunk
//! has its own pools (threads, strings, a stack-trace graph written with the
//! built-in constant writers), events written both through `EventEncoder`
//! and `begin_record`/`end_record`, strings in every encoding, metadata at
//! the start or the end, two chained checkpoints, and sometimes a record of
//! an undeclared type. The expected `Value` of every field is built from the
//! model and must equal what the reader returns.

use std::borrow::Cow;
use std::io::Cursor;
use std::sync::Arc;

use jfr_format::builtin::{duration, start_time};
use jfr_format::read::{ClassRecord, Object, RecordingFile, Value, read_recording};
use jfr_format::schema::{Annotation, EVENT_SUPER_TYPE, FieldDesc, SettingDesc, TypeDesc};
use jfr_format::write::constants::{self, ClassValue, FrameValue, MethodValue, ThreadValue};
use jfr_format::write::encode::Sink;
use jfr_format::write::record::{begin_record, end_record};
use jfr_format::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, Metadata, TypeId};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::FileFailurePersistence;

#[path = "support/roundtrip_model.rs"]
mod model;
use model::*;

// === writing ===

fn field_type(schema: &Built, kind: &Kind) -> (TypeId, bool) {
    match kind {
        Kind::Bool => (TypeId::BOOLEAN, false),
        Kind::Char => (TypeId::CHAR, false),
        Kind::Float => (TypeId::FLOAT, false),
        Kind::Double => (TypeId::DOUBLE, false),
        Kind::Byte => (TypeId::BYTE, false),
        Kind::Short => (TypeId::SHORT, false),
        Kind::Int => (TypeId::INT, false),
        Kind::Long => (TypeId::LONG, false),
        Kind::Str => (TypeId::STRING, false),
        Kind::Thread => (TypeId::THREAD, true),
        Kind::Stack => (TypeId::STACK_TRACE, true),
        Kind::Nested(i) => (schema.struct_ids[*i], false),
    }
}

fn field_descs(b: &Built, fields: &[FieldSpec]) -> Vec<FieldDesc> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (type_id, constant_pool) = field_type(b, &f.kind);
            FieldDesc {
                name: Cow::Owned(format!("f{i}")),
                type_id,
                constant_pool,
                array: f.array,
                annotations: f
                    .label
                    .iter()
                    .map(|l| Annotation::Label(l.clone().into()))
                    .collect(),
            }
        })
        .collect()
}

/// Declares the schema's types; returns the metadata and their ids.
fn declare(schema: &Schema) -> (Metadata, Built) {
    let mut m = Metadata::builtin();
    let mut b = Built::default();
    for (i, s) in schema.structs.iter().enumerate() {
        let id = m.next_dynamic_id();
        let t = TypeDesc {
            id,
            name: Cow::Owned(format!("t.S{i}")),
            super_type: None,
            simple_type: false,
            fields: Cow::Owned(field_descs(&b, &s.fields)),
            annotations: Cow::Borrowed(&[]),
            settings: Cow::Borrowed(&[]),
        };
        m.add(t).unwrap();
        b.struct_ids.push(id);
    }
    for (i, e) in schema.events.iter().enumerate() {
        let id = m.next_dynamic_id();
        let mut fields = vec![start_time()];
        fields.extend(e.duration.then(duration));
        fields.extend(field_descs(&b, &e.fields));
        let mut annotations = vec![];
        if let Some(path) = &e.category {
            annotations.push(Annotation::Category(
                path.iter().map(|s| s.clone().into()).collect(),
            ));
        }
        let settings = e.setting.iter().map(|v| SettingDesc {
            name: "enabled".into(),
            type_id: TypeId::SETTING_ENABLED,
            default_value: v.clone().into(),
        });
        let t = TypeDesc {
            id,
            name: Cow::Owned(format!("t.E{i}")),
            super_type: Some(EVENT_SUPER_TYPE.into()),
            simple_type: false,
            fields: Cow::Owned(fields),
            annotations: Cow::Owned(annotations),
            settings: settings.collect(),
        };
        m.add(t).unwrap();
        b.event_ids.push(id);
    }
    (m, b)
}

fn write_str(s: &mut impl Sink, v: &StrVal) {
    match v {
        StrVal::Null => s.put_opt_str(None),
        StrVal::Auto(t) => s.put_str(t),
        StrVal::Utf8(t) => {
            s.put_u8(3);
            s.put_varint(t.len() as u64);
            s.put_slice(t.as_bytes());
        }
        StrVal::Chars(t) => {
            s.put_u8(4);
            s.put_varint(t.encode_utf16().count() as u64);
            t.encode_utf16().for_each(|u| s.put_char(u));
        }
        StrVal::Latin1(t) => {
            s.put_u8(5);
            s.put_varint(t.chars().count() as u64);
            t.chars().for_each(|c| s.put_u8(c as u32 as u8));
        }
        StrVal::Pool(k) => s.put_str_ref(*k),
    }
}

fn write_val(s: &mut impl Sink, v: &Val) {
    match v {
        Val::Bool(b) => s.put_bool(*b),
        Val::Char(c) => s.put_char(*c),
        Val::Float(bits) => s.put_f32(f32::from_bits(*bits)),
        Val::Double(bits) => s.put_f64(f64::from_bits(*bits)),
        Val::Byte(b) => s.put_i8(*b),
        Val::Short(n) => s.put_i16(*n),
        Val::Int(n) => s.put_i32(*n),
        Val::Long(n) => s.put_i64(*n),
        Val::Str(t) => write_str(s, t),
        Val::Thread(k) | Val::Stack(k) => s.put_varint(*k),
        Val::Struct(fields) => fields.iter().for_each(|f| write_val(s, f)),
        Val::Array(items) => {
            s.put_varint(items.len() as u64);
            items.iter().for_each(|f| write_val(s, f));
        }
    }
}

fn write_event(out: &mut Vec<u8>, b: &Built, e: &EventVal) {
    let head = |s: &mut dyn FnMut(i64)| {
        s(e.start);
        if let Some(d) = e.duration {
            s(d);
        }
    };
    let id = b.event_ids[e.event];
    if e.via_encoder {
        let mut buf = vec![0u8; 1 << 20];
        let mut enc = EventEncoder::begin(&mut buf, id);
        head(&mut |v| enc.put_i64(v));
        e.fields.iter().for_each(|v| write_val(&mut enc, v));
        let n = enc.finish().expect("event fits in 1 MiB");
        out.extend_from_slice(&buf[..n]);
    } else {
        let r = begin_record(out, id);
        head(&mut |v| out.put_i64(v));
        e.fields.iter().for_each(|v| write_val(out, v));
        end_record(out, r);
    }
}

/// Threads and strings.
fn first_checkpoint(c: &ChunkSpec) -> Checkpoint {
    let mut cp = Checkpoint::new(0);
    let mut p = cp.pool(TypeId::THREAD);
    for (i, t) in c.threads.iter().enumerate() {
        let v = ThreadValue {
            os_name: &t.os_name,
            os_thread_id: t.os_tid,
            java_name: t.java_name.as_deref(),
            java_thread_id: t.java_tid,
            group: 0,
        };
        constants::write_thread(p.entry(i as u64 + 1), &v);
    }
    drop(p);
    let mut p = cp.pool(TypeId::STRING);
    for (i, s) in c.strings.iter().enumerate() {
        p.entry(i as u64 + 1).put_str(s);
    }
    drop(p);
    cp
}

/// Stack traces, methods, classes, symbols, frame types.
fn second_checkpoint(c: &ChunkSpec) -> Checkpoint {
    let mut cp = Checkpoint::new(1);
    let mut p = cp.pool(TypeId::STACK_TRACE);
    for (i, st) in c.stacks.iter().enumerate() {
        let frames: Vec<FrameValue> = st
            .frames
            .iter()
            .map(|f| FrameValue {
                method: (f.method % c.methods.len()) as u64 + 1,
                line: f.line,
                bytecode_index: f.bci,
                frame_type: f.frame_type,
            })
            .collect();
        constants::write_stack_trace(p.entry(i as u64 + 1), st.truncated, &frames);
    }
    drop(p);
    let mut p = cp.pool(TypeId::METHOD);
    for (i, m) in c.methods.iter().enumerate() {
        let k = i as u64;
        let v = MethodValue {
            class: k + 1,
            name: 3 * k + 2,
            descriptor: 3 * k + 3,
            modifiers: m.modifiers,
            hidden: m.hidden,
        };
        constants::write_method(p.entry(k + 1), &v);
    }
    drop(p);
    let mut p = cp.pool(TypeId::CLASS);
    for (i, m) in c.methods.iter().enumerate() {
        let k = i as u64;
        let v = ClassValue {
            class_loader: 0,
            name: 3 * k + 1,
            package: 0,
            modifiers: m.modifiers,
            hidden: false,
        };
        constants::write_class(p.entry(k + 1), &v);
    }
    drop(p);
    let mut p = cp.pool(TypeId::SYMBOL);
    for (i, m) in c.methods.iter().enumerate() {
        let k = 3 * i as u64;
        constants::write_symbol(p.entry(k + 1), &m.class);
        constants::write_symbol(p.entry(k + 2), &m.name);
        constants::write_symbol(p.entry(k + 3), &m.descriptor);
    }
    drop(p);
    let mut p = cp.pool(TypeId::FRAME_TYPE);
    for (k, name) in constants::frame_type::ALL {
        constants::write_simple_string(p.entry(k), name);
    }
    drop(p);
    cp
}

fn chunk_start(i: usize) -> ChunkStart {
    ChunkStart {
        start_nanos: 1_700_000_000_000_000_000 + i as i64 * 1_000_000,
        start_ticks: 5_000 + i as i64 * 1_000,
        ticks_per_second: 1_000_000_000,
    }
}

fn write_file(meta: &Metadata, b: &Built, chunks: &[ChunkSpec]) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    for (i, c) in chunks.iter().enumerate() {
        let start = chunk_start(i);
        let mut w = ChunkWriter::begin(out, start).unwrap();
        if !c.metadata_last {
            w.write_metadata(meta, 7, start.start_ticks).unwrap();
        }
        let half = c.events.len() / 2;
        let mut records = Vec::new();
        for e in &c.events[..half] {
            write_event(&mut records, b, e);
        }
        if c.junk_record {
            let r = begin_record(&mut records, TypeId(999_999));
            records.extend_from_slice(b"ignored payload");
            end_record(&mut records, r);
        }
        w.write_events(&records).unwrap();
        w.write_checkpoint(&first_checkpoint(c), start.start_ticks, 0)
            .unwrap();
        w.flush_header(10).unwrap();
        records.clear();
        for e in &c.events[half..] {
            write_event(&mut records, b, e);
        }
        w.write_events(&records).unwrap();
        w.write_checkpoint(&second_checkpoint(c), start.start_ticks + 1, 2)
            .unwrap();
        if c.metadata_last {
            w.write_metadata(meta, 7, start.start_ticks).unwrap();
        }
        let end = ChunkEnd {
            duration_nanos: 999,
            ticks_per_second: None,
            last: i + 1 == chunks.len(),
        };
        out = w.finish(end).unwrap();
    }
    out.into_inner()
}

// === checking ===

fn assert_class(desc: &TypeDesc, rec: &ClassRecord) {
    assert_eq!((desc.id, &*desc.name), (rec.id, &*rec.name));
    assert_eq!(desc.super_type.as_deref(), rec.super_type.as_deref());
    assert_eq!(desc.simple_type, rec.simple_type);
    let annotations = |want: &[Annotation], got: &[jfr_format::read::AnnotationRecord]| {
        assert_eq!(want.len(), got.len(), "annotations of {}", desc.name);
        for (a, r) in want.iter().zip(got) {
            assert_eq!(a.type_id(), r.type_id);
            let attrs: Vec<(String, String)> = a
                .attributes()
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let got: Vec<(String, String)> = r
                .values
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(attrs, got);
        }
    };
    annotations(&desc.annotations, &rec.annotations);
    assert_eq!(desc.fields.len(), rec.fields.len());
    for (f, r) in desc.fields.iter().zip(&rec.fields) {
        assert_eq!((&*f.name, f.type_id), (&*r.name, r.type_id));
        assert_eq!((f.constant_pool, f.array), (r.constant_pool, r.array));
        annotations(&f.annotations, &r.annotations);
    }
    assert_eq!(desc.settings.len(), rec.settings.len());
    for (s, r) in desc.settings.iter().zip(&rec.settings) {
        assert_eq!((&*s.name, s.type_id), (&*r.name, r.type_id));
        assert_eq!(&*s.default_value, &*r.default_value);
    }
}

fn check(schema: &Schema, meta: &Metadata, b: &Built, chunks: &[ChunkSpec], file: &RecordingFile) {
    assert_eq!(file.chunks.len(), chunks.len());
    let mut at = 0;
    for (i, (c, r)) in chunks.iter().zip(&file.chunks).enumerate() {
        assert_eq!(r.offset, at);
        at += r.header.chunk_size as u64;
        let start = chunk_start(i);
        assert_eq!(r.header.start_nanos, start.start_nanos);
        assert_eq!(r.header.start_ticks, start.start_ticks);
        assert_eq!(r.header.duration_nanos, 999);
        assert_eq!(
            (r.header.state, r.header.flags & 2 != 0),
            (0, i + 1 == chunks.len())
        );
        assert_eq!(r.metadata.id, 7);
        assert_eq!(r.metadata.classes.len(), meta.types().len());
        for (d, rec) in meta.types().iter().zip(&r.metadata.classes) {
            assert_class(d, rec);
        }
        assert_eq!(r.pools.checkpoints().len(), 2);
        assert_eq!(r.skipped_records, u64::from(c.junk_record));
        assert_eq!(r.events.len(), c.events.len());
        let ctx = Expect {
            schema,
            built: b,
            chunk: c,
        };
        for (e, got) in c.events.iter().zip(&r.events) {
            let spec = &schema.events[e.event];
            assert_eq!(got.type_id, b.event_ids[e.event]);
            assert_eq!(&*got.type_name, format!("t.E{}", e.event));
            let mut want: Vec<(Arc<str>, Value)> = vec![("startTime".into(), Value::Long(e.start))];
            if let Some(d) = e.duration {
                want.push(("duration".into(), Value::Long(d)));
            }
            for (j, (v, f)) in e.fields.iter().zip(&spec.fields).enumerate() {
                want.push((format!("f{j}").into(), ctx.field(f, v)));
            }
            assert_eq!(got.fields, want, "event at {}", got.offset);
        }
    }
}

/// Builds the `Value` the reader should return for a model value.
struct Expect<'a> {
    schema: &'a Schema,
    built: &'a Built,
    chunk: &'a ChunkSpec,
}

fn object(type_id: TypeId, name: &str, fields: Vec<(&str, Value)>) -> Value {
    Value::Object(Arc::new(Object {
        type_id,
        type_name: name.into(),
        fields: fields.into_iter().map(|(n, v)| (n.into(), v)).collect(),
    }))
}

fn string(s: &str) -> Value {
    Value::String(s.into())
}

impl Expect<'_> {
    fn field(&self, f: &FieldSpec, v: &Val) -> Value {
        match (f.array, v) {
            (true, Val::Array(items)) => {
                Value::Array(items.iter().map(|v| self.value(&f.kind, v)).collect())
            }
            _ => self.value(&f.kind, v),
        }
    }

    fn value(&self, kind: &Kind, v: &Val) -> Value {
        let c = self.chunk;
        match v {
            Val::Bool(b) => Value::Boolean(*b),
            Val::Char(n) => Value::Char(*n),
            Val::Float(bits) => Value::Float(f32::from_bits(*bits)),
            Val::Double(bits) => Value::Double(f64::from_bits(*bits)),
            Val::Byte(n) => Value::Byte(*n),
            Val::Short(n) => Value::Short(*n),
            Val::Int(n) => Value::Int(*n),
            Val::Long(n) => Value::Long(*n),
            Val::Str(StrVal::Null) => Value::Null,
            Val::Str(StrVal::Pool(k)) => pooled(&c.strings, *k).map_or(Value::Null, |s| string(s)),
            Val::Str(StrVal::Auto(s) | StrVal::Utf8(s) | StrVal::Chars(s) | StrVal::Latin1(s)) => {
                string(s)
            }
            Val::Thread(k) => pooled(&c.threads, *k).map_or(Value::Null, thread),
            Val::Stack(k) => pooled(&c.stacks, *k).map_or(Value::Null, |s| self.stack(s)),
            Val::Struct(vals) => {
                let Kind::Nested(i) = kind else {
                    unreachable!()
                };
                let spec = &self.schema.structs[*i];
                let fields = vals
                    .iter()
                    .zip(&spec.fields)
                    .enumerate()
                    .map(|(j, (v, f))| (format!("f{j}").into(), self.field(f, v)))
                    .collect();
                Value::Object(Arc::new(Object {
                    type_id: self.built.struct_ids[*i],
                    type_name: format!("t.S{i}").into(),
                    fields,
                }))
            }
            Val::Array(_) => unreachable!("arrays are one-dimensional"),
        }
    }

    fn stack(&self, s: &StackSpec) -> Value {
        let methods = &self.chunk.methods;
        let frames = s.frames.iter().map(|f| {
            let m = &methods[f.method % methods.len()];
            let class = object(
                TypeId::CLASS,
                "java.lang.Class",
                vec![
                    ("classLoader", Value::Null),
                    ("name", string(&m.class)),
                    ("package", Value::Null),
                    ("modifiers", Value::Int(m.modifiers)),
                    ("hidden", Value::Boolean(false)),
                ],
            );
            let method = object(
                TypeId::METHOD,
                "jdk.types.Method",
                vec![
                    ("type", class),
                    ("name", string(&m.name)),
                    ("descriptor", string(&m.descriptor)),
                    ("modifiers", Value::Int(m.modifiers)),
                    ("hidden", Value::Boolean(m.hidden)),
                ],
            );
            let frame_type = pooled(&constants::frame_type::ALL, f.frame_type + 1)
                .map_or(Value::Null, |(_, name)| string(name));
            object(
                TypeId::STACK_FRAME,
                "jdk.types.StackFrame",
                vec![
                    ("method", method),
                    ("lineNumber", Value::Int(f.line)),
                    ("bytecodeIndex", Value::Int(f.bci)),
                    ("type", frame_type),
                ],
            )
        });
        object(
            TypeId::STACK_TRACE,
            "jdk.types.StackTrace",
            vec![
                ("truncated", Value::Boolean(s.truncated)),
                ("frames", Value::Array(frames.collect())),
            ],
        )
    }
}

/// Entry `key` of a pool whose keys are 1..=len.
fn pooled<T>(items: &[T], key: u64) -> Option<&T> {
    key.checked_sub(1).and_then(|i| items.get(i as usize))
}

fn thread(t: &ThreadSpec) -> Value {
    object(
        TypeId::THREAD,
        "java.lang.Thread",
        vec![
            ("osName", string(&t.os_name)),
            ("osThreadId", Value::Long(t.os_tid)),
            (
                "javaName",
                t.java_name.as_deref().map_or(Value::Null, string),
            ),
            ("javaThreadId", Value::Long(t.java_tid)),
            ("group", Value::Null),
            ("virtual", Value::Boolean(false)),
        ],
    )
}

/// Failing cases are saved next to this file, as proptest does by default.
const REGRESSIONS: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: Some(Box::new(REGRESSIONS)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_schemas_and_values_read_back_exactly(
        (schema, chunks) in case_strategy(),
    ) {
        let (meta, built) = declare(&schema);
        let bytes = write_file(&meta, &built, &chunks);
        let file = read_recording(&bytes).unwrap();
        check(&schema, &meta, &built, &chunks, &file);
    }
}

#[test]
fn every_value_kind_in_one_fixed_case() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..8 {
        let (schema, chunks) = case_strategy().new_tree(&mut runner).unwrap().current();
        let (meta, built) = declare(&schema);
        let file = read_recording(&write_file(&meta, &built, &chunks)).unwrap();
        check(&schema, &meta, &built, &chunks, &file);
    }
    // The strategy reaches every kind and encoding over a run like the
    // property test's (a guard against a model that stopped generating some).
    let kinds = vec(field_strategy(), 400)
        .new_tree(&mut runner)
        .unwrap()
        .current();
    for k in [Kind::Float, Kind::Thread, Kind::Stack, Kind::Str] {
        assert!(kinds.iter().any(|f| f.kind == k), "{k:?}");
    }
}
