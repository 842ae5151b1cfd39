//! Committing events from C: tagged values, checked in one pass, then
//! encoded straight into the thread's buffer in another.
//!
//! # Commit
//!
//! 1. The handle is looked up (a bounds check and one load, see
//!    [`crate::types`]).
//! 2. [`check`]: every value against its field, one `match` on the field's
//!    kind each: the tag the kind takes, an integer in the kind's range, a
//!    string's pointer non-null unless its length is 0 and its bytes valid
//!    UTF-8. The first value that fails is looked at again, out of line,
//!    for its status and message ([`reject`]); the call then records
//!    nothing.
//! 3. A `FLIGHTREC_VALUE_STACK_TRACE` or `FLIGHTREC_VALUE_CURRENT_THREAD`
//!    is resolved once, only if the type is enabled.
//! 4. `EventType::commit_fields` writes the implicit fields, then
//!    [`Checked::write`] encodes each value with the `FieldWriter` method
//!    of its field's kind, as a derived event's `write_fields` does: no
//!    check is left to make, so this pass is the derive path's plus one
//!    jump on the kind per value.
//!
//! Invariant: a value is written only after `check` accepted it for its
//! field's kind, so every record matches its type's metadata; after a
//! thread's first event nothing on this path allocates (only a failing call
//! does, for its message); the C array is only read, and only during the
//! call.

use std::ffi::{c_char, c_int};

use recorder::{EventKind, EventType, FieldKind, FieldValue, FieldWriter, StackTrace, ThreadRef};

use crate::error::{
    FLIGHTREC_ERR_FIELD_COUNT, FLIGHTREC_ERR_FIELD_TYPE, FLIGHTREC_ERR_INVALID_ARGUMENT,
    FLIGHTREC_ERR_NULL, FLIGHTREC_ERR_UNKNOWN_TYPE, FLIGHTREC_ERR_UTF8, FLIGHTREC_OK, fail, guard,
};
use crate::layout::{FieldLayout, Layout};
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
        // SAFETY: the caller's contract.
        match unsafe { check(layout, values, count) } {
            Ok(values) if layout.scalar => {
                layout.ty.commit_fields(|w| values.write_scalars(w));
                FLIGHTREC_OK
            }
            Ok(values) => commit_general(layout.ty, &values, None),
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
        // SAFETY: the caller's contract.
        match unsafe { check(layout, values, count) } {
            Ok(values) if layout.scalar => {
                ty.commit_span_fields(start, end, |w| values.write_scalars(w));
                FLIGHTREC_OK
            }
            Ok(values) => commit_general(ty, &values, Some((start, end))),
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

/// The values of one commit, each accepted by [`fits`] for its field.
struct Checked<'a> {
    values: &'a [flightrec_value],
    fields: &'static [FieldLayout],
}

impl Checked<'_> {
    /// Writes the values of a [`Layout::scalar`] type, one `FieldWriter`
    /// call each.
    #[inline(always)]
    fn write_scalars(&self, w: &mut FieldWriter<'_>) {
        for (v, f) in self.values.iter().zip(self.fields) {
            // SAFETY: `check` accepted `v` for `f.kind` (`Checked`'s
            // invariant), a scalar kind (`Layout::scalar`), and the caller
            // keeps the array unchanged for the call.
            unsafe { write_scalar(v, f.kind, w) }
        }
    }

    /// Writes the values of any type.
    #[inline(always)]
    fn write(&self, thread: ThreadRef, stack: StackTrace, w: &mut FieldWriter<'_>) {
        for (v, f) in self.values.iter().zip(self.fields) {
            // SAFETY: as in `write_scalars`, for any kind.
            unsafe { write_value(v, f.kind, thread, stack, w) }
        }
    }
}

/// Commits the values of a type with a string, thread or stack-trace
/// field: as an instant event, or over `span` (start, end). Out of line, so
/// the scalar path keeps the record cursor in registers and does not
/// encode the thread and stack keys ahead of its loop on every commit.
#[inline(never)]
fn commit_general(ty: &'static EventType, values: &Checked<'_>, span: Option<(i64, i64)>) -> c_int {
    let (mut thread, mut stack) = (ThreadRef::NONE, StackTrace::NONE);
    let has = |tag| values.values.iter().any(|v| v.tag == tag);
    // Resolved before the commit, which must not register or intern, and
    // only if the event would be written.
    if values
        .values
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
    let write = |w: &mut FieldWriter<'_>| values.write(thread, stack, w);
    match span {
        None => ty.commit_fields(write),
        Some((start, end)) => {
            ty.commit_span_fields(start, end, write);
        }
    }
    FLIGHTREC_OK
}

/// Checks `count` values at `values` against `layout`'s fields: their
/// number, the array pointer, then each value with the fast check, and
/// with [`fits`] if that turns it down.
///
/// # Safety
///
/// As `flightrec_commit`'s.
#[inline(always)]
unsafe fn check<'a>(
    layout: &'static Layout,
    values: *const flightrec_value,
    count: usize,
) -> Result<Checked<'a>, c_int> {
    let fields = layout.fields;
    if count != fields.len() {
        return Err(field_count(layout.ty, count));
    }
    let values: &[flightrec_value] = if count == 0 {
        &[]
    } else if values.is_null() {
        return Err(null_values(count));
    } else {
        // SAFETY: non-null and `count` valid values (the caller's contract).
        unsafe { std::slice::from_raw_parts(values, count) }
    };
    for (i, (v, f)) in values.iter().zip(fields).enumerate() {
        // SAFETY: the caller's contract covers each value and its string.
        if !unsafe { f.accepts(v) || fits_out_of_line(v, f.kind) } {
            // SAFETY: as above.
            return Err(unsafe { reject(layout.ty, i, v) });
        }
    }
    Ok(Checked { values, fields })
}

/// [`fits`], for strings, threads, stack traces and values the fast check
/// turned down.
///
/// # Safety
///
/// As [`fits`].
#[inline(never)]
unsafe fn fits_out_of_line(v: &flightrec_value, kind: FieldKind) -> bool {
    // SAFETY: forwarded contract.
    unsafe { fits(v, kind) }
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
/// with the `FieldWriter` method a derived event uses for that kind (see
/// `recorder::FieldValue`).
///
/// # Safety
///
/// [`fits`] returned true for `v` and `kind`, and `v` is unchanged since.
#[inline(always)]
unsafe fn write_scalar(v: &flightrec_value, kind: FieldKind, w: &mut FieldWriter<'_>) {
    use FieldKind as K;
    // SAFETY: for every `v.v` read below, `fits` accepted the tag that
    // names the member each kind reads (`INT` for signed kinds, `UINT` for
    // unsigned ones, the kind's own tag otherwise).
    unsafe {
        match kind {
            K::Bool => w.bool(v.v.b != 0),
            K::Char => w.char(v.v.c),
            K::I8 => w.byte(v.v.i as i8 as u8),
            K::I16 | K::I32 | K::I64 => w.int(v.v.i),
            K::U8 => w.byte(v.v.u as u8),
            K::U16 | K::U32 | K::U64 => w.uint(v.v.u),
            K::F32 => w.f32(v.v.f32),
            K::F64 => w.f64(v.v.f64),
            // A string, thread or stack trace: `write_value`'s.
            _ => {}
        }
    }
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
            _ => write_scalar(v, kind, w),
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
