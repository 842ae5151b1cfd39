//! Method timing and tracing (JEP 520 for Rust): a multi-threaded workload
//! of `#[flightrec::timed]` functions, with a filter that selects some of
//! them, recorded to `--out`. Prints one JSON line with the exact number of
//! calls of each selected function, counted by the functions themselves:
//!
//! ```text
//! {"calls": {"method_timing::work::parse": 8000, ...}}
//! ```
//!
//! Then `jfr view method-timing OUT.jfr` shows those counts, and
//! `jfr view method-calls OUT.jfr` the callers of the traced method.

use std::sync::atomic::{AtomicU64, Ordering};

use flightrec::{Recording, RecordingConfig, Settings};

/// The timing filter: one part of each form.
const TIMING_FILTER: &str = "method_timing::work::parse; method_timing::work::Store; ::fib; @io";
/// The trace filter.
const TRACE_FILTER: &str = "method_timing::work::Store::put";

mod work {
    use super::*;

    pub(crate) static PARSE: AtomicU64 = AtomicU64::new(0);
    pub(crate) static GET: AtomicU64 = AtomicU64::new(0);
    pub(crate) static PUT: AtomicU64 = AtomicU64::new(0);
    pub(crate) static FIB: AtomicU64 = AtomicU64::new(0);
    pub(crate) static FLUSH: AtomicU64 = AtomicU64::new(0);
    pub(crate) static HELPER: AtomicU64 = AtomicU64::new(0);

    /// Selected by its path.
    #[flightrec::timed(tag = "cpu")]
    pub(crate) fn parse(i: u64) -> u64 {
        PARSE.fetch_add(1, Ordering::Relaxed);
        std::hint::black_box(i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(7))
    }

    /// Every method selected by the type.
    pub(crate) struct Store {
        pub(crate) slots: Vec<u64>,
    }

    #[flightrec::timed]
    impl Store {
        pub(crate) fn get(&self, k: u64) -> u64 {
            GET.fetch_add(1, Ordering::Relaxed);
            self.slots[(k as usize) % self.slots.len()]
        }

        pub(crate) fn put(&mut self, k: u64, v: u64) {
            PUT.fetch_add(1, Ordering::Relaxed);
            let n = self.slots.len();
            self.slots[(k as usize) % n] = v;
        }
    }

    /// Recursive, selected by `::fib`: every level is a call.
    #[flightrec::timed]
    pub(crate) fn fib(n: u32) -> u64 {
        FIB.fetch_add(1, Ordering::Relaxed);
        if n < 2 {
            n as u64
        } else {
            fib(n - 1) + fib(n - 2)
        }
    }

    /// Selected by its tag.
    #[flightrec::timed(tags = ["io", "slow"])]
    pub(crate) fn flush_io() {
        FLUSH.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_micros(20));
    }

    /// Instrumented, never selected.
    #[flightrec::timed(tag = "cpu")]
    pub(crate) fn helper(x: u64) -> u64 {
        HELPER.fetch_add(1, Ordering::Relaxed);
        std::hint::black_box(x ^ 0x55)
    }

    /// The caller of the traced `Store::put`.
    #[inline(never)]
    pub(crate) fn run_worker(iterations: u64, seed: u64) -> u64 {
        let mut store = Store { slots: vec![0; 64] };
        let mut acc = 0;
        for i in 0..iterations {
            acc ^= parse(i + seed);
            acc ^= store.get(i);
            acc ^= helper(i);
            if i % 10 == 0 {
                store.put(i, acc);
            }
            if i % 100 == 0 {
                acc ^= fib(10);
            }
            if i % 500 == 0 {
                flush_io();
            }
        }
        acc
    }
}

struct Args {
    out: String,
    threads: u64,
    iterations: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        out: String::new(),
        threads: 4,
        iterations: 2000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--out" => a.out = v()?,
            "--threads" => a.threads = v()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--iterations" => {
                a.iterations = v()?.parse().map_err(|e| format!("--iterations: {e}"))?
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.out.is_empty() {
        return Err("--out is required".into());
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("method_timing: {e}");
            eprintln!("usage: method_timing --out OUT.jfr [--threads N] [--iterations N]");
            std::process::exit(2);
        }
    };
    let mut settings = Settings::new();
    let filters = settings
        .method_filter("jdk.MethodTiming", TIMING_FILTER)
        .and_then(|s| s.method_filter("jdk.MethodTrace", TRACE_FILTER));
    if let Err(e) = filters {
        eprintln!("method_timing: {e}");
        std::process::exit(1);
    }
    let recording = match Recording::start(RecordingConfig::new(&args.out).settings(settings)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("method_timing: {e}");
            std::process::exit(1);
        }
    };
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let n = args.iterations;
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn(move || work::run_worker(n, t * 1_000_003))
                .expect("spawn")
        })
        .collect();
    for h in handles {
        std::hint::black_box(h.join().expect("worker panicked"));
    }
    if let Err(e) = recording.stop() {
        eprintln!("method_timing: {e}");
        std::process::exit(1);
    }
    let calls = [
        ("method_timing::work::parse", &work::PARSE),
        ("method_timing::work::Store::get", &work::GET),
        ("method_timing::work::Store::put", &work::PUT),
        ("method_timing::work::fib", &work::FIB),
        ("method_timing::work::flush_io", &work::FLUSH),
    ];
    let body: Vec<String> = calls
        .iter()
        .map(|(name, n)| format!("\"{name}\": {}", n.load(Ordering::Relaxed)))
        .collect();
    eprintln!(
        "method_timing: helper (not selected) ran {} times",
        work::HELPER.load(Ordering::Relaxed)
    );
    println!("{{\"calls\": {{{}}}}}", body.join(", "));
}
