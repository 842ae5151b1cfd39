//! Where and how a recording uploads: the server's URL, the application
//! name and its labels, the period, the `Authorization` header, the
//! queue's bounds. Everything the user wrote is checked here, and a
//! mistake is a [`PyroscopeError`] naming it.
//!
//! Invariant: a [`PyroscopeConfig`] that [`PyroscopeConfig::new`] and
//! [`PyroscopeConfig::app`] accepted builds a valid ingest URL; the
//! header's value is never printed (`Debug` shows `<redacted>`).

use std::fmt;
use std::time::Duration;

use crate::base::sync::global::Arc;

/// The upload period when none is given.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(10);
/// Shortest upload period.
pub const MIN_PERIOD: Duration = Duration::from_millis(100);

/// One accepted upload, as shown to [`PyroscopeConfig::on_uploaded`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Uploaded<'a> {
    /// The JFR bytes sent (before gzip): whole chunks back to back.
    pub jfr: &'a [u8],
    /// The `labels` part sent.
    pub labels: &'a [u8],
    /// Chunks in `jfr`.
    pub chunks: usize,
    /// The `from` and `until` parameters (Unix seconds).
    pub from: i64,
    /// See `from`.
    pub until: i64,
}

/// Called with each accepted upload (see [`PyroscopeConfig::on_uploaded`]).
pub(crate) type Observer = Arc<dyn Fn(&Uploaded<'_>) + Send + Sync>;

/// Where a recording pushes its chunks (see the module docs).
#[derive(Clone)]
pub struct PyroscopeConfig {
    /// `http://host:port` plus any path prefix, without a trailing `/`.
    pub(crate) base: String,
    /// The application name (`service_name` in Pyroscope).
    pub(crate) app: String,
    /// Static labels, in the order written.
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) period: Duration,
    /// Where the `Authorization` value comes from.
    pub(crate) auth: Auth,
    pub(crate) max_queued_chunks: usize,
    pub(crate) max_queued_bytes: usize,
    /// Tries per batch (the first and the retries).
    pub(crate) tries: u32,
    /// First retry delay; doubled per retry.
    pub(crate) backoff: Duration,
    /// Per request (connect, send, answer).
    pub(crate) timeout: Duration,
    /// How long the stop waits for the queue to empty.
    pub(crate) stop_timeout: Duration,
    pub(crate) observer: Option<Observer>,
}

impl PartialEq for PyroscopeConfig {
    /// Equal settings; an observer is equal only to itself.
    fn eq(&self, o: &Self) -> bool {
        let observers = match (&self.observer, &o.observer) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        observers
            && (&self.base, &self.app, &self.labels, self.period, &self.auth)
                == (&o.base, &o.app, &o.labels, o.period, &o.auth)
            && (self.max_queued_chunks, self.max_queued_bytes, self.tries)
                == (o.max_queued_chunks, o.max_queued_bytes, o.tries)
            && (self.backoff, self.timeout, self.stop_timeout)
                == (o.backoff, o.timeout, o.stop_timeout)
    }
}

impl Eq for PyroscopeConfig {}

/// The source of the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    None,
    /// Read from this environment variable when the uploader starts.
    Env(String),
    /// Given by the program.
    Value(String),
}

impl fmt::Debug for PyroscopeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            Auth::None => "none".to_owned(),
            Auth::Env(var) => format!("${var}"),
            Auth::Value(_) => "<redacted>".to_owned(),
        };
        f.debug_struct("PyroscopeConfig")
            .field("url", &self.base)
            .field("app", &self.app_with_labels())
            .field("period", &self.period)
            .field("auth", &auth)
            .field("max_queued_chunks", &self.max_queued_chunks)
            .field("max_queued_bytes", &self.max_queued_bytes)
            .field("tries", &self.tries)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A Pyroscope option that cannot be used; each names what was written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PyroscopeError {
    /// The server URL is not `http://host[:port][/path]` (or `https://`
    /// with the `pyroscope-tls` feature).
    BadUrl {
        /// The URL as written.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The application name or a label is malformed.
    BadApp {
        /// The `NAME{k=v,...}` as written.
        app: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The period is shorter than 100 ms.
    BadPeriod {
        /// The period given.
        period: Duration,
    },
    /// The environment variable named for the `Authorization` header is
    /// not set, or its value is no valid header value.
    BadAuth {
        /// The variable.
        var: String,
        /// What is wrong (the value itself is never shown).
        reason: &'static str,
    },
    /// A queue bound, try count or timeout of zero.
    BadLimit {
        /// Which.
        what: &'static str,
    },
    /// The uploader thread could not be started.
    Thread(String),
}

impl fmt::Display for PyroscopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadUrl { url, reason } => write!(f, "pyroscope URL `{url}`: {reason}"),
            Self::BadApp { app, reason } => write!(f, "pyroscope.app `{app}`: {reason}"),
            Self::BadPeriod { period } => {
                write!(f, "pyroscope.period `{period:?}`: must be at least 100ms")
            }
            Self::BadAuth { var, reason } => write!(f, "pyroscope.auth-env `{var}`: {reason}"),
            Self::BadLimit { what } => write!(f, "pyroscope {what}: must be more than 0"),
            Self::Thread(e) => write!(f, "cannot start the pyroscope uploader thread: {e}"),
        }
    }
}

