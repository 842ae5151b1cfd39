//! Committing events from C: tagged values, checked, then encoded straight
//! into the thread's buffer.
//!
//! # Commit
//!
//! 1. The handle is looked up (a bounds check and one load, see
//!    [`crate::types`]).
//! 2. Every value is checked against its field: known tag, integer in
//!    range, string pointer non-null when its length is not 0, string valid
//!    UTF-8. A failure returns its status and records nothing.
//! 3. A `FLIGHTREC_VALUE_STACK_TRACE` or `FLIGHTREC_VALUE_CURRENT_THREAD`
//!    is resolved once, only if the type is enabled.
//! 4. `EventType::commit_from` reads the C array through [`CValues`] (a
//!    `recorder::ValueSource`) and encodes it into the thread-local buffer.
//!
//! Invariant: after a thread's first event nothing on this path allocates
//! (only a failing call does, for its message); the C array is only read,
//! and only during the call.

use std::ffi::{c_char, c_int};

use recorder::{
    EventKind, EventType, FieldInfo, FieldKind, StackTrace, ThreadRef, Value, ValueSource,
};

use crate::error::{
    FLIGHTREC_ERR_FIELD_COUNT, FLIGHTREC_ERR_FIELD_TYPE, FLIGHTREC_ERR_INVALID_ARGUMENT,
    FLIGHTREC_ERR_NULL, FLIGHTREC_ERR_UNKNOWN_TYPE, FLIGHTREC_ERR_UTF8, FLIGHTREC_OK, fail, guard,
};
use crate::types::{flightrec_event_type, lookup};

/// `value.v.b` (0 false, anything else true), for `BOOL` fields.
pub const FLIGHTREC_VALUE_BOOL: u32 = 1;
/// `value.v.c`, one UTF-16 unit, for `CHAR` fields.
pub const FLIGHTREC_VALUE_CHAR: u32 = 2;
/// `value.v.i`, for any signed integer field (range-checked).
pub const FLIGHTREC_VALUE_INT: u32 = 3;
/// `value.v.u`, for any unsigned integer field (range-checked).
pub const FLIGHTREC_VALUE_UINT: u32 = 4;
/// `value.v.f32`, for `F32` fields.
pub const FLIGHTREC_VALUE_F32: u32 = 5;
/// `value.v.f64`, for `F64` fields.
pub const FLIGHTREC_VALUE_F64: u32 = 6;
/// `value.v.s`, UTF-8, for `STRING` fields (copied into the event).
pub const FLIGHTREC_VALUE_STRING: u32 = 7;
/// null, for `STRING`, `THREAD` and `STACK_TRACE` fields.
pub const FLIGHTREC_VALUE_NULL: u32 = 8;
/// The calling thread, for `THREAD` fields.
pub const FLIGHTREC_VALUE_CURRENT_THREAD: u32 = 9;
/// The calling thread's stack, captured now, for `STACK_TRACE` fields.
pub const FLIGHTREC_VALUE_STACK_TRACE: u32 = 10;

/// `flightrec_str.len` of a NUL-terminated string (`SIZE_MAX`; the header
/// defines it by hand, cbindgen does not translate `usize::MAX`).
pub const FLIGHTREC_NUL_TERMINATED: usize = usize::MAX;

/// A UTF-8 string: `len` bytes at `ptr` (not NUL-terminated), or a
/// NUL-terminated one when `len` is `FLIGHTREC_NUL_TERMINATED`. `ptr` may
/// be NULL only when `len` is 0 (the empty string).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct flightrec_str {
    /// The bytes.
    pub ptr: *const c_char,
    /// How many, or `FLIGHTREC_NUL_TERMINATED`.
    pub len: usize,
}

