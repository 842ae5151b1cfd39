//! [`StartOptions`], [`parse`] and [`from_env`].
//!
//! # Grammar
//!
//! ```text
//! options    = [ item { "," item } ]
//! item       = blank | option              blank items (`a=1,,b=2`, a trailing `,`) are skipped;
//!                                          a string of only blank items (`,,,`) is an error
//! option     = key "=" value               blanks around key and value are trimmed
//! key        = start-key | event-key       keys are case-sensitive
//! event-key  = [ "+" ] EVENT "#" SETTING   the JDK's `+` is accepted and changes nothing
//! value      = any text without ","        so paths cannot contain `,`
//! ```
//!
//! | key              | value                         | |
//! |------------------|-------------------------------|-|
//! | `filename`       | PATH                          | the `.jfr` written at stop or exit; `%p` pid, `%t` start time |
//! | `duration`       | TIME                          | stop after; `0` = no limit |
//! | `delay`          | TIME                          | start after; `0` = at once |
//! | `name`           | TEXT                          | the recording's name |
//! | `settings`       | `default`, `profile`, `none` or PATH | may repeat; see below |
//! | `disk`           | BOOL                          | `false`: keep chunks in memory only |
//! | `dumponexit`     | BOOL                          | `false`: do not write `filename` at exit |
//! | `maxage`         | TIME                          | repository retention; `0` = no limit |
//! | `maxsize`        | SIZE                          | repository retention; `0` = no limit |
//! | `maxchunksize`   | SIZE                          | rotate at, at least `64k` (flightrec-specific) |
//! | `maxchunkage`    | TIME                          | rotate after (flightrec-specific) |
//! | `flush-interval` | TIME                          | write buffered events this often (10 ms ..= 1 h) |
//! | `repository`     | DIR                           | where chunks are kept |
//! | `preserve-repository` | BOOL                     | keep the chunks after the file is written |
//! | `signal`         | SIGNAL                        | the sampling signal (`SIGPROF`, `SIGRTMIN+3`, a number) |
//! | `sample-own-threads` | BOOL                      | sample flightrec's own `flightrec-*` threads too (default `false`) |
//! | `method-timing`  | FILTER                        | JEP 520: time the instrumented functions it selects (joined with `jdk.MethodTiming#filter`) |
//! | `method-trace`   | FILTER                        | JEP 520: trace them (joined with `jdk.MethodTrace#filter`) |
//! | `children`       | BOOL                          | a descendant that inherits `FLIGHTREC` records too, into `name-<pid>.ext` (default `false`: it runs bare; see `crate::process::exec_child`) |
//! | `report`         | PATH                          | an existing regular file to append one line to at each start, file written and failure (`flightrec record` reads it; see `crate::process::report`) |
//! | `attach`         | `true`, `false` or `lazy`     | answer `jcmd` on the attach socket, from the start or (`lazy`) from the first `jcmd`'s SIGQUIT (default `false`; see `crate::attach`) |
//! | `warn-stale`     | BOOL                          | name other, exited processes' leftover repositories on stderr when a recording starts, each once (default `false`: `flightrec jcmd` and `flightrec assemble` list them) |
//! | `pyroscope`, `pyroscope.app`, `pyroscope.period`, `pyroscope.auth-env` | see `pyroscope.rs` | push to Grafana Pyroscope (feature `pyroscope`); the commas inside `pyroscope.app=NAME{k=v,...}` do not end it |
//! | EVENT`#`SETTING  | per setting, below            | may repeat; later wins |
//!
//! * TIME: digits, optional blanks, a unit `ns`, `us`, `ms`, `s`, `m`/`min`,
//!   `h` or `d` (`10ms`, `20 ms`, `5m`, `1d`); a bare `0` needs none.
//! * SIZE: digits, optional blanks, optionally `k`, `m` or `g` in either case
//!   for KiB, MiB, GiB (`1048576`, `512k`, `100M`, `1g`).
//! * BOOL: `true` or `false`.
//! * EVENT is a dotted identifier (`com.example.Request`). SETTING and its
//!   value: `enabled` and `stackTrace` BOOL, `threshold` TIME, `throttle` a
//!   rate `N/unit` (`500/s`, `10/ms`), a TIME (`10ms`) or `off`, `period` a
//!   TIME or `everyChunk`, `beginChunk`, `endChunk`, `filter` (of
//!   `jdk.MethodTiming` and `jdk.MethodTrace`) a FILTER.
//! * FILTER: `;`-separated parts, each `krate::module::function`,
//!   `krate::module::Type::method`, `krate::module::Type`, `::name` or
//!   `@tag` (see `flightrec::timing`); a malformed part fails the start,
//!   naming it. Filters given in several places are joined.
//!
//! `FLIGHTREC` is ignored, with one line on stderr, in a process the
//! kernel started in secure mode (`AT_SECURE`: setuid or setgid).
//!
//! Each start key may be given once; `settings` and event settings may
//! repeat.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::error::OptionError;
use super::source::{self, DEFAULT_SET};
use super::value::{KEYS, boolean, event_setting, size, suggest, time};
use crate::config::settings::Settings;

