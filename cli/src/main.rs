//! `flightrec`: look at any JFR recording without a JVM; record a program
//! (`record`), control a running one (`jcmd`), recover a killed one's
//! repository (`assemble`).
//!
//! Reads flightrec's files and HotSpot's alike, one chunk at a time (memory
//! bounded by the largest chunk, not the file). Every failure is one line
//! on standard error and exit status 2; what could be shown before a
//! damaged chunk has been shown. (`record` exits with the program's
//! status; `jcmd` with 1 when the process refused the command, as the
//! JDK's `jcmd` does.)

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use regex::Regex;

use flightrec_cli::error::CliError;
use flightrec_cli::profile::{self, Select};
use flightrec_cli::recording::Recording;
use flightrec_cli::stacks::Kind;
use flightrec_cli::{
    assemble, convert, flame, jcmd, metadata, print, record, report, summary, view,
};

#[derive(Debug, Parser)]
#[command(
    name = "flightrec",
    version,
    about = "Look at JFR recordings (flightrec's or the JDK's) without a JVM; record any program; control running ones",
    after_help = "Examples:\n  flightrec record -o app.jfr -- ./app\n  flightrec summary app.jfr\n  flightrec view cpu-time-hot-methods app.jfr\n  flightrec flame app.jfr -o app.html\n  flightrec convert app.jfr -o app.pb.gz"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Per event type, how many events and bytes (as `jfr summary`).
    #[command(after_help = "Example:\n  flightrec summary app.jfr")]
    Summary {
        /// The recording.
        file: PathBuf,
    },
    /// Every event, as text or JSON (as `jfr print`).
    #[command(
        after_help = "Examples:\n  flightrec print --events CPUTimeSample app.jfr\n  flightrec print --json --stack-depth 64 app.jfr > app.json"
    )]
    Print {
        /// JSON shaped like `jfr print --json`.
        #[arg(long)]
        json: bool,
        /// Only these event types, comma-separated (`jdk.` may be left out).
        #[arg(long, value_delimiter = ',')]
        events: Option<Vec<String>>,
        /// Frames shown per stack trace.
        #[arg(long, default_value_t = 5)]
        stack_depth: usize,
        /// The recording.
        file: PathBuf,
    },
    /// The types the recording declares, with their fields.
    #[command(after_help = "Example:\n  flightrec metadata app.jfr")]
    Metadata {
        /// The recording.
        file: PathBuf,
    },
    /// A table such as `jfr view` prints; with no view, the list of views.
    #[command(after_help = "Examples:\n  flightrec view\n  flightrec view hot-methods app.jfr")]
    View {
        /// The view (`flightrec view` lists them).
        view: Option<String>,
        /// The recording.
        file: Option<PathBuf>,
    },
    /// An interactive flame graph (search, zoom, tooltips), SVG or HTML.
    #[command(
        after_help = "Examples:\n  flightrec flame app.jfr -o app.html\n  flightrec flame app.jfr --event alloc --reverse -o alloc.svg\n  flightrec flame app.jfr --event wall --state STATE_RUNNABLE --threads -o wall.html\n  flightrec flame --diff before.jfr after.jfr -o diff.html"
    )]
    Flame {
        /// The recording.
        file: PathBuf,
        /// Output file: `.html` or `.svg`.
        #[arg(short, long)]
        output: PathBuf,
        #[command(flatten)]
        select: SelectArgs,
        /// Icicle graph: roots at the top.
        #[arg(long)]
        reverse: bool,
        /// A differential graph against this recording (the base): the
        /// frames of FILE, red where their share grew, blue where it shrank.
        #[arg(long, value_name = "BASE.jfr")]
        diff: Option<PathBuf>,
    },
    /// One self-contained HTML page: overview, heatmap, flame graph,
    /// thread lanes, findings and an event browser.
    #[command(after_help = "Example:\n  flightrec report app.jfr -o report.html")]
    Report {
        /// The recording.
        file: PathBuf,
        /// The page to write (`.html`).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// A profile for other tools: pprof (`.pb.gz`), collapsed stacks
    /// (`.collapsed`, `.txt`) or Speedscope (`.speedscope.json`).
    #[command(
        after_help = "Examples:\n  flightrec convert app.jfr -o app.pb.gz && go tool pprof -top app.pb.gz\n  flightrec convert app.jfr -o app.collapsed\n  flightrec convert app.jfr --event alloc -o alloc.speedscope.json"
    )]
    Convert {
        /// The recording.
        file: PathBuf,
        /// Output file; its name says the format.
        #[arg(short, long)]
        output: PathBuf,
        #[command(flatten)]
        select: SelectArgs,
    },
    /// Record a program: runs it with flightrec preloaded, passes signals
    /// on, exits with its status.
    #[command(
        after_help = "Examples:\n  flightrec record -o app.jfr -- ./app --port 8080\n  flightrec record --wall 20ms --duration 30s -o app.jfr -- ./app\n  flightrec flame app.jfr -o app.html\n\nThe program must be dynamically linked (a static one links libflightrec.a).\nOnly the program records (and what it execs in place); --children records\nevery descendant too, into files of their own (app-<pid>.jfr)."
    )]
    Record(record::Args),
    /// Control a running flightrec process or JVM (the HotSpot attach
    /// protocol); with no PID, list those that can be controlled.
    #[command(
        after_help = "Examples:\n  flightrec jcmd\n  flightrec jcmd 4211 JFR.start settings=profile\n  flightrec jcmd 4211 JFR.dump filename=/tmp/now.jfr\n  flightrec jcmd 4211 JFR.stop\n\nCommands: JFR.start, JFR.check, JFR.dump, JFR.stop, JFR.configure, VM.version, help\n(a JVM has more: `flightrec jcmd PID help`)."
    )]
    Jcmd {
        /// Seconds the whole exchange may take (the reply is cut off then).
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// The process (none: list them).
        pid: Option<u32>,
        /// The diagnostic command and its arguments (default `help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// One recording from the repository a killed process left: the usable
    /// chunks, in order, with a report of those skipped and files ignored.
    #[command(
        after_help = "Example:\n  flightrec assemble /tmp/flightrec-4211-Xq3vZa -o recovered.jfr"
    )]
    Assemble {
        /// The repository directory (the process's chunk files); none:
        /// list the repositories killed processes left in the temp
        /// directory.
        repository: Option<PathBuf>,
        /// The recording to write.
        #[arg(short, long, required_unless_present = "repository")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
struct SelectArgs {
    /// cpu-time (default when present), wall, alloc, lock, method-timing,
    /// or an event type with a stack trace (e.g. jdk.JavaExceptionThrow).
    #[arg(long)]
    event: Option<String>,
    /// A root frame per thread.
    #[arg(long)]
    threads: bool,
    /// Wall-clock samples in this thread state only (e.g. STATE_RUNNABLE).
    #[arg(long)]
    state: Option<String>,
    /// Only events from this long after the recording's start (e.g. 10s,
    /// 500ms, 2m).
    #[arg(long)]
    from: Option<String>,
    /// Only events before this long after the recording's start.
    #[arg(long)]
    to: Option<String>,
    /// Only stacks with a frame matching this regular expression.
    #[arg(long)]
    include: Option<String>,
    /// No stack with a frame matching this regular expression.
    #[arg(long)]
    exclude: Option<String>,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let command = match cli.command {
        Command::Assemble {
            repository: None, ..
        } => {
            let mut out = io::stdout().lock();
            return match assemble::list_stale(&mut out) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("flightrec: assemble: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Assemble {
            repository: Some(repository),
            output,
        } => {
            let Some(output) = output else {
                eprintln!("flightrec: assemble: -o FILE names the recording to write");
                return ExitCode::from(2);
            };
            return match assemble::run(&repository, &output, &mut io::stdout().lock()) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("flightrec: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Record(args) => {
            return match record::run(&args) {
                Ok(done) => {
                    for line in &done.lines {
                        eprintln!("flightrec: {line}");
                    }
                    ExitCode::from(done.ended.code())
                }
                Err(e) => {
                    eprintln!("flightrec: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Jcmd {
            timeout,
            pid,
            command,
        } => return run_jcmd(pid, &command, Duration::from_secs(timeout)),
        other => other,
    };
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A closed pipe (`| head`) is not an error worth a word.
            if let CliError::Output { source, .. } = &e
                && source.kind() == io::ErrorKind::BrokenPipe
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("flightrec: {e}");
            ExitCode::from(2)
        }
    }
}

/// `flightrec jcmd`: the list (and the leftover repositories, on
/// stderr), or one command's reply, streamed (status 0: stdout, exit 0;
/// refused by the process: stderr, exit 1; unreachable, late or too long:
/// exit 2).
fn run_jcmd(pid: Option<u32>, command: &[String], timeout: Duration) -> ExitCode {
    let Some(pid) = pid else {
        let mut text = String::new();
        for t in jcmd::list() {
            text.push_str(&format!("{} {}\n", t.pid, t.command_line));
        }
        print!("{text}");
        let _ = assemble::note_stale(&mut io::stderr().lock());
        return ExitCode::SUCCESS;
    };
    let line = if command.is_empty() {
        "help".to_owned()
    } else {
        command.join(" ")
    };
    let limits = jcmd::Limits {
        deadline: timeout,
        ..jcmd::Limits::default()
    };
    let mut stdout = io::stdout().lock();
    let mut stderr = io::stderr().lock();
    let mut refused = false;
    let mut notes = io::stderr();
    let sent = jcmd::send_to(pid, &line, &limits, &mut notes, |status| {
        refused = status != 0;
        let w: &mut dyn io::Write = if refused { &mut stderr } else { &mut stdout };
        writeln!(w, "{pid}:")?;
        Ok(w)
    });
    match sent {
        Ok(_) if refused => ExitCode::from(1),
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flightrec: {e}");
            ExitCode::from(2)
        }
    }
}

fn stdout() -> BufWriter<io::StdoutLock<'static>> {
    BufWriter::new(io::stdout().lock())
}

fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Summary { file } => {
            let mut out = stdout();
            summary::run(&mut Recording::open(&file)?, &mut out)?;
            flush(&mut out, Path::new("-"))
        }
        Command::Print {
            json,
            events,
            stack_depth,
            file,
        } => {
            let opts = print::Options {
                json,
                events: events.map(|v| v.into_iter().collect()),
                stack_depth,
            };
            let mut out = stdout();
            print::run(&mut Recording::open(&file)?, &opts, &mut out)?;
            flush(&mut out, Path::new("-"))
        }
        Command::Metadata { file } => {
            let mut out = stdout();
            metadata::run(&mut Recording::open(&file)?, &mut out)?;
            flush(&mut out, Path::new("-"))
        }
        Command::View { view, file } => {
            let mut out = stdout();
            match (view, file) {
                (None, _) => {
                    let mut s = String::from("Views:\n");
                    for (name, title) in view::VIEWS {
                        s.push_str(&format!("  {name:<24}{title}\n"));
                    }
                    s.push_str("\nExample: flightrec view hot-methods app.jfr\n");
                    out.write_all(s.as_bytes())
                        .map_err(|source| CliError::Output {
                            path: "-".into(),
                            source,
                        })?;
                }
                (Some(_), None) => {
                    return Err(CliError::Usage(
                        "view: which recording? (flightrec view VIEW FILE)".into(),
                    ));
                }
                (Some(v), Some(file)) => view::run(&mut Recording::open(&file)?, &v, &mut out)?,
            }
            flush(&mut out, Path::new("-"))
        }
        Command::Flame {
            file,
            output,
            select,
            reverse,
            diff,
        } => {
            let html = match extension(&output) {
                "html" | "htm" => true,
                "svg" => false,
                other => {
                    return Err(CliError::Usage(format!(
                        "flame: cannot tell the format of '{}' ('.{other}'): use .html or .svg",
                        output.display()
                    )));
                }
            };
            let mut rec = Recording::open(&file)?;
            let sel = select.resolve(&mut rec)?;
            let profile = profile::collect(&mut rec, &sel)?;
            let title = format!(
                "{} — {}",
                file.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                kind_name(profile.kind)
            );
            let title = match &diff {
                None => title,
                Some(b) => format!(
                    "{title} (differential: against {})",
                    b.file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
                ),
            };
            let base = match &diff {
                None => None,
                Some(b) => {
                    let mut base = Recording::open(b)?;
                    let mut sel = select.resolve(&mut base)?;
                    // The base's events of the same kind as FILE's.
                    sel.kind = profile.kind;
                    Some(profile::collect(&mut base, &sel)?)
                }
            };
            write_file(&output, |w| match &base {
                None => flame::write(&profile, select.threads, reverse, &title, html, w),
                Some(base) => {
                    flame::write_diff(base, &profile, select.threads, reverse, &title, html, w)
                }
            })?;
            eprintln!(
                "flightrec: {} events ({} stacks) drawn into {}",
                profile.events,
                profile.stacks.len(),
                output.display()
            );
            Ok(())
        }
        Command::Report { file, output } => {
            let mut rec = Recording::open(&file)?;
            let title = file
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let err = |source| CliError::Output {
                path: output.clone(),
                source,
            };
            let mut w = BufWriter::new(File::create(&output).map_err(err)?);
            report::write(&mut rec, &title, &mut w)?;
            w.flush().map_err(err)?;
            eprintln!("flightrec: report written to {}", output.display());
            Ok(())
        }
        Command::Convert {
            file,
            output,
            select,
        } => {
            let name = output.to_string_lossy().to_ascii_lowercase();
            let mut rec = Recording::open(&file)?;
            let sel = select.resolve(&mut rec)?;
            if name.ends_with(".pb.gz") || name.ends_with(".pprof") || name.ends_with(".pb") {
                let start = rec.first_header()?.start_nanos;
                let duration = rec.duration_nanos()?;
                let profile = profile::collect(&mut rec, &sel)?;
                write_file(&output, |w| {
                    convert::pprof::write(&profile, duration, start, w)
                })?;
            } else if name.ends_with(".collapsed")
                || name.ends_with(".txt")
                || name.ends_with(".folded")
            {
                let profile = profile::collect(&mut rec, &sel)?;
                write_file(&output, |w| {
                    convert::collapsed::write(&profile, select.threads, w)
                })?;
            } else if name.ends_with(".speedscope.json") || name.ends_with(".json") {
                let profile = profile::collect(&mut rec, &sel)?;
                let title = file
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                write_file(&output, |w| {
                    convert::speedscope::write(&profile, select.threads, &title, w)
                })?;
            } else {
                return Err(CliError::Usage(format!(
                    "convert: cannot tell the format of '{}': name it .pb.gz (pprof), .collapsed or .speedscope.json",
                    output.display()
                )));
            }
            Ok(())
        }
        Command::Assemble { .. } | Command::Record(_) | Command::Jcmd { .. } => {
            unreachable!("dispatched in main")
        }
    }
}

