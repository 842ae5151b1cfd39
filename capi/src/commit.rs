//! Committing events from C: tagged values, checked against the type's
//! fields and encoded straight into the thread's buffer.
//!
//! # Commit
//!
//! 1. The handle is looked up: a bounds check and one load give the type's
//!    [`Layout`] (see [`crate::types`]).
//! 2. A scalar type (numbers, booleans, chars: [`Layout::scalar`]) with the
//!    right count and an array: `EventType::commit_fields` writes the
//!    implicit fields as a derived event does, then [`write_scalars`]
//!    checks each value (its tag, an integer's range) with one jump on the
//!    field's kind and writes it with that kind's `FieldWriter` method. At
//!    the first value that does not fit, the record is abandoned (nothing
//!    of it is committed) and [`check`] runs again, out of line, to report
//!    it; so it does when the type is disabled, so that a wrong call fails
//!    whether or not anything records.
//! 3. Any other commit ([`commit_checked`], out of line): [`check`] first
//!    (count, array pointer, then each value with [`fits`]: a string's
//!    pointer non-null unless its length is 0, its bytes valid UTF-8), then
//!    a `FLIGHTREC_VALUE_CURRENT_THREAD` or `FLIGHTREC_VALUE_STACK_TRACE` is
//!    resolved, only if the type is enabled, then the values are written.
//!
//! A failing value gets its status and message from [`reject`]: an unknown
//! tag, a bad string (whatever its field), else a value that does not fit.
//!
//! Invariant: a record is committed only if every value in it was accepted
//! for its field's kind (by [`write_scalar`] or [`fits`], which accept the
//! same values), so every record matches its type's metadata; after a
//! thread's first event nothing on this path allocates (only a failing call
//! does, for its message); the C array is only read, and only during the
//! call.

use std::ffi::{c_char, c_int};

use recorder::{EventKind, EventType, FieldKind, FieldValue, FieldWriter, StackTrace, ThreadRef};

use crate::error::{
    FLIGHTREC_ERR_FIELD_COUNT, FLIGHTREC_ERR_FIELD_TYPE, FLIGHTREC_ERR_INVALID_ARGUMENT,
    FLIGHTREC_ERR_NULL, FLIGHTREC_ERR_UNKNOWN_TYPE, FLIGHTREC_ERR_UTF8, FLIGHTREC_OK, fail, guard,
};
use crate::layout::Layout;
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
        let Some(layout) = lookup(event_type) else {
            return unknown_type(event_type);
        };
        if layout.scalar && count == layout.kinds.len() && !values.is_null() {
            // SAFETY: non-null and `count` valid values (the caller's
            // contract).
            let values = unsafe { std::slice::from_raw_parts(values, count) };
            let write = |w: &mut FieldWriter<'_>| {
                // SAFETY: the caller's contract covers each value; there
                // are as many as kinds (checked above).
                unsafe { write_scalars(values, layout.kinds, w) }
            };
            if layout.ty.commit_fields(write) {
                return FLIGHTREC_OK;
            }
            // SAFETY: as above.
            return unsafe { not_written(layout, values) };
        }
        // SAFETY: the caller's contract.
        unsafe { commit_checked(layout, values, count, None) }
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
        let Some(layout) = lookup(event_type) else {
            return unknown_type(event_type);
        };
        let ty = layout.ty;
        if ty.info().kind != EventKind::Duration {
            return fail(
                FLIGHTREC_ERR_INVALID_ARGUMENT,
                format_args!(
                    "`{}` is an instant event type: commit it with flightrec_commit",
                    ty.name()
                ),
            );
        }
        if layout.scalar && count == layout.kinds.len() && !values.is_null() {
            // SAFETY: as in `flightrec_commit`.
            let values = unsafe { std::slice::from_raw_parts(values, count) };
            let write = |w: &mut FieldWriter<'_>| {
                // SAFETY: as in `flightrec_commit`.
                unsafe { write_scalars(values, layout.kinds, w) }
            };
            if ty.commit_span_fields(start, end, write) {
                return FLIGHTREC_OK;
            }
            // SAFETY: as above.
            return unsafe { not_written(layout, values) };
        }
        // SAFETY: the caller's contract.
        unsafe { commit_checked(layout, values, count, Some((start, end))) }
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