impl std::error::Error for PyroscopeError {}

impl PyroscopeConfig {
    /// Uploads to the Pyroscope server at `url` (`http://host:4040`, with
    /// an optional path prefix; `https://` needs the `pyroscope-tls`
    /// feature). Defaults: application `flightrec`, no labels, every 10 s,
    /// no `Authorization` header, at most 8 chunks or 64 MiB queued, 4
    /// tries per upload from 500 ms apart doubling, 10 s per request, 5 s
    /// to send what is queued at the stop.
    pub fn new(url: &str) -> Result<Self, PyroscopeError> {
        let base = check_url(url)?;
        Ok(Self {
            base,
            app: "flightrec".to_owned(),
            labels: Vec::new(),
            period: DEFAULT_PERIOD,
            auth: Auth::None,
            max_queued_chunks: 8,
            max_queued_bytes: 64 << 20,
            tries: 4,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(10),
            stop_timeout: Duration::from_secs(5),
            observer: None,
        })
    }

    /// The application name and static labels, as Pyroscope's `name`
    /// parameter takes them: `checkout` or `checkout{env=prod,region=eu}`.
    /// The name is letters, digits, `.`, `-`, `_`; label names are
    /// Prometheus label names not starting with `__`; values are not
    /// empty and hold no `,`, `{`, `}`, `=`, quote or control character.
    pub fn app(mut self, spec: &str) -> Result<Self, PyroscopeError> {
        let (app, labels) = parse_app(spec)?;
        self.app = app;
        self.labels = labels;
        Ok(self)
    }

    /// How often a chunk is cut and uploaded (at least 100 ms).
    pub fn period(mut self, period: Duration) -> Result<Self, PyroscopeError> {
        if period < MIN_PERIOD {
            return Err(PyroscopeError::BadPeriod { period });
        }
        self.period = period;
        Ok(self)
    }

    /// Sends the value of environment variable `var` as the
    /// `Authorization` header (e.g. `Bearer <token>` or `Basic <base64>`).
    /// The variable is read when the recording starts; it must be set then.
    pub fn auth_env(mut self, var: &str) -> Result<Self, PyroscopeError> {
        if var.is_empty() || var.contains(['=', '\0']) {
            return Err(PyroscopeError::BadAuth {
                var: var.to_owned(),
                reason: "not an environment variable name",
            });
        }
        self.auth = Auth::Env(var.to_owned());
        Ok(self)
    }

    /// Sends `value` as the `Authorization` header.
    pub fn auth_header(mut self, value: &str) -> Result<Self, PyroscopeError> {
        check_header_value(value).map_err(|reason| PyroscopeError::BadAuth {
            var: "<value given by the program>".to_owned(),
            reason,
        })?;
        self.auth = Auth::Value(value.to_owned());
        Ok(self)
    }

    /// Bounds of the upload queue: at most `chunks` chunks and `bytes`
    /// bytes wait; past either the oldest are dropped (and counted).
    pub fn queue_limits(mut self, chunks: usize, bytes: usize) -> Result<Self, PyroscopeError> {
        if chunks == 0 || bytes == 0 {
            return Err(PyroscopeError::BadLimit {
                what: "queue limit",
            });
        }
        self.max_queued_chunks = chunks;
        self.max_queued_bytes = bytes;
        Ok(self)
    }

    /// Tries per upload (first plus retries) and the first retry's delay,
    /// doubled for each further retry.
    pub fn retries(mut self, tries: u32, backoff: Duration) -> Result<Self, PyroscopeError> {
        if tries == 0 {
            return Err(PyroscopeError::BadLimit { what: "tries" });
        }
        self.tries = tries;
        self.backoff = backoff;
        Ok(self)
    }

    /// The longest one request may take (connect, send, answer).
    pub fn timeout(mut self, timeout: Duration) -> Result<Self, PyroscopeError> {
        if timeout.is_zero() {
            return Err(PyroscopeError::BadLimit { what: "timeout" });
        }
        self.timeout = timeout;
        Ok(self)
    }

    /// How long the stop waits for the queued chunks to be sent.
    pub fn stop_timeout(mut self, timeout: Duration) -> Self {
        self.stop_timeout = timeout;
        self
    }