impl SelectArgs {
    fn resolve(&self, rec: &mut Recording) -> Result<Select, CliError> {
        let (kind, type_name) = match &self.event {
            None => (None, None),
            Some(e) => {
                let (k, t) = Kind::parse(e);
                (Some(k), t)
            }
        };
        let regex = |flag: &str, s: &Option<String>| {
            s.as_deref()
                .map(|r| {
                    Regex::new(r).map_err(|e| {
                        // The regex crate explains over several lines; its
                        // last one says what is wrong.
                        let e = e.to_string();
                        let why = e
                            .lines()
                            .last()
                            .unwrap_or_default()
                            .trim_start_matches("error: ");
                        CliError::Usage(format!(
                            "--{flag}: '{r}' is not a regular expression: {why}"
                        ))
                    })
                })
                .transpose()
        };
        let (from, to) = if self.from.is_some() || self.to.is_some() {
            let start = rec.first_header()?.start_nanos;
            let at = |flag: &str, s: &Option<String>| {
                s.as_deref()
                    .map(|d| {
                        parse_duration(d)
                            .map(|n| start.saturating_add(n))
                            .ok_or_else(|| {
                                CliError::Usage(format!(
                                    "--{flag}: '{d}' is not a duration such as 10s, 500ms or 2m"
                                ))
                            })
                    })
                    .transpose()
            };
            (at("from", &self.from)?, at("to", &self.to)?)
        } else {
            (None, None)
        };
        Ok(Select {
            kind,
            type_name,
            state: self.state.clone(),
            from,
            to,
            include: regex("include", &self.include)?,
            exclude: regex("exclude", &self.exclude)?,
        })
    }
}

/// `10s`, `500ms`, `2m`, `1h`, `250us`, `10ns` to nanoseconds.
fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return None,
    };
    Some((v * scale) as i64)
}

fn kind_name(k: Option<Kind>) -> &'static str {
    match k {
        Some(Kind::CpuTime) => "CPU time",
        Some(Kind::Wall) => "wall clock",
        Some(Kind::Alloc) => "allocated bytes",
        Some(Kind::Lock) => "time blocked",
        Some(Kind::MethodTiming) => "method timing",
        Some(Kind::Type) | None => "events",
    }
}

fn extension(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

fn flush(out: &mut dyn Write, path: &Path) -> Result<(), CliError> {
    out.flush().map_err(|source| CliError::Output {
        path: path.to_owned(),
        source,
    })
}

fn write_file(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), CliError> {
    let err = |source| CliError::Output {
        path: path.to_owned(),
        source,
    };
    let mut w = BufWriter::new(File::create(path).map_err(err)?);
    body(&mut w).map_err(err)?;
    w.flush().map_err(err)
}
