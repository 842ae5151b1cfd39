//! The format tour: a file that uses every part of the JFR chunk format
//! flightrec writes, built as data first so a test can compare what `jfr`
//! reads back with what was written.
//!
//! * one event type per field kind (see [`schema`]), every annotation;
//! * values at the edges: `i64::MIN`/`MAX`, NaN and ±infinity, strings with
//!   CJK, emoji, NUL, a 64 KiB string, `""`, null and pooled strings;
//! * three chunks on one tick clock, each with its own metadata and the
//!   constants its events use (keys keep their meaning across chunks):
//!   1. metadata first, one checkpoint at the end;
//!   2. byte-identical metadata (so the same metadata id) and two
//!      checkpoints chained by their delta;
//!   3. one more event type, so new metadata with a new id, written after
//!      the events; flagged as the final chunk.

#[path = "constants.rs"]
pub(crate) mod constants;
#[path = "schema.rs"]
pub(crate) mod schema;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

use flightrec::jfr_format::write::checkpoint::FLAG_FLUSH;
use flightrec::jfr_format::write::encode::Sink;
use flightrec::jfr_format::{
    Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, FieldDesc, Metadata, TypeId,
};

use constants::{Constants, FrameSpec, Pools, Used};
use schema::*;

/// Ticks per second of the tour's clock.
pub(crate) const TICKS_PER_SECOND: i64 = 1_000_000_000;
/// The tick value at the start of the first chunk (any origin works, as long
/// as every chunk uses the same clock).
pub(crate) const FIRST_TICKS: i64 = 5_000_000_000;
/// Wall-clock distance between chunk starts.
pub(crate) const CHUNK_SPAN_NANOS: i64 = 1_000_000_000;

/// A field value, as written. The variant says how it is encoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Bool(bool),
    /// A UTF-16 code unit.
    Char(u16),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    /// An inline string; `None` is null.
    Str(Option<String>),
    /// A reference into the `java.lang.String` pool.
    PooledStr(u64),
    /// Constant-pool references (0 = null).
    Thread(u64),
    Class(u64),
    StackTrace(u64),
    /// A value type, its fields inline.
    Struct(Vec<Value>),
    /// A `jdk.types.StackFrame` written inline (its method and frame type
    /// are constant-pool references).
    Frame(FrameSpec),
    /// An array field.
    Array(Vec<Value>),
}

impl Value {
    fn str(s: &str) -> Self {
        Value::Str(Some(s.to_owned()))
    }

    /// Writes the value as the format encodes it.
    pub(crate) fn encode(&self, s: &mut impl Sink) {
        match self {
            Value::Bool(v) => s.put_bool(*v),
            Value::Char(v) => s.put_char(*v),
            Value::Byte(v) => s.put_i8(*v),
            Value::Short(v) => s.put_i16(*v),
            Value::Int(v) => s.put_i32(*v),
            Value::Long(v) => s.put_i64(*v),
            Value::Float(v) => s.put_f32(*v),
            Value::Double(v) => s.put_f64(*v),
            Value::Str(v) => s.put_opt_str(v.as_deref()),
            Value::PooledStr(key) => s.put_str_ref(*key),
            Value::Thread(key) | Value::Class(key) | Value::StackTrace(key) => s.put_varint(*key),
            Value::Struct(fields) => fields.iter().for_each(|v| v.encode(s)),
            Value::Frame(f) => {
                s.put_varint(f.method);
                s.put_i32(f.line);
                s.put_i32(f.bytecode_index);
                s.put_varint(f.frame_type.0);
            }
            Value::Array(items) => {
                s.put_varint(items.len() as u64);
                items.iter().for_each(|v| v.encode(s));
            }
        }
    }