/// A value's payload; which member is read is given by the tag.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
pub union flightrec_payload {
    /// `FLIGHTREC_VALUE_BOOL`.
    pub b: u8,
    /// `FLIGHTREC_VALUE_CHAR`.
    pub c: u16,
    /// `FLIGHTREC_VALUE_INT`.
    pub i: i64,
    /// `FLIGHTREC_VALUE_UINT`.
    pub u: u64,
    /// `FLIGHTREC_VALUE_F32`.
    pub f32: f32,
    /// `FLIGHTREC_VALUE_F64`.
    pub f64: f64,
    /// `FLIGHTREC_VALUE_STRING`.
    pub s: flightrec_str,
}

impl std::fmt::Debug for flightrec_payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("flightrec_payload")
    }
}

/// One field value: a `FLIGHTREC_VALUE_*` tag and the payload member it
/// names (no member for `NULL`, `CURRENT_THREAD`, `STACK_TRACE`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy)]
pub struct flightrec_value {
    /// One of `FLIGHTREC_VALUE_*`.
    pub tag: u32,
    /// The payload.
    pub v: flightrec_payload,
}

/// The current tick of the event clock, for `flightrec_commit_span`'s
/// `start` and `end` (the TSC where it is invariant, else the monotonic
/// clock in nanoseconds).
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_ticks() -> i64 {
    recorder::clock::ticks()
}

/// How many ticks of `flightrec_ticks` make a second.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_ticks_per_second() -> i64 {
    recorder::clock::ticks_per_second()
}

/// Commits an event of `event_type` happening now (a duration type gets
/// duration 0), with `count` values in field order.
///
/// Returns `FLIGHTREC_OK` (also when the type is disabled or nothing
/// records: the event is then not written), `FLIGHTREC_ERR_UNKNOWN_TYPE`,
/// `FLIGHTREC_ERR_NULL`, `FLIGHTREC_ERR_FIELD_COUNT`,
/// `FLIGHTREC_ERR_FIELD_TYPE`, `FLIGHTREC_ERR_INVALID_ARGUMENT` (unknown
/// tag) or `FLIGHTREC_ERR_UTF8`; an event that fails is not written.
///
/// # Safety
///
/// `values` is null or points to `count` initialised `flightrec_value`s,
/// each string pointing to its bytes; all valid and unchanged for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_commit(
    event_type: flightrec_event_type,
    values: *const flightrec_value,
    count: usize,
) -> c_int {
    guard(|| {
        let Some(ty) = lookup(event_type) else {
            return unknown_type(event_type);
        };
        // SAFETY: the caller's contract.
        match unsafe { prepare(ty, values, count) } {
            Ok(values) => {
                ty.commit_from(&values);
                FLIGHTREC_OK
            }
            Err(code) => code,
        }
    })
}

/// Commits a duration event of `event_type` from `start` to `end` (values
/// of `flightrec_ticks`), if it lasted at least the type's threshold.
///
/// Returns what `flightrec_commit` returns, and
/// `FLIGHTREC_ERR_INVALID_ARGUMENT` for an instant type.
///
/// # Safety
///
/// As `flightrec_commit`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_commit_span(
    event_type: flightrec_event_type,
    start: i64,
    end: i64,
    values: *const flightrec_value,
    count: usize,
) -> c_int {
    guard(|| {
        let Some(ty) = lookup(event_type) else {
            return unknown_type(event_type);
        };
        if ty.info().kind != EventKind::Duration {
            return fail(
                FLIGHTREC_ERR_INVALID_ARGUMENT,
                format_args!(
                    "`{}` is an instant event type: commit it with flightrec_commit",
                    ty.name()
                ),
            );
        }
        // SAFETY: the caller's contract.
        match unsafe { prepare(ty, values, count) } {
            Ok(values) => {
                ty.commit_span_from(start, end, &values);
                FLIGHTREC_OK
            }
            Err(code) => code,
        }
    })
}

#[cold]
#[inline(never)]
fn unknown_type(handle: flightrec_event_type) -> c_int {
    fail(
        FLIGHTREC_ERR_UNKNOWN_TYPE,
        format_args!("{handle} is no handle returned by flightrec_register"),
    )
}

