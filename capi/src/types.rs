//! Declaring event types at run time, and the handle table.
//!
//! # Handles
//!
//! `flightrec_register` builds the type with `flightrec::EventTypeBuilder`
//! (which leaks it: a JFR type is never retracted), compiles its
//! [`Layout`] (the checks a commit makes, leaked too) and stores it in a
//! fixed table of [`FLIGHTREC_MAX_EVENT_TYPES`] slots; the handle is the
//! slot's index plus one. A handle is a number, never a pointer, so an
//! invalid one (0, never returned, garbage) is found out by a bounds check
//! and an empty slot, and never dereferenced; a valid one is one indexed
//! load, with no hashing or locking.
//!
//! # Registration
//!
//! Serialised by [`REGISTER`]: the name is checked against the types already
//! in the table (the recorder's own check only sees types that have emitted
//! an event), then the slot is filled once.
//!
//! Invariant: a slot, once filled, holds the same type for the rest of the
//! process; a handle that resolved once always resolves to the same type.

use std::ffi::{c_char, c_int};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use recorder::{ContentType, EventTypeBuilder, FieldKind};

use crate::error::{
    FLIGHTREC_ERR_INVALID_ARGUMENT, FLIGHTREC_ERR_NULL, FLIGHTREC_ERR_SCHEMA,
    FLIGHTREC_ERR_TOO_MANY_TYPES, FLIGHTREC_OK, fail, guard, opt_str_arg, str_arg,
};
use crate::layout::Layout;

/// A registered event type: `flightrec_register`'s handle. 0 is never a
/// valid handle.
#[allow(non_camel_case_types)]
pub type flightrec_event_type = u32;

/// How many event types a process can register through the C ABI.
pub const FLIGHTREC_MAX_EVENT_TYPES: u32 = 4096;

/// Field kind `boolean`.
pub const FLIGHTREC_KIND_BOOL: u32 = 1;
/// Field kind `char` (one UTF-16 unit).
pub const FLIGHTREC_KIND_CHAR: u32 = 2;
/// Field kind `byte`.
pub const FLIGHTREC_KIND_I8: u32 = 3;
/// Field kind `short`.
pub const FLIGHTREC_KIND_I16: u32 = 4;
/// Field kind `int`.
pub const FLIGHTREC_KIND_I32: u32 = 5;
/// Field kind `long`.
pub const FLIGHTREC_KIND_I64: u32 = 6;
/// Field kind `byte`, `@Unsigned`.
pub const FLIGHTREC_KIND_U8: u32 = 7;
/// Field kind `short`, `@Unsigned`.
pub const FLIGHTREC_KIND_U16: u32 = 8;
/// Field kind `int`, `@Unsigned`.
pub const FLIGHTREC_KIND_U32: u32 = 9;
/// Field kind `long`, `@Unsigned`.
pub const FLIGHTREC_KIND_U64: u32 = 10;
/// Field kind `float`.
pub const FLIGHTREC_KIND_F32: u32 = 11;
/// Field kind `double`.
pub const FLIGHTREC_KIND_F64: u32 = 12;
/// Field kind `java.lang.String`.
pub const FLIGHTREC_KIND_STRING: u32 = 13;
/// Field kind `java.lang.Thread`.
pub const FLIGHTREC_KIND_THREAD: u32 = 14;
/// Field kind `jdk.types.StackTrace`.
pub const FLIGHTREC_KIND_STACK_TRACE: u32 = 15;

