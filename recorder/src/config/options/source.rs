//! `settings=`: the built-in setting sets, settings files in flightrec's
//! line format or the JDK's `.jfc` XML, and how sets are layered.
//!
//! # The line format
//!
//! ```text
//! # a comment: the first non-blank character is `#`
//! com.example.Request#threshold=1 ms
//! jdk.CPUTimeSample#throttle=500/s
//! ```
//!
//! One `event#setting=value` per line, blanks around key and value trimmed,
//! blank lines skipped. Unknown settings are errors. The built-in sets
//! (`recorder/settings/*.settings`) are written in it.
//!
//! A file whose first non-blank character is `<` is read as a `.jfc` file
//! instead (see [`super::jfc`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::value::event_setting;
use super::{error::OptionError, jfc};
use crate::config::settings::{Settings, TypeSettings};

/// The built-in set `default` (also used when no `settings=` is given).
pub(super) const DEFAULT_SET: &str = include_str!("../../../settings/default.settings");
/// The built-in set `profile`.
pub(super) const PROFILE_SET: &str = include_str!("../../../settings/profile.settings");

/// Largest settings file read (the JDK's `.jfc` files are about 50 KiB).
const MAX_FILE: u64 = 4 << 20;

/// The settings `settings=value` names: `default`, `profile`, `none` (no
/// settings), or else a file.
pub(super) fn load(value: &str) -> Result<Settings, OptionError> {
    match value {
        "default" => builtin("default", DEFAULT_SET),
        "profile" => builtin("profile", PROFILE_SET),
        "none" => Ok(Settings::new()),
        path => read_file(value, Path::new(path)),
    }
}

/// Parses a built-in set; its errors name it `<built-in NAME>`.
pub(super) fn builtin(name: &str, text: &str) -> Result<Settings, OptionError> {
    parse_lines(text, Path::new(&format!("<built-in {name}>")))
}

/// Reads a settings file, in either format.
fn read_file(value: &str, path: &Path) -> Result<Settings, OptionError> {
    let unreadable = |error| OptionError::SettingsUnreadable {
        path: path.to_owned(),
        error,
    };
    let meta = match path.metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(OptionError::SettingsNotFound {
                value: value.to_owned(),
            });
        }
        Err(e) => return Err(unreadable(e)),
    };
    // Not `/dev/zero`, a FIFO or a directory: those would hang or fail late.
    if !meta.is_file() {
        return Err(unreadable(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(unreadable(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", MAX_FILE >> 20),
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        unreadable(io::Error::new(
            io::ErrorKind::InvalidData,
            "not valid UTF-8",
        ))
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim_start().starts_with('<') {
        jfc::parse(text, path)
    } else {
        parse_lines(text, path)
    }
}

/// Parses the line format.
pub(super) fn parse_lines(text: &str, path: &Path) -> Result<Settings, OptionError> {
    let mut settings = Settings::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let syntax = |reason: String| OptionError::SettingsSyntax {
            path: path.to_owned(),
            line: i + 1,
            reason,
        };
        // The file may not be one the user meant to show (`settings=` of
        // a wrong path): errors quote at most the offending key, and only
        // when it looks like one, never the line.
        let Some((key, value)) = line.split_once('=') else {
            return Err(syntax(
                "not a setting (expected `event#setting=value`)".to_owned(),
            ));
        };
        let key = key.trim();
        if !key.contains('#') {
            let quoted = if key.len() <= 40
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                format!("`{key}` is not an event setting")
            } else {
                "not an event setting".to_owned()
            };
            return Err(syntax(format!(
                "{quoted} (expected `event#setting=value`; start-up options belong in \
                 FLIGHTREC itself)"
            )));
        }
        event_setting(&mut settings, key, value.trim()).map_err(|error| {
            OptionError::BadSettingsLine {
                path: path.to_owned(),
                line: i + 1,
                error: Box::new(error),
            }
        })?;
    }
    Ok(settings)
}

/// Lays `top` over `base`: every setting `top` gives replaces `base`'s.
pub(super) fn layer(base: &mut Settings, top: &Settings) {
    for (event, t) in &top.types {
        let b = base.types.entry(event.clone()).or_default();
        // Destructured so that a new setting cannot be forgotten here.
        let TypeSettings {
            enabled,
            threshold,
            stack_trace,
            throttle,
            period,
        } = t;
        b.enabled = enabled.or(b.enabled);
        b.threshold = threshold.or(b.threshold);
        b.stack_trace = stack_trace.or(b.stack_trace);
        b.throttle = throttle.or(b.throttle);
        b.period = period.or(b.period);
    }
    // Method filters are joined (JEP 520's union), not replaced.
    for (b, t) in base.method_filters.iter_mut().zip(&top.method_filters) {
        match (b.as_mut(), t) {
            (Some(b), Some(t)) => b.union(t),
            (None, Some(t)) => *b = Some(t.clone()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::{Period, Throttle};
    use std::time::Duration;

    #[test]
    fn builtin_sets_parse_and_differ_in_cpu_sampling() {
        let d = builtin("default", DEFAULT_SET).unwrap();
        let p = builtin("profile", PROFILE_SET).unwrap();
        let cpu = |s: &Settings| s.get("jdk.CPUTimeSample").cloned().unwrap();
        assert_eq!(cpu(&d).enabled, Some(false));
        assert_eq!(
            cpu(&d).throttle,
            Some(Throttle::Interval(Duration::from_millis(20)))
        );
        assert_eq!(cpu(&p).enabled, Some(true));
        assert_eq!(cpu(&p).stack_trace, Some(true));
        assert_eq!(
            cpu(&p).throttle,
            Some(Throttle::Interval(Duration::from_millis(10)))
        );
    }

    #[test]
    fn line_format_skips_comments_and_blanks_and_later_lines_win() {
        let s = parse_lines(
            "# comment\n\n  # indented comment\r\njdk.A#enabled = true\r\n\
             jdk.A#enabled=false\njdk.A#period=everyChunk\n",
            Path::new("x"),
        )
        .unwrap();
        let a = s.get("jdk.A").unwrap();
        assert_eq!(a.enabled, Some(false));
        assert_eq!(a.period, Some(Period::EveryChunk));
    }

    #[test]
    fn line_format_errors_carry_the_line_number() {
        let line_of = |text: &str| match parse_lines(text, Path::new("f")) {
            Err(OptionError::SettingsSyntax { line, .. }) => ("syntax", line),
            Err(OptionError::BadSettingsLine { line, .. }) => ("bad", line),
            other => panic!("{other:?}"),
        };
        assert_eq!(line_of("# c\njdk.A#enabled"), ("syntax", 2));
        assert_eq!(line_of("\n\nmaxsize=1g"), ("syntax", 3));
        assert_eq!(
            line_of("jdk.A#enabled=true\njdk.A#enabled=maybe"),
            ("bad", 2)
        );
    }

    #[test]
    fn layering_replaces_only_what_the_top_gives() {
        let mut base = Settings::new();
        base.enable("a.A", false)
            .threshold("a.A", Duration::from_millis(5));
        let mut top = Settings::new();
        top.enable("a.A", true).stack_trace("b.B", true);
        layer(&mut base, &top);
        let a = base.get("a.A").unwrap();
        assert_eq!(
            (a.enabled, a.threshold),
            (Some(true), Some(Duration::from_millis(5)))
        );
        assert_eq!(base.get("b.B").unwrap().stack_trace, Some(true));
    }
}
