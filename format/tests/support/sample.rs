//! A fixed, realistic three-chunk recording for the robustness tests: the
//! built-in event types with threads, stack traces, thread states and string
//! constants, plus a custom event with arrays, nested structs, an empty
//! struct, and every primitive kind.

use std::borrow::Cow;
use std::io::Cursor;

use jfr_format::builtin::{duration, event_thread, stack_trace, start_time};
use jfr_format::schema::{EVENT_SUPER_TYPE, FieldDesc, TypeDesc};
use jfr_format::write::constants::{self, ClassValue, FrameValue, MethodValue, ThreadValue};
use jfr_format::write::encode::Sink;
use jfr_format::write::record::{begin_record, end_record};
use jfr_format::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, Metadata, TypeId};

pub(crate) const POINT: TypeId = TypeId(1000);
pub(crate) const EMPTY: TypeId = TypeId(1001);
pub(crate) const CUSTOM: TypeId = TypeId(1002);

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

/// Built-ins plus `x.Point`, `x.Empty` and the event `x.Custom`.
pub(crate) fn metadata() -> Metadata {
    let mut m = Metadata::builtin();
    let point = vec![
        FieldDesc::new("x", TypeId::INT),
        FieldDesc::new("y", TypeId::DOUBLE),
        FieldDesc::new("tag", TypeId::STRING),
    ];
    m.add(ty(POINT, "x.Point", false, point)).unwrap();
    m.add(ty(EMPTY, "x.Empty", false, vec![])).unwrap();
    let custom = vec![
        start_time(),
        duration(),
        event_thread(),
        stack_trace(),
        FieldDesc::new("name", TypeId::STRING),
        FieldDesc::new("values", TypeId::LONG).into_array(),
        FieldDesc::new("origin", POINT),
        FieldDesc::new("path", POINT).into_array(),
        FieldDesc::new("nothing", EMPTY),
        FieldDesc::new("flag", TypeId::BOOLEAN),
        FieldDesc::new("ch", TypeId::CHAR),
        FieldDesc::new("ratio", TypeId::FLOAT),
        FieldDesc::new("b", TypeId::BYTE),
        FieldDesc::new("s", TypeId::SHORT),
        FieldDesc::new("tags", TypeId::STRING).into_array(),
    ];
    m.add(ty(CUSTOM, "x.Custom", true, custom)).unwrap();
    m
}

fn pools() -> Checkpoint {
    let mut cp = Checkpoint::new(1);
    let mut p = cp.pool(TypeId::THREAD);
    for (k, name) in [(1, "main"), (2, "worker-日本"), (3, "é-latin")] {
        let t = ThreadValue {
            os_name: name,
            os_thread_id: 100 + k as i64,
            java_name: (k != 3).then_some(name),
            java_thread_id: k as i64,
            group: 1,
        };
        constants::write_thread(p.entry(k), &t);
    }
    drop(p);
    constants::write_thread_group(cp.pool(TypeId::THREAD_GROUP).entry(1), 0, "system");
    let mut p = cp.pool(TypeId::STACK_TRACE);
    for k in 1..=3u64 {
        let frames: Vec<FrameValue> = (0..k)
            .map(|i| FrameValue {
                method: 1 + (i % 2),
                line: if i == 0 { -1 } else { 10 * i as i32 },
                bytecode_index: i as i32,
                frame_type: constants::frame_type::NATIVE.0,
            })
            .collect();
        constants::write_stack_trace(p.entry(k), k == 3, &frames);
    }
    drop(p);
    let mut p = cp.pool(TypeId::METHOD);
    for k in 1..=2u64 {
        let m = MethodValue {
            class: 1,
            name: 10 + k,
            descriptor: 20,
            modifiers: 0x100,
            hidden: false,
        };
        constants::write_method(p.entry(k), &m);
    }
    drop(p);
    let class = ClassValue {
        class_loader: 0,
        name: 30,
        package: 0,
        modifiers: 1,
        hidden: false,
    };
    constants::write_class(cp.pool(TypeId::CLASS).entry(1), &class);
    let mut p = cp.pool(TypeId::SYMBOL);
    for (k, s) in [
        (11, "memcpy"),
        (12, "main"),
        (20, "()L;"),
        (30, "libc.so.6"),
    ] {
        constants::write_symbol(p.entry(k), s);
    }
    drop(p);
    let mut p = cp.pool(TypeId::FRAME_TYPE);
    for (k, s) in constants::frame_type::ALL {
        constants::write_simple_string(p.entry(k), s);
    }
    drop(p);
    let mut p = cp.pool(TypeId::THREAD_STATE);
    for (k, s) in constants::thread_state::ALL {
        constants::write_simple_string(p.entry(k), s);
    }
    drop(p);
    let mut p = cp.pool(TypeId::STRING);
    p.entry(1).put_str("pooled string");
    p.entry(2).put_str("ठठठ pooled");
    drop(p);
    cp
}

