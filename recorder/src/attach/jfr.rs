//! The diagnostic commands: `JFR.start`, `JFR.check`, `JFR.dump`,
//! `JFR.stop`, `JFR.configure`, `help`, `VM.version`, `VM.uptime`, with
//! the JDK's arguments, output and error messages.
//!
//! Where flightrec differs from the JDK, the text says so:
//! * several recordings run at once, as in the JDK (events are recorded
//!   with the union of their settings; each recording's file holds the
//!   chunks of its own life); a `name` already in use is refused, naming
//!   the recording that has it, and `JFR.dump`/`JFR.stop` without `name`
//!   act on the only recording, or ask for a name when several run;
//! * a recording the program started with `Recording::start` can be
//!   checked and dumped, not stopped (the program holds it);
//! * errors answer with a non-zero status, so `jcmd` exits 1 (the JDK's
//!   JFR commands print their errors with status 0);
//! * `disk=false` recordings honour `maxage` and `maxsize` in memory, and
//!   a `maxage` without `maxchunkage` rotates chunks every quarter of it
//!   (1 s ..= 1 min), so the window kept is at most `maxage` plus that.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::control::{self, Active, CONFIGURED};
use super::dcmd::{self, Arg};
use crate::config::builder::StartError;
use crate::config::options;
use crate::process::automatic::{self as autostart, AutoStartError};

/// Every command, for `help`.
const COMMANDS: &[(&str, &str)] = &[
    (
        "JFR.check",
        "Checks running JFR recording(s)\n\nOptions: name, verbose (BOOLEAN, false)",
    ),
    (
        "JFR.configure",
        "Configure JFR for the recordings started next\n\nOptions: repositorypath (STRING), \
         stackdepth (INT, 1..128; fixed once a recording ran in the process)",
    ),
    (
        "JFR.dump",
        "Copies contents of a JFR recording to file.\n\nOptions: begin, end (\"13:20:15\", \
         \"2020-03-17T09:00:00\", \"2020-03-17T09:00:00Z\" or \"-30s\", \"-15m\", \"-12h\"), \
         filename, maxage, maxsize (whole chunks: at least one), name, \
         path-to-gc-roots (ignored: no garbage collector)",
    ),
    (
        "JFR.start",
        "Starts a new JFR recording\n\nOptions: delay, disk, dumponexit, duration, filename, \
         flush-interval, maxage, maxsize, name, settings (default, profile, none or a file), \
         EVENT#SETTING=VALUE; path-to-gc-roots is ignored",
    ),
    (
        "JFR.stop",
        "Stops a JFR recording\n\nOptions: name, filename",
    ),
    ("VM.uptime", "Print process uptime."),
    (
        "VM.version",
        "Print the flightrec version (this process is not a JVM).",
    ),
    (
        "help",
        "For more information about a specific command use 'help <command>'.",
    ),
];

/// Runs one command line; `Ok` text for status 0, `Err` text otherwise.
pub(super) fn execute(line: &str) -> Result<String, String> {
    let (name, args) = dcmd::parse_line(line).map_err(|e| e + "\n")?;
    let out = match name.as_str() {
        "JFR.start" => start(&args),
        "JFR.check" => check(&args),
        "JFR.dump" => dump(&args),
        "JFR.stop" => stop(&args),
        "JFR.configure" => configure(&args),
        "help" => help(&args),
        "VM.version" => dcmd::check_unknown(&args, &[]).map(|()| {
            format!(
                "flightrec {} (a native process recording JFR files; not a JVM)\n",
                env!("CARGO_PKG_VERSION")
            )
        }),
        "VM.uptime" => dcmd::check_unknown(&args, &[]).map(|()| format!("{:.3} s\n", uptime())),
        _ => Err("java.lang.IllegalArgumentException: Unknown diagnostic command".to_owned()),
    };
    let end = |mut s: String| {
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s
    };
    out.map(end).map_err(end)
}

// === JFR.start ===

const START_KEYS: &[&str] = &[
    "name",
    "settings",
    "delay",
    "duration",
    "filename",
    "disk",
    "maxage",
    "maxsize",
    "flush-interval",
    "dumponexit",
    "path-to-gc-roots",
];

