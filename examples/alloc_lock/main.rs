//! Where memory goes and where threads wait: threads allocate at known
//! rates at known sites (one of them leaks) under a recording that samples
//! allocations through `flightrec::alloc::SamplingAllocator` (`allocs.rs`),
//! while other threads contend on a named `flightrec::lock::Mutex` with
//! known hold times (`locks.rs`).
//!
//! ```text
//! cargo run --release --example alloc_lock -- --out OUT.jfr --seconds 5
//! jfr view allocation-by-site OUT.jfr
//! jfr view memory-leaks-by-site OUT.jfr
//! jfr view contention-by-site OUT.jfr
//! ```
//!
//! It prints one JSON line on stdout: `{"allocated": {SITE: bytes},
//! "leaked": {SITE: bytes}, "contended": {LOCK: waits}}`, each SITE as `jfr
//! view allocation-by-site` names its function.
//!
//! Flags: `--out FILE` (default `alloc_lock.jfr`), `--seconds N` (5),
//! `--threads N` (2 allocating threads).

mod allocs;
mod locks;

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flightrec::alloc::SamplingAllocator;
use flightrec::{Recording, RecordingConfig, Settings};

/// One sample per 16 KiB allocated on average (`throttle=off` below): a
/// few thousand samples per site in a 5 s run.
#[global_allocator]
static GLOBAL: SamplingAllocator<System> = SamplingAllocator::with_mean_interval(System, 16 << 10);

struct Args {
    out: String,
    seconds: u64,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        out: "alloc_lock.jfr".into(),
        seconds: 5,
        threads: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--out" => args.out = value("--out")?,
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
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    Ok(args)
}

fn json_map(m: &BTreeMap<String, u64>) -> String {
    let items: Vec<String> = m.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
    format!("{{{}}}", items.join(", "))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args().map_err(|e| format!("alloc_lock: {e}"))?;
    let mut settings = Settings::new();
    settings.set("jdk.ObjectAllocationSample", "enabled", "true")?;
    settings.set("jdk.ObjectAllocationSample", "throttle", "off")?;
    settings.set("jdk.OldObjectSample", "enabled", "true")?;
    settings.set("jdk.ThreadAllocationStatistics", "period", "1 s")?;
    settings.set("jdk.JavaMonitorEnter", "enabled", "true")?;
    settings.set("jdk.JavaMonitorEnter", "threshold", "20 ms")?;
    let recording = Recording::start(RecordingConfig::new(&args.out).settings(settings))?;
    let until = Instant::now() + Duration::from_secs(args.seconds);
    // The lock threads mostly sleep while holding or waiting, so they
    // run beside the allocating threads without taking their CPU. The
    // main thread takes part in the contention (`locks::run`).
    let threads = args.threads;
    let allocating = std::thread::Builder::new()
        .name("allocs".into())
        .spawn(move || allocs::run(threads, until))?;
    let contended = locks::run(until);
    let totals = allocating
        .join()
        .map_err(|_| "an allocating thread panicked")?;
    recording.stop()?;
    println!(
        "{{\"allocated\": {}, \"leaked\": {}, \"contended\": {}}}",
        json_map(&totals.allocated),
        json_map(&totals.leaked),
        json_map(&contended)
    );
    Ok(())
}
