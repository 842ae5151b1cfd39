//! The model behind `reader_roundtrip`: random schemas, values for them, and
//! chunk contents, as proptest strategies.

use std::sync::Arc;

use jfr_format::TypeId;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Char,
    Float,
    Double,
    Byte,
    Short,
    Int,
    Long,
    Str,
    /// `java.lang.Thread` constant-pool reference.
    Thread,
    /// `jdk.types.StackTrace` constant-pool reference.
    Stack,
    /// An inline value of `Schema::structs[i]`.
    Nested(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct FieldSpec {
    pub(crate) kind: Kind,
    pub(crate) array: bool,
    pub(crate) label: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct StructSpec {
    pub(crate) fields: Vec<FieldSpec>,
}

#[derive(Debug, Clone)]
pub(crate) struct EventSpec {
    pub(crate) duration: bool,
    pub(crate) fields: Vec<FieldSpec>,
    pub(crate) category: Option<Vec<String>>,
    pub(crate) setting: Option<String>,
}

/// Value types (each may nest only earlier ones) and event types.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    pub(crate) structs: Vec<StructSpec>,
    pub(crate) events: Vec<EventSpec>,
}

/// The ids the schema's types got when declared.
#[derive(Debug, Default)]
pub(crate) struct Built {
    pub(crate) struct_ids: Vec<TypeId>,
    pub(crate) event_ids: Vec<TypeId>,
}

/// A string and the encoding it is written in.
#[derive(Debug, Clone)]
pub(crate) enum StrVal {
    Null,
    /// Whatever `put_str` chooses.
    Auto(String),
    Utf8(String),
    Chars(String),
    /// Only chars below U+0100.
    Latin1(String),
    /// Key into the chunk's string pool (1..=len defined).
    Pool(u64),
}

#[derive(Debug, Clone)]
pub(crate) enum Val {
    Bool(bool),
    Char(u16),
    Float(u32),
    Double(u64),
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Str(StrVal),
    Thread(u64),
    Stack(u64),
    Struct(Vec<Val>),
    Array(Vec<Val>),
}

#[derive(Debug, Clone)]
pub(crate) struct ThreadSpec {
    pub(crate) os_name: String,
    pub(crate) os_tid: i64,
    pub(crate) java_name: Option<String>,
    pub(crate) java_tid: i64,
}

#[derive(Debug, Clone)]
pub(crate) struct MethodSpec {
    pub(crate) class: String,
    pub(crate) name: String,
    pub(crate) descriptor: String,
    pub(crate) modifiers: i32,
    pub(crate) hidden: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct FrameSpec {
    /// Index into the chunk's methods (modulo their number).
    pub(crate) method: usize,
    pub(crate) line: i32,
    pub(crate) bci: i32,
    /// Frame type key; 4 is undefined.
    pub(crate) frame_type: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct StackSpec {
    pub(crate) truncated: bool,
    pub(crate) frames: Vec<FrameSpec>,
}

#[derive(Debug, Clone)]
pub(crate) struct EventVal {
    /// Index into `Schema::events`.
    pub(crate) event: usize,
    pub(crate) start: i64,
    pub(crate) duration: Option<i64>,
    pub(crate) fields: Vec<Val>,
    pub(crate) via_encoder: bool,
}

/// One chunk: its pools (keys 1..=len) and events.
#[derive(Debug, Clone)]
pub(crate) struct ChunkSpec {
    pub(crate) threads: Vec<ThreadSpec>,
    pub(crate) strings: Vec<String>,
    pub(crate) methods: Vec<MethodSpec>,
    pub(crate) stacks: Vec<StackSpec>,
    pub(crate) events: Vec<EventVal>,
    pub(crate) metadata_last: bool,
    pub(crate) junk_record: bool,
}

/// Text of every flavour: ASCII, any printable Unicode (CJK, emoji), Latin-1
/// with NUL and controls, a fixed awkward mix, long strings, and Devanagari
/// (which `put_str` writes as a char array).
pub(crate) fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-zA-Z0-9_]{0,12}",
        2 => "\\PC{0,16}",
        1 => "[\\x00-\\xff]{0,16}",
        1 => Just("日本語テキスト🦀🎉\0null\u{0}end".to_owned()),
        1 => "[a-z\u{4e00}-\u{4e20}\u{1f600}-\u{1f610}]{200,2000}",
        1 => "[\u{900}-\u{97f}]{1,20}",
    ]
    .boxed()
}