fn start(args: &[Arg]) -> Result<String, String> {
    let mut text = Vec::new();
    let mut notes = String::new();
    for (k, v) in args {
        if !k.contains('#') && !START_KEYS.contains(&k.as_str()) {
            return Err(if k == "report-on-exit" {
                "flightrec does not support report-on-exit.".to_owned()
            } else {
                dcmd::unknown(k)
            });
        }
        let v = v.as_deref().unwrap_or("true");
        if k == "path-to-gc-roots" {
            notes
                .push_str("Warning! path-to-gc-roots is ignored: there is no garbage collector.\n");
            continue;
        }
        if k == "settings" {
            // The JDK takes `settings=a,b`: one settings= each here.
            for set in v.split(',') {
                text.push(format!("settings={set}"));
            }
            continue;
        }
        if v.contains(',') {
            return Err(format!(
                "Could not start recording: `,` in the value of {k}."
            ));
        }
        text.push(format!("{k}={v}"));
    }
    let name = dcmd::get(args, "name");
    if name.is_some_and(|n| n.parse::<i64>().is_ok()) {
        return Err("Name of recording can't be numeric".to_owned());
    }
    let duration = dcmd::time(args, "duration")?;
    let delay = dcmd::time(args, "delay")?;
    let disk = dcmd::boolean(args, "disk")?;
    let dump_on_exit = dcmd::boolean(args, "dumponexit")?;
    let filename = dcmd::get(args, "filename");
    dcmd::time(args, "maxage")?;
    dcmd::time(args, "flush-interval")?;
    dcmd::size(args, "maxsize")?;
    if duration.is_none() && dump_on_exit == Some(false) && filename.is_some() {
        return Err(
            "Filename can only be set for a time bound recording or if dumponexit=true. \
                    Set duration/dumponexit or omit filename."
                .to_owned(),
        );
    }
    if dcmd::get(args, "settings") == Some("") {
        return Err(
            "No settings specified. Use settings=none to start without any settings".to_owned(),
        );
    }
    if duration.is_some_and(|d| d < Duration::from_secs(1)) {
        return Err("Could not start recording, duration must be at least 1 second.".to_owned());
    }
    if delay.is_some_and(|d| d < Duration::from_secs(1)) {
        return Err("Could not start recording, delay must be at least 1 second.".to_owned());
    }
    if dcmd::get(args, "flush-interval").is_some() && disk == Some(false) {
        return Err("Flush can only be set for recordings that are to disk.".to_owned());
    }
    let mut opts = options::parse(&text.join(",")).map_err(|e| {
        if let Some(quiet) = without_file_content(&e) {
            return quiet;
        }
        let e = e.to_string();
        format!(
            "Could not start recording: {}",
            e.strip_prefix("FLIGHTREC: ").unwrap_or(&e)
        )
    })?;
    if let Some(f) = &filename {
        opts.filename = Some(absolute(Path::new(f)));
    }
    // The JDK's JFR.start writes at exit only when asked.
    opts.dump_on_exit = Some(dump_on_exit == Some(true));
    if dump_on_exit == Some(true) && opts.filename.is_none() {
        opts.filename = Some(absolute(Path::new(&default_file_name(None))));
    }
    let mut config = autostart::config_from_options(&opts);
    let to_disk = disk != Some(false);
    let no_limit = opts.duration.is_none() && opts.max_age.is_none() && opts.max_size.is_none();
    if to_disk && no_limit {
        config = config.max_size(Some(250 << 20));
    }
    if let Some(age) = opts.max_age {
        let quarter = (age / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        config = config.max_chunk_age(Some(quarter));
    }
    let configured = CONFIGURED.lock().clone();
    if let Some(r) = &configured.repository {
        config = config.repository(r);
    }
    if let Some(d) = configured.stack_depth {
        config = config.max_stack_depth(d);
    }
    let id = autostart::start_with(&opts, config).map_err(|e| match e {
        AutoStartError::Start(StartError::NameInUse { name, id }) => format!(
            "Could not start recording: recording {id} is named {}. Choose another name, or \
             stop it first: jcmd {} JFR.stop name={}",
            quote(&name),
            std::process::id(),
            quote(&name)
        ),
        e => {
            let e = e.to_string();
            format!(
                "Could not start recording: {}",
                e.strip_prefix("FLIGHTREC: ").unwrap_or(&e)
            )
        }
    })?;
    let pid = std::process::id();
    if let Some(d) = delay {
        let _ = writeln!(
            notes,
            "Recording scheduled to start in {}.",
            dcmd::timespan(d)
        );
        return Ok(notes);
    }
    let Some(active) = id.and_then(|id| control::list().into_iter().find(|a| a.id == id)) else {
        return Err("Could not start recording: it stopped at once.".to_owned());
    };
    let _ = write!(notes, "Started recording {}.", active.id);
    if to_disk && no_limit {
        notes.push_str(" No limit specified, using maxsize=250MB as default.");
    }
    match (&opts.filename, duration) {
        (Some(f), Some(_)) => {
            let _ = write!(
                notes,
                " The result will be written to:\n\n{}\n",
                f.display()
            );
        }
        _ => {
            let cmd = if duration.is_none() { "dump" } else { "stop" };
            let file = if opts.filename.is_none() {
                "filename=FILEPATH "
            } else {
                ""
            };
            let _ = write!(
                notes,
                "\n\nUse jcmd {pid} JFR.{cmd} name={} {file}to copy recording data to file.\n",
                quote(&active.name())
            );
        }
    }
    Ok(notes)
}

// === JFR.check ===

fn check(args: &[Arg]) -> Result<String, String> {
    dcmd::check_unknown(args, &["name", "verbose"])?;
    let verbose = dcmd::boolean(args, "verbose")?.unwrap_or(false);
    let recordings = match dcmd::get(args, "name") {
        Some(name) => vec![find(name)?],
        None => control::list(),
    };
    if recordings.is_empty() {
        return Ok(format!(
            "No available recordings.\n\nUse jcmd {} JFR.start to start a recording.\n",
            std::process::id()
        ));
    }
    let mut out = String::new();
    for (i, a) in recordings.iter().enumerate() {
        if i > 0 && verbose {
            out.push('\n');
        }
        out.push_str(&check_one(a, verbose));
    }
    Ok(out)
}

/// One recording's lines of `JFR.check`.
fn check_one(a: &Active, verbose: bool) -> String {
    let c = &a.config;
    let mut out = format!("Recording {}: name={}", a.id, a.name());
    if let Some(d) = c.duration {
        let _ = write!(out, " duration={}", dcmd::timespan(d));
    }
    if let Some(s) = c.max_size {
        let _ = write!(out, " maxsize={}", dcmd::bytes(s).replace(' ', ""));
    }
    if let Some(d) = c.max_age {
        let _ = write!(out, " maxage={}", dcmd::timespan(d));
    }
    if !c.disk {
        out.push_str(" disk=false");
    }
    out.push_str(" (running)\n");
    if verbose {
        out.push('\n');
        out.push_str(&settings_text(a));
    }
    out
}

/// Each registered event type's settings as recording `a` asked for them
/// (its own settings over the type's defaults; the union of all running
/// recordings' applies to events), sorted by name, as `JFR.check
/// verbose=true` prints them.
fn settings_text(a: &Active) -> String {
    let reg = crate::event::registry::registry();
    let own = reg
        .live_settings(a.id)
        .unwrap_or_else(|| a.config.settings.clone());
    let mut types = reg.types();
    types.sort_by_key(|t| t.info.name);
    let mut out = String::new();
    for ty in types {
        let (enabled, stack, threshold) = crate::event::registry::resolve(ty, &own);
        let mut s = format!("enabled={enabled},stackTrace={stack}");
        if let Some(t) = threshold {
            let _ = write!(
                s,
                ",threshold={}",
                crate::config::settings::format_duration(t)
            );
        }
        let label = ty.info.label.unwrap_or(ty.info.name);
        let _ = write!(out, " {label} ({})\n   [{s}]\n", ty.info.name);
    }
    let mut builtin: Vec<_> = own
        .types
        .iter()
        .filter(|(n, _)| !reg.types().iter().any(|t| t.info.name == n.as_str()))
        .collect();
    builtin.sort_by_key(|(n, _)| n.as_str());
    for (name, t) in builtin {
        let mut s = Vec::new();
        if let Some(e) = t.enabled {
            s.push(format!("enabled={e}"));
        }
        if let Some(e) = t.stack_trace {
            s.push(format!("stackTrace={e}"));
        }
        if let Some(d) = t.threshold {
            s.push(format!(
                "threshold={}",
                crate::config::settings::format_duration(d)
            ));
        }
        if let Some(th) = t.throttle {
            s.push(format!("throttle={}", throttle_text(th)));
        }
        if let Some(p) = t.period {
            s.push(format!("period={}", period_text(p)));
        }
        let _ = write!(out, " ({name})\n   [{}]\n", s.join(","));
    }
    out
}

fn throttle_text(t: crate::config::settings::Throttle) -> String {
    use crate::config::settings::Throttle;
    match t {
        Throttle::Off => "off".to_owned(),
        Throttle::Rate { count, per } => {
            let unit = match per.as_nanos() {
                1 => "ns",
                1_000 => "us",
                1_000_000 => "ms",
                1_000_000_000 => "s",
                60_000_000_000 => "min",
                3_600_000_000_000 => "h",
                _ => "d",
            };
            format!("{count}/{unit}")
        }
        Throttle::Interval(d) => crate::config::settings::format_duration(d),
    }
}

fn period_text(p: crate::config::settings::Period) -> String {
    use crate::config::settings::Period;
    match p {
        Period::Interval(d) => crate::config::settings::format_duration(d),
        Period::EveryChunk => "everyChunk".to_owned(),
        Period::BeginChunk => "beginChunk".to_owned(),
        Period::EndChunk => "endChunk".to_owned(),
    }
}

/// The running recording `name` (a name or an id) selects.
fn find(name: &str) -> Result<Active, String> {
    let list = control::list();
    list.iter()
        .find(|a| a.name() == name)
        .or_else(|| list.iter().find(|a| a.is_named(name)))
        .cloned()
        .ok_or_else(|| {
            format!(
                "Could not find {name}.\n\nUse JFR.check without options to see list of all \
             available recordings."
            )
        })
}

// === JFR.dump ===

fn dump(args: &[Arg]) -> Result<String, String> {
    dcmd::check_unknown(
        args,
        &[
            "name",
            "filename",
            "begin",
            "end",
            "maxage",
            "maxsize",
            "path-to-gc-roots",
        ],
    )?;
    let mut notes = String::new();
    if dcmd::boolean(args, "path-to-gc-roots")? == Some(true) {
        notes.push_str("Warning! path-to-gc-roots is ignored: there is no garbage collector.\n");
    }
    // 0: no limit, as in the JDK.
    let max_size = dcmd::size(args, "maxsize")?.filter(|&s| s > 0);
    let maxage = dcmd::time(args, "maxage")?;
    let begin = dcmd::get(args, "begin");
    let end = dcmd::get(args, "end");
    if maxage.is_some() && (begin.is_some() || end.is_some()) {
        return Err("Dump failed, maxage can't be combined with begin or end.".to_owned());
    }
    let active = match dcmd::get(args, "name") {
        Some(name) => find(name)?,
        None => the_only("dump from")?,
    };
    let now = SystemTime::now();
    let from = match (begin, maxage) {
        (Some(b), _) => Some(parse_instant(b, now, "begin")?),
        (None, Some(age)) => Some(now.checked_sub(age).unwrap_or(SystemTime::UNIX_EPOCH)),
        (None, None) => None,
    };
    let to = end.map(|e| parse_instant(e, now, "end")).transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err("Dump failed, begin must precede end.".to_owned());
    }
    let path = output_path(dcmd::get(args, "filename"), Some(active.id));
    active
        .dump(path.clone(), from.map(nanos), to.map(nanos), max_size)
        .map_err(|e| format!("Dump failed. Could not copy recording data. {e}"))?;
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    if size == 0 {
        let _ = std::fs::remove_file(&path);
        return Err("Dump failed. No data found in the specified interval.".to_owned());
    }
    let _ = write!(
        notes,
        "Dumped recording \"{}\", {} written to:\n\n{}\n",
        active.name(),
        dcmd::bytes(size),
        path.display()
    );
    Ok(notes)
}

