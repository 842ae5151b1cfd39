//! The tour's types: one event type per field kind, two value (struct) types,
//! a stack-trace sample, and a late type that only the third chunk declares.
//! Between them they use every annotation the format defines.

use std::borrow::Cow;

use flightrec::jfr_format::builtin::{duration, event_thread, stack_trace, start_time};
use flightrec::jfr_format::schema::{
    DataAmountUnit, EVENT_SUPER_TYPE, SettingDesc, TimespanUnit, TimestampUnit,
};
use flightrec::jfr_format::{Annotation, FieldDesc, Metadata, SchemaError, TypeDesc, TypeId};

/// `flightrec.tour.BooleanEvent`: `value: boolean`.
pub(crate) const BOOLEAN_EVENT: TypeId = TypeId(1000);
/// `flightrec.tour.CharEvent`: `value: char`.
pub(crate) const CHAR_EVENT: TypeId = TypeId(1001);
/// `flightrec.tour.ByteEvent`: `value: byte`, `unsignedValue: byte @Unsigned`.
pub(crate) const BYTE_EVENT: TypeId = TypeId(1002);
/// `flightrec.tour.ShortEvent`: `value: short`, `unsignedValue: short @Unsigned`.
pub(crate) const SHORT_EVENT: TypeId = TypeId(1003);
/// `flightrec.tour.IntEvent`: `value: int`, `unsignedValue: int @Unsigned`.
pub(crate) const INT_EVENT: TypeId = TypeId(1004);
/// `flightrec.tour.LongEvent`: `value: long`, `unsignedValue: long @Unsigned`.
pub(crate) const LONG_EVENT: TypeId = TypeId(1005);
/// `flightrec.tour.FloatEvent`: `value: float`.
pub(crate) const FLOAT_EVENT: TypeId = TypeId(1006);
/// `flightrec.tour.DoubleEvent`: `value: double`.
pub(crate) const DOUBLE_EVENT: TypeId = TypeId(1007);
/// `flightrec.tour.StringEvent`: `case: String`, `value: String`.
pub(crate) const STRING_EVENT: TypeId = TypeId(1008);
/// `flightrec.tour.ThreadEvent`: `thread: Thread` (constant pool).
pub(crate) const THREAD_EVENT: TypeId = TypeId(1009);
/// `flightrec.tour.ClassEvent`: `clazz: Class` (constant pool).
pub(crate) const CLASS_EVENT: TypeId = TypeId(1010);
/// `flightrec.tour.StackTraceEvent`: `trace: StackTrace` (constant pool).
pub(crate) const STACK_TRACE_EVENT: TypeId = TypeId(1011);
/// `flightrec.tour.NestedEvent`: `point: Point`, `segment: Segment` (inline).
pub(crate) const NESTED_EVENT: TypeId = TypeId(1012);
/// `flightrec.tour.ArrayEvent`: `frames: jdk.types.StackFrame[]`, inline.
///
/// Arrays of `long`, `byte`, `String` or of a value type of our own are
/// valid JFR, and `jfr print --json`/`--xml` show them, but JDK 25's plain
/// `jfr print` throws a NullPointerException on their first element and
/// `jfr view` a ClassCastException on value-type arrays
/// (docs/jfr-format.md, "Arrays and the printers"). The format crate's
/// own tests cover those; the tour keeps to an array every command shows.
pub(crate) const ARRAY_EVENT: TypeId = TypeId(1013);
/// `flightrec.tour.ContentTypesEvent`: every content-type annotation.
pub(crate) const CONTENT_TYPES_EVENT: TypeId = TypeId(1014);
/// `flightrec.tour.SampleEvent`: `duration`, `eventThread`, `stackTrace`,
/// with the setting annotations.
pub(crate) const SAMPLE_EVENT: TypeId = TypeId(1015);
/// `flightrec.tour.LateEvent`: declared only in the third chunk's metadata.
pub(crate) const LATE_EVENT: TypeId = TypeId(1016);

/// `flightrec.tour.Point`: `x: int`, `y: int`, `label: String`.
pub(crate) const POINT: TypeId = TypeId(1100);
/// `flightrec.tour.Segment`: `from: Point`, `to: Point`, `weight: double`.
pub(crate) const SEGMENT: TypeId = TypeId(1101);

/// The category every tour event is listed under.
pub(crate) const CATEGORY: [&str; 2] = ["Flightrec", "Format Tour"];

fn label(s: &'static str) -> Annotation {
    Annotation::Label(Cow::Borrowed(s))
}

fn description(s: &'static str) -> Annotation {
    Annotation::Description(Cow::Borrowed(s))
}

fn field(name: &'static str, ty: TypeId, annotations: Vec<Annotation>) -> FieldDesc {
    FieldDesc::annotated(name, ty, annotations)
}