fn str_val() -> BoxedStrategy<StrVal> {
    prop_oneof![
        Just(StrVal::Null),
        text().prop_map(StrVal::Auto),
        text().prop_map(StrVal::Utf8),
        text().prop_map(StrVal::Chars),
        "[\\x00-\\xff]{0,20}".prop_map(StrVal::Latin1),
        (0u64..5).prop_map(StrVal::Pool),
    ]
    .boxed()
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        1 => Just(Kind::Bool),
        1 => Just(Kind::Char),
        1 => Just(Kind::Float),
        1 => Just(Kind::Double),
        1 => Just(Kind::Byte),
        1 => Just(Kind::Short),
        1 => Just(Kind::Int),
        1 => Just(Kind::Long),
        2 => Just(Kind::Str),
        1 => Just(Kind::Thread),
        1 => Just(Kind::Stack),
        2 => any::<usize>().prop_map(Kind::Nested),
    ]
}

/// A field of any kind; `Nested` indices are fixed up by the schema.
pub(crate) fn field_strategy() -> impl Strategy<Value = FieldSpec> {
    (
        kind(),
        prop::bool::weighted(0.25),
        option::weighted(0.2, text()),
    )
        .prop_map(|(kind, array, label)| FieldSpec {
            // The writer refuses arrays of references to struct types (the
            // JDK cannot read them), so reference fields stay scalar.
            array: array && !matches!(kind, Kind::Thread | Kind::Stack),
            kind,
            label,
        })
}

/// Points `Nested` fields at one of the first `n` structs (or makes them
/// `long` if there are none).
fn fix_nesting(fields: &mut [FieldSpec], n: usize) {
    for f in fields {
        if let Kind::Nested(i) = f.kind {
            f.kind = if n == 0 {
                Kind::Long
            } else {
                Kind::Nested(i % n)
            };
        }
    }
}

fn schema() -> impl Strategy<Value = Schema> {
    let ident = "[a-zA-Z][a-zA-Z0-9 ]{0,10}";
    let event = (
        any::<bool>(),
        vec(field_strategy(), 0..7),
        option::of(vec(ident, 1..3)),
        option::of(text()),
    );
    (vec(vec(field_strategy(), 0..4), 0..4), vec(event, 1..4)).prop_map(|(structs, events)| {
        let mut structs: Vec<StructSpec> = structs
            .into_iter()
            .map(|fields| StructSpec { fields })
            .collect();
        for (i, s) in structs.iter_mut().enumerate() {
            fix_nesting(&mut s.fields, i);
        }
        let n = structs.len();
        let events = events
            .into_iter()
            .map(|(duration, mut fields, category, setting)| {
                fix_nesting(&mut fields, n);
                EventSpec {
                    duration,
                    fields,
                    category,
                    setting,
                }
            })
            .collect();
        Schema { structs, events }
    })
}

fn long() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), Just(i64::MIN), Just(-1i64), 0i64..300]
}