/// Writes the values of a [`Layout::scalar`] type, each checked as it is
/// written; false at the first that does not fit its field (the record is
/// then abandoned).
///
/// # Safety
///
/// `values` are initialised per their tags, and as many as `kinds`.
#[inline(always)]
unsafe fn write_scalars(
    values: &[flightrec_value],
    kinds: &[FieldKind],
    w: &mut FieldWriter<'_>,
) -> bool {
    // Indexed, not zipped: one counter for both arrays.
    for i in 0..values.len() {
        // SAFETY: the caller's contract.
        if !unsafe { write_scalar(&values[i], kinds[i], w) } {
            return false;
        }
    }
    true
}

/// Why a scalar commit was not written: the type is disabled, the event
/// was dropped (and counted), or a value did not fit, which the full check
/// finds and reports.
///
/// # Safety
///
/// `values` are initialised per their tags.
#[cold]
#[inline(never)]
unsafe fn not_written(layout: &Layout, values: &[flightrec_value]) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { check(layout, values.as_ptr(), values.len()) } {
        Ok(()) => FLIGHTREC_OK,
        Err(code) => code,
    }
}

/// Commits a type with a string, thread or stack-trace field (or values
/// the scalar path did not take: a wrong count, a null array), as an
/// instant event or over `span` (start, end): all values are checked
/// first, then written. Out of line, so the scalar path keeps the record
/// cursor in registers and does not encode thread and stack keys ahead of
/// its loop.
///
/// # Safety
///
/// As `flightrec_commit`'s.
#[inline(never)]
unsafe fn commit_checked(
    layout: &Layout,
    values: *const flightrec_value,
    count: usize,
    span: Option<(i64, i64)>,
) -> c_int {
    // SAFETY: the caller's contract.
    if let Err(code) = unsafe { check(layout, values, count) } {
        return code;
    }
    let values: &[flightrec_value] = match count {
        0 => &[],
        // SAFETY: `check` found `values` non-null; the caller's contract.
        _ => unsafe { std::slice::from_raw_parts(values, count) },
    };
    let ty = layout.ty;
    let (mut thread, mut stack) = (ThreadRef::NONE, StackTrace::NONE);
    let has = |tag| values.iter().any(|v| v.tag == tag);
    // Resolved before the commit, which must not register or intern, and
    // only if the event would be written.
    if values
        .iter()
        .any(|v| v.tag >= FLIGHTREC_VALUE_CURRENT_THREAD)
        && ty.is_enabled()
    {
        if has(FLIGHTREC_VALUE_CURRENT_THREAD) {
            thread = ThreadRef::current();
        }
        if has(FLIGHTREC_VALUE_STACK_TRACE) {
            stack = StackTrace::capture();
        }
    }
    let write = |w: &mut FieldWriter<'_>| {
        for (v, &kind) in values.iter().zip(layout.kinds) {
            // SAFETY: `check` accepted `v` for `kind`, and the caller keeps
            // the array and its strings unchanged for the call.
            unsafe { write_value(v, kind, thread, stack, w) };
        }
        true
    };
    match span {
        None => ty.commit_fields(write),
        Some((start, end)) => ty.commit_span_fields(start, end, write),
    };
    FLIGHTREC_OK
}

/// Checks `count` values at `values` against `layout`'s fields: their
/// number, the array pointer, then each value with [`fits`].
///
/// # Safety
///
/// As `flightrec_commit`'s.
unsafe fn check(
    layout: &Layout,
    values: *const flightrec_value,
    count: usize,
) -> Result<(), c_int> {
    let kinds = layout.kinds;
    if count != kinds.len() {
        return Err(field_count(layout.ty, count));
    }
    if count == 0 {
        return Ok(());
    }
    if values.is_null() {
        return Err(null_values(count));
    }
    // SAFETY: non-null and `count` valid values (the caller's contract).
    let values = unsafe { std::slice::from_raw_parts(values, count) };
    for (i, (v, &kind)) in values.iter().zip(kinds).enumerate() {
        // SAFETY: the caller's contract covers each value and its string.
        if !unsafe { fits(v, kind) } {
            // SAFETY: as above.
            return Err(unsafe { reject(layout.ty, i, v) });
        }
    }
    Ok(())
}

