//! The built-in type table: primitives, annotations, settings, the types the
//! JDK expects for threads, classes and stack traces, and the JDK event types
//! flightrec emits. Field lists and order follow JDK 25 (see
//! docs/jfr-format.md §5.4 and §7); the metadata event is generated
//! from this table and nothing else.

use std::borrow::Cow;

use crate::schema::{
    ANNOTATION_SUPER_TYPE, Annotation, DataAmountUnit, EVENT_SUPER_TYPE, FieldDesc,
    SETTING_SUPER_TYPE, SettingDesc, TimespanUnit, TimestampUnit, TypeDesc,
};
use crate::types::TypeId as T;

mod alloc;
mod lock;
mod system;

fn ty(
    id: T,
    name: &'static str,
    super_type: Option<&'static str>,
    fields: Vec<FieldDesc>,
    annotations: Vec<Annotation>,
    settings: Vec<SettingDesc>,
) -> TypeDesc {
    TypeDesc {
        id,
        name: Cow::Borrowed(name),
        super_type: match super_type {
            Some(s) => Some(Cow::Borrowed(s)),
            None => None,
        },
        simple_type: false,
        fields: Cow::Owned(fields),
        annotations: Cow::Owned(annotations),
        settings: Cow::Owned(settings),
    }
}

fn class(id: T, name: &'static str) -> TypeDesc {
    ty(id, name, None, vec![], vec![], vec![])
}

fn struct_type(id: T, name: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
    ty(id, name, None, fields, vec![], vec![])
}

fn simple(mut t: TypeDesc) -> TypeDesc {
    t.simple_type = true;
    t
}

fn annotation(id: T, name: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
    ty(
        id,
        name,
        Some(ANNOTATION_SUPER_TYPE),
        fields,
        vec![],
        vec![],
    )
}

fn content_type(id: T, name: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
    ty(
        id,
        name,
        Some(ANNOTATION_SUPER_TYPE),
        fields,
        vec![Annotation::ContentType],
        vec![],
    )
}

fn setting(id: T, name: &'static str) -> TypeDesc {
    ty(id, name, Some(SETTING_SUPER_TYPE), vec![], vec![], vec![])
}

fn event(
    id: T,
    name: &'static str,
    fields: Vec<FieldDesc>,
    annotations: Vec<Annotation>,
    settings: Vec<SettingDesc>,
) -> TypeDesc {
    ty(
        id,
        name,
        Some(EVENT_SUPER_TYPE),
        fields,
        annotations,
        settings,
    )
}

/// `long contextId`, after the JDK's fields of the sample events when
/// [`builtin_types_for`] is asked for it: the label set the sampled thread
/// was in (0 for none), the field Pyroscope's JFR parser reads to attach
/// per-request labels. Not the JDK's: readers that read the samples field
/// by field in the JDK's order (async-profiler's converter) misread every
/// record after the first one that has it (see docs/pyroscope-events.md).
pub fn context_id() -> FieldDesc {
    FieldDesc::annotated(
        "contextId",
        T::LONG,
        vec![
            label("Context Id"),
            Annotation::Description(Cow::Borrowed(
                "Label set of the sampled thread (0: none), see the recording's labels",
            )),
        ],
    )
}

fn label(s: &'static str) -> Annotation {
    Annotation::Label(Cow::Borrowed(s))
}