/// The recording a command without `name` acts on: the only one running.
fn the_only(what: &str) -> Result<Active, String> {
    let mut list = control::list();
    match list.len() {
        0 => Err(format!(
            "No recordings to {what}. Use JFR.start to start a recording."
        )),
        1 => Ok(list.remove(0)),
        _ => {
            let names: Vec<String> = list.iter().map(|a| quote(&a.name())).collect();
            Err(format!(
                "Several recordings are running ({}): choose one with name=.",
                names.join(", ")
            ))
        }
    }
}

/// `filename` (with `%p`, `%t`; a directory gets a generated name) as an
/// absolute path, or a generated name in the working directory.
fn output_path(filename: Option<&str>, id: Option<u64>) -> PathBuf {
    let Some(f) = filename.filter(|f| !f.is_empty()) else {
        return absolute(Path::new(&default_file_name(id)));
    };
    let p = autostart::expand_filename(Path::new(f), std::process::id(), autostart::local_now());
    if p.is_dir() {
        return absolute(&p.join(default_file_name(id)));
    }
    absolute(&p)
}

/// `flightrec-pid-<pid>[-id-<id>]-<time>.jfr`, as the JDK names a dump
/// (`hotspot-pid-...`).
fn default_file_name(id: Option<u64>) -> String {
    let [y, mo, d, h, mi, s] = autostart::local_now();
    let id = id.map(|i| format!("-id-{i}")).unwrap_or_default();
    format!(
        "flightrec-pid-{}{id}-{y:04}_{mo:02}_{d:02}_{h:02}_{mi:02}_{s:02}.jfr",
        std::process::id()
    )
}

