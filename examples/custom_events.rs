//! Commits events of three custom types from many threads and prints how
//! many of each it committed, as one JSON line.
//!
//! ```text
//! cargo run --release --example custom_events -- --out OUT.jfr --threads 8 --events 1000000
//! jfr summary OUT.jfr
//! jfr print --events com.example.Request OUT.jfr
//! ```
//!
//! `--events` is the total over all threads. Types:
//! * `com.example.Tick` — an instant event;
//! * `com.example.Request` — a duration event with a 2 µs threshold (only
//!   requests that took at least that long are committed);
//! * `com.example.Allocation` — an instant event with a stack trace.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flightrec::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(
    name = "com.example.Tick",
    label = "Tick",
    category = "Example",
    description = "A counter tick"
)]
struct Tick {
    #[event(label = "Sequence")]
    seq: u64,
    #[event(label = "Worker")]
    worker: u32,
}

#[derive(Event)]
#[event(name = "com.example.Request", label = "Request", category = ["Example", "Server"], duration, threshold = "2 us")]
struct Request<'a> {
    #[event(label = "Path")]
    path: &'a str,
    #[event(label = "Status")]
    status: u16,
    #[event(label = "Response Size", data_amount)]
    bytes: u64,
}

#[derive(Event)]
#[event(
    name = "com.example.Allocation",
    label = "Allocation",
    category = "Example",
    stack_trace
)]
struct Allocation {
    #[event(label = "Size", data_amount)]
    size: u64,
}

struct Args {
    out: String,
    threads: usize,
    events: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        out: String::new(),
        threads: 8,
        events: 1_000_000,
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
            "--events" => {
                args.events = value("--events")?
                    .parse()
                    .map_err(|e| format!("--events: {e}"))?
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

#[inline(never)]
fn serve(worker: u32, i: u64, requests: &AtomicU64) {
    let timer = Request::begin();
    // Every 16th request does real work and crosses the threshold.
    let rounds = if i.is_multiple_of(16) { 4_000 } else { 1 };
    let mut h = i;
    for _ in 0..rounds {
        h = std::hint::black_box(
            h.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    let path = if worker.is_multiple_of(2) {
        "/index.html"
    } else {
        "/api/v1/items"
    };
    if timer.commit(&Request {
        path,
        status: 200,
        bytes: h % 4096,
    }) {
        requests.fetch_add(1, Ordering::Relaxed);
    }
}

#[inline(never)]
fn allocate(size: u64) {
    Allocation { size }.commit();
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("custom_events: {e}");
            eprintln!("usage: custom_events --out OUT.jfr [--threads N] [--events TOTAL]");
            std::process::exit(2);
        }
    };
    let config = RecordingConfig::new(&args.out)
        .max_memory(256 << 20)
        .flush_interval(Duration::from_millis(100));
    let recording = match Recording::start(config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("custom_events: {e}");
            std::process::exit(1);
        }
    };
    let ticks = AtomicU64::new(0);
    let requests = AtomicU64::new(0);
    let allocations = AtomicU64::new(0);
    let per_thread = args.events / args.threads as u64;
    let extra = args.events % args.threads as u64;
    std::thread::scope(|s| {
        for t in 0..args.threads {
            let n = per_thread + u64::from((t as u64) < extra);
            let (ticks, requests, allocations) = (&ticks, &requests, &allocations);
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn_scoped(s, move || {
                    for i in 0..n {
                        match i % 3 {
                            0 => {
                                Tick {
                                    seq: i,
                                    worker: t as u32,
                                }
                                .commit();
                                ticks.fetch_add(1, Ordering::Relaxed);
                            }
                            1 => serve(t as u32, i, requests),
                            _ => {
                                allocate(64 + i % 1000);
                                allocations.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                })
                .expect("spawn worker");
        }
    });
    let summary = match recording.stop() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("custom_events: {e}");
            std::process::exit(1);
        }
    };
    let lost = summary.losses.total_events();
    if lost > 0 {
        eprintln!(
            "custom_events: {lost} events were dropped (see flightrec.EventsLost in the file)"
        );
    }
    let counts: BTreeMap<&str, u64> = [
        (Tick::event_type().name(), ticks.into_inner()),
        (Request::event_type().name(), requests.into_inner()),
        (Allocation::event_type().name(), allocations.into_inner()),
    ]
    .into();
    let body: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    println!("{{\"counts\": {{{}}}}}", body.join(", "));
}