    /// True if the value has the shape `field` declares.
    pub(crate) fn conforms(&self, field: &FieldDesc, md: &Metadata) -> bool {
        if field.array {
            let element = FieldDesc {
                array: false,
                ..field.clone()
            };
            return matches!(self, Value::Array(items) if items.iter().all(|v| v.conforms(&element, md)));
        }
        let cp = field.constant_pool;
        match (self, field.type_id) {
            (Value::Bool(_), TypeId::BOOLEAN)
            | (Value::Char(_), TypeId::CHAR)
            | (Value::Byte(_), TypeId::BYTE)
            | (Value::Short(_), TypeId::SHORT)
            | (Value::Int(_), TypeId::INT)
            | (Value::Long(_), TypeId::LONG)
            | (Value::Float(_), TypeId::FLOAT)
            | (Value::Double(_), TypeId::DOUBLE)
            | (Value::Str(_) | Value::PooledStr(_), TypeId::STRING)
            | (Value::Frame(_), TypeId::STACK_FRAME) => !cp,
            (Value::Thread(_), TypeId::THREAD)
            | (Value::Class(_), TypeId::CLASS)
            | (Value::StackTrace(_), TypeId::STACK_TRACE) => cp,
            (Value::Struct(values), id) => match md.get(id) {
                Some(t) if !cp && !t.is_event() && t.fields.len() == values.len() => values
                    .iter()
                    .zip(t.fields.iter())
                    .all(|(v, f)| v.conforms(f, md)),
                _ => false,
            },
            _ => false,
        }
    }

    /// Records the constants this value references.
    fn collect(&self, used: &mut Used) {
        match self {
            Value::Thread(k) if *k != 0 => drop(used.threads.insert(*k)),
            Value::Class(k) if *k != 0 => drop(used.classes.insert(*k)),
            Value::StackTrace(k) if *k != 0 => drop(used.traces.insert(*k)),
            Value::PooledStr(k) => drop(used.strings.insert(*k)),
            Value::Frame(f) => {
                used.methods.insert(f.method);
                used.frame_types.insert(f.frame_type);
            }
            Value::Struct(vs) | Value::Array(vs) => vs.iter().for_each(|v| v.collect(used)),
            _ => {}
        }
    }
}

/// One event: its type and a value per field (`values[0]` is `startTime`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub(crate) type_id: TypeId,
    pub(crate) values: Vec<Value>,
}

impl Event {
    /// The `startTime` ticks.
    pub(crate) fn start_ticks(&self) -> i64 {
        match self.values[0] {
            Value::Long(t) => t,
            ref v => panic!("startTime is {v:?}"),
        }
    }
}

/// How a chunk arranges its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Metadata, events, one checkpoint.
    MetadataFirst,
    /// Metadata, a checkpoint with threads and strings, events, a second
    /// checkpoint with the rest (chained by `delta`).
    TwoCheckpoints,
    /// Events, checkpoint, metadata.
    MetadataLast,
}

/// One chunk of the tour.
#[derive(Debug, Clone)]
pub(crate) struct ChunkPlan {
    pub(crate) start: ChunkStart,
    pub(crate) duration_nanos: i64,
    /// Uses the metadata with [`LATE_EVENT`].
    pub(crate) extended: bool,
    pub(crate) layout: Layout,
    pub(crate) events: Vec<Event>,
}

/// What [`Tour::write`] wrote, per chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Written {
    /// The metadata id of each chunk.
    pub(crate) metadata_ids: Vec<u64>,
    /// The number of checkpoint records of each chunk.
    pub(crate) checkpoints: Vec<usize>,
    /// The byte offset of each chunk in the file.
    pub(crate) chunk_offsets: Vec<u64>,
}

/// The whole tour: types, constants and chunks.
#[derive(Debug, Clone)]
pub(crate) struct Tour {
    pub(crate) base: Metadata,
    pub(crate) extended: Metadata,
    pub(crate) constants: Constants,
    pub(crate) chunks: Vec<ChunkPlan>,
}