fn value_type(
    id: TypeId,
    name: &'static str,
    fields: Vec<FieldDesc>,
    ann: Vec<Annotation>,
) -> TypeDesc {
    TypeDesc {
        id,
        name: Cow::Borrowed(name),
        super_type: None,
        simple_type: false,
        fields: Cow::Owned(fields),
        annotations: Cow::Owned(ann),
        settings: Cow::Borrowed(&[]),
    }
}

/// An event type: `startTime` first, then `fields`; labelled, described
/// and categorised, plus `extra` annotations.
fn event(
    id: TypeId,
    name: &'static str,
    title: &'static str,
    fields: Vec<FieldDesc>,
    extra: Vec<Annotation>,
) -> TypeDesc {
    let mut annotations = vec![
        label(title),
        description("One of the format tour's event types."),
        Annotation::Category(CATEGORY.iter().map(|s| Cow::Borrowed(*s)).collect()),
    ];
    annotations.extend(extra);
    let mut all = vec![start_time()];
    all.extend(fields);
    TypeDesc {
        id,
        name: Cow::Borrowed(name),
        super_type: Some(Cow::Borrowed(EVENT_SUPER_TYPE)),
        simple_type: false,
        fields: Cow::Owned(all),
        annotations: Cow::Owned(annotations),
        settings: Cow::Borrowed(&[]),
    }
}

/// A `value` field of `ty` and, if `unsigned`, an `unsignedValue` twin.
fn scalar(ty: TypeId, unsigned: bool) -> Vec<FieldDesc> {
    let mut f = vec![field(
        "value",
        ty,
        vec![label("Value"), description("As written.")],
    )];
    if unsigned {
        f.push(field(
            "unsignedValue",
            ty,
            vec![label("Unsigned Value"), Annotation::Unsigned],
        ));
    }
    f
}

/// The value types and every event type except [`LATE_EVENT`].
pub(crate) fn base_types() -> Vec<TypeDesc> {
    let ts = |u| Annotation::Timespan(u);
    vec![
        value_type(
            POINT,
            "flightrec.tour.Point",
            vec![
                field("x", TypeId::INT, vec![label("X")]),
                field("y", TypeId::INT, vec![label("Y")]),
                field("label", TypeId::STRING, vec![label("Label")]),
            ],
            vec![label("Point"), description("A value type written inline.")],
        ),
        value_type(
            SEGMENT,
            "flightrec.tour.Segment",
            vec![
                field("from", POINT, vec![label("From")]),
                field("to", POINT, vec![label("To")]),
                field("weight", TypeId::DOUBLE, vec![label("Weight")]),
            ],
            vec![
                label("Segment"),
                description("A value type nesting another."),
            ],
        ),
        event(
            BOOLEAN_EVENT,
            "flightrec.tour.BooleanEvent",
            "Boolean",
            scalar(TypeId::BOOLEAN, false),
            vec![],
        ),
        event(
            CHAR_EVENT,
            "flightrec.tour.CharEvent",
            "Char",
            scalar(TypeId::CHAR, false),
            vec![],
        ),
        event(
            BYTE_EVENT,
            "flightrec.tour.ByteEvent",
            "Byte",
            scalar(TypeId::BYTE, true),
            vec![],
        ),
        event(
            SHORT_EVENT,
            "flightrec.tour.ShortEvent",
            "Short",
            scalar(TypeId::SHORT, true),
            vec![],
        ),
        event(
            INT_EVENT,
            "flightrec.tour.IntEvent",
            "Int",
            scalar(TypeId::INT, true),
            vec![],
        ),
        event(
            LONG_EVENT,
            "flightrec.tour.LongEvent",
            "Long",
            scalar(TypeId::LONG, true),
            vec![],
        ),
        event(
            FLOAT_EVENT,
            "flightrec.tour.FloatEvent",
            "Float",
            scalar(TypeId::FLOAT, false),
            vec![],
        ),
        event(
            DOUBLE_EVENT,
            "flightrec.tour.DoubleEvent",
            "Double",
            scalar(TypeId::DOUBLE, false),
            vec![],
        ),
        event(
            STRING_EVENT,
            "flightrec.tour.StringEvent",
            "String",
            vec![
                field("case", TypeId::STRING, vec![label("Case")]),
                field("value", TypeId::STRING, vec![label("Value")]),
            ],
            vec![],
        ),
        event(
            THREAD_EVENT,
            "flightrec.tour.ThreadEvent",
            "Thread",
            vec![field("thread", TypeId::THREAD, vec![label("Thread")]).pooled_field()],
            vec![],
        ),
        event(
            CLASS_EVENT,
            "flightrec.tour.ClassEvent",
            "Class",
            vec![field("clazz", TypeId::CLASS, vec![label("Class")]).pooled_field()],
            vec![],
        ),
        event(
            STACK_TRACE_EVENT,
            "flightrec.tour.StackTraceEvent",
            "Stack Trace Field",
            vec![field("trace", TypeId::STACK_TRACE, vec![label("Trace")]).pooled_field()],
            vec![],
        ),
        event(
            NESTED_EVENT,
            "flightrec.tour.NestedEvent",
            "Nested Value",
            vec![
                field("point", POINT, vec![label("Point")]),
                field("segment", SEGMENT, vec![label("Segment")]),
            ],
            vec![],
        ),
        event(
            ARRAY_EVENT,
            "flightrec.tour.ArrayEvent",
            "Arrays",
            vec![field("frames", TypeId::STACK_FRAME, vec![label("Frames")]).into_array()],
            vec![],
        ),
        event(
            CONTENT_TYPES_EVENT,
            "flightrec.tour.ContentTypesEvent",
            "Content Types",
            vec![
                duration(),
                field(
                    "wallTime",
                    TypeId::LONG,
                    vec![
                        label("Wall Time"),
                        Annotation::Timestamp(TimestampUnit::MillisSinceEpoch),
                    ],
                ),
                field(
                    "tickTime",
                    TypeId::LONG,
                    vec![
                        label("Tick Time"),
                        Annotation::Timestamp(TimestampUnit::Ticks),
                    ],
                ),
                field(
                    "nanos",
                    TypeId::LONG,
                    vec![label("Nanos"), ts(TimespanUnit::Nanoseconds)],
                ),
                field(
                    "micros",
                    TypeId::LONG,
                    vec![label("Micros"), ts(TimespanUnit::Microseconds)],
                ),
                field(
                    "millis",
                    TypeId::LONG,
                    vec![label("Millis"), ts(TimespanUnit::Milliseconds)],
                ),
                field(
                    "seconds",
                    TypeId::LONG,
                    vec![label("Seconds"), ts(TimespanUnit::Seconds)],
                ),
                field(
                    "ticks",
                    TypeId::LONG,
                    vec![label("Ticks"), ts(TimespanUnit::Ticks)],
                ),
                field(
                    "bytes",
                    TypeId::LONG,
                    vec![
                        label("Bytes"),
                        Annotation::DataAmount(DataAmountUnit::Bytes),
                    ],
                ),
                field(
                    "bits",
                    TypeId::LONG,
                    vec![label("Bits"), Annotation::DataAmount(DataAmountUnit::Bits)],
                ),
                field(
                    "ratio",
                    TypeId::DOUBLE,
                    vec![label("Ratio"), Annotation::Percentage],
                ),
                field(
                    "ratioFloat",
                    TypeId::FLOAT,
                    vec![label("Ratio Float"), Annotation::Percentage],
                ),
                field(
                    "rate",
                    TypeId::LONG,
                    vec![label("Rate"), Annotation::Frequency],
                ),
                field(
                    "address",
                    TypeId::LONG,
                    vec![
                        label("Address"),
                        Annotation::Unsigned,
                        Annotation::MemoryAddress,
                    ],
                ),
                field(
                    "draft",
                    TypeId::INT,
                    vec![
                        label("Draft"),
                        description("An experimental field."),
                        Annotation::Experimental,
                    ],
                ),
            ],
            vec![],
        ),
        sample_event(),
    ]
}

