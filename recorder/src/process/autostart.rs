//! Starting a recording without code changes, from the `FLIGHTREC`
//! environment variable, as `-XX:StartFlightRecording` does for `java`.
//!
//! ```text
//! FLIGHTREC='filename=app.jfr,settings=profile,com.example.Request#threshold=1ms' ./app
//! ```
//!
//! A constructor in `.init_array` runs [`start_from_env`] before `main`; an
//! `atexit` handler stops the recording when the process exits, so the file
//! named by `filename` is written (unless `dumponexit=false`; `%p` and `%t`
//! in it become the pid and the set-up time, `yyyy_MM_dd_HH_mm_ss`, as the
//! JDK expands them). A `duration` stops it earlier (writing the file), a
//! `delay` starts it later. The destination is checked at start: a
//! `filename` in a missing or unwritable directory fails the start, naming
//! the path and why. Settings for an event type that never registered
//! while recording are named on stderr at the stop (a type may register
//! after the start, and then gets its settings). A descendant that
//! inherits `FLIGHTREC` runs bare unless it holds `children=true`, and then
//! writes its own file (`-<pid>` before the extension; see
//! `exec_child.rs`). With `report=PATH` the start, the file written and any
//! failure are also appended to that file (see `report.rs`). An invalid option string is reported on stderr (naming
//! the option and why) and nothing is started; programs that want the error
//! call [`start_from_env`] themselves.
//!
//! `FLIGHTREC`, [`start_from_options`] and the C ABI start one automatic
//! recording (a second is refused with `AlreadyRecording`); `jcmd`'s
//! `JFR.start` may add more beside it, each stopped by its own `JFR.stop`,
//! `duration` or the exit.
//!
//! The recordings started here are automatic ones
//! ([`crate::process::automatic`]).
//!
//! Invariant: the constructor starts nothing unless `FLIGHTREC` is set,
//! and never unwinds into the loader.

use crate::config::builder::StartError;
use crate::config::options;
use crate::config::options::StartOptions;
use crate::process::automatic::{config_from_options, holds_any, start_with};
use crate::process::{exec_child, report};

pub use crate::process::automatic::{AutoStartError, stop_auto, stop_auto_checked, with_auto};

/// Reads `FLIGHTREC` and, if set, starts the recording it describes (after
/// its `delay`, on a background thread). Returns whether one was started or
/// scheduled.
///
/// A descendant that inherited `FLIGHTREC` (see
/// the `exec_child` module) starts nothing and says
/// nothing, not even about an invalid string (its root said it), unless
/// the string holds `children=true`; then it writes its own file.
pub fn start_from_env() -> Result<bool, AutoStartError> {
    let descendant = exec_child::descendant();
    let mut opts = match options::from_env() {
        Ok(Some(opts)) => opts,
        Ok(None) => return Ok(false),
        Err(_) if descendant => return Ok(false),
        Err(e) => return Err(AutoStartError::Options(e)),
    };
    if descendant && opts.children != Some(true) {
        return Ok(false);
    }
    if let Some(path) = &opts.report {
        report::set_path(path);
    }
    // A child that inherited `FLIGHTREC` writes its own file.
    opts.filename = opts.filename.map(|f| exec_child::own_filename(&f));
    if let Err(e) = start_first(&opts) {
        let what = match &e {
            AutoStartError::Start(StartError::Destination { .. }) => report::Failure::Destination,
            _ => report::Failure::Start,
        };
        report::failed(what, &e.to_string());
        return Err(e);
    }
    Ok(true)
}

/// Starts the recording an option string in `FLIGHTREC`'s grammar
/// describes (e.g. `settings=default,disk=false,maxage=5m,attach=true`), as
/// if it had been given in `FLIGHTREC`: it is stopped at exit (writing
/// `filename` unless `dumponexit=false`), and `jcmd <pid> JFR.stop` may
/// stop it. Fails if an automatic recording already runs (a recording
/// started with [`Recording::start`](crate::Recording::start) may run beside it).
pub fn start_from_options(text: &str) -> Result<(), AutoStartError> {
    let opts = options::parse(text).map_err(AutoStartError::Options)?;
    start_first(&opts)
}

/// Starts the automatic recording from options already parsed in the
/// `FLIGHTREC` grammar ([`options::parse`]), exactly as if `FLIGHTREC` held
/// them: `delay`, `duration` and `dumponexit` apply, and the file is
/// written at exit. The C ABI's `flightrec_start` is this function.
pub fn start_from_parsed(opts: &StartOptions) -> Result<(), AutoStartError> {
    start_first(opts)
}

/// Starts the one automatic recording `opts` describe, unless one runs.
fn start_first(opts: &StartOptions) -> Result<(), AutoStartError> {
    if holds_any() {
        return Err(AutoStartError::Start(StartError::AlreadyRecording));
    }
    start_with(opts, config_from_options(opts))?;
    // Now, not after a `delay`: jcmd can see the process at once.
    if let Err(e) = crate::attach::start(opts.attach.unwrap_or_default()) {
        eprintln!("flightrec: attach: {e}");
    }
    Ok(())
}

/// Runs before `main` (from `.init_array`) when `FLIGHTREC` is set.
extern "C" fn autostart() {
    // A loom build records only inside its models (see `base::sync`).
    if cfg!(flightrec_loom) || std::env::var_os(options::ENV_VAR).is_none_or(|v| v.is_empty()) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: before `main`: no other thread reads the environment.
        unsafe { exec_child::mark_root() };
        if let Err(e) = start_from_env() {
            eprintln!("flightrec: {e}");
        }
    });
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static AUTOSTART: extern "C" fn() = autostart;

/// Keeps this object file (and with it the constructor above) in a link
/// that pulls archive members only on demand: a C program linked against
/// `libflightrec.a` (the C ABI calls it from type registration). A Rust
/// executable or shared library needs no such reference: rustc links every
/// `#[used]` static of an rlib (its `symbols.o` names them), so nothing
/// inside this crate calls it.
#[doc(hidden)]
#[inline(never)]
pub fn keep_linked() {
    #[cfg(target_os = "linux")]
    std::hint::black_box(&AUTOSTART);
}
