//! Starting a recording without code changes, from the `FLIGHTREC`
//! environment variable, as `-XX:StartFlightRecording` does for `java`.
//!
//! ```text
//! FLIGHTREC='filename=app.jfr,settings=profile,com.example.Request#threshold=1ms' ./app
//! ```
//!
//! A constructor in `.init_array` runs [`start_from_env`] before `main`; an
//! `atexit` handler stops the recording when the process exits, so the file
//! named by `filename` is written. A `duration` stops it earlier, a `delay`
//! starts it later. An invalid option string is reported on stderr (naming
//! the option and why) and nothing is started; programs that want the error
//! call [`start_from_env`] themselves.
//!
//! Invariant: at most one automatic recording exists, held in [`AUTO`]; the
//! exit handler and a `duration` timer both stop it through that slot, so it
//! is stopped exactly once.

use std::sync::Mutex;
use std::time::Duration;

use crate::config::{RecordingConfig, StartError};
use crate::options::{self, OptionError, StartOptions};
use crate::recording::Recording;
use crate::sync::{AtomicU64, Ordering};

/// The automatic recording, if one runs.
static AUTO: Mutex<Option<Recording>> = Mutex::new(None);
/// The process that started [`AUTO`]'s recording: a forked child's exit
/// handler leaves the parent's recording alone (and its lock, which a
/// parent thread may have held when the child was copied).
static AUTO_PID: AtomicU64 = AtomicU64::new(0);

/// Why the `FLIGHTREC` recording did not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum AutoStartError {
    /// The option string is invalid.
    Options(OptionError),
    /// The recording could not start.
    Start(StartError),
}

impl std::fmt::Display for AutoStartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Options(e) => write!(f, "{e}"),
            Self::Start(e) => write!(f, "FLIGHTREC: {e}"),
        }
    }
}

impl std::error::Error for AutoStartError {}

/// The recording configuration an option string asks for.
pub fn config_from_options(o: &StartOptions) -> RecordingConfig {
    let mut c = match &o.filename {
        Some(f) => RecordingConfig::new(f),
        None => RecordingConfig::repository_only(),
    };
    if let Some(r) = &o.repository {
        c = c.repository(r);
    }
    if let Some(i) = o.flush_interval {
        c = c.flush_interval(i);
    }
    if let Some(s) = o.max_chunk_size {
        c = c.max_chunk_size(s);
    }
    c.keep_repository(o.preserve_repository == Some(true))
        .max_chunk_age(o.max_chunk_age)
        .max_age(o.max_age)
        .max_size(o.max_size)
        .settings(o.settings.clone())
}

/// Reads `FLIGHTREC` and, if set, starts the recording it describes (after
/// its `delay`, on a background thread). Returns whether one was started or
/// scheduled.
pub fn start_from_env() -> Result<bool, AutoStartError> {
    let Some(opts) = options::from_env().map_err(AutoStartError::Options)? else {
        return Ok(false);
    };
    let config = config_from_options(&opts);
    match opts.delay {
        Some(delay) if !delay.is_zero() => {
            let duration = opts.duration;
            std::thread::Builder::new()
                .name("flightrec-delayed-start".into())
                .spawn(move || {
                    std::thread::sleep(delay);
                    if let Err(e) = start(config, duration) {
                        eprintln!("flightrec: {e}");
                    }
                })
                .map_err(|e| {
                    AutoStartError::Start(StartError::Io {
                        path: "<delayed start thread>".into(),
                        source: e,
                    })
                })?;
        }
        _ => start(config, opts.duration)?,
    }
    register_exit_handler();
    Ok(true)
}

fn start(config: RecordingConfig, duration: Option<Duration>) -> Result<(), AutoStartError> {
    let rec = Recording::start(config).map_err(AutoStartError::Start)?;
    AUTO_PID.store(u64::from(std::process::id()), Ordering::Relaxed);
    *AUTO.lock().unwrap_or_else(|e| e.into_inner()) = Some(rec);
    if let Some(d) = duration.filter(|d| !d.is_zero()) {
        let _ = std::thread::Builder::new()
            .name("flightrec-duration".into())
            .spawn(move || {
                std::thread::sleep(d);
                stop_auto();
            });
    }
    Ok(())
}

/// Stops the automatic recording (writing its file), if one runs.
pub fn stop_auto() {
    if AUTO_PID.load(Ordering::Relaxed) != u64::from(std::process::id()) {
        return; // none, or the parent's (in a forked child)
    }
    let rec = AUTO.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(rec) = rec
        && let Err(e) = rec.stop()
    {
        eprintln!("flightrec: {e}");
    }
}

extern "C" fn at_exit() {
    // Never unwind into libc.
    let _ = std::panic::catch_unwind(stop_auto);
}

fn register_exit_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `at_exit` is a plain `extern "C" fn()` that catches panics;
        // atexit only stores the pointer.
        unsafe { libc::atexit(at_exit) };
    });
}

/// Runs before `main` (from `.init_array`) when `FLIGHTREC` is set.
extern "C" fn autostart() {
    if std::env::var_os(options::ENV_VAR).is_none_or(|v| v.is_empty()) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        if let Err(e) = start_from_env() {
            eprintln!("flightrec: {e}");
        }
    });
}

#[cfg(all(target_os = "linux", not(flightrec_loom)))]
#[used]
#[unsafe(link_section = ".init_array")]
static AUTOSTART: extern "C" fn() = autostart;

/// Referenced from type registration, which every program that commits an
/// event reaches: it keeps this object file (and with it the constructor
/// above) in the link even when nothing else of this module is used.
#[inline(never)]
pub(crate) fn keep_linked() {
    #[cfg(all(target_os = "linux", not(flightrec_loom)))]
    std::hint::black_box(&AUTOSTART);
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn preserve_repository_keeps_the_repository() {
        let config = |text: &str| config_from_options(&options::parse(text).unwrap());
        assert!(config("preserve-repository=true").keep_repository);
        assert!(!config("preserve-repository=false").keep_repository);
        assert!(!config("filename=a.jfr").keep_repository);
    }
}