/// True if `v` can be written into a field of `kind`: its tag is one the
/// kind takes, an integer is in the kind's range, a string is readable and
/// valid UTF-8. Each payload member is read only once the tag names it.
///
/// # Safety
///
/// `v` is initialised per its tag, and a string's bytes are readable.
#[inline(always)]
unsafe fn fits(v: &flightrec_value, kind: FieldKind) -> bool {
    use FieldKind as K;
    let tag = v.tag;
    // SAFETY: for every `v.v` read below, `&&` reads the member only after
    // the tag compared equal to the tag that names it.
    unsafe {
        match kind {
            K::Bool => tag == FLIGHTREC_VALUE_BOOL,
            K::Char => tag == FLIGHTREC_VALUE_CHAR,
            K::I8 => tag == FLIGHTREC_VALUE_INT && i8::try_from(v.v.i).is_ok(),
            K::I16 => tag == FLIGHTREC_VALUE_INT && i16::try_from(v.v.i).is_ok(),
            K::I32 => tag == FLIGHTREC_VALUE_INT && i32::try_from(v.v.i).is_ok(),
            K::I64 => tag == FLIGHTREC_VALUE_INT,
            K::U8 => tag == FLIGHTREC_VALUE_UINT && v.v.u <= u64::from(u8::MAX),
            K::U16 => tag == FLIGHTREC_VALUE_UINT && v.v.u <= u64::from(u16::MAX),
            K::U32 => tag == FLIGHTREC_VALUE_UINT && v.v.u <= u64::from(u32::MAX),
            K::U64 => tag == FLIGHTREC_VALUE_UINT,
            K::F32 => tag == FLIGHTREC_VALUE_F32,
            K::F64 => tag == FLIGHTREC_VALUE_F64,
            K::String => {
                tag == FLIGHTREC_VALUE_NULL
                    || (tag == FLIGHTREC_VALUE_STRING
                        && str_bytes(v.v.s).is_some_and(|b| std::str::from_utf8(b).is_ok()))
            }
            K::Thread => tag == FLIGHTREC_VALUE_NULL || tag == FLIGHTREC_VALUE_CURRENT_THREAD,
            K::StackTrace => tag == FLIGHTREC_VALUE_NULL || tag == FLIGHTREC_VALUE_STACK_TRACE,
            // `flightrec_register` declares no other kind.
            _ => false,
        }
    }
}

/// Writes `v` into a field of scalar `kind` (a number, boolean or char)
/// if it fits, exactly as [`fits`] decides, with the `FieldWriter` method
/// a derived event uses for that kind (see `flightrec::FieldValue`);
/// false, writing nothing, if it does not or `kind` is not scalar.
///
/// # Safety
///
/// `v` is initialised per its tag.
#[inline(always)]
unsafe fn write_scalar(v: &flightrec_value, kind: FieldKind, w: &mut FieldWriter<'_>) -> bool {
    use FieldKind as K;
    let tag = v.tag;
    let (int, uint) = (tag == FLIGHTREC_VALUE_INT, tag == FLIGHTREC_VALUE_UINT);
    // SAFETY: for every `v.v` read below, `&&` reads the member only after
    // the tag compared equal to the tag that names it (`INT` names `i`,
    // `UINT` names `u`).
    unsafe {
        match kind {
            K::Bool if tag == FLIGHTREC_VALUE_BOOL => w.bool(v.v.b != 0),
            K::Char if tag == FLIGHTREC_VALUE_CHAR => w.char(v.v.c),
            K::I8 if int && i8::try_from(v.v.i).is_ok() => w.byte(v.v.i as i8 as u8),
            K::I16 if int && i16::try_from(v.v.i).is_ok() => w.int(v.v.i),
            K::I32 if int && i32::try_from(v.v.i).is_ok() => w.int(v.v.i),
            K::I64 if int => w.int(v.v.i),
            K::U8 if uint && v.v.u <= u64::from(u8::MAX) => w.byte(v.v.u as u8),
            K::U16 if uint && v.v.u <= u64::from(u16::MAX) => w.uint(v.v.u),
            K::U32 if uint && v.v.u <= u64::from(u32::MAX) => w.uint(v.v.u),
            K::U64 if uint => w.uint(v.v.u),
            K::F32 if tag == FLIGHTREC_VALUE_F32 => w.f32(v.v.f32),
            K::F64 if tag == FLIGHTREC_VALUE_F64 => w.f64(v.v.f64),
            // Named, so the jump on the kind needs no range check.
            K::String | K::Thread | K::StackTrace => return false,
            _ => return false,
        }
    }
    true
}

