//! Status codes, the thread-local last-error message, and the guard every
//! exported function runs its body in.
//!
//! # Reporting
//!
//! Every fallible function returns an `int`: [`FLIGHTREC_OK`] (0) or one of
//! the negative `FLIGHTREC_ERR_*` codes. A failing call also stores a
//! message on the calling thread, read with [`flightrec_last_error`]; a
//! successful call leaves it alone (like `errno`), so the commit path never
//! touches it.
//!
//! # Panics
//!
//! [`guard`] runs a body under `catch_unwind`: a panic inside flightrec
//! becomes [`FLIGHTREC_ERR_PANIC`] with the panic's message, and never
//! unwinds into C (which would be undefined behaviour).
//!
//! Invariant: no exported function lets a panic escape, and every non-zero
//! status it returns has set the thread's last error first.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Success.
pub const FLIGHTREC_OK: c_int = 0;
/// A required pointer argument was null.
pub const FLIGHTREC_ERR_NULL: c_int = -1;
/// A string argument is not valid UTF-8.
pub const FLIGHTREC_ERR_UTF8: c_int = -2;
/// An argument is out of range: an unknown kind, tag, flag or content type,
/// a span committed on an instant type, a negative threshold.
pub const FLIGHTREC_ERR_INVALID_ARGUMENT: c_int = -3;
/// The option string is invalid (the message names the option and why).
pub const FLIGHTREC_ERR_OPTIONS: c_int = -4;
/// A recording is already running in this process.
pub const FLIGHTREC_ERR_ALREADY_RECORDING: c_int = -5;
/// No recording is running.
pub const FLIGHTREC_ERR_NOT_RECORDING: c_int = -6;
/// The recording could not start (repository, destination, settings).
pub const FLIGHTREC_ERR_START: c_int = -7;
/// Writing the recording, a dump or the destination failed.
pub const FLIGHTREC_ERR_IO: c_int = -8;
/// The event type declaration is invalid (names, implicit fields, a
/// content type that does not fit, a name already registered).
pub const FLIGHTREC_ERR_SCHEMA: c_int = -9;
/// All `FLIGHTREC_MAX_EVENT_TYPES` handles are in use.
pub const FLIGHTREC_ERR_TOO_MANY_TYPES: c_int = -10;
/// The event type handle was not returned by `flightrec_register`.
pub const FLIGHTREC_ERR_UNKNOWN_TYPE: c_int = -11;
/// The number of values differs from the type's number of fields.
pub const FLIGHTREC_ERR_FIELD_COUNT: c_int = -12;
/// A value does not fit its field (other kind, integer out of range).
pub const FLIGHTREC_ERR_FIELD_TYPE: c_int = -13;
/// A setting name or value is invalid, or the type does not honour it.
pub const FLIGHTREC_ERR_SETTING: c_int = -14;
/// flightrec panicked (a bug); the call did nothing. The message says why.
pub const FLIGHTREC_ERR_PANIC: c_int = -15;

thread_local! {
    /// The message of this thread's last failed call.
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Stores `message` as this thread's last error and returns `code`. Cold:
/// only failing calls come here.
#[cold]
#[inline(never)]
pub(crate) fn fail(code: c_int, message: impl std::fmt::Display) -> c_int {
    let text = message.to_string().replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    // A thread that is exiting has no TLS left; the code still says it.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = Some(text));
    code
}

/// Runs `body`, turning a panic into [`FLIGHTREC_ERR_PANIC`].
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> c_int) -> c_int {
    // AssertUnwindSafe: after a panic the body's state is dropped; the
    // recorder's own state is panic-safe (see its `panic_guard`).
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(code) => code,
        Err(payload) => panicked(payload),
    }
}

#[cold]
#[inline(never)]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> c_int {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    // Dropping the payload may itself panic; never let that escape.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    fail(
        FLIGHTREC_ERR_PANIC,
        format_args!("flightrec panicked: {what}"),
    )
}

/// The message of the calling thread's last failed call, or `""` if none
/// failed yet. The string stays valid until the next failing call on this
/// thread; copy it to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_last_error() -> *const c_char {
    static EMPTY: &[u8] = b"\0";
    LAST_ERROR
        .try_with(|e| e.borrow().as_ref().map(|m| m.as_ptr()))
        .ok()
        .flatten()
        .unwrap_or(EMPTY.as_ptr().cast())
}

/// The name of a status code (`"FLIGHTREC_ERR_NULL"`), or
/// `"FLIGHTREC_ERR_UNKNOWN_CODE"` for a number that is none. A static
/// string.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_status_name(code: c_int) -> *const c_char {
    let name: &'static [u8] = match code {
        FLIGHTREC_OK => b"FLIGHTREC_OK\0",
        FLIGHTREC_ERR_NULL => b"FLIGHTREC_ERR_NULL\0",
        FLIGHTREC_ERR_UTF8 => b"FLIGHTREC_ERR_UTF8\0",
        FLIGHTREC_ERR_INVALID_ARGUMENT => b"FLIGHTREC_ERR_INVALID_ARGUMENT\0",
        FLIGHTREC_ERR_OPTIONS => b"FLIGHTREC_ERR_OPTIONS\0",
        FLIGHTREC_ERR_ALREADY_RECORDING => b"FLIGHTREC_ERR_ALREADY_RECORDING\0",
        FLIGHTREC_ERR_NOT_RECORDING => b"FLIGHTREC_ERR_NOT_RECORDING\0",
        FLIGHTREC_ERR_START => b"FLIGHTREC_ERR_START\0",
        FLIGHTREC_ERR_IO => b"FLIGHTREC_ERR_IO\0",
        FLIGHTREC_ERR_SCHEMA => b"FLIGHTREC_ERR_SCHEMA\0",
        FLIGHTREC_ERR_TOO_MANY_TYPES => b"FLIGHTREC_ERR_TOO_MANY_TYPES\0",
        FLIGHTREC_ERR_UNKNOWN_TYPE => b"FLIGHTREC_ERR_UNKNOWN_TYPE\0",
        FLIGHTREC_ERR_FIELD_COUNT => b"FLIGHTREC_ERR_FIELD_COUNT\0",
        FLIGHTREC_ERR_FIELD_TYPE => b"FLIGHTREC_ERR_FIELD_TYPE\0",
        FLIGHTREC_ERR_SETTING => b"FLIGHTREC_ERR_SETTING\0",
        FLIGHTREC_ERR_PANIC => b"FLIGHTREC_ERR_PANIC\0",
        _ => b"FLIGHTREC_ERR_UNKNOWN_CODE\0",
    };
    name.as_ptr().cast()
}

/// Reads the NUL-terminated C string argument `what`: a `&str`, or the
/// failing status ([`FLIGHTREC_ERR_NULL`], [`FLIGHTREC_ERR_UTF8`]).
///
/// # Safety
///
/// `p` is null or points to a NUL-terminated string that stays valid and
/// unchanged for `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, c_int> {
    if p.is_null() {
        return Err(fail(FLIGHTREC_ERR_NULL, format_args!("{what} is NULL")));
    }
    // SAFETY: `p` is non-null and NUL-terminated (the caller's contract).
    let bytes = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    std::str::from_utf8(bytes).map_err(|e| {
        fail(
            FLIGHTREC_ERR_UTF8,
            format_args!("{what} is not valid UTF-8: {e}"),
        )
    })
}

/// [`str_arg`] for an optional string: null is `None`.
///
/// # Safety
///
/// As [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(
    p: *const c_char,
    what: &str,
) -> Result<Option<&'a str>, c_int> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { str_arg(p, what) }.map(Some)
}