    /// Calls `f` on the uploader thread with each upload Pyroscope
    /// accepted (the JFR bytes before gzip, the labels part, the span):
    /// to count or keep what was sent. `f` should be quick; the next
    /// upload waits for it.
    pub fn on_uploaded(mut self, f: impl Fn(&Uploaded<'_>) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(f));
        self
    }

    /// The upload period.
    pub fn upload_period(&self) -> Duration {
        self.period
    }

    /// `app{k=v,...}` as sent in the `name` parameter.
    pub fn app_with_labels(&self) -> String {
        if self.labels.is_empty() {
            return self.app.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{}{{{}}}", self.app, labels.join(","))
    }

    /// The ingest URL for a batch spanning `from..until` (Unix seconds).
    pub(crate) fn ingest_url(&self, from: i64, until: i64, sample_rate: u64) -> String {
        format!(
            "{}/ingest?name={}&from={from}&until={until}&format=jfr&sampleRate={sample_rate}&spyName=flightrec",
            self.base,
            percent_encode(&self.app_with_labels())
        )
    }

    /// The `Authorization` value, read from the environment if so asked.
    pub(crate) fn auth_value(&self) -> Result<Option<String>, PyroscopeError> {
        match &self.auth {
            Auth::None => Ok(None),
            Auth::Value(v) => Ok(Some(v.clone())),
            Auth::Env(var) => {
                let bad = |reason| PyroscopeError::BadAuth {
                    var: var.clone(),
                    reason,
                };
                let v = std::env::var(var).map_err(|e| match e {
                    std::env::VarError::NotPresent => bad("is not set"),
                    std::env::VarError::NotUnicode(_) => bad("is not valid UTF-8"),
                })?;
                check_header_value(&v).map_err(bad)?;
                Ok(Some(v))
            }
        }
    }
}

/// Checks `http://host[:port][/path]` and returns it without a trailing
/// `/`.
fn check_url(url: &str) -> Result<String, PyroscopeError> {
    let bad = |reason| PyroscopeError::BadUrl {
        url: url.to_owned(),
        reason,
    };
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if let Some(r) = url.strip_prefix("https://") {
        if !cfg!(feature = "pyroscope-tls") {
            return Err(bad("https needs flightrec's `pyroscope-tls` feature"));
        }
        r
    } else {
        return Err(bad("expected http://host[:port][/path]"));
    };
    if rest.contains(['?', '#']) {
        return Err(bad(
            "no query or fragment: the ingest path and parameters are added",
        ));
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("contains blanks or control characters"));
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad(
            "credentials in the URL are refused: give them with pyroscope.auth-env",
        ));
    }
    let port_ok = |p: &str| p.parse::<u16>().is_ok();
    let host = if let Some(v6) = authority.strip_prefix('[') {
        // `[::1]` or `[::1]:4040`
        let Some((h, rest)) = v6.split_once(']') else {
            return Err(bad("an IPv6 address must end with `]`"));
        };
        if !(rest.is_empty() || rest.strip_prefix(':').is_some_and(port_ok)) {
            return Err(bad("the port is not a number 0..=65535"));
        }
        h
    } else {
        match authority.split_once(':') {
            Some((h, p)) if port_ok(p) => h,
            Some(_) => return Err(bad("the port is not a number 0..=65535")),
            None => authority,
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// `NAME` or `NAME{k=v,...}` into the name and the labels.
fn parse_app(spec: &str) -> Result<(String, Vec<(String, String)>), PyroscopeError> {
    let bad = |reason: String| PyroscopeError::BadApp {
        app: spec.to_owned(),
        reason,
    };
    let (name, labels) = match spec.find('{') {
        None => (spec, None),
        Some(at) => {
            let Some(inner) = spec[at + 1..].strip_suffix('}') else {
                return Err(bad("the labels must end with `}`".to_owned()));
            };
            (&spec[..at], Some(inner))
        }
    };
    if name.is_empty() {
        return Err(bad("no application name".to_owned()));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
    {
        return Err(bad(format!(
            "`{c}` in the application name (letters, digits, `.`, `-`, `_`)"
        )));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for item in labels.unwrap_or("").split(',') {
        let item = item.trim();
        if item.is_empty() {
            if labels.is_some_and(|l| !l.trim().is_empty()) {
                return Err(bad("an empty label between commas".to_owned()));
            }
            continue;
        }
        let Some((k, v)) = item.split_once('=') else {
            return Err(bad(format!("label `{item}` has no `=`")));
        };
        let (k, v) = (k.trim(), v.trim());
        let key_ok = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(bad(format!(
                "label name `{k}` (letters, digits and `_`, not starting with a digit)"
            )));
        }
        if k.starts_with("__") {
            return Err(bad(format!(
                "label name `{k}`: names starting with `__` are reserved"
            )));
        }
        if k == "service_name" {
            return Err(bad(
                "`service_name` is the application name: write it before `{`".to_owned(),
            ));
        }
        if v.is_empty() {
            return Err(bad(format!("label `{k}` has an empty value")));
        }
        if let Some(c) = v
            .chars()
            .find(|c| matches!(c, '{' | '}' | '=' | ',' | '"' | '\'') || c.is_control())
        {
            return Err(bad(format!(
                "`{}` in the value of label `{k}`",
                c.escape_default()
            )));
        }
        if out.iter().any(|(o, _)| o == k) {
            return Err(bad(format!("label `{k}` given twice")));
        }
        out.push((k.to_owned(), v.to_owned()));
    }
    Ok((name.to_owned(), out))
}

/// A header value must be visible ASCII or blanks, with no line break.
fn check_header_value(v: &str) -> Result<(), &'static str> {
    if v.is_empty() {
        return Err("is empty");
    }
    if v.bytes()
        .any(|b| !(b == b' ' || b == b'\t' || (0x21..0x7f).contains(&b)))
    {
        return Err("holds a character a header value cannot (line break, control or non-ASCII)");
    }
    Ok(())
}

/// RFC 3986 percent-encoding of everything but the unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert_eq!(
            PyroscopeConfig::new("http://127.0.0.1:4040/").unwrap().base,
            "http://127.0.0.1:4040"
        );
        assert_eq!(
            PyroscopeConfig::new("http://p.example/prefix")
                .unwrap()
                .base,
            "http://p.example/prefix"
        );
        for bad in [
            "127.0.0.1:4040",
            "ftp://x",
            "http://",
            "http://:4040",
            "http://h:port",
            "http://u:p@h",
            "http://h/ingest?x=1",
            "http://h o",
        ] {
            assert!(
                matches!(
                    PyroscopeConfig::new(bad),
                    Err(PyroscopeError::BadUrl { .. })
                ),
                "{bad}"
            );
        }
        if !cfg!(feature = "pyroscope-tls") {
            let e = PyroscopeConfig::new("https://h").unwrap_err();
            assert!(e.to_string().contains("pyroscope-tls"), "{e}");
        }
    }