/// No content type.
pub const FLIGHTREC_CONTENT_NONE: u32 = 0;
/// `@Timespan(NANOSECONDS)` (integer fields).
pub const FLIGHTREC_CONTENT_TIMESPAN_NANOS: u32 = 1;
/// `@Timespan(TICKS)`: ticks of `flightrec_ticks` (integer fields).
pub const FLIGHTREC_CONTENT_TIMESPAN_TICKS: u32 = 2;
/// `@Timespan(MILLISECONDS)` (integer fields).
pub const FLIGHTREC_CONTENT_TIMESPAN_MILLIS: u32 = 3;
/// `@Timestamp(MILLISECONDS_SINCE_EPOCH)` (integer fields).
pub const FLIGHTREC_CONTENT_TIMESTAMP_MILLIS: u32 = 4;
/// `@Timestamp(TICKS)`: a `flightrec_ticks` value (integer fields).
pub const FLIGHTREC_CONTENT_TIMESTAMP_TICKS: u32 = 5;
/// `@DataAmount(BYTES)` (integer fields).
pub const FLIGHTREC_CONTENT_BYTES: u32 = 6;
/// `@DataAmount(BITS)` (integer fields).
pub const FLIGHTREC_CONTENT_BITS: u32 = 7;
/// `@Percentage`, 0..1 (float fields).
pub const FLIGHTREC_CONTENT_PERCENTAGE: u32 = 8;
/// `@Frequency` in Hz (numeric fields).
pub const FLIGHTREC_CONTENT_FREQUENCY: u32 = 9;
/// `@MemoryAddress` (integer fields).
pub const FLIGHTREC_CONTENT_MEMORY_ADDRESS: u32 = 10;

/// A duration event: a start time and a duration, with a `threshold`.
pub const FLIGHTREC_EVENT_DURATION: u32 = 1;
/// Capture the stack trace with each event (the `stackTrace` setting's
/// default).
pub const FLIGHTREC_EVENT_STACK_TRACE: u32 = 2;
/// Disabled unless the recording's settings enable it.
pub const FLIGHTREC_EVENT_DISABLED: u32 = 4;
const KNOWN_FLAGS: u32 =
    FLIGHTREC_EVENT_DURATION | FLIGHTREC_EVENT_STACK_TRACE | FLIGHTREC_EVENT_DISABLED;

/// One field of an event type.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct flightrec_field {
    /// The field's name, a Java identifier (`bytes`, `path`). Required.
    pub name: *const c_char,
    /// One of `FLIGHTREC_KIND_*`.
    pub kind: u32,
    /// One of `FLIGHTREC_CONTENT_*` (0 for none).
    pub content: u32,
    /// The label shown by the JDK's tools; may be NULL.
    pub label: *const c_char,
}

/// An event type's declaration.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct flightrec_event_desc {
    /// Fully qualified name (`com.example.Request`). Required.
    pub name: *const c_char,
    /// Label; may be NULL.
    pub label: *const c_char,
    /// Description; may be NULL.
    pub description: *const c_char,
    /// Category path, levels separated by `/` (`Example/Requests`); may be
    /// NULL.
    pub category: *const c_char,
    /// `FLIGHTREC_EVENT_*` flags, or 0 (an instant event, enabled, without
    /// stack trace).
    pub flags: u32,
    /// Default threshold of a duration event, in nanoseconds (>= 0).
    pub threshold_ns: i64,
    /// The fields, in order; may be NULL when `field_count` is 0.
    pub fields: *const flightrec_field,
    /// How many fields.
    pub field_count: usize,
}

/// The table of registered types; slot `i` is handle `i + 1`.
static TYPES: [OnceLock<&'static Layout>; FLIGHTREC_MAX_EVENT_TYPES as usize] =
    [const { OnceLock::new() }; FLIGHTREC_MAX_EVENT_TYPES as usize];

/// Serialises registration; holds how many slots are filled.
static REGISTER: Mutex<usize> = Mutex::new(0);

/// The type behind `handle`, if `flightrec_register` returned it.
#[inline(always)]
pub(crate) fn lookup(handle: flightrec_event_type) -> Option<&'static Layout> {
    TYPES
        .get((handle as usize).wrapping_sub(1))
        .and_then(|slot| slot.get().copied())
}

