//! A service-like workload under an always-on, in-memory recording that
//! the JDK's `jcmd` controls from outside:
//!
//! ```text
//! cargo run --release --example always_on -- --seconds 600 &
//! jcmd <pid> JFR.check
//! jcmd <pid> JFR.dump filename=/tmp/x.jfr      # the last --maxage (5 min) within --memory-mib
//! jfr summary /tmp/x.jfr
//! ```
//!
//! It prints its pid and the `jcmd` line on stderr at start, and one JSON
//! line on stdout at the end: `{"pid", "requests", "counts"}` (`counts`
//! only with `--out`, which dumps the window to a file when the run ends).
//!
//! Flags: `--seconds N` (default 60), `--threads N` (2), `--maxage TIME`
//! (`5m`: the window kept), `--memory-mib N` (the in-memory bound,
//! `memory_size`: the library's default, 10 MiB, unless given; the window
//! is the shorter of the two), `--out FILE`, `--no-recording` (only the attach
//! listener: `jcmd <pid> JFR.start ...` starts the recording),
//! `--lazy-attach` (no socket until the first `jcmd`, which starts the
//! listener by SIGQUIT: `attach=lazy`).

mod workload;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use flightrec::{Attach, Recording, RecordingConfig};

struct Args {
    seconds: u64,
    threads: usize,
    max_age: Duration,
    memory_mib: Option<u64>,
    out: Option<String>,
    record: bool,
    attach: Attach,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seconds: 60,
        threads: 2,
        max_age: Duration::from_secs(300),
        memory_mib: None,
        out: None,
        record: true,
        attach: Attach::Listen,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--seconds" => {
                args.seconds = value("--seconds")?
                    .parse()
                    .map_err(|e| format!("--seconds: {e}"))?
            }
            "--threads" => {
                args.threads = value("--threads")?
                    .parse()
                    .map_err(|e| format!("--threads: {e}"))?
            }
            "--maxage" => {
                let v = value("--maxage")?;
                args.max_age = flightrec::settings::parse_duration("--maxage", &v)
                    .map_err(|e| format!("--maxage: {e}"))?
            }
            "--memory-mib" => {
                args.memory_mib = Some(
                    value("--memory-mib")?
                        .parse()
                        .map_err(|e| format!("--memory-mib: {e}"))?,
                )
            }
            "--out" => args.out = Some(value("--out")?),
            "--no-recording" => args.record = false,
            "--lazy-attach" => args.attach = Attach::OnSigquit,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(args)
}

/// The always-on recording: `settings=default`, in memory, the last
/// `max_age` kept (chunks rotate every quarter of it, so at most
/// `max_age` plus a quarter is held), answering `jcmd` as `attach` says.
fn always_on(max_age: Duration, memory_mib: Option<u64>, attach: Attach) -> RecordingConfig {
    let settings = flightrec::options::parse("settings=default")
        .expect("the built-in default set")
        .settings;
    let config = RecordingConfig::repository_only();
    let config = match memory_mib {
        Some(mib) => config.memory_size(mib.saturating_mul(1 << 20)),
        None => config,
    };
    config
        .name("always-on")
        .disk(false)
        .max_age(Some(max_age))
        .max_chunk_age(Some((max_age / 4).max(Duration::from_secs(1))))
        .settings(settings)
        .attach_mode(attach)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("always_on: {e}");
            eprintln!(
                "usage: always_on [--seconds N] [--threads N] [--maxage TIME] [--memory-mib N] [--out FILE] [--no-recording] [--lazy-attach]"
            );
            std::process::exit(2);
        }
    };
    let pid = std::process::id();
    let recording = if args.record {
        match Recording::start(always_on(args.max_age, args.memory_mib, args.attach)) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("always_on: {e}");
                std::process::exit(1);
            }
        }
    } else {
        let listening = match args.attach {
            Attach::OnSigquit => flightrec::attach::listen_on_sigquit(),
            _ => flightrec::attach::listen().map(drop),
        };
        if let Err(e) = listening {
            eprintln!("always_on: {e}");
            std::process::exit(1);
        }
        None
    };
    eprintln!(
        "always_on: pid {pid}, serving for {} s; try: jcmd {pid} JFR.dump filename=/tmp/x.jfr",
        args.seconds
    );
    let stop = AtomicBool::new(false);
    let (requests, _) = workload::run(
        args.threads,
        Duration::from_secs(args.seconds),
        4 << 10,
        &stop,
    );
    let mut counts = String::new();
    if let (Some(out), Some(rec)) = (&args.out, &recording) {
        if let Err(e) = rec.dump(out) {
            eprintln!("always_on: {e}");
            std::process::exit(1);
        }
        counts = format!(r#","counts":{{"com.example.Request":{requests}}}"#);
    }
    if let Some(rec) = recording
        && let Err(e) = rec.stop()
    {
        eprintln!("always_on: {e}");
        std::process::exit(1);
    }
    println!(r#"{{"pid":{pid},"requests":{requests}{counts}}}"#);
}