fn events(chunk: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..4u64 {
        let r = begin_record(&mut out, TypeId::EXECUTION_SAMPLE);
        out.put_i64(1000 + i as i64);
        out.put_varint(1 + i % 3); // thread
        out.put_varint(1 + i % 3); // stack trace
        out.put_varint(constants::thread_state::RUNNABLE.0);
        end_record(&mut out, r);
    }
    let r = begin_record(&mut out, TypeId::CPU_INFORMATION);
    out.put_i64(1100);
    out.put_str_ref(2);
    out.put_str("Zen ÿ 4");
    for n in [1, 8, 16] {
        out.put_i32(n);
    }
    end_record(&mut out, r);
    let r = begin_record(&mut out, CUSTOM);
    out.put_i64(1200);
    out.put_i64(-5);
    out.put_varint(2);
    out.put_varint(9); // undefined stack trace: null
    out.put_str(&format!("custom {chunk} 🦀"));
    out.put_varint(3);
    for v in [i64::MIN, -1, 1 << 40] {
        out.put_i64(v);
    }
    let point = |out: &mut Vec<u8>, x: i32| {
        out.put_i32(x);
        out.put_f64(f64::from(x) / 3.0);
        out.put_str_ref(1);
    };
    point(&mut out, 7);
    out.put_varint(2);
    point(&mut out, -1);
    point(&mut out, 1 << 30);
    out.put_bool(true);
    out.put_char(0xd800);
    out.put_f32(f32::NAN);
    out.put_i8(-128);
    out.put_i16(i16::MIN);
    out.put_varint(2);
    out.put_opt_str(None);
    out.put_str("");
    end_record(&mut out, r);
    out
}

/// The three-chunk sample file.
pub(crate) fn recording() -> Vec<u8> {
    let meta = metadata();
    let mut out = Cursor::new(Vec::new());
    for chunk in 0..3u64 {
        let start = ChunkStart {
            start_nanos: 1_700_000_000_000_000_000 + chunk as i64,
            start_ticks: 1000 * chunk as i64,
            ticks_per_second: 1_000_000_000,
        };
        let mut w = ChunkWriter::begin(out, start).unwrap();
        if chunk != 1 {
            w.write_metadata(&meta, 1, 0).unwrap();
        }
        w.write_events(&events(chunk)).unwrap();
        w.write_checkpoint(&pools(), 0, 0).unwrap();
        if chunk == 2 {
            let mut extra = Checkpoint::new(0);
            extra.pool(TypeId::STRING).entry(3).put_str("late");
            w.write_checkpoint(&extra, 0, 0).unwrap();
        }
        w.write_events(&events(chunk)).unwrap();
        if chunk == 1 {
            w.write_metadata(&meta, 1, 0).unwrap();
        }
        let end = ChunkEnd {
            duration_nanos: 10,
            ticks_per_second: None,
            last: chunk == 2,
        };
        out = w.finish(end).unwrap();
    }
    out.into_inner()
}