/// Appends events to a chunk with increasing start times.
struct Events {
    ticks: i64,
    events: Vec<Event>,
}

impl Events {
    fn new(chunk_ticks: i64) -> Self {
        Self {
            ticks: chunk_ticks,
            events: Vec::new(),
        }
    }

    /// An event of `type_id` 1.000123 ms after the previous one.
    fn push(&mut self, type_id: TypeId, fields: Vec<Value>) {
        self.ticks += 1_000_123;
        let mut values = vec![Value::Long(self.ticks)];
        values.extend(fields);
        self.events.push(Event { type_id, values });
    }

    fn pair<T: Copy>(&mut self, type_id: TypeId, f: fn(T) -> Value, v: T, u: T) {
        self.push(type_id, vec![f(v), f(u)]);
    }
}

/// A string of exactly 64 KiB of UTF-8 mixing 1-, 3- and 4-byte characters.
pub(crate) fn string_64k() -> String {
    const LEN: usize = 64 * 1024;
    let mut s = String::with_capacity(LEN);
    while s.len() + "flightrec 日本 🦀 ".len() <= LEN {
        s.push_str("flightrec 日本 🦀 ");
    }
    while s.len() < LEN {
        s.push('x');
    }
    s
}

fn point(x: i32, y: i32, label: Option<&str>) -> Value {
    Value::Struct(vec![
        Value::Int(x),
        Value::Int(y),
        Value::Str(label.map(str::to_owned)),
    ])
}

impl Tour {
    /// The tour whose first chunk starts at `start_nanos` (ns since the Unix
    /// epoch).
    pub(crate) fn new(start_nanos: i64) -> Self {
        let base = schema::metadata(base_types()).expect("tour types are valid");
        let extended = schema::metadata(base_types().into_iter().chain([late_type()]))
            .expect("tour types are valid");
        let start = |i: i64| ChunkStart {
            start_nanos: start_nanos + i * CHUNK_SPAN_NANOS,
            start_ticks: FIRST_TICKS + i * CHUNK_SPAN_NANOS * TICKS_PER_SECOND / 1_000_000_000,
            ticks_per_second: TICKS_PER_SECOND,
        };
        let chunk = |i: i64, extended, layout, events: Events| ChunkPlan {
            start: start(i),
            duration_nanos: CHUNK_SPAN_NANOS,
            extended,
            layout,
            events: events.events,
        };
        let chunks = vec![
            chunk(
                0,
                false,
                Layout::MetadataFirst,
                first_chunk(start(0).start_ticks),
            ),
            chunk(
                1,
                false,
                Layout::TwoCheckpoints,
                second_chunk(start(1).start_ticks),
            ),
            chunk(
                2,
                true,
                Layout::MetadataLast,
                third_chunk(start(2).start_ticks),
            ),
        ];
        let tour = Tour {
            base,
            extended,
            constants: Constants::new(),
            chunks,
        };
        for c in &tour.chunks {
            for e in &c.events {
                let t = tour.metadata(c).get(e.type_id).expect("declared type");
                assert_eq!(t.fields.len(), e.values.len(), "{}", t.name);
                for (v, f) in e.values.iter().zip(t.fields.iter()) {
                    assert!(
                        v.conforms(f, tour.metadata(c)),
                        "{}.{}: {v:?}",
                        t.name,
                        f.name
                    );
                }
            }
        }
        tour
    }

    /// The metadata `chunk` declares.
    pub(crate) fn metadata(&self, chunk: &ChunkPlan) -> &Metadata {
        if chunk.extended {
            &self.extended
        } else {
            &self.base
        }
    }

    /// The name of event type `id`.
    pub(crate) fn type_name(&self, id: TypeId) -> &str {
        &self.extended.get(id).expect("declared type").name
    }