pub(crate) fn field_kind(kind: u32) -> Option<FieldKind> {
    Some(match kind {
        FLIGHTREC_KIND_BOOL => FieldKind::Bool,
        FLIGHTREC_KIND_CHAR => FieldKind::Char,
        FLIGHTREC_KIND_I8 => FieldKind::I8,
        FLIGHTREC_KIND_I16 => FieldKind::I16,
        FLIGHTREC_KIND_I32 => FieldKind::I32,
        FLIGHTREC_KIND_I64 => FieldKind::I64,
        FLIGHTREC_KIND_U8 => FieldKind::U8,
        FLIGHTREC_KIND_U16 => FieldKind::U16,
        FLIGHTREC_KIND_U32 => FieldKind::U32,
        FLIGHTREC_KIND_U64 => FieldKind::U64,
        FLIGHTREC_KIND_F32 => FieldKind::F32,
        FLIGHTREC_KIND_F64 => FieldKind::F64,
        FLIGHTREC_KIND_STRING => FieldKind::String,
        FLIGHTREC_KIND_THREAD => FieldKind::Thread,
        FLIGHTREC_KIND_STACK_TRACE => FieldKind::StackTrace,
        _ => return None,
    })
}

fn content_type(content: u32) -> Option<Option<ContentType>> {
    Some(Some(match content {
        FLIGHTREC_CONTENT_NONE => return Some(None),
        FLIGHTREC_CONTENT_TIMESPAN_NANOS => ContentType::TimespanNanos,
        FLIGHTREC_CONTENT_TIMESPAN_TICKS => ContentType::TimespanTicks,
        FLIGHTREC_CONTENT_TIMESPAN_MILLIS => ContentType::TimespanMillis,
        FLIGHTREC_CONTENT_TIMESTAMP_MILLIS => ContentType::TimestampMillis,
        FLIGHTREC_CONTENT_TIMESTAMP_TICKS => ContentType::TimestampTicks,
        FLIGHTREC_CONTENT_BYTES => ContentType::Bytes,
        FLIGHTREC_CONTENT_BITS => ContentType::Bits,
        FLIGHTREC_CONTENT_PERCENTAGE => ContentType::Percentage,
        FLIGHTREC_CONTENT_FREQUENCY => ContentType::Frequency,
        FLIGHTREC_CONTENT_MEMORY_ADDRESS => ContentType::MemoryAddress,
        _ => return None,
    }))
}

