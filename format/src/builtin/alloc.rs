//! The built-in types of allocation and leak profiling (event ids
//! 130 ..= 132, structured types 45 ..= 49): `jdk.ObjectAllocationSample`,
//! `jdk.ThreadAllocationStatistics`, `jdk.OldObjectSample` and the
//! `jdk.types.OldObject` family the last one references.
//!
//! Names, field names, order, types and annotations are JDK 25's (`jfr
//! metadata`): `jfr view allocation-by-site`, `allocation-by-class`,
//! `allocation-by-thread`, `memory-leaks-by-site` and `memory-leaks-by-class`
//! are queries over them. The reference-chain types (`jdk.types.Reference`,
//! `OldObjectArray`, `OldObjectField`, `OldObjectGcRoot`) are declared so the
//! layout is the JDK's; flightrec has no heap to walk and writes them null.

use std::borrow::Cow;

use super::{
    BYTES, ENABLED, PROFILING, RUNTIME, category, duration, event, event_thread, label,
    stack_trace, start_time, struct_type,
};
use crate::schema::{
    Annotation as A, FieldDesc, SettingDesc, TimespanUnit, TimestampUnit, TypeDesc,
};
use crate::types::TypeId as T;

const STATISTICS: &[&str] = &["Java Application", "Statistics"];
const WITH_STACK: SettingDesc = SettingDesc::new("stackTrace", T::SETTING_STACK_TRACE, "true");
const THROTTLE: SettingDesc = SettingDesc::new("throttle", T::SETTING_THROTTLE, "150/s");
const EVERY_SECOND: SettingDesc = SettingDesc::new("period", T::SETTING_PERIOD, "1 s");

fn f(name: &'static str, ty: T, annotations: Vec<A>) -> FieldDesc {
    FieldDesc::annotated(name, ty, annotations)
}

fn describe(text: &'static str) -> A {
    A::Description(Cow::Borrowed(text))
}

