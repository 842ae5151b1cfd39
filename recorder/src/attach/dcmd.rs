//! Diagnostic-command lines as HotSpot splits them: `NAME [key[=value] ...]`,
//! blank-separated, a value optionally in `'` or `"` quotes; a key alone is
//! a boolean `true`. Values are checked with the JDK's messages.

use std::time::Duration;

/// One `key[=value]`.
pub(crate) type Arg = (String, Option<String>);

/// Splits `line` into the command and its arguments.
pub(crate) fn parse_line(line: &str) -> Result<(String, Vec<Arg>), String> {
    let line = line.trim();
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    Ok((name.to_owned(), arguments(rest)?))
}

/// The arguments of `text`.
fn arguments(text: &str) -> Result<Vec<Arg>, String> {
    let mut args = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(args);
        }
        let key = token(&mut chars, true)?;
        let value = match chars.next_if_eq(&'=') {
            Some(_) => Some(token(&mut chars, false)?),
            None => None,
        };
        if key.is_empty() {
            return Err("Format error in diagnostic command arguments".to_owned());
        }
        args.push((key, value));
    }
}

/// A possibly quoted word ending at a blank (or at `=` for a key).
fn token(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    key: bool,
) -> Result<String, String> {
    let mut out = String::new();
    if let Some(q) = chars.next_if(|&c| c == '\'' || c == '"') {
        loop {
            match chars.next() {
                Some(c) if c == q => break,
                Some(c) => out.push(c),
                None => return Err("Format error in diagnostic command arguments".to_owned()),
            }
        }
        return Ok(out);
    }
    while let Some(c) = chars.next_if(|&c| !(c.is_whitespace() || key && c == '=')) {
        out.push(c);
    }
    Ok(out)
}

/// The JDK's message for an argument the command does not have.
pub(crate) fn unknown(key: &str) -> String {
    format!("Unknown argument '{key}' in diagnostic command.")
}

/// Refuses a key the command does not have, with the JDK's message.
pub(crate) fn check_unknown(args: &[Arg], known: &[&str]) -> Result<(), String> {
    for (k, _) in args {
        if !known.contains(&k.as_str()) {
            return Err(unknown(k));
        }
    }
    Ok(())
}

/// The value of `key`, if given.
pub(crate) fn get<'a>(args: &'a [Arg], key: &str) -> Option<&'a str> {
    args.iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_deref().unwrap_or(""))
}

/// A BOOLEAN argument: `true`, `false`, or the key alone.
pub(crate) fn boolean(args: &[Arg], key: &str) -> Result<Option<bool>, String> {
    match args.iter().rev().find(|(k, _)| k == key) {
        None => Ok(None),
        Some((_, None)) => Ok(Some(true)),
        Some((_, Some(v))) => match v.as_str() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(format!(
                "Boolean parsing error in command argument '{key}'. Could not parse: {v}."
            )),
        },
    }
}

/// A NANOTIME argument (`30s`, `5m`, `0`).
pub(crate) fn time(args: &[Arg], key: &str) -> Result<Option<Duration>, String> {
    get(args, key)
        .map(|v| parse_time(v).ok_or_else(|| time_error(v)))
        .transpose()
}

fn time_error(v: &str) -> String {
    if v.is_empty() {
        "Integer parsing error nanotime value: syntax error, value is null".to_owned()
    } else if v.bytes().all(|b| b.is_ascii_digit()) && v != "0" {
        "Integer parsing error nanotime value: unit required".to_owned()
    } else {
        "Integer parsing error nanotime value: syntax error".to_owned()
    }
}

/// `30s`, `10 ms`, `5m`, `2h`, `1d`, `0`.
pub(crate) fn parse_time(v: &str) -> Option<Duration> {
    crate::config::settings::parse_duration("time", v).ok()
}

/// A MEMORY SIZE argument (`250m`, `1g`, `4096`).
pub(crate) fn size(args: &[Arg], key: &str) -> Result<Option<u64>, String> {
    get(args, key)
        .map(|v| parse_size(v).ok_or_else(|| size_error(v)))
        .transpose()
}

fn size_error(v: &str) -> String {
    if v.starts_with('-') {
        "Parsing error memory size value: negative values not allowed".to_owned()
    } else {
        "Parsing error memory size value: invalid value".to_owned()
    }
}

/// Digits with an optional `k`, `m` or `g` (either case).
pub(crate) fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, shift) = match v.as_bytes().last()? {
        b'k' | b'K' => (&v[..v.len() - 1], 10),
        b'm' | b'M' => (&v[..v.len() - 1], 20),
        b'g' | b'G' => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// A time span as the JDK prints it: `30s`, `5m`, `1h`, `250ms`.
pub(crate) fn timespan(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_nanos() != 0 || s == 0 {
        return format!("{}ms", d.as_millis());
    }
    match s {
        _ if s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

/// Bytes as the JDK prints them: `512 bytes`, `307.5 kB`, `1.2 MB`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<Arg> {
        parse_line(text).unwrap().1
    }

    #[test]
    fn lines_split_as_hotspot_splits_them() {
        let (name, a) = parse_line("  JFR.start name='my rec' disk=false verbose  ").unwrap();
        assert_eq!(name, "JFR.start");
        assert_eq!(
            a,
            [
                ("name".to_owned(), Some("my rec".to_owned())),
                ("disk".to_owned(), Some("false".to_owned())),
                ("verbose".to_owned(), None),
            ]
        );
        assert_eq!(
            args("JFR.dump filename=\"/tmp/a b.jfr\"")[0].1.as_deref(),
            Some("/tmp/a b.jfr")
        );
        assert!(parse_line("JFR.dump filename='open").is_err());
        assert!(parse_line("JFR.dump =x").is_err());
        assert_eq!(parse_line("help").unwrap(), ("help".to_owned(), vec![]));
    }

    #[test]
    fn values_are_checked_with_the_jdks_messages() {
        let a = args("x verbose disk=false maxage=30s maxsize=250m bad=xx n=10");
        assert_eq!(boolean(&a, "verbose"), Ok(Some(true)));
        assert_eq!(boolean(&a, "disk"), Ok(Some(false)));
        assert!(
            boolean(&a, "bad")
                .unwrap_err()
                .contains("Boolean parsing error")
        );
        assert_eq!(time(&a, "maxage"), Ok(Some(Duration::from_secs(30))));
        assert_eq!(
            time(&a, "n").unwrap_err(),
            "Integer parsing error nanotime value: unit required"
        );
        assert_eq!(size(&a, "maxsize"), Ok(Some(250 << 20)));
        assert!(size(&a, "bad").is_err());
        assert_eq!(parse_size("99999999999999999999g"), None);
        assert_eq!(
            check_unknown(&a, &["verbose"]).unwrap_err(),
            "Unknown argument 'disk' in diagnostic command."
        );
    }

    #[test]
    fn spans_and_sizes_print_as_the_jdk_prints_them() {
        assert_eq!(timespan(Duration::from_secs(30)), "30s");
        assert_eq!(timespan(Duration::from_secs(300)), "5m");
        assert_eq!(timespan(Duration::from_secs(7200)), "2h");
        assert_eq!(timespan(Duration::from_millis(1500)), "1500ms");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(314_880), "307.5 kB");
        assert_eq!(bytes(250 << 20), "250.0 MB");
    }
}