/// The C values of one commit, checked (see [`prepare`]).
struct CValues<'a> {
    values: &'a [flightrec_value],
    fields: &'static [FieldInfo],
    thread: ThreadRef,
    stack: StackTrace,
}

impl ValueSource for CValues<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.values.len()
    }

    #[inline(always)]
    fn get(&self, index: usize) -> Value<'_> {
        // SAFETY: `prepare` checked every value of this array (tag, string
        // pointer and UTF-8); the caller keeps it unchanged for the call.
        unsafe {
            value(
                &self.values[index],
                self.fields[index].kind,
                self.thread,
                self.stack,
            )
        }
        .unwrap_or(Value::Str(None))
    }
}

/// Checks `count` values at `values` against `ty`'s fields.
///
/// # Safety
///
/// As `flightrec_commit`'s.
#[inline(always)]
unsafe fn prepare<'a>(
    ty: &'static EventType,
    values: *const flightrec_value,
    count: usize,
) -> Result<CValues<'a>, c_int> {
    let fields = ty.info().fields;
    if count != fields.len() {
        return Err(field_count(ty, count));
    }
    let values: &[flightrec_value] = if count == 0 {
        &[]
    } else if values.is_null() {
        return Err(fail(
            FLIGHTREC_ERR_NULL,
            format_args!("values is NULL with count {count}"),
        ));
    } else {
        // SAFETY: non-null and `count` valid values (the caller's contract).
        unsafe { std::slice::from_raw_parts(values, count) }
    };
    let mut resolve = false;
    for (i, (v, f)) in values.iter().zip(fields).enumerate() {
        resolve |= v.tag >= FLIGHTREC_VALUE_CURRENT_THREAD;
        // SAFETY: the caller's contract covers each value and its string.
        let checked = unsafe { check_value(v, f.kind) };
        match checked {
            Ok(value) if value.fits(f.kind) => {}
            Ok(_) => return Err(field_type(ty, i, v.tag, f.kind)),
            Err(code) => return Err(code),
        }
    }
    // Most events have neither: they skip both scans.
    let (mut thread, mut stack) = (ThreadRef::NONE, StackTrace::NONE);
    if resolve && ty.is_enabled() {
        if values
            .iter()
            .any(|v| v.tag == FLIGHTREC_VALUE_CURRENT_THREAD)
        {
            thread = ThreadRef::current();
        }
        if values.iter().any(|v| v.tag == FLIGHTREC_VALUE_STACK_TRACE) {
            stack = StackTrace::capture();
        }
    }
    Ok(CValues {
        values,
        fields,
        thread,
        stack,
    })
}

/// Checks one value's tag, string pointer and UTF-8.
///
/// # Safety
///
/// `v` is initialised per its tag, and a string's bytes are readable.
#[inline]
unsafe fn check_value(v: &flightrec_value, kind: FieldKind) -> Result<Value<'_>, c_int> {
    if v.tag == FLIGHTREC_VALUE_STRING {
        // SAFETY: the tag says `s` is the initialised member.
        let s = unsafe { v.v.s };
        // SAFETY: the caller's contract: `s` points to its bytes.
        let bytes = unsafe { str_bytes(s) }?;
        if let Err(e) = std::str::from_utf8(bytes) {
            return Err(fail(
                FLIGHTREC_ERR_UTF8,
                format_args!("a string value is not valid UTF-8: {e}"),
            ));
        }
    }
    // SAFETY: strings were checked above; the caller's contract for the rest.
    unsafe { value(v, kind, ThreadRef::NONE, StackTrace::NONE) }.ok_or_else(|| {
        fail(
            FLIGHTREC_ERR_INVALID_ARGUMENT,
            format_args!("value tag {} is no FLIGHTREC_VALUE_*", v.tag),
        )
    })
}

