//! The `pyroscope*` start keys: collected while the option string is
//! read, turned into a `PyroscopeConfig` (with the `pyroscope` feature)
//! once it is read (the URL must be known before the rest applies).
//!
//! | key                  | value          | |
//! |----------------------|----------------|-|
//! | `pyroscope`          | URL            | `http://host:4040` (`https://` with feature `pyroscope-tls`) |
//! | `pyroscope.app`      | `NAME{k=v,...}`| application name and static labels; its commas do not end the option |
//! | `pyroscope.period`   | TIME           | cut and upload a chunk this often (default `10s`, at least `100ms`) |
//! | `pyroscope.auth-env` | VAR            | send `$VAR` as the `Authorization` header |
//!
//! Without the `pyroscope` feature these keys are refused, saying so.
//!
//! Invariant: the keys other than `pyroscope` are refused unless
//! `pyroscope` is given too.

#[cfg(feature = "pyroscope")]
use crate::pyroscope::config::PyroscopeConfig;

use super::error::OptionError;

/// The `pyroscope*` options as written: (key, value) of each.
#[derive(Debug, Default)]
pub(super) struct PyroscopeKeys<'a> {
    pub(super) url: Option<(&'a str, &'a str)>,
    pub(super) app: Option<(&'a str, &'a str)>,
    pub(super) period: Option<(&'a str, &'a str)>,
    pub(super) auth_env: Option<(&'a str, &'a str)>,
}

/// The uploader's configuration, which Pyroscope feature-less builds do
/// not have.
#[cfg(feature = "pyroscope")]
pub(super) type Built = Option<PyroscopeConfig>;
#[cfg(not(feature = "pyroscope"))]
pub(super) type Built = ();

fn bad(key: &str, value: &str, reason: String) -> OptionError {
    OptionError::Pyroscope {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

impl PyroscopeKeys<'_> {
    fn given(&self) -> impl Iterator<Item = (&str, &str)> {
        [self.url, self.app, self.period, self.auth_env]
            .into_iter()
            .flatten()
    }

    /// The configuration the keys ask for (`None`: no `pyroscope=`).
    #[cfg(feature = "pyroscope")]
    pub(super) fn build(&self) -> Result<Built, OptionError> {
        let Some((key, url)) = self.url else {
            return match self.given().next() {
                Some((k, v)) => Err(bad(k, v, "needs `pyroscope=URL` too".to_owned())),
                None => Ok(None),
            };
        };
        let mut c = PyroscopeConfig::new(url).map_err(|e| bad(key, url, reason(&e)))?;
        if let Some((k, v)) = self.app {
            c = c.app(v).map_err(|e| bad(k, v, reason(&e)))?;
        }
        if let Some((k, v)) = self.period {
            let d = super::value::time(k, v)?;
            c = c.period(d).map_err(|e| bad(k, v, reason(&e)))?;
        }
        if let Some((k, v)) = self.auth_env {
            c = c.auth_env(v).map_err(|e| bad(k, v, reason(&e)))?;
        }
        Ok(Some(c))
    }

    /// Without the feature: any `pyroscope*` key is refused.
    #[cfg(not(feature = "pyroscope"))]
    pub(super) fn build(&self) -> Result<Built, OptionError> {
        match self.given().next() {
            Some((k, v)) => Err(bad(
                k,
                v,
                "this program was built without flightrec's `pyroscope` feature".to_owned(),
            )),
            None => Ok(()),
        }
    }
}

/// The error's reason without its own `key `value`:` prefix.
#[cfg(feature = "pyroscope")]
fn reason(e: &crate::pyroscope::config::PyroscopeError) -> String {
    let text = e.to_string();
    match text.split_once("`: ") {
        Some((_, rest)) => rest.to_owned(),
        None => text,
    }
}

/// Splits an option string at its commas, except the commas inside the
/// `{...}` of a `pyroscope.app` value (`app{env=prod,region=eu}`).
pub(super) fn split_items(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut start, mut depth) = (0, 0usize);
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'{' if text[start..].trim_start().starts_with("pyroscope.app") => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            b',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_labels_keep_their_commas() {
        assert_eq!(
            split_items("a=1,pyroscope.app=x{k=v,l=w},b=2"),
            ["a=1", "pyroscope.app=x{k=v,l=w}", "b=2"]
        );
        assert_eq!(split_items("filename=a{b,c}"), ["filename=a{b", "c}"]);
        assert_eq!(split_items(""), [""]);
    }

    #[cfg(feature = "pyroscope")]
    #[test]
    fn the_options_build_a_config() {
        use std::time::Duration;
        let parse = super::super::start::parse;
        let o = parse(
            "pyroscope=http://h:4040,pyroscope.app=svc{env=prod,region=eu},pyroscope.period=2s,\
             pyroscope.auth-env=PYRO_TOKEN,filename=x.jfr",
        )
        .unwrap();
        let p = o.pyroscope.unwrap();
        assert_eq!(p.app_with_labels(), "svc{env=prod,region=eu}");
        assert_eq!(p.upload_period(), Duration::from_secs(2));
        assert_eq!(o.filename, Some("x.jfr".into()));
        assert!(parse("filename=x.jfr").unwrap().pyroscope.is_none());
        for (text, says) in [
            (
                "pyroscope.app=svc",
                "FLIGHTREC: option `pyroscope.app=svc`: needs `pyroscope=URL` too",
            ),
            (
                "pyroscope=http://h,pyroscope.period=10ms",
                "FLIGHTREC: option `pyroscope.period=10ms`: must be at least 100ms",
            ),
            (
                "pyroscope=http://h,pyroscope.app=a b",
                "FLIGHTREC: option `pyroscope.app=a b`: ` ` in the application name",
            ),
            (
                "pyroscope=http://h,pyroscope.app=a{x=1,y}",
                "FLIGHTREC: option `pyroscope.app=a{x=1,y}`: label `y` has no `=`",
            ),
            (
                "pyroscope=h:4040",
                "FLIGHTREC: option `pyroscope=h:4040`: expected http://host[:port][/path]",
            ),
            ("pyroscope.period=fast,pyroscope=http://h", "is not a time"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with(says) || e.contains(says), "{text}: {e}");
        }
    }

    #[cfg(not(feature = "pyroscope"))]
    #[test]
    fn without_the_feature_the_keys_say_so() {
        let e = super::super::start::parse("pyroscope=http://h")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "FLIGHTREC: option `pyroscope=http://h`: this program was built without flightrec's `pyroscope` feature"
        );
    }
}