    /// Events written per event type name.
    pub(crate) fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for e in self.chunks.iter().flat_map(|c| &c.events) {
            *counts
                .entry(self.type_name(e.type_id).to_owned())
                .or_insert(0) += 1;
        }
        counts
    }

    /// Writes the tour to `path`.
    pub(crate) fn write(&self, path: &Path) -> io::Result<Written> {
        let mut out = BufWriter::new(File::create(path)?);
        let mut written = Written::default();
        let mut ids = MetadataIds::default();
        let mut buf = vec![0u8; 1 << 20];
        let last = self.chunks.len() - 1;
        let mut offset = 0;
        for (i, c) in self.chunks.iter().enumerate() {
            let md = self.metadata(c);
            let id = ids.id_for(md);
            let mut w = ChunkWriter::begin(out, c.start)?;
            written.chunk_offsets.push(offset);
            let ticks = c.start.start_ticks;
            let mut used = Used::default();
            c.events
                .iter()
                .flat_map(|e| &e.values)
                .for_each(|v| v.collect(&mut used));
            let closure = used.close(&self.constants);
            let checkpoint = |which| {
                let mut cp = Checkpoint::new(FLAG_FLUSH);
                constants::write_pools(&mut cp, &self.constants, &closure, which);
                cp
            };
            let end_ticks = ticks + c.duration_nanos;
            match c.layout {
                Layout::MetadataFirst => {
                    w.write_metadata(md, id, ticks)?;
                    write_events(&mut w, &c.events, &mut buf)?;
                    w.write_checkpoint(&checkpoint(Pools::All), end_ticks, 0)?;
                    written.checkpoints.push(1);
                }
                Layout::TwoCheckpoints => {
                    w.write_metadata(md, id, ticks)?;
                    w.write_checkpoint(&checkpoint(Pools::ThreadsAndStrings), ticks, 0)?;
                    write_events(&mut w, &c.events, &mut buf)?;
                    w.write_checkpoint(&checkpoint(Pools::Rest), end_ticks, 0)?;
                    written.checkpoints.push(2);
                }
                Layout::MetadataLast => {
                    write_events(&mut w, &c.events, &mut buf)?;
                    w.write_checkpoint(&checkpoint(Pools::All), end_ticks, 0)?;
                    w.write_metadata(md, id, end_ticks)?;
                    written.checkpoints.push(1);
                }
            }
            written.metadata_ids.push(id);
            offset += w.len();
            out = w.finish(ChunkEnd {
                duration_nanos: c.duration_nanos,
                ticks_per_second: None,
                last: i == last,
            })?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(written)
    }

    /// The line the example prints: `{"counts": {"<event name>": N, ...}}`.
    pub(crate) fn counts_json(&self) -> String {
        serde_json::json!({ "counts": self.counts() }).to_string()
    }
}

/// Encodes every event with the allocation-free [`EventEncoder`] into the
/// reused `buf`, and appends the records to the chunk.
fn write_events<W: io::Write + io::Seek>(
    w: &mut ChunkWriter<W>,
    events: &[Event],
    buf: &mut [u8],
) -> io::Result<()> {
    let mut records = Vec::new();
    for e in events {
        let mut enc = EventEncoder::begin(buf, e.type_id);
        e.values.iter().for_each(|v| v.encode(&mut enc));
        let n = enc
            .finish()
            .ok_or_else(|| io::Error::other("event larger than the encode buffer"))?;
        records.extend_from_slice(&buf[..n]);
    }
    w.write_events(&records)?;
    Ok(())
}

/// Hands out metadata ids: the same id for byte-identical metadata, a new
/// one otherwise (the JDK reuses the previous chunk's metadata when the id
/// is unchanged, §5.6).
#[derive(Debug, Default)]
struct MetadataIds {
    seen: Vec<Vec<u8>>,
}

