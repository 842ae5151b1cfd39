//! Starting, stopping and dumping the process's recording from C.
//!
//! # One recording
//!
//! A process records at most once at a time. `flightrec_start` starts it
//! from an option string in the `FLIGHTREC` grammar, through the same slot
//! a `FLIGHTREC`-started recording lives in (the recorder's `autostart` module): so a
//! program that was started with `FLIGHTREC` (or with `libflightrec.so`
//! preloaded) can dump, flush, change settings and stop that recording
//! through the same functions, and a recording started here is written at
//! exit like one started by `FLIGHTREC` (unless `dumponexit=false`).
//!
//! ```text
//!  none ──flightrec_start / FLIGHTREC──► running ──flightrec_stop / exit / duration──► none
//!                                          │ flightrec_dump, _flush, _set ▲
//!                                          └──────────────────────────────┘
//! ```
//!
//! Invariant: every function here either acts on the one running recording
//! or returns [`FLIGHTREC_ERR_NOT_RECORDING`]; none blocks an emitting
//! thread.

use std::ffi::{c_char, c_int};

use recorder::autostart::{self, AutoStartError};
use recorder::{RecordingError, StartError, options};

use crate::error::{
    FLIGHTREC_ERR_ALREADY_RECORDING, FLIGHTREC_ERR_IO, FLIGHTREC_ERR_NOT_RECORDING,
    FLIGHTREC_ERR_OPTIONS, FLIGHTREC_ERR_SETTING, FLIGHTREC_ERR_START, FLIGHTREC_OK, fail, guard,
    str_arg,
};

/// Starts recording as `FLIGHTREC=options` would (the same grammar:
/// `filename=app.jfr,settings=profile,com.example.Request#threshold=1ms`).
/// An empty string starts a recording with the default settings that keeps
/// its chunks in a repository only. The file named by `filename` is written
/// by `flightrec_stop`, or at exit.
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NULL`, `FLIGHTREC_ERR_UTF8`,
/// `FLIGHTREC_ERR_OPTIONS` (the message names the option and why),
/// `FLIGHTREC_ERR_ALREADY_RECORDING` or `FLIGHTREC_ERR_START`.
///
/// # Safety
///
/// `options` is null or a NUL-terminated string, valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_start(options: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let text = match unsafe { str_arg(options, "options") } {
            Ok(t) => t,
            Err(code) => return code,
        };
        // The grammar rejects an empty string (as `FLIGHTREC=` would be
        // ignored); here it asks for the defaults.
        let text = if text.trim().is_empty() {
            "settings=default"
        } else {
            text
        };
        let opts = match options::parse(text) {
            Ok(o) => o,
            Err(e) => return fail(FLIGHTREC_ERR_OPTIONS, e),
        };
        match autostart::start_from_parsed(&opts) {
            Ok(()) => FLIGHTREC_OK,
            Err(AutoStartError::Options(e)) => fail(FLIGHTREC_ERR_OPTIONS, e),
            Err(AutoStartError::Start(StartError::AlreadyRecording)) => fail(
                FLIGHTREC_ERR_ALREADY_RECORDING,
                StartError::AlreadyRecording,
            ),
            Err(e) => fail(FLIGHTREC_ERR_START, e),
        }
    })
}

/// Stops the recording and writes its file (if it has a `filename`).
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NOT_RECORDING` or
/// `FLIGHTREC_ERR_IO`.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_stop() -> c_int {
    guard(|| match autostart::stop_auto_checked() {
        Ok(Some(_)) => FLIGHTREC_OK,
        Ok(None) => not_recording(),
        Err(e) => recording_error(e),
    })
}

/// Writes everything recorded so far to `path` (a `.jfr` file); recording
/// goes on.
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NULL`, `FLIGHTREC_ERR_UTF8`,
/// `FLIGHTREC_ERR_NOT_RECORDING` or `FLIGHTREC_ERR_IO`.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string, valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_dump(path: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let path = match unsafe { str_arg(path, "path") } {
            Ok(p) => p,
            Err(code) => return code,
        };
        on_recording(|r| r.dump(path).map_or_else(recording_error, |()| FLIGHTREC_OK))
    })
}

/// Makes the events recorded so far readable in the repository now.
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NOT_RECORDING` or
/// `FLIGHTREC_ERR_IO`.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_flush() -> c_int {
    guard(|| on_recording(|r| r.flush().map_or_else(recording_error, |()| FLIGHTREC_OK)))
}

/// Changes one setting of an event type while recording, as
/// `EVENT#SETTING=VALUE` in the option string would: `enabled` and
/// `stackTrace` (`true`/`false`), `threshold` (`10 ms`), `throttle` and
/// `period` for the built-in samples. A type registered later gets it too.
///
/// Returns `FLIGHTREC_OK`, `FLIGHTREC_ERR_NULL`, `FLIGHTREC_ERR_UTF8`,
/// `FLIGHTREC_ERR_SETTING` or `FLIGHTREC_ERR_NOT_RECORDING`.
///
/// # Safety
///
/// Each argument is null or a NUL-terminated string, valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flightrec_set(
    event: *const c_char,
    setting: *const c_char,
    value: *const c_char,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, for all three.
        let args = unsafe {
            (
                str_arg(event, "event"),
                str_arg(setting, "setting"),
                str_arg(value, "value"),
            )
        };
        let (event, setting, value) = match args {
            (Ok(e), Ok(s), Ok(v)) => (e, s, v),
            (Err(c), _, _) | (_, Err(c), _) | (_, _, Err(c)) => return c,
        };
        on_recording(|r| match r.set(event, setting, value) {
            Ok(()) => FLIGHTREC_OK,
            Err(e) => fail(FLIGHTREC_ERR_SETTING, e),
        })
    })
}

/// 1 if a recording is running in this process, else 0.
#[unsafe(no_mangle)]
pub extern "C" fn flightrec_is_recording() -> c_int {
    guard(|| c_int::from(autostart::with_auto(|_| ()).is_some()))
}

fn on_recording(f: impl FnOnce(&recorder::Recording) -> c_int) -> c_int {
    autostart::with_auto(f).unwrap_or_else(not_recording)
}

fn not_recording() -> c_int {
    fail(FLIGHTREC_ERR_NOT_RECORDING, "no recording is running")
}

fn recording_error(e: RecordingError) -> c_int {
    fail(FLIGHTREC_ERR_IO, e)
}
