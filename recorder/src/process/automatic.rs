//! The automatic recordings: those started from `FLIGHTREC`,
//! [`start_from_options`](super::autostart::start_from_options), the C
//! ABI's `flightrec_start` and `jcmd`'s `JFR.start`, each stopped once — by
//! its `duration`, by `JFR.stop` or as the process ends (at `exit()` or on
//! a terminating signal, writing its file if `dumponexit`).
//!
//! Invariant: every automatic recording is held in [`AUTO`] (start order);
//! the exit handler, a `duration` timer and `JFR.stop` all stop one by
//! taking it out of that list, so each is stopped exactly once.

use crate::base::sync::global::Mutex;
use std::time::Duration;

use crate::base::sync::global::{AtomicU64, Ordering};
use crate::config::builder::{RecordingConfig, StartError};
use crate::config::options::{self, OptionError, StartOptions};
use crate::lifecycle::handle::Recording;
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};
use crate::process::{report, shutdown};

/// The automatic recordings, each with whether it writes its file at exit
/// (`dumponexit`), and the settings it was given (for the stop's report of
/// event types that never registered).
static AUTO: Mutex<Vec<(Recording, bool, crate::config::settings::Settings)>> =
    Mutex::new(Vec::new());
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

/// The recording configuration an option string asks for (`%p` and `%t`
/// in `filename` expanded now).
pub(crate) fn config_from_options(o: &StartOptions) -> RecordingConfig {
    let mut c = match &o.filename {
        Some(f) => RecordingConfig::new(expand_filename(f, std::process::id(), local_now())),
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
    if let Some(n) = &o.name {
        c = c.name(n);
    }
    #[cfg(feature = "pyroscope")]
    if let Some(p) = &o.pyroscope {
        c = c.pyroscope(p.clone());
    }
    c.keep_repository(o.preserve_repository == Some(true))
        .disk(o.disk != Some(false))
        .max_chunk_age(o.max_chunk_age)
        .max_age(o.max_age)
        .max_size(o.max_size)
        .reported_duration(o.duration)
        .settings(o.settings.clone())
        .attach_mode(o.attach.unwrap_or_default())
}

/// Local time now as (year, month, day, hour, minute, second).
pub(crate) fn local_now() -> [i64; 6] {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as libc::time_t);
    // SAFETY: an all-zero `tm` is a valid value of the plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is the
    // thread-safe form and writes only `tm`.
    unsafe { libc::localtime_r(&now, &mut tm) };
    [
        i64::from(tm.tm_year) + 1900,
        i64::from(tm.tm_mon) + 1,
        i64::from(tm.tm_mday),
        i64::from(tm.tm_hour),
        i64::from(tm.tm_min),
        i64::from(tm.tm_sec),
    ]
}

/// `path` with `%p` replaced by `pid` and `%t` by `time` as
/// `yyyy_MM_dd_HH_mm_ss`, as the JDK expands `filename`.
pub(crate) fn expand_filename(
    path: &std::path::Path,
    pid: u32,
    time: [i64; 6],
) -> std::path::PathBuf {
    let Some(text) = path.to_str() else {
        return path.to_owned();
    };
    let [y, mo, d, h, mi, s] = time;
    let stamp = format!("{y:04}_{mo:02}_{d:02}_{h:02}_{mi:02}_{s:02}");
    text.replace("%p", &pid.to_string())
        .replace("%t", &stamp)
        .into()
}