/// The environment variable [`from_env`] reads.
pub const ENV_VAR: &str = "FLIGHTREC";

/// A parsed `FLIGHTREC` option string: what to record, where, and for how
/// long. Options not given are `None`; what `None` means (no limit, the
/// recorder's default) is up to whoever starts the recording. Values are
/// parsed but not range-checked: `RecordingConfig` validates and clamps.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StartOptions {
    /// `name=TEXT`: the recording's name.
    pub name: Option<String>,
    /// `filename=PATH`: the `.jfr` file written when the recording stops
    /// (or the program exits), as written: `%p` and `%t` are expanded when
    /// the recording is set up (`process::automatic::config_from_options`).
    pub filename: Option<PathBuf>,
    /// `duration=TIME`: stop after this long. `0` (the JDK's "forever")
    /// gives `None`.
    pub duration: Option<Duration>,
    /// `delay=TIME`: start this long after start-up. `0` gives `None`.
    pub delay: Option<Duration>,
    /// `maxage=TIME`: keep chunks on disk at most this old. `0` (the JDK's
    /// "no limit") gives `None`.
    pub max_age: Option<Duration>,
    /// `maxsize=SIZE`: keep at most this many bytes of chunks on disk. `0`
    /// (the JDK's "no limit") gives `None`.
    pub max_size: Option<u64>,
    /// `maxchunksize=SIZE`: rotate to a new chunk at about this many bytes
    /// (flightrec-specific; the JDK has it in `-XX:FlightRecorderOptions`).
    pub max_chunk_size: Option<u64>,
    /// `maxchunkage=TIME`: rotate to a new chunk at least this often
    /// (flightrec-specific).
    pub max_chunk_age: Option<Duration>,
    /// `flush-interval=TIME`: how often buffered events are written out.
    pub flush_interval: Option<Duration>,
    /// `repository=DIR`: where chunks are kept while recording.
    pub repository: Option<PathBuf>,
    /// `preserve-repository=BOOL`: keep the repository's chunks after the
    /// recording is written (the JDK's `-XX:FlightRecorderOptions` name).
    pub preserve_repository: Option<bool>,
    /// `disk=BOOL`: keep chunks in the repository (`true`) or only in memory.
    pub disk: Option<bool>,
    /// `dumponexit=BOOL`: write `filename` when the program exits.
    pub dump_on_exit: Option<bool>,
    /// `signal=NAME|NUMBER`: the sampling signal (see
    /// [`crate::sampler::config::parse_signal`]).
    pub signal: Option<i32>,
    /// `sample-own-threads=BOOL`: sample flightrec's own threads too (see
    /// [`crate::sampler::set_sample_own_threads`]).
    pub sample_own_threads: Option<bool>,
    /// `children=BOOL`: whether a descendant that inherited `FLIGHTREC`
    /// records too (see `crate::process::exec_child`); `None` is `false`.
    pub children: Option<bool>,
    /// `report=PATH`: an existing file the recorder appends its report
    /// lines to (see `crate::process::report`).
    pub report: Option<PathBuf>,
    /// `attach=true|false|lazy`: answer the JDK's `jcmd` on the HotSpot
    /// attach socket, from the start or (`lazy`) from the first `jcmd`'s
    /// SIGQUIT (see [`crate::attach`]).
    pub attach: Option<crate::config::builder::Attach>,
    /// `warn-stale=BOOL`: name other, exited processes' leftover
    /// repositories on stderr when a recording starts (see
    /// [`crate::repository::set_warn_stale`]).
    pub warn_stale: Option<bool>,
    /// `pyroscope=URL` and its `pyroscope.*` options: push each period's
    /// chunk to Grafana Pyroscope (feature `pyroscope`).
    #[cfg(feature = "pyroscope")]
    pub pyroscope: Option<crate::pyroscope::config::PyroscopeConfig>,
    /// The `settings=` sets layered in order (the built-in `default` if none
    /// is given), then every `event#setting=value` in order; later wins.
    pub settings: Settings,
}