fn category(path: &[&'static str]) -> Annotation {
    Annotation::Category(path.iter().map(|s| Cow::Borrowed(*s)).collect())
}

fn value_string() -> Vec<FieldDesc> {
    vec![FieldDesc::new("value", T::STRING)]
}

fn value_boolean() -> Vec<FieldDesc> {
    vec![FieldDesc::new("value", T::BOOLEAN)]
}

/// `startTime: long @Timestamp("TICKS")`, the first field of every event.
pub fn start_time() -> FieldDesc {
    FieldDesc::annotated(
        "startTime",
        T::LONG,
        vec![
            label("Start Time"),
            Annotation::Timestamp(TimestampUnit::Ticks),
        ],
    )
}

/// `duration: long @Timespan("TICKS")`, the second field of duration events.
pub fn duration() -> FieldDesc {
    FieldDesc::annotated(
        "duration",
        T::LONG,
        vec![label("Duration"), Annotation::Timespan(TimespanUnit::Ticks)],
    )
}

/// `eventThread: Thread`.
pub fn event_thread() -> FieldDesc {
    FieldDesc::annotated("eventThread", T::THREAD, vec![label("Event Thread")]).pooled_field()
}

/// `stackTrace: StackTrace`.
pub fn stack_trace() -> FieldDesc {
    FieldDesc::annotated("stackTrace", T::STACK_TRACE, vec![label("Stack Trace")]).pooled_field()
}

const BYTES: Annotation = Annotation::DataAmount(DataAmountUnit::Bytes);
const PROFILING: &[&str] = &["Java Virtual Machine", "Profiling"];
const FLIGHT_RECORDER: &[&str] = &["Flight Recorder"];
const OPERATING_SYSTEM: &[&str] = &["Operating System"];
const RUNTIME: &[&str] = &["Java Application"];
const METHOD_TRACING: &[&str] = &["Java Virtual Machine", "Method Tracing"];

const ENABLED: SettingDesc = SettingDesc::new("enabled", T::SETTING_ENABLED, "false");
const ENABLED_ON: SettingDesc = SettingDesc::new("enabled", T::SETTING_ENABLED, "true");
const PERIOD: SettingDesc = SettingDesc::new("period", T::SETTING_PERIOD, "20 ms");
const THROTTLE: SettingDesc = SettingDesc::new("throttle", T::SETTING_THROTTLE, "off");
const WITH_STACK: SettingDesc = SettingDesc::new("stackTrace", T::SETTING_STACK_TRACE, "true");

/// A `jdk.MethodTiming` time field: `long @Timespan("TICKS")`.
fn method_time(name: &'static str, label_text: &'static str, which: &'static str) -> FieldDesc {
    let description = match which {
        "minimum" => {
            "The value may be missing (Long.MIN_VALUE) if the clock-resolution is too low to establish a minimum time"
        }
        "average" => {
            "The value may be missing (Long.MIN_VALUE) if the clock-resolution is too low to establish an average time"
        }
        _ => {
            "The value may be missing (Long.MIN_VALUE) if the clock-resolution is too low to establish a maximum time"
        }
    };
    FieldDesc::annotated(
        name,
        T::LONG,
        vec![
            label(label_text),
            Annotation::Description(Cow::Borrowed(description)),
            Annotation::Timespan(TimespanUnit::Ticks),
        ],
    )
}

/// Every built-in type, in declaration order: the `jdk.*` types field for
/// field as JDK 25 defines them.
pub fn builtin_types() -> Vec<TypeDesc> {
    builtin_types_for(false)
}

/// [`builtin_types`], with [`context_id`] appended to `jdk.ExecutionSample`
/// and `jdk.CPUTimeSample` if `context_ids` (samples that carry the label
/// set of their thread, for Pyroscope).
pub fn builtin_types_for(context_ids: bool) -> Vec<TypeDesc> {
    let mut all = jdk_and_own_types();
    if context_ids {
        for t in &mut all {
            if t.id == T::EXECUTION_SAMPLE || t.id == T::CPU_TIME_SAMPLE {
                t.fields.to_mut().push(context_id());
            }
        }
    }
    all
}

fn jdk_and_own_types() -> Vec<TypeDesc> {
    let mut all = vec![
        // --- primitives ---
        class(T::BOOLEAN, "boolean"),
        class(T::CHAR, "char"),
        class(T::FLOAT, "float"),
        class(T::DOUBLE, "double"),
        class(T::BYTE, "byte"),
        class(T::SHORT, "short"),
        class(T::INT, "int"),
        class(T::LONG, "long"),
        class(T::STRING, "java.lang.String"),
        // --- threads, classes, stack traces ---
        struct_type(
            T::THREAD,
            "java.lang.Thread",
            vec![
                FieldDesc::annotated("osName", T::STRING, vec![label("OS Thread Name")]),
                FieldDesc::annotated("osThreadId", T::LONG, vec![label("OS Thread Id")]),
                FieldDesc::annotated("javaName", T::STRING, vec![label("Java Thread Name")]),
                FieldDesc::annotated("javaThreadId", T::LONG, vec![label("Java Thread Id")]),
                FieldDesc::pooled("group", T::THREAD_GROUP),
                FieldDesc::new("virtual", T::BOOLEAN),
            ],
        ),
        struct_type(
            T::THREAD_GROUP,
            "jdk.types.ThreadGroup",
            vec![
                FieldDesc::pooled("parent", T::THREAD_GROUP),
                FieldDesc::new("name", T::STRING),
            ],
        ),
        struct_type(
            T::CLASS,
            "java.lang.Class",
            vec![
                FieldDesc::pooled("classLoader", T::CLASS_LOADER),
                FieldDesc::pooled("name", T::SYMBOL),
                FieldDesc::pooled("package", T::PACKAGE),
                FieldDesc::new("modifiers", T::INT),
                FieldDesc::new("hidden", T::BOOLEAN),
            ],
        ),
        struct_type(
            T::CLASS_LOADER,
            "jdk.types.ClassLoader",
            vec![
                FieldDesc::pooled("type", T::CLASS),
                FieldDesc::pooled("name", T::SYMBOL),
            ],
        ),
        struct_type(
            T::PACKAGE,
            "jdk.types.Package",
            vec![
                FieldDesc::pooled("name", T::SYMBOL),
                FieldDesc::pooled("module", T::MODULE),
                FieldDesc::new("exported", T::BOOLEAN),
            ],
        ),
        struct_type(
            T::MODULE,
            "jdk.types.Module",
            vec![
                FieldDesc::pooled("name", T::SYMBOL),
                FieldDesc::pooled("version", T::SYMBOL),
                FieldDesc::pooled("location", T::SYMBOL),
                FieldDesc::pooled("classLoader", T::CLASS_LOADER),
            ],
        ),
        simple(struct_type(
            T::SYMBOL,
            "jdk.types.Symbol",
            vec![FieldDesc::new("string", T::STRING)],
        )),
        struct_type(
            T::METHOD,
            "jdk.types.Method",
            vec![
                FieldDesc::pooled("type", T::CLASS),
                FieldDesc::pooled("name", T::SYMBOL),
                FieldDesc::pooled("descriptor", T::SYMBOL),
                FieldDesc::new("modifiers", T::INT),
                FieldDesc::new("hidden", T::BOOLEAN),
            ],
        ),
        struct_type(
            T::STACK_FRAME,
            "jdk.types.StackFrame",
            vec![
                FieldDesc::pooled("method", T::METHOD),
                FieldDesc::new("lineNumber", T::INT),
                FieldDesc::new("bytecodeIndex", T::INT),
                FieldDesc::pooled("type", T::FRAME_TYPE),
            ],
        ),
        struct_type(
            T::STACK_TRACE,
            "jdk.types.StackTrace",
            vec![
                FieldDesc::new("truncated", T::BOOLEAN),
                FieldDesc::new("frames", T::STACK_FRAME).into_array(),
            ],
        ),
        simple(struct_type(
            T::FRAME_TYPE,
            "jdk.types.FrameType",
            vec![FieldDesc::new("description", T::STRING)],
        )),
        simple(struct_type(
            T::THREAD_STATE,
            "jdk.types.ThreadState",
            vec![FieldDesc::new("name", T::STRING)],
        )),
        // --- annotations ---
        annotation(T::LABEL, "jdk.jfr.Label", value_string()),
        annotation(T::DESCRIPTION, "jdk.jfr.Description", value_string()),
        annotation(
            T::CATEGORY,
            "jdk.jfr.Category",
            vec![FieldDesc::new("value", T::STRING).into_array()],
        ),
        annotation(T::NAME, "jdk.jfr.Name", value_string()),
        annotation(T::EXPERIMENTAL, "jdk.jfr.Experimental", vec![]),
        annotation(T::ENABLED, "jdk.jfr.Enabled", value_boolean()),
        annotation(
            T::STACK_TRACE_ANNOTATION,
            "jdk.jfr.StackTrace",
            value_boolean(),
        ),
        annotation(T::THRESHOLD, "jdk.jfr.Threshold", value_string()),
        annotation(T::PERIOD, "jdk.jfr.Period", value_string()),
        annotation(T::THROTTLE, "jdk.jfr.Throttle", value_string()),
        annotation(T::CONTENT_TYPE, "jdk.jfr.ContentType", vec![]),
        annotation(T::CONTEXTUAL, "jdk.jfr.Contextual", vec![]),
        content_type(T::TIMESTAMP, "jdk.jfr.Timestamp", value_string()),
        content_type(T::TIMESPAN, "jdk.jfr.Timespan", value_string()),
        content_type(T::DATA_AMOUNT, "jdk.jfr.DataAmount", value_string()),
        content_type(T::UNSIGNED, "jdk.jfr.Unsigned", vec![]),
        content_type(T::PERCENTAGE, "jdk.jfr.Percentage", vec![]),
        content_type(T::FREQUENCY, "jdk.jfr.Frequency", vec![]),
        content_type(T::MEMORY_ADDRESS, "jdk.jfr.MemoryAddress", vec![]),
        // --- settings ---
        setting(T::SETTING_ENABLED, "jdk.settings.Enabled"),
        setting(T::SETTING_STACK_TRACE, "jdk.settings.StackTrace"),
        setting(T::SETTING_THRESHOLD, "jdk.settings.Threshold"),
        setting(T::SETTING_PERIOD, "jdk.settings.Period"),
        setting(T::SETTING_THROTTLE, "jdk.settings.Throttle"),
        // --- events ---
        event(
            T::EXECUTION_SAMPLE,
            "jdk.ExecutionSample",
            vec![
                start_time(),
                FieldDesc::annotated("sampledThread", T::THREAD, vec![label("Thread")])
                    .pooled_field(),
                stack_trace(),
                FieldDesc::annotated("state", T::THREAD_STATE, vec![label("Thread State")])
                    .pooled_field(),
            ],
            vec![label("Method Profiling Sample"), category(PROFILING)],
            vec![ENABLED, PERIOD],
        ),
        event(
            T::CPU_TIME_SAMPLE,
            "jdk.CPUTimeSample",
            vec![
                start_time(),
                stack_trace(),
                event_thread(),
                FieldDesc::annotated("failed", T::BOOLEAN, vec![label("Failed")]),
                FieldDesc::annotated(
                    "samplingPeriod",
                    T::LONG,
                    vec![
                        label("CPU Time Period"),
                        Annotation::Unsigned,
                        Annotation::Timespan(TimespanUnit::Ticks),
                    ],
                ),
                FieldDesc::annotated("biased", T::BOOLEAN, vec![label("Biased")]),
            ],
            vec![label("CPU Time Method Sample"), category(PROFILING)],
            vec![ENABLED, THROTTLE, WITH_STACK],
        ),
        event(
            T::CPU_TIME_SAMPLES_LOST,
            "jdk.CPUTimeSamplesLost",
            vec![
                start_time(),
                FieldDesc::annotated("lostSamples", T::INT, vec![label("Samples Lost")]),
                event_thread(),
            ],
            vec![label("CPU Time Method Profiling Lost"), category(PROFILING)],
            vec![ENABLED],
        ),
        event(
            T::ACTIVE_SETTING,
            "jdk.ActiveSetting",
            vec![
                start_time(),
                FieldDesc::annotated("id", T::LONG, vec![label("Event Id")]),
                FieldDesc::annotated("name", T::STRING, vec![label("Setting Name")]),
                FieldDesc::annotated("value", T::STRING, vec![label("Setting Value")]),
            ],
            vec![label("Active Setting"), category(FLIGHT_RECORDER)],
            vec![ENABLED_ON],
        ),
        event(
            T::ACTIVE_RECORDING,
            "jdk.ActiveRecording",
            vec![
                start_time(),
                FieldDesc::annotated("id", T::LONG, vec![label("Id")]),
                FieldDesc::annotated("name", T::STRING, vec![label("Name")]),
                FieldDesc::annotated("destination", T::STRING, vec![label("Destination")]),
                FieldDesc::annotated("disk", T::BOOLEAN, vec![label("To Disk")]),
                FieldDesc::annotated(
                    "maxAge",
                    T::LONG,
                    vec![
                        label("Max Age"),
                        Annotation::Timespan(TimespanUnit::Milliseconds),
                    ],
                ),
                FieldDesc::annotated(
                    "flushInterval",
                    T::LONG,
                    vec![
                        label("Flush Interval"),
                        Annotation::Timespan(TimespanUnit::Milliseconds),
                    ],
                ),
                FieldDesc::annotated("maxSize", T::LONG, vec![label("Max Size"), BYTES]),
                FieldDesc::annotated(
                    "recordingStart",
                    T::LONG,
                    vec![
                        label("Start Time"),
                        Annotation::Timestamp(TimestampUnit::MillisSinceEpoch),
                    ],
                ),
                FieldDesc::annotated(
                    "recordingDuration",
                    T::LONG,
                    vec![
                        label("Recording Duration"),
                        Annotation::Timespan(TimespanUnit::Milliseconds),
                    ],
                ),
            ],
            vec![label("Flight Recording"), category(FLIGHT_RECORDER)],
            vec![ENABLED_ON],
        ),
        event(
            T::DATA_LOSS,
            "jdk.DataLoss",
            vec![
                start_time(),
                FieldDesc::annotated(
                    "amount",
                    T::LONG,
                    vec![label("Amount"), Annotation::Unsigned, BYTES],
                ),
                FieldDesc::annotated(
                    "total",
                    T::LONG,
                    vec![label("Total"), Annotation::Unsigned, BYTES],
                ),
            ],
            vec![label("Data Loss"), category(FLIGHT_RECORDER)],
            vec![ENABLED_ON],
        ),
        event(
            T::EVENTS_LOST,
            "flightrec.EventsLost",
            vec![
                start_time(),
                FieldDesc::annotated("cause", T::STRING, vec![label("Cause")]),
                FieldDesc::annotated("events", T::LONG, vec![label("Events Lost")]),
                FieldDesc::annotated("bytes", T::LONG, vec![label("Bytes Lost"), BYTES]),
                FieldDesc::annotated(
                    "totalEvents",
                    T::LONG,
                    vec![label("Events Lost Since Start")],
                ),
            ],
            vec![label("Events Lost"), category(FLIGHT_RECORDER)],
            vec![ENABLED_ON],
        ),
        event(
            T::OS_INFORMATION,
            "jdk.OSInformation",
            vec![
                start_time(),
                FieldDesc::annotated("osVersion", T::STRING, vec![label("OS Version")]),
            ],
            vec![label("OS Information"), category(OPERATING_SYSTEM)],
            vec![ENABLED_ON, system::BEGIN_CHUNK],
        ),
        event(
            T::CPU_INFORMATION,
            "jdk.CPUInformation",
            vec![
                start_time(),
                FieldDesc::annotated("cpu", T::STRING, vec![label("Type")]),
                FieldDesc::annotated("description", T::STRING, vec![label("Description")]),
                FieldDesc::annotated(
                    "sockets",
                    T::INT,
                    vec![label("Sockets"), Annotation::Unsigned],
                ),
                FieldDesc::annotated("cores", T::INT, vec![label("Cores"), Annotation::Unsigned]),
                FieldDesc::annotated(
                    "hwThreads",
                    T::INT,
                    vec![label("Hardware Threads"), Annotation::Unsigned],
                ),
            ],
            vec![label("CPU Information"), category(OPERATING_SYSTEM)],
            vec![ENABLED_ON, system::BEGIN_CHUNK],
        ),
        event(
            T::THREAD_START,
            "jdk.ThreadStart",
            vec![
                start_time(),
                event_thread(),
                stack_trace(),
                FieldDesc::annotated("thread", T::THREAD, vec![label("New Thread")]).pooled_field(),
                FieldDesc::annotated("parentThread", T::THREAD, vec![label("Parent Thread")])
                    .pooled_field(),
            ],
            vec![label("Java Thread Start"), category(RUNTIME)],
            vec![ENABLED, WITH_STACK],
        ),
        event(
            T::THREAD_END,
            "jdk.ThreadEnd",
            vec![
                start_time(),
                event_thread(),
                FieldDesc::annotated("thread", T::THREAD, vec![label("Thread")]).pooled_field(),
            ],
            vec![label("Java Thread End"), category(RUNTIME)],
            vec![ENABLED],
        ),
        // JEP 520, field for field as JDK 25's `jfr metadata` shows them:
        // `jfr view method-timing` and `method-calls` query these names.
        event(
            T::METHOD_TIMING,
            "jdk.MethodTiming",
            vec![
                start_time(),
                FieldDesc::annotated("method", T::METHOD, vec![label("Method")]).pooled_field(),
                FieldDesc::annotated("invocations", T::LONG, vec![label("Invocations")]),
                method_time("minimum", "Minimum Time", "minimum"),
                method_time("average", "Average Time", "average"),
                method_time("maximum", "Maximum Time", "maximum"),
            ],
            vec![
                label("Method Timing"),
                category(METHOD_TRACING),
                Annotation::Description(Cow::Borrowed(
                    "Measures the approximate time it takes for a method to execute, including all delays, not just CPU processing time",
                )),
            ],
            vec![ENABLED_ON],
        ),
        event(
            T::METHOD_TRACE,
            "jdk.MethodTrace",
            vec![
                start_time(),
                duration(),
                event_thread(),
                stack_trace(),
                FieldDesc::annotated(
                    "method",
                    T::METHOD,
                    vec![Annotation::Contextual, label("Method")],
                )
                .pooled_field(),
            ],
            vec![label("Method Trace"), category(METHOD_TRACING)],
            vec![ENABLED_ON, WITH_STACK],
        ),
    ];
    all.extend(system::types());
    all.extend(alloc::types());
    all.extend(lock::types());
    all.push(recorder_statistics());
    all
}

/// `flightrec.RecorderStatistics`: what recording cost the process, from
/// the start of the recording (CPU times, bytes, counts) and over the last
/// period (rates). Units are annotations, so `jfr print` shows them.
fn recorder_statistics() -> TypeDesc {
    let nanos = |name, l| {
        FieldDesc::annotated(
            name,
            T::LONG,
            vec![label(l), Annotation::Timespan(TimespanUnit::Nanoseconds)],
        )
    };
    let percent =
        |name, l| FieldDesc::annotated(name, T::FLOAT, vec![label(l), Annotation::Percentage]);
    let count = |name, l| FieldDesc::annotated(name, T::LONG, vec![label(l)]);
    let rate = |name, l| FieldDesc::annotated(name, T::LONG, vec![label(l), Annotation::Frequency]);
    event(
        T::RECORDER_STATISTICS,
        "flightrec.RecorderStatistics",
        vec![
            start_time(),
            nanos("recorderCpuTime", "Recorder Thread CPU Time"),
            nanos("samplerCpuTime", "Sampler Thread CPU Time"),
            nanos("periodicCpuTime", "Periodic Thread CPU Time"),
            nanos("signalHandlerTime", "Signal Handler Time"),
            nanos("processCpuTime", "Process CPU Time"),
            percent("overhead", "Recorder Share of Process CPU"),
            FieldDesc::annotated(
                "bytesWritten",
                T::LONG,
                vec![label("Bytes Written"), Annotation::Unsigned, BYTES],
            ),
            percent("bufferOccupancy", "Buffer Occupancy"),
            count("events", "Events Written"),
            rate("eventsPerSecond", "Events Written per Second"),
            count("samples", "Samples Written"),
            rate("samplesPerSecond", "Samples Written per Second"),
        ],
        vec![
            label("Recorder Statistics"),
            category(FLIGHT_RECORDER),
            Annotation::Description(Cow::Borrowed(
                "What recording costs: CPU time of flightrec's threads and of its signal handler (on the sampled threads) since the recording started, and its share of the process's CPU time",
            )),
        ],
        vec![ENABLED_ON, system::ONE_SECOND],
    )
}