/// The bytes of a C string value.
///
/// # Safety
///
/// `s.ptr` points to `s.len` readable bytes, or to a NUL-terminated string
/// if `s.len` is [`FLIGHTREC_NUL_TERMINATED`].
#[inline]
unsafe fn str_bytes<'a>(s: flightrec_str) -> Result<&'a [u8], c_int> {
    if s.ptr.is_null() {
        return match s.len {
            0 => Ok(&[]),
            _ => Err(fail(
                FLIGHTREC_ERR_NULL,
                "a string value's ptr is NULL with a non-zero len (use FLIGHTREC_VALUE_NULL for null)",
            )),
        };
    }
    Ok(if s.len == FLIGHTREC_NUL_TERMINATED {
        // SAFETY: non-null and NUL-terminated (the caller's contract).
        unsafe { std::ffi::CStr::from_ptr(s.ptr) }.to_bytes()
    } else {
        // SAFETY: non-null, `len` readable bytes (the caller's contract).
        unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) }
    })
}

/// `v` as a recorder value for a field of `kind` (which only `NULL`
/// needs); `None` for an unknown tag.
///
/// # Safety
///
/// `v` is initialised per its tag; a string value was checked by
/// [`check_value`] (non-null unless empty, valid UTF-8) and is unchanged.
#[inline(always)]
unsafe fn value(
    v: &flightrec_value,
    kind: FieldKind,
    thread: ThreadRef,
    stack: StackTrace,
) -> Option<Value<'_>> {
    Some(match v.tag {
        // SAFETY: the tag names `b`, the initialised member.
        FLIGHTREC_VALUE_BOOL => Value::Bool(unsafe { v.v.b } != 0),
        // SAFETY: the tag names `c`, the initialised member.
        FLIGHTREC_VALUE_CHAR => Value::Char(unsafe { v.v.c }),
        // SAFETY: the tag names `i`, the initialised member.
        FLIGHTREC_VALUE_INT => Value::Int(unsafe { v.v.i }),
        // SAFETY: the tag names `u`, the initialised member.
        FLIGHTREC_VALUE_UINT => Value::UInt(unsafe { v.v.u }),
        // SAFETY: the tag names `f32`, the initialised member.
        FLIGHTREC_VALUE_F32 => Value::F32(unsafe { v.v.f32 }),
        // SAFETY: the tag names `f64`, the initialised member.
        FLIGHTREC_VALUE_F64 => Value::F64(unsafe { v.v.f64 }),
        FLIGHTREC_VALUE_STRING => {
            // SAFETY: the tag names `s`; checked by `check_value`.
            let bytes = unsafe { str_bytes(v.v.s) }.unwrap_or_default();
            // SAFETY: `check_value` found these bytes valid UTF-8, and the
            // caller keeps them unchanged for the call.
            Value::Str(Some(unsafe { std::str::from_utf8_unchecked(bytes) }))
        }
        FLIGHTREC_VALUE_NULL => match kind {
            FieldKind::Thread => Value::Thread(ThreadRef::NONE),
            FieldKind::StackTrace => Value::StackTrace(StackTrace::NONE),
            // A string field; any other kind rejects it.
            _ => Value::Str(None),
        },
        FLIGHTREC_VALUE_CURRENT_THREAD => Value::Thread(thread),
        FLIGHTREC_VALUE_STACK_TRACE => Value::StackTrace(stack),
        _ => return None,
    })
}

#[cold]
#[inline(never)]
fn field_count(ty: &EventType, count: usize) -> c_int {
    fail(
        FLIGHTREC_ERR_FIELD_COUNT,
        format_args!(
            "`{}` has {} fields, {count} values were given",
            ty.name(),
            ty.info().fields.len()
        ),
    )
}

#[cold]
#[inline(never)]
fn field_type(ty: &EventType, i: usize, tag: u32, kind: FieldKind) -> c_int {
    let f = &ty.info().fields[i];
    fail(
        FLIGHTREC_ERR_FIELD_TYPE,
        format_args!(
            "values[{i}] (tag {tag}) does not fit field `{}` of `{}`, of kind {kind:?} \
             (wrong tag, or an integer out of range)",
            f.name,
            ty.name()
        ),
    )
}