/// A start-up key; [`KEYS`] lists their spellings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Filename,
    Duration,
    Delay,
    Name,
    Settings,
    Disk,
    DumpOnExit,
    MaxAge,
    MaxSize,
    MaxChunkSize,
    MaxChunkAge,
    FlushInterval,
    Repository,
    PreserveRepository,
    Signal,
    SampleOwnThreads,
    Children,
    Report,
    MethodTiming,
    MethodTrace,
    Attach,
    WarnStale,
    Pyroscope,
    PyroscopeApp,
    PyroscopePeriod,
    PyroscopeAuthEnv,
}

impl Key {
    fn from_name(name: &str) -> Option<Key> {
        Some(match name {
            "filename" => Key::Filename,
            "duration" => Key::Duration,
            "delay" => Key::Delay,
            "name" => Key::Name,
            "settings" => Key::Settings,
            "disk" => Key::Disk,
            "dumponexit" => Key::DumpOnExit,
            "maxage" => Key::MaxAge,
            "maxsize" => Key::MaxSize,
            "maxchunksize" => Key::MaxChunkSize,
            "maxchunkage" => Key::MaxChunkAge,
            "flush-interval" => Key::FlushInterval,
            "repository" => Key::Repository,
            "preserve-repository" => Key::PreserveRepository,
            "signal" => Key::Signal,
            "sample-own-threads" => Key::SampleOwnThreads,
            "children" => Key::Children,
            "report" => Key::Report,
            "method-timing" => Key::MethodTiming,
            "method-trace" => Key::MethodTrace,
            "attach" => Key::Attach,
            "warn-stale" => Key::WarnStale,
            "pyroscope" => Key::Pyroscope,
            "pyroscope.app" => Key::PyroscopeApp,
            "pyroscope.period" => Key::PyroscopePeriod,
            "pyroscope.auth-env" => Key::PyroscopeAuthEnv,
            _ => return None,
        })
    }
}

