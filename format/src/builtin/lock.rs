//! The built-in types that say where threads waited (type ids 185 ..= 194):
//! a wait to enter a lock in the layout of the JDK's `jdk.JavaMonitorEnter`,
//! and a wait on a condition variable in the layout of `jdk.ThreadPark`.
//! The other types `jfr view latencies-by-type` reads
//! (`jdk.JavaMonitorWait`, `jdk.ThreadSleep`, socket and file reads and
//! writes) are declared and never written: the view fails on a file that
//! lacks one of them.
//!
//! Names, field names, field order, types and annotations are JDK 25's
//! (`jfr metadata`), because `jfr view contention-by-site`,
//! `contention-by-thread`, `contention-by-class` and `latencies-by-type`
//! are queries over them, and profilers that read lock profiles from JFR
//! (async-profiler's converter, Pyroscope) read these two types. The one
//! annotation left out is the JDK's relational `@JavaMonitorAddress` on
//! `address`: no view reads it.

use std::borrow::Cow;

use super::{ENABLED, ENABLED_ON, WITH_STACK, category, duration, event, event_thread, label};
use super::{stack_trace, start_time};
use crate::schema::{
    Annotation as A, DataAmountUnit, FieldDesc, SettingDesc, TimespanUnit, TimestampUnit, TypeDesc,
};
use crate::types::TypeId as T;

const APPLICATION: &[&str] = &["Java Application"];

/// The JDK's default threshold for both types.
const THRESHOLD: SettingDesc = SettingDesc::new("threshold", T::SETTING_THRESHOLD, "20 ms");

fn class_field(name: &'static str, l: &'static str) -> FieldDesc {
    FieldDesc::annotated(name, T::CLASS, vec![label(l)]).pooled_field()
}

fn address(l: &'static str) -> FieldDesc {
    FieldDesc::annotated(
        "address",
        T::LONG,
        vec![A::Unsigned, A::MemoryAddress, label(l)],
    )
}

/// The fields every wait type starts with (the JDK's duration event with
/// a thread and a stack), then the type's own.
fn wait_fields(own: Vec<FieldDesc>) -> Vec<FieldDesc> {
    let mut all = vec![start_time(), duration(), event_thread(), stack_trace()];
    all.extend(own);
    all
}

/// The remote end of a socket wait.
fn remote(own: Vec<FieldDesc>) -> Vec<FieldDesc> {
    let mut all = vec![
        f("host", T::STRING, "Remote Host", None),
        f("address", T::STRING, "Remote Address", None),
        f("port", T::INT, "Remote Port", None),
    ];
    all.extend(own);
    all
}

fn lock_event(id: T, name: &'static str, l: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
    event(
        id,
        name,
        wait_fields(fields),
        vec![
            A::Label(Cow::Borrowed(l)),
            category(APPLICATION),
            A::Threshold(Cow::Borrowed("20 ms")),
        ],
        vec![ENABLED_ON, THRESHOLD, WITH_STACK],
    )
}

pub(super) fn types() -> Vec<TypeDesc> {
    vec![
        lock_event(
            T::JAVA_MONITOR_ENTER,
            "jdk.JavaMonitorEnter",
            "Java Monitor Blocked",
            vec![
                class_field("monitorClass", "Monitor Class"),
                FieldDesc::annotated(
                    "previousOwner",
                    T::THREAD,
                    vec![label("Previous Monitor Owner")],
                )
                .pooled_field(),
                address("Monitor Address"),
            ],
        ),
        lock_event(
            T::THREAD_PARK,
            "jdk.ThreadPark",
            "Java Thread Park",
            vec![
                class_field("parkedClass", "Class Parked On"),
                FieldDesc::annotated(
                    "timeout",
                    T::LONG,
                    vec![
                        A::Timespan(TimespanUnit::Nanoseconds),
                        label("Park Timeout"),
                    ],
                ),
                FieldDesc::annotated(
                    "until",
                    T::LONG,
                    vec![
                        A::Timestamp(TimestampUnit::MillisSinceEpoch),
                        label("Park Until"),
                    ],
                ),
                address("Address of Object Parked"),
            ],
        ),
        declared(
            T::JAVA_MONITOR_WAIT,
            "jdk.JavaMonitorWait",
            "Java Monitor Wait",
            vec![
                class_field("monitorClass", "Monitor Class"),
                FieldDesc::annotated("notifier", T::THREAD, vec![label("Notifier Thread")])
                    .pooled_field(),
                f(
                    "timeout",
                    T::LONG,
                    "Timeout",
                    Some(A::Timespan(TimespanUnit::Milliseconds)),
                ),
                f("timedOut", T::BOOLEAN, "Timed Out", None),
                address("Monitor Address"),
            ],
        ),
        declared(
            T::THREAD_SLEEP,
            "jdk.ThreadSleep",
            "Java Thread Sleep",
            vec![f(
                "time",
                T::LONG,
                "Sleep Time",
                Some(A::Timespan(TimespanUnit::Nanoseconds)),
            )],
        ),
        declared(
            T::SOCKET_READ,
            "jdk.SocketRead",
            "Socket Read",
            remote(vec![
                f(
                    "timeout",
                    T::LONG,
                    "Timeout Value",
                    Some(A::Timespan(TimespanUnit::Milliseconds)),
                ),
                f("bytesRead", T::LONG, "Bytes Read", Some(BYTES)),
                f("endOfStream", T::BOOLEAN, "End of Stream", None),
            ]),
        ),
        declared(
            T::SOCKET_WRITE,
            "jdk.SocketWrite",
            "Socket Write",
            remote(vec![f(
                "bytesWritten",
                T::LONG,
                "Bytes Written",
                Some(BYTES),
            )]),
        ),
        declared(
            T::FILE_READ,
            "jdk.FileRead",
            "File Read",
            vec![
                f("path", T::STRING, "Path", None),
                f("bytesRead", T::LONG, "Bytes Read", Some(BYTES)),
                f("endOfFile", T::BOOLEAN, "End of File", None),
            ],
        ),
        declared(
            T::FILE_WRITE,
            "jdk.FileWrite",
            "File Write",
            vec![
                f("path", T::STRING, "Path", None),
                f("bytesWritten", T::LONG, "Bytes Written", Some(BYTES)),
            ],
        ),
    ]
}

const BYTES: A = A::DataAmount(DataAmountUnit::Bytes);

fn f(name: &'static str, ty: T, l: &'static str, unit: Option<A>) -> FieldDesc {
    let mut annotations = vec![label(l)];
    annotations.extend(unit);
    FieldDesc::annotated(name, ty, annotations)
}

/// A duration event of the JDK's that flightrec declares and never writes.
fn declared(id: T, name: &'static str, l: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
    event(
        id,
        name,
        wait_fields(fields),
        vec![A::Label(Cow::Borrowed(l)), category(APPLICATION)],
        vec![ENABLED],
    )
}