fn kind_val(schema: &Arc<Schema>, kind: &Kind) -> BoxedStrategy<Val> {
    match kind {
        Kind::Bool => any::<bool>().prop_map(Val::Bool).boxed(),
        Kind::Char => any::<u16>().prop_map(Val::Char).boxed(),
        Kind::Float => any::<u32>().prop_map(Val::Float).boxed(),
        Kind::Double => any::<u64>().prop_map(Val::Double).boxed(),
        Kind::Byte => any::<i8>().prop_map(Val::Byte).boxed(),
        Kind::Short => any::<i16>().prop_map(Val::Short).boxed(),
        Kind::Int => prop_oneof![any::<i32>(), Just(-1i32), Just(i32::MIN)]
            .prop_map(Val::Int)
            .boxed(),
        Kind::Long => long().prop_map(Val::Long).boxed(),
        Kind::Str => str_val().prop_map(Val::Str).boxed(),
        Kind::Thread => (0u64..6).prop_map(Val::Thread).boxed(),
        Kind::Stack => (0u64..5).prop_map(Val::Stack).boxed(),
        Kind::Nested(i) => fields_val(schema, &schema.structs[*i].fields)
            .prop_map(Val::Struct)
            .boxed(),
    }
}

fn field_val(schema: &Arc<Schema>, f: &FieldSpec) -> BoxedStrategy<Val> {
    let one = kind_val(schema, &f.kind);
    if f.array {
        vec(one, 0..4).prop_map(Val::Array).boxed()
    } else {
        one
    }
}

fn fields_val(schema: &Arc<Schema>, fields: &[FieldSpec]) -> BoxedStrategy<Vec<Val>> {
    let parts: Vec<BoxedStrategy<Val>> = fields.iter().map(|f| field_val(schema, f)).collect();
    parts.boxed()
}

fn event_val(schema: Arc<Schema>) -> BoxedStrategy<EventVal> {
    (0..schema.events.len())
        .prop_flat_map(move |event| {
            let spec = &schema.events[event];
            let duration = if spec.duration {
                long().prop_map(Some).boxed()
            } else {
                Just(None).boxed()
            };
            let fields = fields_val(&schema, &spec.fields);
            (Just(event), long(), duration, fields, any::<bool>())
        })
        .prop_map(|(event, start, duration, fields, via_encoder)| EventVal {
            event,
            start,
            duration,
            fields,
            via_encoder,
        })
        .boxed()
}

fn thread() -> impl Strategy<Value = ThreadSpec> {
    (text(), any::<i64>(), option::of(text()), long()).prop_map(
        |(os_name, os_tid, java_name, java_tid)| ThreadSpec {
            os_name,
            os_tid,
            java_name,
            java_tid,
        },
    )
}

fn method() -> impl Strategy<Value = MethodSpec> {
    let class = "[a-z]{1,8}(/[a-zA-Z]{1,8}){0,2}";
    let descriptor = prop_oneof![Just("()V".to_owned()), Just("()L;".to_owned()), text()];
    (class, text(), descriptor, any::<i32>(), any::<bool>()).prop_map(
        |(class, name, descriptor, modifiers, hidden)| MethodSpec {
            class,
            name,
            descriptor,
            modifiers,
            hidden,
        },
    )
}

fn stack() -> impl Strategy<Value = StackSpec> {
    let frame = (any::<usize>(), any::<i32>(), any::<i32>(), 0u64..5).prop_map(
        |(method, line, bci, frame_type)| FrameSpec {
            method,
            line,
            bci,
            frame_type,
        },
    );
    (any::<bool>(), vec(frame, 0..6))
        .prop_map(|(truncated, frames)| StackSpec { truncated, frames })
}

fn chunk(schema: Arc<Schema>) -> impl Strategy<Value = ChunkSpec> {
    (
        vec(thread(), 1..4),
        vec(text(), 0..4),
        vec(method(), 1..4),
        vec(stack(), 0..4),
        vec(event_val(schema), 0..8),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(threads, strings, methods, stacks, events, metadata_last, junk_record)| ChunkSpec {
                threads,
                strings,
                methods,
                stacks,
                events,
                metadata_last,
                junk_record,
            },
        )
}

/// A schema and one to three chunks of contents for it.
pub(crate) fn case_strategy() -> impl Strategy<Value = (Arc<Schema>, Vec<ChunkSpec>)> {
    schema().prop_flat_map(|schema| {
        let schema = Arc::new(schema);
        (Just(schema.clone()), vec(chunk(schema), 1..4))
    })
}