/// The reply for an error about what a settings file holds, without
/// anything of it: `settings=` may name any file the process can read
/// (`/proc/self/environ`), and the peer must not learn its content. Only
/// the path (the peer's own words) and the line number are named. `None`
/// for other errors (built-in sets included), which quote only the option
/// line the peer sent.
fn without_file_content(e: &options::OptionError) -> Option<String> {
    use options::OptionError::{BadSettingsLine, SettingsSyntax};
    let (BadSettingsLine { path, line, .. } | SettingsSyntax { path, line, .. }) = e else {
        return None;
    };
    if path.to_str().is_some_and(|p| p.starts_with("<built-in ")) {
        return None;
    }
    Some(format!(
        "Could not start recording: settings file {} line {line} is not a valid settings \
         line or .jfc element (its content is not shown here)",
        path.display()
    ))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `-30s`, `-15m`, `-12h` before `now`; `2020-03-17T09:00:00Z` (UTC);
/// `2020-03-17T09:00:00` or `13:20:15` (local time, today).
fn parse_instant(v: &str, now: SystemTime, what: &str) -> Result<SystemTime, String> {
    let bad = || format!("Dump failed, not a valid {what} time.");
    if let Some(rel) = v.strip_prefix('-') {
        let d = dcmd::parse_time(rel).ok_or_else(bad)?;
        return Ok(now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH));
    }
    let (text, utc) = match v.strip_suffix('Z') {
        Some(t) => (t, true),
        None => (v, false),
    };
    let (date, time) = match text.split_once('T') {
        Some((d, t)) => (Some(d), t),
        None if !utc => (None, text),
        None => return Err(bad()),
    };
    let num = |s: &str| s.parse::<i64>().ok();
    let (time, frac) = time.split_once('.').unwrap_or((time, ""));
    let hms: Vec<i64> = time
        .split(':')
        .map(num)
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let [h, mi, s] = match hms[..] {
        [h, m] => [h, m, 0],
        [h, m, s] => [h, m, s],
        _ => return Err(bad()),
    };
    let [y, mo, d] = match date {
        Some(date) => {
            let ymd: Vec<i64> = date
                .split('-')
                .map(num)
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            <[i64; 3]>::try_from(ymd).map_err(|_| bad())?
        }
        None => {
            let [y, mo, d, ..] = autostart::local_now();
            [y, mo, d]
        }
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return Err(bad());
    }
    let frac_nanos = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        digits.parse::<u64>().map_err(|_| bad())?
    };
    let secs = if utc {
        days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
    } else {
        local_seconds(y, mo, d, h, mi, s).ok_or_else(bad)?
    };
    let secs = u64::try_from(secs).map_err(|_| bad())?;
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(frac_nanos))
}

/// Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the epoch of a local date and time (`mktime`).
fn local_seconds(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    // SAFETY: an all-zero `tm` is a valid value of the plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = i32::try_from(y - 1900).ok()?;
    tm.tm_mon = (mo - 1) as i32;
    tm.tm_mday = d as i32;
    tm.tm_hour = h as i32;
    tm.tm_min = mi as i32;
    tm.tm_sec = s as i32;
    tm.tm_isdst = -1;
    // SAFETY: `tm` is a valid, initialised struct that mktime may normalise.
    let t = unsafe { libc::mktime(&mut tm) };
    (t != -1).then_some(t)
}

// === JFR.stop ===

fn stop(args: &[Arg]) -> Result<String, String> {
    dcmd::check_unknown(args, &["name", "filename"])?;
    let name = dcmd::get(args, "name");
    let active = match name {
        Some(n) => find(n)?,
        None => the_only("stop")?,
    };
    let label = active.name();
    if !autostart::holds(active.id) {
        return Err(format!(
            "Could not stop recording \"{label}\": the program started it (Recording::start) \
             and only the program can stop it. JFR.dump copies its data."
        ));
    }
    let copy = match dcmd::get(args, "filename") {
        Some(f) => {
            let path = output_path(Some(f), Some(active.id));
            active
                .dump(path.clone(), None, None, None)
                .map_err(|e| format!("Could not write recording \"{label}\" to file. {e}"))?;
            Some(path)
        }
        None => None,
    };
    let summary = match autostart::stop_now(active.id) {
        Some(Ok(s)) => s,
        Some(Err(e)) => return Err(format!("Could not stop recording \"{label}\". {e}")),
        None => return Err(format!("Could not stop recording \"{label}\".")),
    };
    let written = copy.or(summary.destination);
    Ok(match written {
        Some(p) => format!(
            "Stopped recording \"{label}\", {} written to:\n\n{}\n",
            dcmd::bytes(std::fs::metadata(&p).map_or(0, |m| m.len())),
            p.display()
        ),
        None => format!("Stopped recording \"{label}\".\n"),
    })
}