/// Registers an event type and stores its handle in `*out`. Registering
/// the same name twice fails (`FLIGHTREC_ERR_SCHEMA`): register each type
/// once and share the handle between threads. Types may be registered
/// before or while recording.
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NULL`, `FLIGHTREC_ERR_UTF8`,
/// `FLIGHTREC_ERR_INVALID_ARGUMENT` (kind, content type, flags,
/// threshold), `FLIGHTREC_ERR_SCHEMA` (names, a content type that does not
/// fit the kind, a field named like an implicit one, a duplicate name) or
/// `FLIGHTREC_ERR_TOO_MANY_TYPES`; on failure `*out` is left unchanged.
///
/// # Safety
///
/// `desc` is null or points to a valid `flightrec_event_desc` whose string
/// pointers are null or NUL-terminated, and whose `fields` points to
/// `field_count` valid `flightrec_field`s (or is null); `out` is null or
/// writable. All only for the call: nothing is kept.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_register(
    desc: *const flightrec_event_desc,
    out: *mut flightrec_event_type,
) -> c_int {
    // A C program linked against `libflightrec.a` pulls archive members on
    // demand: this reference keeps the `FLIGHTREC` constructor in its link.
    recorder::autostart::keep_linked();
    guard(|| {
        if desc.is_null() {
            return fail(FLIGHTREC_ERR_NULL, "desc is NULL");
        }
        if out.is_null() {
            return fail(FLIGHTREC_ERR_NULL, "out is NULL");
        }
        // SAFETY: non-null, and valid by the caller's contract.
        let desc = unsafe { &*desc };
        // SAFETY: the caller's contract covers `desc`'s pointers.
        let (name, builder) = match unsafe { builder(desc) } {
            Ok(b) => b,
            Err(code) => return code,
        };
        let mut filled = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
        if *filled >= TYPES.len() {
            return fail(
                FLIGHTREC_ERR_TOO_MANY_TYPES,
                format_args!("all {FLIGHTREC_MAX_EVENT_TYPES} event type handles are in use"),
            );
        }
        if TYPES[..*filled]
            .iter()
            .any(|t| t.get().is_some_and(|t| t.ty.name() == name))
        {
            return fail(
                FLIGHTREC_ERR_SCHEMA,
                format_args!("an event type named `{name}` is already registered"),
            );
        }
        let ty = match builder.build() {
            Ok(t) => t,
            Err(e) => return fail(FLIGHTREC_ERR_SCHEMA, format_args!("`{name}`: {e}")),
        };
        let _ = TYPES[*filled].set(Layout::leak(ty));
        *filled += 1;
        // SAFETY: `out` is non-null and writable (the caller's contract).
        unsafe { out.write(*filled as flightrec_event_type) };
        FLIGHTREC_OK
    })
}

/// The builder `desc` declares, or the failing status.
///
/// # Safety
///
/// As [`flightrec_register`]'s for `desc`.
unsafe fn builder(desc: &flightrec_event_desc) -> Result<(&str, EventTypeBuilder), c_int> {
    // SAFETY: `desc.name` is null or NUL-terminated (the caller's contract);
    // so are the other strings read below.
    let name = unsafe { str_arg(desc.name, "desc->name") }?;
    let mut b = EventTypeBuilder::new(name);
    // SAFETY: as above.
    if let Some(label) = unsafe { opt_str_arg(desc.label, "desc->label") }? {
        b = b.label(label);
    }
    // SAFETY: as above.
    if let Some(d) = unsafe { opt_str_arg(desc.description, "desc->description") }? {
        b = b.description(d);
    }
    // SAFETY: as above.
    if let Some(c) = unsafe { opt_str_arg(desc.category, "desc->category") }? {
        b = b.category(c.split('/').map(str::trim).filter(|s| !s.is_empty()));
    }
    if desc.flags & !KNOWN_FLAGS != 0 {
        return Err(fail(
            FLIGHTREC_ERR_INVALID_ARGUMENT,
            format_args!(
                "desc->flags has unknown bits {:#x}",
                desc.flags & !KNOWN_FLAGS
            ),
        ));
    }
    if desc.flags & FLIGHTREC_EVENT_DURATION != 0 {
        b = b.duration();
    }
    b = b
        .stack_trace(desc.flags & FLIGHTREC_EVENT_STACK_TRACE != 0)
        .enabled(desc.flags & FLIGHTREC_EVENT_DISABLED == 0);
    let Ok(threshold) = u64::try_from(desc.threshold_ns) else {
        return Err(fail(
            FLIGHTREC_ERR_INVALID_ARGUMENT,
            format_args!("desc->threshold_ns is negative ({})", desc.threshold_ns),
        ));
    };
    b = b.threshold(Duration::from_nanos(threshold));
    if desc.field_count > 0 && desc.fields.is_null() {
        return Err(fail(
            FLIGHTREC_ERR_NULL,
            format_args!("desc->fields is NULL with field_count {}", desc.field_count),
        ));
    }
    for i in 0..desc.field_count {
        // SAFETY: `fields` points to `field_count` fields (the contract),
        // and is non-null here.
        let f = unsafe { &*desc.fields.add(i) };
        let what = format!("desc->fields[{i}]");
        // SAFETY: as above.
        let fname = unsafe { str_arg(f.name, &format!("{what}.name")) }?;
        // SAFETY: as above.
        let label = unsafe { opt_str_arg(f.label, &format!("{what}.label")) }?;
        let Some(kind) = field_kind(f.kind) else {
            return Err(fail(
                FLIGHTREC_ERR_INVALID_ARGUMENT,
                format_args!("{what}.kind {} is no FLIGHTREC_KIND_*", f.kind),
            ));
        };
        let Some(content) = content_type(f.content) else {
            return Err(fail(
                FLIGHTREC_ERR_INVALID_ARGUMENT,
                format_args!("{what}.content {} is no FLIGHTREC_CONTENT_*", f.content),
            ));
        };
        b = b.field_with(fname, kind, label, content);
    }
    Ok((name, b))
}

/// 1 if an event of `event_type` committed now would be recorded (a recording
/// runs and its settings enable the type), else 0 (also for an unknown
/// handle). One load: lets a caller skip computing expensive values.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_is_enabled(event_type: flightrec_event_type) -> c_int {
    guard(|| lookup(event_type).map_or(0, |t| c_int::from(t.ty.is_enabled())))
}
