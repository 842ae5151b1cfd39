//! A small service instrumented only with `tracing`, recorded through the
//! flightrec layer beside (optionally) the fmt layer. Prints how many
//! spans and events of each callsite it produced, as one JSON line
//! `{"counts": {"<JFR type>": n, ...}, ...}`.
//!
//! ```text
//! cargo run --release --example tracing_layer -- --out OUT.jfr
//! jfr summary OUT.jfr
//! jfr print --events tracing.tracing_layer.request OUT.jfr
//! ```
//!
//! Flags: `--threads N` (4), `--requests N` per thread (500), `--fmt` (also
//! log every event through `tracing_subscriber::fmt` into a counting sink,
//! reported as `fmt_lines`), `--set TYPE#SETTING=VALUE` (repeatable JFR
//! settings, e.g. `tracing.tracing_layer.cache_probe#enabled=false`).
//!
//! Each worker thread enters a `worker` span once; each request is a
//! `request` span holding two `store::db_query` spans, a `cache_probe`
//! debug event, a `request_done` event and, every tenth request, a
//! `slow_request` warning. A span counts once per entry. Counts are of what
//! the service emitted for the types its settings enable.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flightrec::{Recording, RecordingConfig, Settings};
use tracing::{debug, info, info_span, warn};
use tracing_subscriber::prelude::*;

mod store {
    /// A query against the store: its own target, `tracing_layer::store`.
    #[inline(never)]
    pub(crate) fn db_query(table: &'static str, key: u64) -> u64 {
        let _span = tracing::info_span!("db_query", table, key, rows = key % 7).entered();
        let mut h = key;
        for _ in 0..200 {
            h = std::hint::black_box(h.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        key % 7
    }
}

struct Args {
    out: String,
    threads: u64,
    requests: u64,
    fmt: bool,
    settings: Settings,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        out: String::new(),
        threads: 4,
        requests: 500,
        fmt: false,
        settings: Settings::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--out" => args.out = value("--out")?,
            "--threads" => {
                args.threads = value("--threads")?
                    .parse()
                    .map_err(|e| format!("--threads: {e}"))?
            }
            "--requests" => {
                args.requests = value("--requests")?
                    .parse()
                    .map_err(|e| format!("--requests: {e}"))?
            }
            "--fmt" => args.fmt = true,
            "--set" => {
                let v = value("--set")?;
                let (event, rest) = v
                    .split_once('#')
                    .ok_or(format!("--set `{v}`: expected TYPE#SETTING=VALUE"))?;
                let (setting, val) = rest
                    .split_once('=')
                    .ok_or(format!("--set `{v}`: expected TYPE#SETTING=VALUE"))?;
                args.settings
                    .set(event, setting, val)
                    .map_err(|e| format!("--set `{v}`: {e}"))?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.out.is_empty() {
        return Err("--out OUT.jfr is required".into());
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(args)
}

/// Counts per (target, callsite name).
type Counts = BTreeMap<(&'static str, &'static str), AtomicU64>;

fn counts() -> Counts {
    let mut c = Counts::new();
    for key in [
        ("tracing_layer", "worker"),
        ("tracing_layer", "request"),
        ("tracing_layer::store", "db_query"),
        ("tracing_layer", "cache_probe"),
        ("tracing_layer", "request_done"),
        ("tracing_layer", "slow_request"),
    ] {
        c.insert(key, AtomicU64::new(0));
    }
    c
}

fn bump(c: &Counts, target: &'static str, name: &'static str) {
    c[&(target, name)].fetch_add(1, Ordering::Relaxed);
}

#[inline(never)]
fn serve(worker: u64, i: u64, c: &Counts) {
    let path = if i.is_multiple_of(3) {
        "/users"
    } else {
        "/items"
    };
    let span = info_span!("request", worker, seq = i, path, method = "GET");
    let _entered = span.enter();
    bump(c, "tracing_layer", "request");
    let rows = store::db_query("users", i) + store::db_query("items", i + 1);
    bump(c, "tracing_layer::store", "db_query");
    bump(c, "tracing_layer::store", "db_query");
    debug!(name: "cache_probe", key = i, hit = i.is_multiple_of(2));
    bump(c, "tracing_layer", "cache_probe");
    let latency_us = 50 + (i * 37) % 400;
    if i % 10 == 9 {
        warn!(name: "slow_request", latency_us, ratio = latency_us as f64 / 50.0, "slow");
        bump(c, "tracing_layer", "slow_request");
    }
    info!(name: "request_done", status = 200u64, rows, ok = true, latency_us, "served {path}");
    bump(c, "tracing_layer", "request_done");
}

/// A writer that counts lines and discards them.
#[derive(Clone, Default)]
struct CountingSink(Arc<AtomicU64>);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.iter().filter(|b| **b == b'\n').count() as u64;
        self.0.fetch_add(n, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tracing_layer: {e}");
            std::process::exit(2);
        }
    };
    let sink = CountingSink::default();
    let fmt = args.fmt.then(|| {
        let sink = sink.clone();
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(move || sink.clone())
    });
    tracing_subscriber::registry()
        .with(flightrec::tracing::layer())
        .with(fmt)
        .init();

    let recording =
        match Recording::start(RecordingConfig::new(&args.out).settings(args.settings.clone())) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("tracing_layer: cannot start recording: {e}");
                std::process::exit(1);
            }
        };
    let c = Arc::new(counts());
    let workers: Vec<_> = (0..args.threads)
        .map(|w| {
            let c = Arc::clone(&c);
            let requests = args.requests;
            std::thread::Builder::new()
                .name(format!("worker-{w}"))
                .spawn(move || {
                    let _worker = info_span!("worker", id = w).entered();
                    bump(&c, "tracing_layer", "worker");
                    for i in 0..requests {
                        serve(w, i, &c);
                    }
                })
                .expect("spawn worker")
        })
        .collect();
    for w in workers {
        w.join().expect("worker panicked");
    }
    if let Err(e) = recording.stop() {
        eprintln!("tracing_layer: stop: {e}");
        std::process::exit(1);
    }

    let types = flightrec::tracing::callsite_types();
    let mut out = BTreeMap::new();
    for ((target, name), n) in c.iter() {
        let Some(t) = types
            .iter()
            .find(|t| t.target == *target && t.name == *name)
        else {
            eprintln!("tracing_layer: callsite {target}::{name} never registered");
            std::process::exit(1);
        };
        let enabled = args
            .settings
            .get(t.type_name)
            .and_then(|s| s.enabled)
            .unwrap_or(true);
        let n = if enabled {
            n.load(Ordering::Relaxed)
        } else {
            0
        };
        out.insert(t.type_name.to_owned(), n);
    }
    let stats = flightrec::tracing::stats();
    println!(
        "{{\"counts\": {}, \"fmt_lines\": {}, \"mismatched_values\": {}, \"rejected_types\": {}}}",
        serde_json_map(&out),
        sink.0.load(Ordering::Relaxed),
        stats.mismatched_values,
        stats.rejected_types
    );
}

fn serde_json_map(m: &BTreeMap<String, u64>) -> String {
    serde_json::to_string(m).expect("counts serialize")
}