/// The types of this module, in declaration order.
pub(super) fn types() -> Vec<TypeDesc> {
    vec![
        struct_type(
            T::OLD_OBJECT,
            "jdk.types.OldObject",
            vec![
                f(
                    "address",
                    T::LONG,
                    vec![A::Unsigned, A::MemoryAddress, label("Memory Address")],
                ),
                f("type", T::CLASS, vec![label("Java Class")]).pooled_field(),
                f(
                    "description",
                    T::STRING,
                    vec![label("Object Description"), describe("Object description")],
                ),
                f(
                    "referrer",
                    T::REFERENCE,
                    vec![
                        label("Referrer Object"),
                        describe("Object referencing this object"),
                    ],
                )
                .pooled_field(),
            ],
        ),
        struct_type(
            T::OLD_OBJECT_ARRAY,
            "jdk.types.OldObjectArray",
            vec![
                f(
                    "size",
                    T::INT,
                    vec![label("Array Size"), describe("Size of array")],
                ),
                f(
                    "index",
                    T::INT,
                    vec![label("Index"), describe("Index in the array")],
                ),
            ],
        ),
        struct_type(
            T::OLD_OBJECT_FIELD,
            "jdk.types.OldObjectField",
            vec![
                f(
                    "name",
                    T::STRING,
                    vec![label("Field"), describe("Name of field")],
                ),
                f(
                    "modifiers",
                    T::SHORT,
                    vec![label("Field Modifiers"), describe("Field modifiers")],
                ),
            ],
        ),
        struct_type(
            T::OLD_OBJECT_GC_ROOT,
            "jdk.types.OldObjectGcRoot",
            vec![
                f(
                    "description",
                    T::STRING,
                    vec![label("Root Description"), describe("Root information")],
                ),
                f(
                    "system",
                    T::STRING,
                    vec![
                        label("System"),
                        describe("The subsystem of origin for the root"),
                    ],
                ),
                f(
                    "type",
                    T::STRING,
                    vec![label("Type"), describe("The root type")],
                ),
            ],
        ),
        struct_type(
            T::REFERENCE,
            "jdk.types.Reference",
            vec![
                f(
                    "array",
                    T::OLD_OBJECT_ARRAY,
                    vec![
                        label("Array Information"),
                        describe("Array or null if it is not an array"),
                    ],
                )
                .pooled_field(),
                f(
                    "field",
                    T::OLD_OBJECT_FIELD,
                    vec![
                        label("Field Information"),
                        describe("Field or null if it is an array"),
                    ],
                )
                .pooled_field(),
                f(
                    "object",
                    T::OLD_OBJECT,
                    vec![
                        label("Object"),
                        describe("Object holder for this reference"),
                    ],
                )
                .pooled_field(),
                f(
                    "skip",
                    T::INT,
                    vec![
                        label("Skip Value"),
                        describe("The object is this many hops away"),
                    ],
                ),
            ],
        ),
        event(
            T::OBJECT_ALLOCATION_SAMPLE,
            "jdk.ObjectAllocationSample",
            vec![
                start_time(),
                event_thread(),
                stack_trace(),
                f(
                    "objectClass",
                    T::CLASS,
                    vec![label("Object Class"), describe("Class of allocated object")],
                )
                .pooled_field(),
                f(
                    "weight",
                    T::LONG,
                    vec![
                        BYTES,
                        label("Sample Weight"),
                        describe(
                            "The relative weight of the sample. Aggregating the weights for a large number of samples, for a particular class, thread or stack trace, gives a statistically accurate representation of the allocation pressure",
                        ),
                    ],
                ),
            ],
            vec![label("Object Allocation Sample"), category(RUNTIME)],
            vec![ENABLED, THROTTLE, WITH_STACK],
        ),
        event(
            T::THREAD_ALLOCATION_STATISTICS,
            "jdk.ThreadAllocationStatistics",
            vec![
                start_time(),
                f(
                    "allocated",
                    T::LONG,
                    vec![
                        A::Unsigned,
                        BYTES,
                        label("Allocated"),
                        describe("Approximate number of bytes allocated since thread start"),
                    ],
                ),
                f("thread", T::THREAD, vec![label("Thread")]).pooled_field(),
            ],
            vec![label("Thread Allocation Statistics"), category(STATISTICS)],
            vec![ENABLED, EVERY_SECOND],
        ),
        event(
            T::OLD_OBJECT_SAMPLE,
            "jdk.OldObjectSample",
            vec![
                start_time(),
                duration(),
                event_thread(),
                stack_trace(),
                f(
                    "allocationTime",
                    T::LONG,
                    vec![
                        A::Unsigned,
                        A::Timestamp(TimestampUnit::Ticks),
                        label("Allocation Time"),
                    ],
                ),
                f(
                    "objectSize",
                    T::LONG,
                    vec![A::Unsigned, BYTES, label("Object Size")],
                ),
                f(
                    "objectAge",
                    T::LONG,
                    vec![
                        A::Unsigned,
                        A::Timespan(TimespanUnit::Ticks),
                        label("Object Age"),
                    ],
                ),
                f(
                    "lastKnownHeapUsage",
                    T::LONG,
                    vec![A::Unsigned, BYTES, label("Last Known Heap Usage")],
                ),
                f("object", T::OLD_OBJECT, vec![label("Object")]).pooled_field(),
                f(
                    "arrayElements",
                    T::INT,
                    vec![
                        label("Array Elements"),
                        describe(
                            "If the object is an array, the number of elements, or minimum value for the type int if it is not an array",
                        ),
                    ],
                ),
                f("root", T::OLD_OBJECT_GC_ROOT, vec![label("GC Root")]).pooled_field(),
            ],
            vec![
                label("Old Object Sample"),
                category(PROFILING),
                describe("A potential memory leak"),
            ],
            vec![ENABLED, WITH_STACK],
        ),
    ]
}
