//! Where threads wait: threads contending on a named lock with known hold
//! times (`locks.rs`), recorded to `--out`. Prints one JSON line with the
//! waits over the threshold, counted by the waiters themselves:
//!
//! ```text
//! {"allocated": {}, "leaked": {}, "contended": {"orders": 150}}
//! ```
//!
//! Then `jfr view contention-by-site OUT.jfr` shows the waiting site with
//! that count.

use std::time::{Duration, Instant};

use flightrec::{Recording, RecordingConfig};

mod locks;

struct Args {
    out: String,
    seconds: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        out: String::new(),
        seconds: 5.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--out" => a.out = v()?,
            "--seconds" => a.seconds = v()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.out.is_empty() {
        return Err("--out is required".into());
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err("--seconds must be a positive number".into());
    }
    Ok(a)
}

fn json_map(m: &std::collections::BTreeMap<String, u64>) -> String {
    let body: Vec<String> = m.iter().map(|(k, v)| format!("{k:?}: {v}")).collect();
    format!("{{{}}}", body.join(", "))
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("alloc_lock: {e}");
            eprintln!("usage: alloc_lock --out OUT.jfr [--seconds N]");
            std::process::exit(2);
        }
    };
    let recording = match Recording::start(RecordingConfig::new(&args.out)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("alloc_lock: {e}");
            std::process::exit(1);
        }
    };
    let until = Instant::now() + Duration::from_secs_f64(args.seconds);
    let contended = locks::run(until);
    if let Err(e) = recording.stop() {
        eprintln!("alloc_lock: {e}");
        std::process::exit(1);
    }
    println!(
        "{{\"allocated\": {{}}, \"leaked\": {{}}, \"contended\": {}}}",
        json_map(&contended)
    );
}
