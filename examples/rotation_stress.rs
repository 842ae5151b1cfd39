//! Commits events from many threads while the recording rotates chunks every
//! few milliseconds, then prints what it committed and how many chunks the
//! file has, as one JSON line.
//!
//! ```text
//! cargo run --release --example rotation_stress -- --out OUT.jfr --threads 8 --events 500000 --rotate-ms 5
//! jfr summary OUT.jfr
//! jfr disassemble --output chunks/ OUT.jfr    # each chunk alone passes `jfr print`
//! ```
//!
//! `--events` is the total over all threads. With `--min-rotations N`, each
//! writer waits before each Nth of its events until one more rotation has
//! happened (at most 10 s each), so at least N rotations fall between the
//! events however slowly a loaded machine runs the rotator. Every event carries its writer
//! and a per-writer sequence number, so a reader can check that no event was
//! lost or written twice; every 64th also has a stack trace, so every chunk
//! has stack-trace, method and class constants to get right.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use flightrec::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(name = "stress.Seq", label = "Sequenced Event")]
struct Seq {
    #[event(label = "Writer")]
    writer: u32,
    #[event(label = "Sequence")]
    seq: u64,
}

#[derive(Event)]
#[event(name = "stress.Traced", label = "Traced Event", stack_trace)]
struct Traced {
    #[event(label = "Writer")]
    writer: u32,
    #[event(label = "Sequence")]
    seq: u64,
}

struct Args {
    out: String,
    threads: u32,
    events: u64,
    rotate_ms: u64,
    min_rotations: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        out: String::new(),
        threads: 8,
        events: 500_000,
        rotate_ms: 5,
        min_rotations: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let num = |s: String, name: &str| s.parse::<u64>().map_err(|e| format!("{name}: {e}"));
        match k.as_str() {
            "--out" => a.out = v("--out")?,
            "--threads" => a.threads = num(v("--threads")?, "--threads")? as u32,
            "--events" => a.events = num(v("--events")?, "--events")?,
            "--rotate-ms" => a.rotate_ms = num(v("--rotate-ms")?, "--rotate-ms")?,
            "--min-rotations" => a.min_rotations = num(v("--min-rotations")?, "--min-rotations")?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.out.is_empty() {
        return Err("--out OUT.jfr is required".into());
    }
    if a.threads == 0 || a.rotate_ms == 0 {
        return Err("--threads and --rotate-ms must be at least 1".into());
    }
    Ok(a)
}

/// Waits until `rotations` reaches `n` (at most 10 s: a stuck rotator
/// shows as too few chunks, not as a hang).
fn wait_for_rotation(rotations: &AtomicU64, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while rotations.load(Ordering::Relaxed) < n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[inline(never)]
fn traced(writer: u32, seq: u64) {
    Traced { writer, seq }.commit();
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("rotation_stress: {e}");
        eprintln!(
            "usage: rotation_stress --out OUT.jfr [--threads N] [--events TOTAL] [--rotate-ms MS] [--min-rotations N]"
        );
        std::process::exit(2)
    });
    let config = RecordingConfig::new(&args.out)
        .max_memory(256 << 20)
        .flush_interval(Duration::from_millis(50));
    let recording = Recording::start(config).unwrap_or_else(|e| {
        eprintln!("rotation_stress: {e}");
        std::process::exit(1)
    });
    let (seqs, traces) = (AtomicU64::new(0), AtomicU64::new(0));
    let done = AtomicBool::new(false);
    let rotations = AtomicU64::new(0);
    std::thread::scope(|s| {
        let rotator = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(args.rotate_ms));
                if let Err(e) = recording.rotate() {
                    eprintln!("rotation_stress: rotate: {e}");
                    std::process::exit(1);
                }
                rotations.fetch_add(1, Ordering::Relaxed);
            }
        });
        let writers: Vec<_> = (0..args.threads)
            .map(|w| {
                let n = args.events / u64::from(args.threads)
                    + u64::from(u64::from(w) < args.events % u64::from(args.threads));
                let (seqs, traces, rotations) = (&seqs, &traces, &rotations);
                let slice = n / (args.min_rotations + 1) + 1;
                std::thread::Builder::new()
                    .name(format!("writer-{w}"))
                    .spawn_scoped(s, move || {
                        for seq in 0..n {
                            if seq > 0 && seq % slice == 0 {
                                wait_for_rotation(rotations, seq / slice);
                            }
                            if seq % 64 == 0 {
                                traced(w, seq);
                                traces.fetch_add(1, Ordering::Relaxed);
                            } else {
                                Seq { writer: w, seq }.commit();
                                seqs.fetch_add(1, Ordering::Relaxed);
                            }
                            if seq % 128 == 127 {
                                // Spread the writes over time so that many
                                // rotations land between events.
                                std::thread::sleep(Duration::from_millis(1));
                            }
                        }
                    })
                    .expect("spawn writer")
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        done.store(true, Ordering::Relaxed);
        rotator.join().expect("rotator");
    });
    let summary = recording.stop().unwrap_or_else(|e| {
        eprintln!("rotation_stress: {e}");
        std::process::exit(1)
    });
    let lost = summary.losses.total_events();
    if lost > 0 {
        eprintln!(
            "rotation_stress: {lost} events were dropped (see flightrec.EventsLost in the file)"
        );
    }
    eprintln!("rotation_stress: {} rotations", rotations.into_inner());
    let counts: BTreeMap<&str, u64> = [
        (Seq::event_type().name(), seqs.into_inner()),
        (Traced::event_type().name(), traces.into_inner()),
    ]
    .into();
    let body: Vec<String> = counts
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    println!(
        "{{\"counts\": {{{}}}, \"chunks\": {}}}",
        body.join(", "),
        summary.chunks
    );
}