/// Parses an option string such as
/// `filename=app.jfr,duration=30s,settings=profile,com.example.Request#threshold=1ms`.
///
/// Settings files named by `settings=` are read here. An empty string gives
/// no options and the `default` settings; a string of only blanks and
/// commas (`,,,`) is an error ([`OptionError::NoOptions`]): it was meant to
/// say something. See the [module docs](super) for
/// the grammar.
pub fn parse(text: &str) -> Result<StartOptions, OptionError> {
    let mut o = StartOptions {
        name: None,
        filename: None,
        duration: None,
        delay: None,
        max_age: None,
        max_size: None,
        max_chunk_size: None,
        max_chunk_age: None,
        flush_interval: None,
        repository: None,
        preserve_repository: None,
        disk: None,
        dump_on_exit: None,
        signal: None,
        sample_own_threads: None,
        children: None,
        report: None,
        attach: None,
        warn_stale: None,
        #[cfg(feature = "pyroscope")]
        pyroscope: None,
        settings: Settings::new(),
    };
    if !text.trim().is_empty() && text.split(',').all(|item| item.trim().is_empty()) {
        return Err(OptionError::NoOptions);
    }
    let mut given: Vec<Key> = Vec::new();
    let mut sets: Option<Settings> = None;
    let mut overrides = Settings::new();
    let mut filters: Vec<(&str, &str, &str)> = Vec::new();
    let mut upload = super::pyroscope::PyroscopeKeys::default();
    for item in super::pyroscope::split_items(text) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((name, value)) = item.split_once('=') else {
            return Err(OptionError::MissingEquals {
                option: item.to_owned(),
            });
        };
        let (name, value) = (name.trim(), value.trim());
        if name.contains('#') {
            event_setting(&mut overrides, name, value)?;
            continue;
        }
        let Some(key) = Key::from_name(name) else {
            return Err(OptionError::UnknownKey {
                key: name.to_owned(),
                suggestion: suggest(name, KEYS),
            });
        };
        if value.is_empty() {
            return Err(OptionError::EmptyValue {
                key: name.to_owned(),
            });
        }
        if key != Key::Settings {
            if given.contains(&key) {
                return Err(OptionError::DuplicateKey {
                    key: name.to_owned(),
                });
            }
            given.push(key);
        }
        let nonzero = |d: Duration| Some(d).filter(|d| !d.is_zero());
        match key {
            Key::Filename => o.filename = Some(value.into()),
            Key::Duration => o.duration = nonzero(time(name, value)?),
            Key::Delay => o.delay = nonzero(time(name, value)?),
            Key::Name => o.name = Some(value.to_owned()),
            Key::Settings => {
                let set = source::load(value)?;
                match &mut sets {
                    Some(base) => source::layer(base, &set),
                    None => sets = Some(set),
                }
            }
            Key::Disk => o.disk = Some(boolean(name, value)?),
            Key::DumpOnExit => o.dump_on_exit = Some(boolean(name, value)?),
            Key::MaxAge => o.max_age = nonzero(time(name, value)?),
            Key::MaxSize => o.max_size = Some(size(name, value)?).filter(|&n| n != 0),
            Key::MaxChunkSize => {
                let n = size(name, value)?;
                if n < crate::config::builder::MIN_CHUNK_SIZE {
                    return Err(out_of_range(name, value, "must be at least 64k"));
                }
                o.max_chunk_size = Some(n);
            }
            Key::MaxChunkAge => {
                o.max_chunk_age = nonzero(time(name, value)?);
                if o.max_chunk_age
                    .is_some_and(|a| a < Duration::from_millis(1))
                {
                    return Err(out_of_range(
                        name,
                        value,
                        "must be 0 (no limit) or at least 1 ms",
                    ));
                }
            }
            Key::FlushInterval => {
                let d = time(name, value)?;
                if !(Duration::from_millis(10)..=Duration::from_secs(3600)).contains(&d) {
                    return Err(out_of_range(name, value, "must be 10 ms ..= 1 h"));
                }
                o.flush_interval = Some(d);
            }
            Key::Signal => {
                o.signal = Some(
                    crate::sampler::config::parse_signal(value).map_err(|reason| {
                        OptionError::BadSignal {
                            key: name.to_owned(),
                            value: value.to_owned(),
                            reason,
                        }
                    })?,
                );
            }
            Key::SampleOwnThreads => o.sample_own_threads = Some(boolean(name, value)?),
            Key::Children => o.children = Some(boolean(name, value)?),
            Key::Report => o.report = Some(value.into()),
            Key::Repository => o.repository = Some(value.into()),
            Key::PreserveRepository => o.preserve_repository = Some(boolean(name, value)?),
            Key::MethodTiming => filters.push((name, "jdk.MethodTiming", value)),
            Key::MethodTrace => filters.push((name, "jdk.MethodTrace", value)),
            Key::Attach => o.attach = Some(attach_mode(name, value)?),
            Key::WarnStale => o.warn_stale = Some(boolean(name, value)?),
            Key::Pyroscope => upload.url = Some((name, value)),
            Key::PyroscopeApp => upload.app = Some((name, value)),
            Key::PyroscopePeriod => upload.period = Some((name, value)),
            Key::PyroscopeAuthEnv => upload.auth_env = Some((name, value)),
        }
    }
    #[cfg(feature = "pyroscope")]
    {
        o.pyroscope = upload.build()?;
    }
    #[cfg(not(feature = "pyroscope"))]
    upload.build()?;
    o.settings = match sets {
        Some(s) => s,
        None => source::builtin("default", DEFAULT_SET)?,
    };
    source::layer(&mut o.settings, &overrides);
    // JEP 520's shorthands: joined with the event settings' filters.
    for (key, event, value) in filters {
        o.settings
            .add_method_filter(event, value)
            .map_err(|e| match e {
                crate::config::settings::SettingError::InvalidFilter { part, reason, .. } => {
                    OptionError::BadFilter {
                        key: key.to_owned(),
                        value: value.to_owned(),
                        part,
                        reason,
                    }
                }
                _ => OptionError::EmptyValue {
                    key: key.to_owned(),
                },
            })?;
    }
    Ok(o)
}

/// `attach=`: `true`, `false` or `lazy`.
fn attach_mode(key: &str, value: &str) -> Result<crate::config::builder::Attach, OptionError> {
    use crate::config::builder::Attach;
    match value {
        "true" => Ok(Attach::Listen),
        "false" => Ok(Attach::Off),
        "lazy" => Ok(Attach::OnSigquit),
        _ => Err(out_of_range(
            key,
            value,
            "expected true, false or lazy (listen from the first jcmd's SIGQUIT)",
        )),
    }
}