impl MetadataIds {
    fn id_for(&mut self, md: &Metadata) -> u64 {
        let mut bytes = Vec::new();
        md.encode(&mut bytes, 0, 0);
        let index = match self.seen.iter().position(|b| *b == bytes) {
            Some(i) => i,
            None => {
                self.seen.push(bytes);
                self.seen.len() - 1
            }
        };
        index as u64 + 1
    }
}

fn first_chunk(ticks: i64) -> Events {
    let mut e = Events::new(ticks);
    for v in [true, false] {
        e.push(BOOLEAN_EVENT, vec![Value::Bool(v)]);
    }
    for c in ['A' as u16, 0xe9, 0x4e2d, 0, u16::from(b'"'), 0xffff] {
        e.push(CHAR_EVENT, vec![Value::Char(c)]);
    }
    for v in [i8::MIN, -1, 0, 1, i8::MAX] {
        e.pair(BYTE_EVENT, Value::Byte, v, v);
    }
    for v in [i16::MIN, -1, 0, i16::MAX] {
        e.pair(SHORT_EVENT, Value::Short, v, v);
    }
    for v in [i32::MIN, -1, 0, 1, i32::MAX] {
        e.pair(INT_EVENT, Value::Int, v, v);
    }
    for v in [i64::MIN, -1, 0, 1, i64::MAX] {
        e.pair(LONG_EVENT, Value::Long, v, v);
    }
    let floats = [
        0.0,
        -0.0,
        0.4,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for v in floats {
        e.push(FLOAT_EVENT, vec![Value::Float(v)]);
    }
    let doubles = [
        0.0,
        -0.0,
        0.1,
        std::f64::consts::PI,
        f64::from_bits(1),
        f64::MAX,
        f64::MIN,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    for v in doubles {
        e.push(DOUBLE_EVENT, vec![Value::Double(v)]);
    }
    let big = string_64k();
    let strings: [(&str, Value); 12] = [
        ("ascii", Value::str("Hello, JFR")),
        ("latin1", Value::str("café ÿ")),
        ("cjk", Value::str("日本語の文字列 中文 한국어")),
        ("emoji", Value::str("🦀 🚀 👩‍💻")),
        ("nul", Value::str("a\0b\0")),
        ("devanagari", Value::str("नमस्ते दुनिया")),
        (
            "escapes",
            Value::str("quote \" backslash \\ newline \n tab \t </script>"),
        ),
        ("64KiB", Value::Str(Some(big))),
        ("empty", Value::str("")),
        ("null", Value::Str(None)),
        ("pooled", Value::PooledStr(constants::POOLED_GREETING)),
        ("pooledLong", Value::PooledStr(constants::POOLED_LONG)),
    ];
    for (case, v) in strings {
        e.push(STRING_EVENT, vec![Value::str(case), v]);
    }
    use constants::*;
    for t in [MAIN_THREAD, WORKER_THREAD, NATIVE_THREAD, 0] {
        e.push(THREAD_EVENT, vec![Value::Thread(t)]);
    }
    for c in [WIDGET_CLASS, BYTE_ARRAY_CLASS, LIST_CLASS, 0] {
        e.push(CLASS_EVENT, vec![Value::Class(c)]);
    }
    for t in [TRACE_RENDER, TRACE_NATIVE, TRACE_TRUNCATED, 0] {
        e.push(STACK_TRACE_EVENT, vec![Value::StackTrace(t)]);
    }
    e.push(
        NESTED_EVENT,
        vec![
            point(1, 2, Some("origin 原点")),
            Value::Struct(vec![
                point(i32::MIN, i32::MAX, Some("")),
                point(0, -1, None),
                Value::Double(f64::NAN),
            ]),
        ],
    );
    // Arrays: the only element type every `jfr` printer shows is the JDK's
    // own stack frame (docs/jfr-format.md, "Arrays and the printers").
    let frames = |trace: u64, n: usize| {
        let c = Constants::new();
        Value::Array(
            c.traces[&trace].frames[..n]
                .iter()
                .cloned()
                .map(Value::Frame)
                .collect(),
        )
    };
    e.push(ARRAY_EVENT, vec![Value::Array(vec![])]);
    e.push(ARRAY_EVENT, vec![frames(TRACE_RENDER, 3)]);
    content_types(&mut e, ticks);
    e.push(
        SAMPLE_EVENT,
        vec![
            Value::Long(250_000),
            Value::Thread(MAIN_THREAD),
            Value::StackTrace(TRACE_RENDER),
        ],
    );
    e.push(
        SAMPLE_EVENT,
        vec![
            Value::Long(0),
            Value::Thread(WORKER_THREAD),
            Value::StackTrace(TRACE_NATIVE),
        ],
    );
    e
}

/// Two `ContentTypesEvent`s: ordinary values, then edge values.
fn content_types(e: &mut Events, ticks: i64) {
    let long = Value::Long;
    e.push(
        CONTENT_TYPES_EVENT,
        vec![
            long(1_500_000),          // duration: 1.5 ms in ticks
            long(1_750_000_000_123),  // wallTime: ms since epoch
            long(ticks + 42_000_000), // tickTime
            long(1_234_567),          // nanos
            long(1_500),              // micros
            long(2_500),              // millis
            long(90),                 // seconds
            long(2_000),              // ticks
            long(1_536),              // bytes
            long(4_096),              // bits
            Value::Double(0.25),      // ratio
            Value::Float(0.5),        // ratioFloat
            long(1_000),              // rate
            long(0x7fff_dead_beef),   // address
            Value::Int(7),            // draft
        ],
    );
    e.push(
        CONTENT_TYPES_EVENT,
        vec![
            long(0),
            long(0),
            long(ticks),
            long(i64::MIN),
            long(i64::MAX),
            long(-1),
            long(0),
            long(1),
            long(i64::MAX),
            long(1),
            Value::Double(1.5),
            Value::Float(f32::NAN),
            long(-1),
            long(-1),
            Value::Int(i32::MIN),
        ],
    );
}

fn second_chunk(ticks: i64) -> Events {
    use constants::*;
    let mut e = Events::new(ticks);
    e.pair(INT_EVENT, Value::Int, 42, -42);
    e.push(
        STRING_EVENT,
        vec![Value::str("chunk2"), Value::str("second chunk 第二")],
    );
    e.push(
        STRING_EVENT,
        vec![Value::str("pooled"), Value::PooledStr(POOLED_GREETING)],
    );
    e.push(THREAD_EVENT, vec![Value::Thread(WORKER_THREAD)]);
    e.push(
        SAMPLE_EVENT,
        vec![
            Value::Long(1),
            Value::Thread(NATIVE_THREAD),
            Value::StackTrace(TRACE_NATIVE),
        ],
    );
    e.push(
        SAMPLE_EVENT,
        vec![
            Value::Long(999_999),
            Value::Thread(WORKER_THREAD),
            Value::StackTrace(TRACE_RENDER),
        ],
    );
    let native = Constants::new().traces[&TRACE_NATIVE].frames[0].clone();
    e.push(ARRAY_EVENT, vec![Value::Array(vec![Value::Frame(native)])]);
    e
}

fn third_chunk(ticks: i64) -> Events {
    use constants::*;
    let mut e = Events::new(ticks);
    e.pair(LONG_EVENT, Value::Long, 123_456_789, -123_456_789);
    e.push(CLASS_EVENT, vec![Value::Class(LIST_CLASS)]);
    e.push(LATE_EVENT, vec![Value::str("only in chunk 3 — 第三")]);
    e.push(
        SAMPLE_EVENT,
        vec![
            Value::Long(5),
            Value::Thread(MAIN_THREAD),
            Value::StackTrace(TRACE_TRUNCATED),
        ],
    );
    e.push(STACK_TRACE_EVENT, vec![Value::StackTrace(TRACE_RENDER)]);
    e
}