/// Writes `v` into a field of any `kind`, like [`write_scalar`].
///
/// # Safety
///
/// [`fits`] returned true for `v` and `kind`, and `v` (with its string)
/// is unchanged since.
#[inline(always)]
unsafe fn write_value(
    v: &flightrec_value,
    kind: FieldKind,
    thread: ThreadRef,
    stack: StackTrace,
    w: &mut FieldWriter<'_>,
) {
    use FieldKind as K;
    // SAFETY: `fits` accepted `v` for `kind`; `s` is read only when the tag
    // is `STRING`.
    unsafe {
        match kind {
            K::String if v.tag == FLIGHTREC_VALUE_STRING => {
                let bytes = str_bytes(v.v.s).unwrap_or_default();
                // `fits` found these bytes valid UTF-8, and they are
                // unchanged (the caller's contract).
                w.str(std::str::from_utf8_unchecked(bytes));
            }
            K::String => w.opt_str(None),
            K::Thread if v.tag == FLIGHTREC_VALUE_CURRENT_THREAD => thread.write(w),
            K::StackTrace if v.tag == FLIGHTREC_VALUE_STACK_TRACE => stack.write(w),
            K::Thread => ThreadRef::NONE.write(w),
            K::StackTrace => StackTrace::NONE.write(w),
            // `fits` accepted it, so it is written.
            _ => {
                write_scalar(v, kind, w);
            }
        }
    }
}

/// The bytes of a C string value, or `None` for a null pointer with a
/// non-zero length.
///
/// # Safety
///
/// `s.ptr` is null, or points to `s.len` readable bytes, or to a
/// NUL-terminated string if `s.len` is [`FLIGHTREC_NUL_TERMINATED`].
#[inline]
unsafe fn str_bytes<'a>(s: flightrec_str) -> Option<&'a [u8]> {
    Some(if s.ptr.is_null() {
        match s.len {
            0 => &[],
            _ => return None,
        }
    } else if s.len == FLIGHTREC_NUL_TERMINATED {
        // SAFETY: non-null and NUL-terminated (the caller's contract).
        unsafe { std::ffi::CStr::from_ptr(s.ptr) }.to_bytes()
    } else {
        // SAFETY: non-null, `len` readable bytes (the caller's contract).
        unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) }
    })
}

/// The status and message of `values[i]`, which [`fits`] rejected: an
/// unknown tag, then a bad string (whatever its field), else a value that
/// does not fit its field.
///
/// # Safety
///
/// As [`fits`].
#[cold]
#[inline(never)]
unsafe fn reject(ty: &EventType, i: usize, v: &flightrec_value) -> c_int {
    if !(FLIGHTREC_VALUE_BOOL..=FLIGHTREC_VALUE_STACK_TRACE).contains(&v.tag) {
        return fail(
            FLIGHTREC_ERR_INVALID_ARGUMENT,
            format_args!("value tag {} is no FLIGHTREC_VALUE_*", v.tag),
        );
    }
    if v.tag == FLIGHTREC_VALUE_STRING {
        // SAFETY: the tag names `s`; the caller's contract for its bytes.
        let Some(bytes) = (unsafe { str_bytes(v.v.s) }) else {
            return fail(
                FLIGHTREC_ERR_NULL,
                "a string value's ptr is NULL with a non-zero len (use FLIGHTREC_VALUE_NULL for null)",
            );
        };
        if let Err(e) = std::str::from_utf8(bytes) {
            return fail(
                FLIGHTREC_ERR_UTF8,
                format_args!("a string value is not valid UTF-8: {e}"),
            );
        }
    }
    field_type(ty, i, v.tag, ty.info().fields[i].kind)
}

#[cold]
#[inline(never)]
fn null_values(count: usize) -> c_int {
    fail(
        FLIGHTREC_ERR_NULL,
        format_args!("values is NULL with count {count}"),
    )
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
