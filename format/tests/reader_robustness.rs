//! The reader on malformed input: every truncation of a real multi-chunk
//! file, every single-byte corruption, arbitrary bytes (bare, behind a valid
//! header, spliced into a real file, framed as events of real types), and
//! schemas built to explode. The reader must return (`Ok` or `Err`) and
//! never panic; its work is bounded by its budget (`BudgetExceeded`), and
//! reads are timed only against [`RUNAWAY`], a bound no busy machine reaches
//! but a read that explodes does (speed itself is not tested here).
//!
//! Truncation contract: a prefix that ends exactly at a chunk boundary is a
//! valid file holding the chunks before it; every other prefix (including
//! the empty one) is an error.

use std::borrow::Cow;
use std::io::Cursor;
use std::time::{Duration, Instant};

use jfr_format::builtin::start_time;
use jfr_format::read::{ReadError, Value, read_recording};
use jfr_format::schema::{EVENT_SUPER_TYPE, FieldDesc, TypeDesc};
use jfr_format::write::encode::Sink;
use jfr_format::write::header::{ChunkHeader, HEADER_LEN};
use jfr_format::write::record::{begin_record, end_record};
use jfr_format::{ChunkEnd, ChunkStart, ChunkWriter, Metadata, TypeId};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

#[path = "support/sample.rs"]
mod sample;

/// Offsets visited by the exhaustive tests: all of them in release builds,
/// every seventh in debug builds (which are ~20x slower).
fn stride() -> usize {
    if cfg!(debug_assertions) { 7 } else { 1 }
}

#[test]
fn the_sample_reads_back() {
    let bytes = sample::recording();
    let file = read_recording(&bytes).unwrap();
    assert_eq!(file.chunks.len(), 3);
    let c = &file.chunks[1];
    assert_eq!(c.events.len(), 12);
    assert_eq!(c.pools.checkpoints().len(), 1);
    assert_eq!(file.chunks[2].pools.checkpoints().len(), 2);
    let sample = &c.events[2];
    assert_eq!(&*sample.type_name, "jdk.ExecutionSample");
    assert_eq!(
        sample
            .get_path("sampledThread.osName")
            .and_then(Value::as_str),
        Some("é-latin")
    );
    assert_eq!(
        sample
            .get_path("sampledThread.group.name")
            .and_then(Value::as_str),
        Some("system")
    );
    let frames = sample
        .get_path("stackTrace.frames")
        .and_then(Value::as_array)
        .unwrap();
    assert_eq!(frames.len(), 3);
    assert_eq!(
        frames[0]
            .get_path("method.type.name")
            .and_then(Value::as_str),
        Some("libc.so.6")
    );
    assert_eq!(frames[0].get("lineNumber"), Some(&Value::Int(-1)));
    assert_eq!(
        frames[1].get_path("method.name").and_then(Value::as_str),
        Some("main")
    );
    assert_eq!(
        frames[2].get("type").and_then(Value::as_str),
        Some("Native")
    );
    assert_eq!(
        sample.get("state").and_then(Value::as_str),
        Some("STATE_RUNNABLE")
    );
    let cpu = &c.events[4];
    assert_eq!(cpu.get("cpu").and_then(Value::as_str), Some("ठठठ pooled"));
    let custom = &c.events[5];
    assert_eq!(custom.duration_ticks(), Some(-5));
    assert!(custom.get("stackTrace").is_some_and(Value::is_null));
    assert_eq!(
        custom.get_path("origin.tag").and_then(Value::as_str),
        Some("pooled string")
    );
    assert_eq!(
        custom
            .get("nothing")
            .and_then(Value::as_object)
            .map(|o| o.fields.len()),
        Some(0)
    );
    assert!(
        custom
            .get("ratio")
            .and_then(Value::as_f64)
            .is_some_and(f64::is_nan)
    );
    assert_eq!(custom.get("ch"), Some(&Value::Char(0xd800)));
    let tags = custom.get("tags").and_then(Value::as_array).unwrap();
    assert_eq!(tags, [Value::Null, Value::String("".into())]);
}