    #[test]
    fn app_names_and_labels() {
        let c = PyroscopeConfig::new("http://h").unwrap();
        let c = c.app("checkout{env=prod, region=eu-1}").unwrap();
        assert_eq!(c.app, "checkout");
        assert_eq!(c.app_with_labels(), "checkout{env=prod,region=eu-1}");
        assert_eq!(
            c.ingest_url(10, 20, 100),
            "http://h/ingest?name=checkout%7Benv%3Dprod%2Cregion%3Deu-1%7D&from=10&until=20&format=jfr&sampleRate=100&spyName=flightrec"
        );
        let c = c.app("svc.a-b_c{}").unwrap();
        assert_eq!(c.app_with_labels(), "svc.a-b_c");
        for (bad, says) in [
            ("", "no application name"),
            ("{a=b}", "no application name"),
            ("a b", "` ` in the application name"),
            ("a{x=1", "must end with `}`"),
            ("a{x}", "has no `=`"),
            ("a{1x=1}", "label name `1x`"),
            ("a{__x=1}", "reserved"),
            ("a{x=}", "empty value"),
            ("a{x=1,,y=2}", "empty label"),
            ("a{x=1,x=2}", "given twice"),
            ("a{x=a\"b}", "in the value of label `x`"),
            ("a{service_name=b}", "service_name"),
        ] {
            let e = PyroscopeConfig::new("http://h")
                .unwrap()
                .app(bad)
                .unwrap_err();
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_auth_value_is_never_shown() {
        let c = PyroscopeConfig::new("http://h")
            .unwrap()
            .auth_header("Bearer s3cret")
            .unwrap();
        assert!(!format!("{c:?}").contains("s3cret"));
        assert!(c.clone().auth_header("a\r\nX-Evil: 1").is_err());
        let c = c.auth_env("FLIGHTREC_TEST_SURELY_UNSET_VAR").unwrap();
        let e = c.auth_value().unwrap_err();
        assert_eq!(
            e.to_string(),
            "pyroscope.auth-env `FLIGHTREC_TEST_SURELY_UNSET_VAR`: is not set"
        );
    }

    #[test]
    fn limits() {
        let c = PyroscopeConfig::new("http://h").unwrap();
        assert!(c.clone().period(Duration::from_millis(99)).is_err());
        assert!(c.clone().queue_limits(0, 1).is_err());
        assert!(c.clone().retries(0, Duration::ZERO).is_err());
        assert!(c.timeout(Duration::ZERO).is_err());
    }
}