/// The sample: a duration event with a thread and a stack trace, carrying
/// the setting annotations and matching `setting` elements.
fn sample_event() -> TypeDesc {
    let mut t = event(
        SAMPLE_EVENT,
        "flightrec.tour.SampleEvent",
        "Sample",
        vec![duration(), event_thread(), stack_trace()],
        vec![
            Annotation::Name(Cow::Borrowed("flightrec.tour.SampleEvent")),
            Annotation::Enabled(true),
            Annotation::StackTrace(true),
            Annotation::Threshold(Cow::Borrowed("0 ms")),
            Annotation::Period(Cow::Borrowed("everyChunk")),
            Annotation::Throttle(Cow::Borrowed("off")),
        ],
    );
    t.settings = Cow::Owned(vec![
        SettingDesc::new("enabled", TypeId::SETTING_ENABLED, "true"),
        SettingDesc::new("stackTrace", TypeId::SETTING_STACK_TRACE, "true"),
        SettingDesc::new("threshold", TypeId::SETTING_THRESHOLD, "0 ms"),
        SettingDesc::new("period", TypeId::SETTING_PERIOD, "everyChunk"),
        SettingDesc::new("throttle", TypeId::SETTING_THROTTLE, "off"),
    ]);
    t
}

/// The type only the third chunk declares (so its metadata differs and
/// gets a new id): experimental, with a `String` note.
pub(crate) fn late_type() -> TypeDesc {
    event(
        LATE_EVENT,
        "flightrec.tour.LateEvent",
        "Late",
        vec![field("note", TypeId::STRING, vec![label("Note")])],
        vec![Annotation::Experimental],
    )
}

/// The built-in types plus `types`.
pub(crate) fn metadata(types: impl IntoIterator<Item = TypeDesc>) -> Result<Metadata, SchemaError> {
    let mut m = Metadata::builtin();
    for t in types {
        m.add(t)?;
    }
    Ok(m)
}