/// Starts `config` as an automatic recording, with `opts`' signal, delay,
/// duration and `dumponexit`. Returns its id, or `None` when it
/// starts after a `delay`.
pub(crate) fn start_with(
    opts: &StartOptions,
    config: RecordingConfig,
) -> Result<Option<u64>, AutoStartError> {
    if let Some(on) = opts.sample_own_threads {
        crate::sampler::set_sample_own_threads(on);
    }
    if let Some(on) = opts.warn_stale {
        crate::repository::set_warn_stale(on);
    }
    if let Some(signal) = opts.signal {
        crate::sampler::set_signal(signal).map_err(|e| {
            AutoStartError::Options(OptionError::BadSignal {
                key: "signal".to_owned(),
                value: signal.to_string(),
                reason: e.to_string(),
            })
        })?;
    }
    // Checked now, also when the start is delayed: a bad `filename` is
    // reported at start, not after the run.
    config.validate().map_err(AutoStartError::Start)?;
    let dump_on_exit = opts.dump_on_exit != Some(false);
    match opts.delay {
        Some(delay) if !delay.is_zero() => {
            let duration = opts.duration;
            std::thread::Builder::new()
                .name("flightrec-delayed-start".into())
                .spawn(move || {
                    std::thread::sleep(delay);
                    if let Err(e) = start(config, duration, dump_on_exit) {
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
        _ => {
            let id = start(config, opts.duration, dump_on_exit)?;
            register_exit_handler();
            return Ok(Some(id));
        }
    }
    register_exit_handler();
    Ok(None)
}

fn start(
    config: RecordingConfig,
    duration: Option<Duration>,
    dump_on_exit: bool,
) -> Result<u64, AutoStartError> {
    let settings = config.settings.clone();
    let file = config.destination.clone();
    let rec = Recording::start(config).map_err(AutoStartError::Start)?;
    let id = rec.id();
    report::started(id, rec.repository(), file.as_deref());
    AUTO_PID.store(u64::from(std::process::id()), Ordering::Relaxed);
    AUTO.lock().push((rec, dump_on_exit, settings));
    if let Some(d) = duration.filter(|d| !d.is_zero()) {
        let _ = std::thread::Builder::new()
            .name("flightrec-duration".into())
            .spawn(move || {
                std::thread::sleep(d);
                // Only this recording, if it still runs.
                let _ = stop(Some(id), true);
            });
    }
    Ok(id)
}

/// The automatic recordings of this process (none in a forked child).
fn autos() -> Option<
    crate::base::sync::global::MutexGuard<
        'static,
        Vec<(Recording, bool, crate::config::settings::Settings)>,
    >,
> {
    if AUTO_PID.load(Ordering::Relaxed) != u64::from(std::process::id()) {
        return None; // none, or the parent's (in a forked child)
    }
    Some(AUTO.lock())
}

/// Whether an automatic recording runs (in this process).
pub(crate) fn holds_any() -> bool {
    autos().is_some_and(|a| !a.is_empty())
}

/// Whether automatic recording `id` runs (in this process).
pub(crate) fn holds(id: u64) -> bool {
    autos().is_some_and(|a| a.iter().any(|(r, _, _)| r.id() == id))
}

/// Stops every automatic recording (writing their files).
pub fn stop_auto() {
    while stop(None, true).is_some() {}
}

/// Stops automatic recording `id` (writing its file) for `jcmd`'s
/// `JFR.stop`: `None` if it does not run, else how the stop went.
pub(crate) fn stop_now(id: u64) -> Option<Result<RecordingSummary, RecordingError>> {
    stop(Some(id), true)
}

/// Stops the (oldest) automatic recording and writes its file; `Ok(None)`
/// if none runs. Unlike [`stop_auto`] it returns the error instead of
/// printing it (the C ABI's `flightrec_stop`).
pub fn stop_auto_checked() -> Result<Option<RecordingSummary>, RecordingError> {
    take_and_stop(None, true).transpose()
}

/// Runs `f` on the (oldest) automatic recording, if one runs in this
/// process (the C ABI's dump, flush and settings). The recording cannot
/// stop meanwhile.
pub fn with_auto<R>(f: impl FnOnce(&Recording) -> R) -> Option<R> {
    let auto = autos()?;
    auto.first().map(|(rec, _, _)| f(rec))
}

/// Stops automatic recording `id` (the oldest if `None`); writes its file
/// if `write` (the `duration` ran out) or it was started with `dumponexit`
/// (at exit). Errors are also reported on stderr.
fn stop(id: Option<u64>, write: bool) -> Option<Result<RecordingSummary, RecordingError>> {
    let result = take_and_stop(id, write)?;
    if let Err(e) = &result {
        eprintln!("flightrec: {e}");
    }
    Some(result)
}

/// [`stop`]'s work: `None` if that automatic recording does not run.
fn take_and_stop(id: Option<u64>, write: bool) -> Option<Result<RecordingSummary, RecordingError>> {
    let (rec, dump_on_exit, settings) = {
        let mut auto = autos()?;
        let at = match id {
            Some(id) => auto.iter().position(|(r, _, _)| r.id() == id)?,
            None if auto.is_empty() => return None,
            None => 0,
        };
        auto.remove(at)
    };
    let id = rec.id();
    let unused = crate::event::registry::registry().unregistered(&settings);
    if !unused.is_empty() {
        let shown: Vec<String> = unused.iter().take(5).map(|e| format!("`{e}`")).collect();
        let more = match unused.len() - shown.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        eprintln!(
            "flightrec: {}: settings for {}{more} were not used: no event type of that name \
             was registered while recording",
            options::ENV_VAR,
            shown.join(", ")
        );
    }
    let result = if write || dump_on_exit {
        rec.stop_with_reason(if write {
            "Recording duration elapsed"
        } else {
            "Process exit"
        })
    } else {
        rec.stop_without_writing()
    };
    report::stopped(id, &result);
    Some(result)
}

/// Stops every automatic recording as the process ends (writing the files
/// of those with `dumponexit`): on the shutdown thread, at exit or on a
/// terminating signal (see [`crate::process::shutdown`]).
fn stop_at_exit() {
    while stop(None, false).is_some() {}
}

extern "C" fn at_exit() {
    // Never unwind into libc.
    let _ = std::panic::catch_unwind(|| shutdown::at_exit(stop_at_exit));
}

fn register_exit_handler() {
    static ONCE: crate::base::sync::Once = crate::base::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(e) = shutdown::start(stop_at_exit) {
            eprintln!(
                "flightrec: no shutdown thread ({e}): the file is written at exit, \
                 not on SIGTERM, SIGHUP or SIGINT"
            );
        }
        // SAFETY: `at_exit` is a plain `extern "C" fn()` that catches panics;
        // atexit only stores the pointer.
        unsafe { libc::atexit(at_exit) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preserve_repository_keeps_the_repository() {
        let config = |text: &str| config_from_options(&options::parse(text).unwrap());
        assert!(config("preserve-repository=true").keep_repository);
        assert!(!config("preserve-repository=false").keep_repository);
        assert!(!config("filename=a.jfr").keep_repository);
    }

    #[test]
    fn options_reach_the_config() {
        let config = |text: &str| config_from_options(&options::parse(text).unwrap());
        let c = config("name=my app,disk=false,duration=5m");
        assert_eq!(c.name.as_deref(), Some("my app"));
        assert!(!c.disk);
        assert_eq!(c.duration, Some(Duration::from_secs(300)));
        assert!(config("filename=x.jfr").disk);
    }

    #[test]
    fn filename_expands_pid_and_time_as_the_jdk() {
        let p = expand_filename(
            std::path::Path::new("/tmp/app-%p-%t.jfr"),
            4211,
            [2026, 3, 7, 9, 5, 1],
        );
        assert_eq!(
            p,
            std::path::Path::new("/tmp/app-4211-2026_03_07_09_05_01.jfr")
        );
        let same = expand_filename(std::path::Path::new("/tmp/plain.jfr"), 1, [0; 6]);
        assert_eq!(same, std::path::Path::new("/tmp/plain.jfr"));
    }
}