#[test]
fn every_truncation_is_an_error_unless_it_ends_at_a_chunk_boundary() {
    let bytes = sample::recording();
    let full = read_recording(&bytes).unwrap();
    let ends: Vec<usize> = full
        .chunks
        .iter()
        .map(|c| (c.offset + c.header.chunk_size as u64) as usize)
        .collect();
    for len in (0..bytes.len())
        .step_by(stride())
        .chain(ends.iter().map(|e| e - 1))
    {
        let r = read_recording(&bytes[..len]);
        match ends.iter().position(|&e| e == len) {
            Some(i) => {
                let prefix = r.unwrap_or_else(|e| panic!("prefix {len}: {e}"));
                assert_eq!(prefix.chunks[..], full.chunks[..=i]);
            }
            None => assert!(r.is_err(), "prefix of {len} bytes read as Ok"),
        }
    }
    for &end in &ends[..2] {
        let r = read_recording(&bytes[..end]).unwrap();
        assert!(r.chunks.last().is_some_and(|c| c.header.flags & 2 == 0));
    }
}

#[test]
fn trailing_bytes_and_a_broken_header_are_errors() {
    let mut bytes = sample::recording();
    let len = bytes.len() as u64;
    bytes.extend([0u8; 10]);
    assert_eq!(
        read_recording(&bytes),
        Err(ReadError::Truncated {
            at: len,
            needed: HEADER_LEN as u64,
            available: 10
        })
    );
    bytes.extend([0u8; 100]);
    assert_eq!(read_recording(&bytes), Err(ReadError::BadMagic { at: len }));
    let mut bytes = sample::recording();
    bytes[5] = 3;
    assert!(matches!(
        read_recording(&bytes),
        Err(ReadError::UnsupportedVersion { major: 3, .. })
    ));
}

/// Far beyond any honest read of these small inputs (milliseconds, or about
/// 2 s on a 2-core machine at load 10), far below a read whose work grows
/// exponentially or never ends.
const RUNAWAY: Duration = Duration::from_secs(20);

/// Reads `bytes`, returning how long it took; the result itself may be
/// anything but a panic.
fn timed_read(bytes: &[u8]) -> Duration {
    let t = Instant::now();
    let _ = read_recording(bytes);
    t.elapsed()
}

#[test]
fn corrupting_any_byte_never_panics_or_runs_away() {
    let bytes = sample::recording();
    let mut worst = Duration::ZERO;
    let mut copy = bytes.clone();
    for at in (0..bytes.len()).step_by(stride()) {
        let orig = bytes[at];
        // Every byte inverted; every eighth also nudged and zeroed.
        let variants: &[u8] = if at % 8 == 0 {
            &[0xff, 0x01, orig]
        } else {
            &[0xff]
        };
        for &v in variants {
            copy[at] = if v == orig { 0 } else { orig ^ v };
            worst = worst.max(timed_read(&copy));
        }
        copy[at] = orig;
    }
    assert!(worst < RUNAWAY, "slowest read took {worst:?}");
}

#[test]
fn huge_varints_anywhere_never_panic() {
    let bytes = sample::recording();
    let patterns: [&[u8]; 3] = [
        &[0xff; 9],
        &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
        &[0xff, 0xff, 0xff, 0x7f],
    ];
    for at in (0..bytes.len()).step_by(8 * stride()) {
        for p in patterns {
            let mut copy = bytes.clone();
            let end = (at + p.len()).min(copy.len());
            copy[at..end].copy_from_slice(&p[..end - at]);
            assert!(timed_read(&copy) < RUNAWAY);
        }
    }
}

fn dynamic(id: u64, name: String, event: bool, fields: Vec<FieldDesc>) -> TypeDesc {
    TypeDesc {
        id: TypeId(id),
        name: Cow::Owned(name),
        super_type: event.then_some(Cow::Borrowed(EVENT_SUPER_TYPE)),
        simple_type: false,
        fields: Cow::Owned(fields),
        annotations: Cow::Borrowed(&[]),
        settings: Cow::Borrowed(&[]),
    }
}

