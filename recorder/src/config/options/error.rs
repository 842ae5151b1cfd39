//! [`OptionError`]: what is wrong with a `FLIGHTREC` option, and which one.
//!
//! Every message starts with `FLIGHTREC: `, then names the option as written
//! (or the settings file and line it came from), then says why it is wrong
//! and what was expected:
//!
//! ```text
//! FLIGHTREC: option `maxsize=12q`: `12q` is not a size (expected e.g. 100M, 1g, 512k or a byte count)
//! FLIGHTREC: settings file `app.settings` line 3: `jdk.Foo#threshold=fast`: `fast` is not a time (…)
//! ```

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;

use super::value::{EVENT_SETTINGS, KEYS};

/// A `FLIGHTREC` option string, or a settings file it names, that cannot be
/// used. Each variant names the offending option and says why.
#[derive(Debug)]
#[non_exhaustive]
pub enum OptionError {
    /// `FLIGHTREC` is set but is not valid UTF-8.
    NotUnicode,
    /// An option without `=` (`dumponexit` instead of `dumponexit=true`).
    MissingEquals {
        /// The option as written.
        option: String,
    },
    /// An option with nothing after `=`.
    EmptyValue {
        /// The key before `=`.
        key: String,
    },
    /// A key that is not an option (and has no `#`, so is no event setting).
    /// An empty `key` means the option started with `=`.
    UnknownKey {
        /// The key as written.
        key: String,
        /// A known key it is close to.
        suggestion: Option<&'static str>,
    },
    /// A key given twice. Only `settings=` and event settings may repeat.
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// A value that is not a time (`duration`, `threshold`, ...).
    BadTime {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A value that is not a size (`maxsize`, `maxchunksize`).
    BadSize {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A value that is not `true` or `false`.
    BadBool {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A `throttle` that is neither a rate, an interval nor `off`.
    BadRate {
        /// The key (`event#throttle`).
        key: String,
        /// The value as written.
        value: String,
    },
    /// A `period` that is neither a time nor a chunk keyword.
    BadPeriod {
        /// The key (`event#period`).
        key: String,
        /// The value as written.
        value: String,
    },
    /// `event#setting` where `setting` is not one of `enabled`, `threshold`,
    /// `stackTrace`, `throttle`, `period`.
    UnknownEventSetting {
        /// The key (`event#setting`).
        key: String,
        /// The setting part.
        setting: String,
        /// A known setting it is close to.
        suggestion: Option<&'static str>,
    },
    /// `event#setting` where `event` is not a dotted identifier.
    InvalidEventName {
        /// The key (`event#setting`).
        key: String,
        /// The event part.
        event: String,
    },
    /// The option string is not empty but holds no option (`,,,`).
    NoOptions,
    /// A malformed method filter (`method-timing=`, `method-trace=`,
    /// `jdk.MethodTiming#filter=`, `jdk.MethodTrace#filter=`).
    BadFilter {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The malformed part.
        part: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value that parses but is out of the option's range
    /// (`maxchunksize=1k`, `flush-interval=1ms`).
    OutOfRange {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// The accepted range.
        reason: &'static str,
    },
    /// A `signal=` that is not a signal, or one sampling must not use.
    BadSignal {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// Why.
        reason: String,
    },
    /// A `pyroscope*` option that cannot be used (a malformed URL or
    /// application name, a period below 100 ms, no `pyroscope=` for the
    /// others, or a build without the `pyroscope` feature).
    Pyroscope {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// Why.
        reason: String,
    },
    /// `settings=` names neither a built-in set nor an existing file.
    SettingsNotFound {
        /// The value of `settings=`.
        value: String,
    },
    /// A settings file exists but cannot be read (or is not a regular file,
    /// is too large, is not UTF-8).
    SettingsUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// A setting in a settings file that cannot be used; `error` says why
    /// (one of the value, event-name, setting-name or empty-value variants).
    BadSettingsLine {
        /// The file (`<built-in NAME>` for a built-in set).
        path: PathBuf,
        /// 1-based line of the setting.
        line: usize,
        /// What is wrong with it.
        error: Box<OptionError>,
    },
    /// A line of a settings file that is not a setting at all, or XML that
    /// is not a well-formed `.jfc` file.
    SettingsSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

const TIME_FORMS: &str = "0, 10ms, 1s, 5m, 2h, 1d or `20 ms`";

impl OptionError {
    /// The option as written (`key=value`), or `None` for errors about the
    /// variable or a settings file as a whole.
    fn subject(&self) -> Option<String> {
        match self {
            Self::MissingEquals { option } => Some(option.clone()),
            Self::EmptyValue { key } => Some(format!("{key}=")),
            Self::UnknownKey { key, .. } if key.is_empty() => None,
            Self::UnknownKey { key, .. } | Self::DuplicateKey { key } => Some(key.clone()),
            Self::BadTime { key, value }
            | Self::BadSize { key, value }
            | Self::BadBool { key, value }
            | Self::BadRate { key, value }
            | Self::BadPeriod { key, value }
            | Self::OutOfRange { key, value, .. }
            | Self::BadSignal { key, value, .. }
            | Self::Pyroscope { key, value, .. }
            | Self::BadFilter { key, value, .. } => Some(format!("{key}={value}")),
            Self::UnknownEventSetting { key, .. } | Self::InvalidEventName { key, .. } => {
                Some(key.clone())
            }
            Self::SettingsNotFound { value } => Some(format!("settings={value}")),
            Self::SettingsUnreadable { path, .. } => Some(format!("settings={}", path.display())),
            Self::NotUnicode
            | Self::NoOptions
            | Self::BadSettingsLine { .. }
            | Self::SettingsSyntax { .. } => None,
        }
    }

    /// Why the subject is wrong.
    fn reason(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUnicode => f.write_str("the variable is not valid UTF-8"),
            Self::NoOptions => f.write_str(
                "the option string holds no option (only commas and blanks); unset FLIGHTREC \
                 to record nothing",
            ),
            Self::OutOfRange { reason, .. } => f.write_str(reason),
            Self::BadSignal { reason, .. } | Self::Pyroscope { reason, .. } => f.write_str(reason),
            Self::BadFilter { part, reason, .. } => {
                write!(f, "malformed filter part `{part}`: {reason}")
            }
            Self::MissingEquals { .. } => f.write_str("expected `key=value`"),
            Self::EmptyValue { .. } => f.write_str("the value is empty"),
            Self::UnknownKey { key, suggestion } => {
                f.write_str(if key.is_empty() {
                    "an option has no name before `=`"
                } else {
                    "unknown option"
                })?;
                if let Some(s) = suggestion {
                    write!(f, "; did you mean `{s}`?")?;
                }
                write!(
                    f,
                    " (options are {}; event settings are written EVENT#SETTING=VALUE)",
                    KEYS.join(", ")
                )
            }
            Self::DuplicateKey { .. } => {
                f.write_str("given more than once (only `settings` and event settings may repeat)")
            }
            Self::BadTime { value, .. } => {
                write!(f, "`{value}` is not a time (expected e.g. {TIME_FORMS})")
            }
            Self::BadSize { value, .. } => write!(
                f,
                "`{value}` is not a size (expected e.g. 100M, 1g, 512k or a byte count)"
            ),
            Self::BadBool { value, .. } => {
                write!(f, "`{value}` is not a boolean (expected true or false)")
            }
            Self::BadRate { value, .. } => write!(
                f,
                "`{value}` is not a rate or interval (expected e.g. 500/s, 10/ms, 10ms or off)"
            ),
            Self::BadPeriod { value, .. } => write!(
                f,
                "`{value}` is not a period (expected e.g. 20 ms, 1s, everyChunk, beginChunk or endChunk)"
            ),
            Self::UnknownEventSetting {
                setting,
                suggestion,
                ..
            } => {
                write!(f, "unknown event setting `{setting}`")?;
                if let Some(s) = suggestion {
                    write!(f, "; did you mean `{s}`?")?;
                }
                write!(f, " (settings are {})", EVENT_SETTINGS.join(", "))
            }
            Self::InvalidEventName { event, .. } => write!(
                f,
                "`{event}` is not a valid event name (expected a dotted name such as com.example.Request)"
            ),
            Self::SettingsNotFound { value } => write!(
                f,
                "`{value}` is neither a built-in setting set (default, profile, none) nor an existing file"
            ),
            Self::SettingsUnreadable { error, .. } => {
                write!(f, "cannot read the settings file: {error}")
            }
            Self::BadSettingsLine { path, line, error } => {
                write!(f, "settings file `{}` line {line}: ", path.display())?;
                if let Some(subject) = error.subject() {
                    write!(f, "`{subject}`: ")?;
                }
                error.reason(f)
            }
            Self::SettingsSyntax { path, line, reason } => {
                write!(
                    f,
                    "settings file `{}` line {line}: {reason}",
                    path.display()
                )
            }
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FLIGHTREC: ")?;
        if let Some(s) = self.subject() {
            write!(f, "option `{s}`: ")?;
        }
        self.reason(f)
    }
}

impl Error for OptionError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::SettingsUnreadable { error, .. } => Some(error),
            Self::BadSettingsLine { error, .. } => Some(&**error),
            _ => None,
        }
    }
}