// === JFR.configure, help, VM.* ===

fn configure(args: &[Arg]) -> Result<String, String> {
    const KEYS: &[&str] = &["repositorypath", "stackdepth"];
    for (k, _) in args {
        if !KEYS.contains(&k.as_str()) {
            return Err(format!(
                "{} flightrec's JFR.configure takes repositorypath and stackdepth.",
                dcmd::unknown(k)
            ));
        }
    }
    let mut c = CONFIGURED.lock();
    if args.is_empty() {
        let repo = c.repository.as_ref().map_or_else(
            || "(a new directory under the system temp directory for each recording)".to_owned(),
            |p| p.display().to_string(),
        );
        return Ok(format!(
            "Current configuration:\n\nRepository path: {repo}\n\nStack depth: {}\n",
            c.stack_depth.unwrap_or(64)
        ));
    }
    let mut out = String::new();
    if let Some(p) = dcmd::get(args, "repositorypath") {
        let p = absolute(Path::new(p));
        let _ = writeln!(out, "Repository path: {}\n", p.display());
        c.repository = Some(p);
    }
    if let Some(d) = dcmd::get(args, "stackdepth") {
        let depth = d
            .parse::<usize>()
            .ok()
            .filter(|d| (1..=128).contains(d))
            .ok_or_else(|| format!("Stack depth must be 1 ..= 128, not {d}."))?;
        if crate::runtime::get().is_some() {
            out.push_str(
                "Warning! A recording already ran in this process, which fixed its stack \
                 depth; stackdepth applies to the next process.\n",
            );
        }
        let _ = writeln!(out, "Stack depth: {depth}");
        c.stack_depth = Some(depth);
    }
    Ok(out)
}

fn help(args: &[Arg]) -> Result<String, String> {
    match args {
        [] => {
            let mut out = "The following commands are available:\n".to_owned();
            for (name, _) in COMMANDS {
                let _ = writeln!(out, "{name}");
            }
            out.push_str("\nFor more information about a specific command use 'help <command>'.\n");
            Ok(out)
        }
        [(all, None)] if all == "-all" => Ok(COMMANDS
            .iter()
            .map(|(n, text)| format!("{n}\n{text}\n\n"))
            .collect()),
        [(cmd, None)] => COMMANDS
            .iter()
            .find(|(n, _)| n == cmd)
            .map(|(n, text)| format!("{n}\n{text}\n"))
            .ok_or_else(|| {
                format!("java.lang.IllegalArgumentException: Help unavailable : '{cmd}' : No such command")
            }),
        _ => Err(dcmd::unknown(&args[args.len() - 1].0)),
    }
}