/// A value that parses but is outside the option's range.
fn out_of_range(key: &str, value: &str, reason: &'static str) -> OptionError {
    OptionError::OutOfRange {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

/// Parses `$FLIGHTREC`: `Ok(None)` when it is unset, empty or blank, or
/// when the process runs with elevated privileges (see `env_allowed`).
pub fn from_env() -> Result<Option<StartOptions>, OptionError> {
    from_env_value(std::env::var_os(ENV_VAR), at_secure())
}

/// [`from_env`] on the variable's value, for a process that is (or is not)
/// in secure mode: in secure mode the value is not even parsed (it could
/// name a settings file to read).
fn from_env_value(
    value: Option<OsString>,
    at_secure: bool,
) -> Result<Option<StartOptions>, OptionError> {
    if value.is_some() && !env_allowed(at_secure) {
        return Ok(None);
    }
    from_var(value)
}

/// Whether the kernel started this process in secure mode (`AT_SECURE`:
/// setuid or setgid, or file capabilities).
fn at_secure() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getauxval only reads the auxiliary vector the kernel
        // gave the process; an absent entry reads as 0.
        unsafe { libc::getauxval(libc::AT_SECURE) != 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether `FLIGHTREC` may be read. In a secure-mode process (`at_secure`:
/// setuid/setgid) it is not: the variable comes from a less privileged
/// user and names files the process would write with its privileges. Says
/// so on stderr in one line.
pub(crate) fn env_allowed(at_secure: bool) -> bool {
    if at_secure {
        eprintln!("flightrec: {ENV_VAR} ignored: the process runs setuid/setgid (AT_SECURE)");
    }
    !at_secure
}

/// [`from_env`] on the variable's value.
fn from_var(value: Option<OsString>) -> Result<Option<StartOptions>, OptionError> {
    let Some(value) = value else { return Ok(None) };
    let value = value.into_string().map_err(|_| OptionError::NotUnicode)?;
    if value.trim().is_empty() {
        return Ok(None);
    }
    parse(&value).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::{Period, Throttle};
    use std::path::Path;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A fresh directory for one test's files.
    fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("flightrec-options-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn err(text: &str) -> OptionError {
        parse(text).expect_err(text)
    }

    #[test]
    fn every_key_is_parsed() {
        let o = parse(
            "filename=/tmp/app.jfr, duration=30s ,delay=2 m,name=my app,disk=true,\
             dumponexit=false,maxage=1d,maxsize=100M,maxchunksize=12 m,maxchunkage=1h,\
             flush-interval=500ms,repository=/var/tmp/repo,preserve-repository=true",
        )
        .unwrap();
        assert_eq!(o.filename.as_deref(), Some(Path::new("/tmp/app.jfr")));
        assert_eq!(o.duration, Some(Duration::from_secs(30)));
        assert_eq!(o.delay, Some(Duration::from_secs(120)));
        assert_eq!(o.name.as_deref(), Some("my app"));
        assert_eq!((o.disk, o.dump_on_exit), (Some(true), Some(false)));
        assert_eq!(o.max_age, Some(Duration::from_secs(86400)));
        assert_eq!(o.max_size, Some(100 << 20));
        assert_eq!(o.max_chunk_size, Some(12 << 20));
        assert_eq!(o.max_chunk_age, Some(Duration::from_secs(3600)));
        assert_eq!(o.flush_interval, Some(ms(500)));
        assert_eq!(o.repository.as_deref(), Some(Path::new("/var/tmp/repo")));
        assert_eq!(o.preserve_repository, Some(true));
        assert_eq!(o.sample_own_threads, None);
        let own = parse("sample-own-threads=true").unwrap();
        assert_eq!(own.sample_own_threads, Some(true));
        assert!(parse("sample-own-threads=yes").is_err());
        let tree = parse("children=true,report=/r/report").unwrap();
        assert_eq!(tree.children, Some(true));
        assert_eq!(
            tree.report.as_deref(),
            Some(std::path::Path::new("/r/report"))
        );
        assert_eq!(parse("").unwrap().children, None);
        assert!(parse("children=all").is_err());
        assert_eq!(o.settings, parse("settings=default").unwrap().settings);
    }

    #[test]
    fn attach_is_true_false_or_lazy() {
        use crate::config::builder::Attach;
        let mode = |v: &str| parse(&format!("attach={v}")).unwrap().attach;
        assert_eq!(mode("true"), Some(Attach::Listen));
        assert_eq!(mode("false"), Some(Attach::Off));
        assert_eq!(mode("lazy"), Some(Attach::OnSigquit));
        assert_eq!(parse("name=x").unwrap().attach, None);
        assert_eq!(
            err("attach=yes").to_string(),
            "FLIGHTREC: option `attach=yes`: expected true, false or lazy (listen from the \
             first jcmd's SIGQUIT)"
        );
    }

    #[test]
    fn warn_stale_is_a_boolean_off_unless_given() {
        assert_eq!(parse("name=x").unwrap().warn_stale, None);
        assert_eq!(parse("warn-stale=true").unwrap().warn_stale, Some(true));
        assert_eq!(parse("warn-stale=false").unwrap().warn_stale, Some(false));
        assert_eq!(
            err("warn-stale=yes").to_string(),
            "FLIGHTREC: option `warn-stale=yes`: `yes` is not a boolean (expected true or false)"
        );
        assert!(matches!(
            err("warn-stale=true,warn-stale=false"),
            OptionError::DuplicateKey { .. }
        ));
    }

    #[test]
    fn every_listed_key_has_a_meaning() {
        for k in KEYS {
            assert!(Key::from_name(k).is_some(), "{k}");
        }
    }

    #[test]
    fn empty_input_and_zero_limits_give_none() {
        let o = parse("").unwrap();
        assert!(matches!(parse(" , ,"), Err(OptionError::NoOptions)));
        assert_eq!(
            err(",,,").to_string(),
            "FLIGHTREC: the option string holds no option (only commas and blanks); \
             unset FLIGHTREC to record nothing"
        );
        assert_eq!((o.filename, o.duration, o.max_size), (None, None, None));
        let o = parse("duration=0,delay=0 s,maxage=0,maxsize=0,maxchunkage=0").unwrap();
        assert_eq!(
            (o.duration, o.delay, o.max_age, o.max_size),
            (None, None, None, None)
        );
        assert_eq!(o.max_chunk_age, None);
    }

    #[test]
    fn default_set_applies_when_no_settings_are_named() {
        let o = parse("filename=a.jfr").unwrap();
        let cpu = o.settings.get("jdk.CPUTimeSample").unwrap();
        assert_eq!(cpu.enabled, Some(false));
        assert_eq!(cpu.throttle, Some(Throttle::Interval(ms(20))));
    }

    #[test]
    fn profile_enables_cpu_sampling_and_none_is_empty() {
        let o = parse("settings=profile").unwrap();
        let cpu = o.settings.get("jdk.CPUTimeSample").unwrap();
        assert_eq!(cpu.enabled, Some(true));
        assert_eq!(cpu.stack_trace, Some(true));
        assert_eq!(cpu.throttle, Some(Throttle::Interval(ms(10))));
        assert_eq!(parse("settings=none").unwrap().settings, Settings::new());
    }

    #[test]
    fn overrides_apply_over_the_sets_in_order_wherever_they_are_written() {
        let o = parse(
            "jdk.CPUTimeSample#throttle=500/s,settings=profile,\
             com.example.Request#threshold=1ms,+com.example.Request#threshold = 2 ms,\
             jdk.CPUTimeSample#enabled=false,com.example.Request#stackTrace=true,\
             jdk.ExecutionSample#period=beginChunk",
        )
        .unwrap();
        let cpu = o.settings.get("jdk.CPUTimeSample").unwrap();
        assert_eq!(cpu.enabled, Some(false));
        assert_eq!(
            cpu.throttle,
            Some(Throttle::Rate {
                count: 500,
                per: Duration::from_secs(1)
            })
        );
        assert_eq!(cpu.stack_trace, Some(true), "kept from profile");
        let req = o.settings.get("com.example.Request").unwrap();
        assert_eq!((req.threshold, req.stack_trace), (Some(ms(2)), Some(true)));
        assert_eq!(
            o.settings.get("jdk.ExecutionSample").unwrap().period,
            Some(Period::BeginChunk)
        );
    }

    #[test]
    fn throttles_and_periods_take_every_form() {
        let get = |text: &str| {
            let o = parse(&format!("settings=none,a.B#{text}")).unwrap();
            o.settings.get("a.B").cloned().unwrap()
        };
        let rate = |count, per| Some(Throttle::Rate { count, per });
        assert_eq!(get("throttle=off").throttle, Some(Throttle::Off));
        assert_eq!(get("throttle=10/ms").throttle, rate(10, ms(1)));
        assert_eq!(
            get("throttle=7 / min").throttle,
            rate(7, Duration::from_secs(60))
        );
        assert_eq!(
            get("throttle=0/s").throttle,
            rate(0, Duration::from_secs(1))
        );
        assert_eq!(
            get("throttle=1/h").throttle,
            rate(1, Duration::from_secs(3600))
        );
        assert_eq!(
            get("throttle=20 ms").throttle,
            Some(Throttle::Interval(ms(20)))
        );
        assert_eq!(get("period=1s").period, Some(Period::Interval(ms(1000))));
        assert_eq!(get("period=everyChunk").period, Some(Period::EveryChunk));
        assert_eq!(get("period=endChunk").period, Some(Period::EndChunk));
        for bad in [
            "/s",
            "x/s",
            "+5/s",
            "5/",
            "5/w",
            "5",
            "fast",
            "99999999999999999999/s",
        ] {
            assert!(
                matches!(
                    err(&format!("a.B#throttle={bad}")),
                    OptionError::BadRate { .. }
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn settings_files_in_both_formats_layer_in_order() {
        let dir = scratch("files");
        let lines = dir.join("app.settings");
        std::fs::write(
            &lines,
            "# app\ncom.example.Request#threshold=5 ms\ncom.example.Request#enabled=true\n",
        )
        .unwrap();
        let jfc = dir.join("app.jfc");
        std::fs::write(
            &jfc,
            "\u{feff}<?xml version=\"1.0\"?>\n<configuration version=\"2.0\">\n\
             <event name=\"com.example.Request\"><setting name=\"threshold\">9 ms</setting>\
             </event></configuration>\n",
        )
        .unwrap();
        let o = parse(&format!(
            "settings={},settings={}",
            lines.display(),
            jfc.display()
        ))
        .unwrap();
        let req = o.settings.get("com.example.Request").unwrap();
        assert_eq!((req.enabled, req.threshold), (Some(true), Some(ms(9))));
        assert!(
            o.settings.get("jdk.CPUTimeSample").is_none(),
            "a file replaces default"
        );
        let o = parse(&format!("settings=profile,settings={}", lines.display())).unwrap();
        assert_eq!(
            o.settings.get("jdk.CPUTimeSample").unwrap().enabled,
            Some(true)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn errors_name_the_option_and_why() {
        let cases: Vec<(OptionError, &str)> = vec![
            (
                err("maxsize=12q"),
                "FLIGHTREC: option `maxsize=12q`: `12q` is not a size (expected e.g. 100M, 1g, \
                 512k or a byte count)",
            ),
            (
                err("dumponexit"),
                "FLIGHTREC: option `dumponexit`: expected `key=value`",
            ),
            (
                err("filename="),
                "FLIGHTREC: option `filename=`: the value is empty",
            ),
            (
                err("duration=1m,duration=2m"),
                "FLIGHTREC: option `duration`: given more than once (only `settings` and event \
                 settings may repeat)",
            ),
            (
                err("duration=soon"),
                "FLIGHTREC: option `duration=soon`: `soon` is not a time (expected e.g. 0, 10ms, \
                 1s, 5m, 2h, 1d or `20 ms`)",
            ),
            (
                err("disk=yes"),
                "FLIGHTREC: option `disk=yes`: `yes` is not a boolean (expected true or false)",
            ),
            (
                err("jdk.CPUTimeSample#throttle=lots"),
                "FLIGHTREC: option `jdk.CPUTimeSample#throttle=lots`: `lots` is not a rate or \
                 interval (expected e.g. 500/s, 10/ms, 10ms or off)",
            ),
            (
                err("jdk.ExecutionSample#period=often"),
                "FLIGHTREC: option `jdk.ExecutionSample#period=often`: `often` is not a period \
                 (expected e.g. 20 ms, 1s, everyChunk, beginChunk or endChunk)",
            ),
            (
                err("jdk.X#stacktrace=true"),
                "FLIGHTREC: option `jdk.X#stacktrace`: unknown event setting `stacktrace`; did \
                 you mean `stackTrace`? (settings are enabled, threshold, stackTrace, throttle, \
                 period, filter)",
            ),
            (
                err("jdk..X#enabled=true"),
                "FLIGHTREC: option `jdk..X#enabled`: `jdk..X` is not a valid event name \
                 (expected a dotted name such as com.example.Request)",
            ),
            (
                err("settings=no/such/file.jfc"),
                "FLIGHTREC: option `settings=no/such/file.jfc`: `no/such/file.jfc` is neither a \
                 built-in setting set (default, profile, none) nor an existing file",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
        let unknown = err("maxSize=1g").to_string();
        assert!(
            unknown.starts_with(
                "FLIGHTREC: option `maxSize`: unknown option; did you mean `maxsize`? (options \
                 are filename, duration,"
            ),
            "{unknown}"
        );
        assert!(matches!(
            err("colour=red"),
            OptionError::UnknownKey {
                suggestion: None,
                ..
            }
        ));
        let nameless = err("=5").to_string();
        assert!(
            nameless.starts_with("FLIGHTREC: an option has no name before `=` (options are"),
            "{nameless}"
        );
    }

    #[test]
    fn settings_file_errors_name_the_file_and_line() {
        let dir = scratch("bad-files");
        let bad_value = dir.join("bad.settings");
        std::fs::write(&bad_value, "# c\n\njdk.Foo#threshold=fast\n").unwrap();
        let e = err(&format!("settings={}", bad_value.display()));
        assert!(
            matches!(e, OptionError::BadSettingsLine { line: 3, .. }),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "FLIGHTREC: settings file `{}` line 3: `jdk.Foo#threshold=fast`: `fast` is not a \
                 time (expected e.g. 0, 10ms, 1s, 5m, 2h, 1d or `20 ms`)",
                bad_value.display()
            )
        );
        assert!(std::error::Error::source(&e).is_some());

        let not_setting = dir.join("opts.settings");
        std::fs::write(&not_setting, "maxsize=1g\n").unwrap();
        let e = err(&format!("settings={}", not_setting.display()));
        assert!(
            matches!(e, OptionError::SettingsSyntax { line: 1, .. }),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("`maxsize` is not an event setting"),
            "{e}"
        );

        // A directory exists but is no file.
        let e = err(&format!("settings={}", dir.display()));
        assert!(matches!(e, OptionError::SettingsUnreadable { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "FLIGHTREC: option `settings={}`: cannot read the settings file: not a regular \
                 file",
                dir.display()
            )
        );
        assert!(std::error::Error::source(&e).is_some());

        let latin1 = dir.join("latin1.settings");
        std::fs::write(&latin1, b"a.B#enabled=tr\xfce\n").unwrap();
        let e = err(&format!("settings={}", latin1.display()));
        assert!(e.to_string().ends_with("not valid UTF-8"), "{e}");

        let huge = dir.join("huge.settings");
        std::fs::write(&huge, vec![b'#'; (4 << 20) + 1]).unwrap();
        let e = err(&format!("settings={}", huge.display()));
        assert!(e.to_string().ends_with("larger than 4 MiB"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_environment_value_unset_blank_or_not_unicode() {
        assert!(matches!(from_var(None), Ok(None)));
        assert!(matches!(from_env_value(None, true), Ok(None)));
        assert!(matches!(from_var(Some("".into())), Ok(None)));
        assert!(matches!(from_var(Some("  ".into())), Ok(None)));
        let o = from_var(Some("filename=x.jfr".into())).unwrap().unwrap();
        assert_eq!(o.filename.as_deref(), Some(Path::new("x.jfr")));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let e = from_var(Some(OsString::from_vec(b"name=\xff".to_vec()))).unwrap_err();
            assert!(matches!(e, OptionError::NotUnicode));
            assert_eq!(e.to_string(), "FLIGHTREC: the variable is not valid UTF-8");
        }
    }

    mod never_panic {
        use super::*;
        use proptest::prelude::*;

        fn option() -> impl Strategy<Value = String> {
            let key = prop_oneof![
                proptest::sample::select(KEYS).prop_map(str::to_owned),
                "[+]?[a-zA-Z.]{0,8}#[a-zA-Z]{0,10}",
                "\\PC{0,8}",
            ];
            (key, "[=]?", "\\PC{0,12}").prop_map(|(k, eq, v)| format!("{k}{eq}{v}"))
        }

        proptest! {
            #[test]
            fn on_arbitrary_strings(text in "\\PC{0,64}") {
                if let Err(e) = parse(&text) {
                    let _ = e.to_string();
                }
            }

            #[test]
            fn on_option_shaped_strings(items in proptest::collection::vec(option(), 0..6)) {
                if let Err(e) = parse(&items.join(",")) {
                    prop_assert!(e.to_string().starts_with("FLIGHTREC: "));
                }
            }
        }
    }

    #[test]
    fn a_setuid_process_ignores_the_variable() {
        let valid = || Some(OsString::from("filename=/tmp/x.jfr"));
        assert!(env_allowed(false));
        assert!(!env_allowed(true));
        assert!(from_env_value(valid(), false).unwrap().is_some());
        assert!(matches!(from_env_value(valid(), true), Ok(None)));
        // Not parsed at all: a settings file it names is never opened.
        let reads = || Some(OsString::from("settings=/nonexistent/flightrec.settings"));
        assert!(matches!(
            from_env_value(reads(), false),
            Err(OptionError::SettingsNotFound { .. })
        ));
        assert!(matches!(from_env_value(reads(), true), Ok(None)));
    }
}
