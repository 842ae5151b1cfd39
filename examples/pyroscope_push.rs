//! Pushes a CPU workload's profile to Grafana Pyroscope every second, and
//! checks that what was uploaded is exactly what was recorded.
//!
//! ```text
//! cargo run --release --example pyroscope_push -- --url http://127.0.0.1:4040 --seconds 10
//! cargo run --release --example pyroscope_push -- --url local --seconds 10
//! ```
//!
//! `--url local` starts a receiver on 127.0.0.1 that stores the requests
//! (testkit's `receiver`) instead of a Pyroscope server. Two threads serve
//! "requests" (`handle_checkout`, `handle_search`) that burn CPU, each in a
//! label scope (`endpoint`, `tenant`: Pyroscope's dynamic labels); wall-clock
//! samples (`jdk.ExecutionSample`, what Pyroscope's JFR parser reads) are
//! taken every 10 ms. The recording cuts a chunk every `--period` (1 s)
//! and uploads it; at the end the whole recording is written to `--out`.
//!
//! Prints one line:
//! `{"uploads": N, "samples_uploaded": S, "samples_recorded": R}`: the
//! uploads Pyroscope accepted, the samples in them (each uploaded JFR
//! parsed), and the samples in the file written at exit (parsed). S = R
//! when nothing was dropped: each upload holds its period's chunk only.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec::jfr_format::read::read_recording;
use flightrec::pyroscope::PyroscopeConfig;
use flightrec::{Recording, RecordingConfig, Settings};
use flightrec_testkit::receiver::Receiver;

/// The sample events counted on both sides.
const SAMPLE_EVENTS: [&str; 2] = ["jdk.ExecutionSample", "jdk.CPUTimeSample"];

/// Samples in `jfr` (whole chunks).
fn count_samples(jfr: &[u8]) -> u64 {
    let file = read_recording(jfr).unwrap_or_else(|e| panic!("an uploaded JFR does not read: {e}"));
    file.events()
        .filter(|e| SAMPLE_EVENTS.contains(&&*e.type_name))
        .count() as u64
}

/// Spins for about `d` of wall time.
#[inline(never)]
fn burn(d: Duration, seed: u64) -> u64 {
    let end = Instant::now() + d;
    let mut x = seed | 1;
    while Instant::now() < end {
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = black_box(x);
    }
    x
}

#[inline(never)]
fn handle_checkout(id: u64) -> u64 {
    burn(Duration::from_millis(6), id)
}

#[inline(never)]
fn handle_search(id: u64) -> u64 {
    burn(Duration::from_millis(3), id)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut url = None;
    let mut seconds = 10u64;
    let mut period = Duration::from_secs(1);
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--url" => url = Some(value()?),
            "--seconds" => seconds = value()?.parse()?,
            "--period-ms" => period = Duration::from_millis(value()?.parse()?),
            "--out" => out = Some(PathBuf::from(value()?)),
            _ => return Err(format!(
                "unknown argument {a} (--url URL|local, --seconds N, --period-ms MS, --out PATH)"
            )
            .into()),
        }
    }
    let url = url.ok_or("--url URL|local is required")?;
    let local = (url == "local").then(Receiver::start);
    let url = local.as_ref().map_or(url, Receiver::url);
    let out = out.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("pyroscope_push-{}.jfr", std::process::id()))
    });

    let uploads = Arc::new(AtomicU64::new(0));
    let uploaded_samples = Arc::new(AtomicU64::new(0));
    let (u, s) = (Arc::clone(&uploads), Arc::clone(&uploaded_samples));
    let upload = PyroscopeConfig::new(&url)?
        .app("flightrec.pyroscope_push{env=example}")?
        .period(period)?
        .on_uploaded(move |up| {
            u.fetch_add(1, Ordering::Relaxed);
            s.fetch_add(count_samples(up.jfr), Ordering::Relaxed);
        });
    let mut settings = Settings::new();
    settings.set("jdk.ExecutionSample", "enabled", "true")?;
    settings.set("jdk.ExecutionSample", "period", "10 ms")?;
    let recording = Recording::start(
        RecordingConfig::new(&out)
            .settings(settings)
            .pyroscope(upload),
    )?;

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = [("checkout", 0u64), ("search", 1)]
        .into_iter()
        .map(|(name, which)| {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(format!("server-{name}"))
                .spawn(move || {
                    let mut id = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        id += 1;
                        // Each request's samples carry its labels
                        // (Pyroscope's dynamic labels, the `labels` part).
                        let tenant = ["acme", "globex", "initech"][(id % 3) as usize];
                        let _labels = flightrec::labels::scope(&[
                            ("endpoint", if which == 0 { "/checkout" } else { "/search" }),
                            ("tenant", tenant),
                        ]);
                        black_box(if which == 0 {
                            handle_checkout(id)
                        } else {
                            handle_search(id)
                        });
                    }
                })
        })
        .collect::<Result<_, _>>()?;
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().map_err(|_| "a worker panicked")?;
    }
    let totals = recording.pyroscope_totals();
    recording.stop()?;
    if let Some(t) = totals
        && t.chunks_dropped > 0
    {
        eprintln!(
            "pyroscope_push: {} chunk(s) dropped before the stop",
            t.chunks_dropped
        );
    }
    let recorded = count_samples(&std::fs::read(&out)?);
    println!(
        "{{\"uploads\": {}, \"samples_uploaded\": {}, \"samples_recorded\": {recorded}}}",
        uploads.load(Ordering::Relaxed),
        uploaded_samples.load(Ordering::Relaxed)
    );
    Ok(())
}