/// A chunk whose metadata declares `x.Z0 {}` and `x.Zi { a: Z(i-1), b:
/// Z(i-1) }` up to `levels`, an event `x.Boom { startTime, z: Z(levels) }`,
/// and one such event: decoding it naively builds 2^levels empty objects.
fn fan_out(levels: u64) -> Vec<u8> {
    let mut m = Metadata::builtin();
    m.add(dynamic(1000, "x.Z0".into(), false, vec![])).unwrap();
    for i in 1..=levels {
        let below = TypeId(1000 + i - 1);
        let fields = vec![FieldDesc::new("a", below), FieldDesc::new("b", below)];
        m.add(dynamic(1000 + i, format!("x.Z{i}"), false, fields))
            .unwrap();
    }
    let top = vec![start_time(), FieldDesc::new("z", TypeId(1000 + levels))];
    m.add(dynamic(2000, "x.Boom".into(), true, top)).unwrap();
    let start = ChunkStart {
        start_nanos: 0,
        start_ticks: 0,
        ticks_per_second: 1,
    };
    let mut w = ChunkWriter::begin(Cursor::new(Vec::new()), start).unwrap();
    w.write_metadata(&m, 1, 0).unwrap();
    let mut ev = Vec::new();
    let r = begin_record(&mut ev, TypeId(2000));
    ev.put_i64(1);
    end_record(&mut ev, r);
    w.write_events(&ev).unwrap();
    let end = ChunkEnd {
        duration_nanos: 0,
        ticks_per_second: None,
        last: true,
    };
    w.finish(end).unwrap().into_inner()
}

#[test]
fn exploding_schemas_are_refused_quickly() {
    let t = Instant::now();
    let small = read_recording(&fan_out(4)).unwrap();
    assert!(small.chunks[0].events[0].get_path("z.a.b.a.b").is_some());
    assert!(matches!(
        read_recording(&fan_out(20)),
        Err(ReadError::BudgetExceeded { .. })
    ));
    assert!(matches!(
        read_recording(&fan_out(40)),
        Err(ReadError::TooDeep { limit: 32, .. })
    ));
    assert!(t.elapsed() < RUNAWAY, "{:?}", t.elapsed());
}

/// A valid header for a chunk of `body_len` bytes after the header.
fn header(body_len: usize, metadata: i64, cp: i64) -> Vec<u8> {
    let mut h = ChunkHeader::open(0, 0, 1_000_000_000);
    h.chunk_size = (HEADER_LEN + body_len) as i64;
    h.metadata_offset = metadata;
    h.constant_pool_offset = cp;
    h.state = 0;
    h.to_bytes().to_vec()
}

/// The sample's metadata (as a record) and a chunk framing `records` after it.
fn chunk_with_records(records: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut body = Vec::new();
    sample::metadata().encode(&mut body, 1, 0);
    for (type_id, payload) in records {
        let r = begin_record(&mut body, TypeId(*type_id));
        body.extend_from_slice(payload);
        end_record(&mut body, r);
    }
    let mut out = header(body.len(), HEADER_LEN as i64, 0);
    out.extend_from_slice(&body);
    out
}

/// Failing cases are saved next to this file, as proptest does by default.
const REGRESSIONS: FileFailurePersistence =
    FileFailurePersistence::WithSource("proptest-regressions");

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(REGRESSIONS)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..4096)) {
        let _ = read_recording(&bytes);
    }

    #[test]
    fn a_valid_header_then_arbitrary_bytes_never_panics(
        body in vec(any::<u8>(), 0..2048),
        metadata in 0i64..2200,
        cp in prop_oneof![Just(0i64), 0i64..2200],
    ) {
        let mut bytes = header(body.len(), metadata, cp);
        bytes.extend_from_slice(&body);
        let _ = read_recording(&bytes);
    }

    #[test]
    fn arbitrary_bytes_spliced_into_a_real_file_never_panic(
        at in any::<prop::sample::Index>(),
        cut in 0usize..16,
        insert in vec(any::<u8>(), 0..32),
    ) {
        let mut bytes = sample::recording();
        let at = at.index(bytes.len());
        let end = (at + cut).min(bytes.len());
        bytes.splice(at..end, insert);
        prop_assert!(timed_read(&bytes) < RUNAWAY);
    }

    #[test]
    fn garbage_payloads_of_real_event_types_never_panic(
        records in vec(
            (
                prop_oneof![
                    Just(TypeId::EXECUTION_SAMPLE.0),
                    Just(TypeId::CPU_INFORMATION.0),
                    Just(sample::CUSTOM.0),
                    Just(sample::POINT.0),
                    any::<u64>(),
                ],
                vec(any::<u8>(), 0..64),
            ),
            0..16,
        ),
    ) {
        let _ = read_recording(&chunk_with_records(&records));
    }
}