/// Seconds since the process started (`/proc/self/stat` against
/// `/proc/uptime`).
fn uptime() -> f64 {
    let since_boot = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
    let start_ticks = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Field 22, counted after the command name's closing parenthesis.
            let rest = &s[s.rfind(')')? + 2..];
            rest.split_whitespace().nth(19)?.parse::<f64>().ok()
        });
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    match (since_boot, start_ticks) {
        (Some(up), Some(t)) if hz > 0.0 => (up - t / hz).max(0.0),
        _ => 0.0,
    }
}

/// `name` quoted if it holds a blank, as the JDK prints it.
fn quote(name: &str) -> String {
    if name.contains(' ') {
        format!("\"{name}\"")
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_commands_and_arguments_are_refused_as_the_jdk_does() {
        assert_eq!(
            execute("Bogus.cmd").unwrap_err(),
            "java.lang.IllegalArgumentException: Unknown diagnostic command\n"
        );
        assert_eq!(
            execute("JFR.check bogus=1").unwrap_err(),
            "Unknown argument 'bogus' in diagnostic command.\n"
        );
        assert_eq!(
            execute("JFR.start name=1").unwrap_err(),
            "Name of recording can't be numeric\n"
        );
        assert!(
            execute("JFR.start duration=10ms")
                .unwrap_err()
                .contains("at least 1 second")
        );
        assert!(execute("JFR.start disk=false flush-interval=1s").is_err());
        assert!(execute("JFR.start report-on-exit=x").is_err());
    }

    #[test]
    fn a_settings_file_is_never_echoed_to_the_peer() {
        let dir = std::env::temp_dir().join(format!("flightrec-jfr-echo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lines = dir.join("secret.settings");
        std::fs::write(&lines, "SECRETKEY=hunter2\n").unwrap();
        let bad_value = dir.join("value.settings");
        std::fs::write(&bad_value, "jdk.X#threshold=hunter2\n").unwrap();
        let xml = dir.join("secret.jfc");
        std::fs::write(&xml, "<configuration><SECRETKEY hunter2=\"1\"/>").unwrap();
        for f in [&lines, &bad_value, &xml] {
            let e = execute(&format!("JFR.start settings={}", f.display())).unwrap_err();
            assert!(!e.contains("SECRETKEY") && !e.contains("hunter2"), "{e}");
            assert!(e.contains(&f.display().to_string()), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn help_lists_every_command() {
        let out = execute("help").unwrap();
        for (name, _) in COMMANDS {
            assert!(out.lines().any(|l| l == *name), "{name} missing: {out}");
        }
        assert!(execute("help JFR.dump").unwrap().contains("begin"));
        assert!(execute("help JFR.nope").is_err());
        assert!(
            execute("help -all")
                .unwrap()
                .contains("Stops a JFR recording")
        );
    }

    #[test]
    fn dump_times_parse_in_the_jdks_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let t = |v: &str| parse_instant(v, now, "begin");
        assert_eq!(t("-30s"), Ok(now - Duration::from_secs(30)));
        assert_eq!(t("-15m"), Ok(now - Duration::from_secs(900)));
        assert_eq!(
            t("2020-03-17T09:00:00Z"),
            Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(1_584_435_600))
        );
        assert_eq!(
            t("2020-03-17T09:00:00.5Z"),
            Ok(SystemTime::UNIX_EPOCH + Duration::from_millis(1_584_435_600_500))
        );
        assert!(t("13:20:15").is_ok());
        assert!(t("2020-03-17T09:00:00").is_ok());
        for bad in [
            "yesterday",
            "25:00:00",
            "2020-13-01T00:00:00Z",
            "-x",
            "1:2:3:4",
        ] {
            assert_eq!(
                t(bad),
                Err("Dump failed, not a valid begin time.".to_owned()),
                "{bad}"
            );
        }
    }

    #[test]
    fn uptime_is_this_process_age() {
        // `/proc` counts in 10 ms ticks: be old enough to show.
        std::thread::sleep(Duration::from_millis(100));
        let u = uptime();
        assert!((0.05..3600.0).contains(&u), "{u}");
    }
}
