//! What the process and the machine were doing, with no event of the
//! program's own: the built-in periodic and per-chunk events (CPU load,
//! per-thread CPU load, memory, container limits, loaded libraries),
//! `jdk.ThreadStart`/`jdk.ThreadEnd` for every thread, panics as
//! `jdk.JavaErrorThrow`, and `jdk.Shutdown`.
//!
//! ```text
//! cargo run --release --example system_events -- --out OUT.jfr --seconds 5
//! jfr view system-information OUT.jfr
//! jfr view thread-cpu-load OUT.jfr
//! jfr view exception-by-site OUT.jfr
//! ```
//!
//! Workload: `burn-heavy` burns CPU three quarters of every 20 ms,
//! `burn-light` one quarter; `sleeper` sleeps; `panicker` panics and
//! catches the panic `--panics` times (default 10) in `panic_site`; and
//! waves of short-lived `wave-N` threads start, burn 20 ms and end. Every
//! thread ends before the stop. `jdk.ThreadCPULoad` runs every second
//! (its JDK default, 10 s, is longer than the run). Prints one JSON line:
//! `{"threads_started": N, "threads_ended": M, "panics": P,
//! "cpu_share": {"burn-heavy": ..., "burn-light": ...}}`, the shares of the
//! two burners' measured CPU time between them.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use flightrec::{Recording, RecordingConfig, Settings};

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spins until `cpu` of this thread's CPU time has passed.
#[inline(never)]
fn burn(cpu: Duration) -> u64 {
    let end = thread_cpu_nanos() + cpu.as_nanos() as u64;
    let mut x: u64 = 0x9e37_79b9;
    while thread_cpu_nanos() < end {
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        x = black_box(x);
    }
    x
}

/// Where every panic of the example happens.
#[inline(never)]
fn panic_site(i: u32) {
    if black_box(true) {
        panic!("planned panic {i}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = None;
    let mut seconds = 5.0f64;
    let mut panics = 10u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next(),
            "--seconds" => seconds = args.next().ok_or("--seconds N")?.parse()?,
            "--panics" => panics = args.next().ok_or("--panics N")?.parse()?,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let out = out.ok_or("usage: system_events --out OUT.jfr [--seconds N] [--panics P]")?;

    // The planned panics are not news: a quiet hook, which flightrec's
    // hook chains to (it runs after flightrec's for every panic).
    let quiet = Arc::new(AtomicU64::new(0));
    let seen = quiet.clone();
    std::panic::set_hook(Box::new(move |_| {
        seen.fetch_add(1, Ordering::Relaxed);
    }));

    let mut settings = Settings::new();
    settings.set("jdk.ThreadCPULoad", "period", "1 s")?;
    let recording = Recording::start(RecordingConfig::new(&out).settings(settings))?;

    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicU64::new(0));
    let spawn = |name: &str, body: Box<dyn FnOnce() -> u64 + Send>| {
        started.fetch_add(1, Ordering::Relaxed);
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(body)
            .expect("spawn")
    };
    let period = Duration::from_millis(20);
    let burner = |share: u32| {
        let stop = stop.clone();
        Box::new(move || {
            while !stop.load(Ordering::Relaxed) {
                black_box(burn(period * share / 4));
                std::thread::sleep(period * (4 - share) / 4);
            }
            thread_cpu_nanos()
        }) as Box<dyn FnOnce() -> u64 + Send>
    };
    let heavy = spawn("burn-heavy", burner(3));
    let light = spawn("burn-light", burner(1));
    let sleeper = spawn("sleeper", {
        let stop = stop.clone();
        Box::new(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
            0
        })
    });
    let total = Duration::from_secs_f64(seconds);
    let panicker = spawn("panicker", {
        let gap = total / (panics + 1);
        Box::new(move || {
            for i in 0..panics {
                std::thread::sleep(gap);
                let _ = std::panic::catch_unwind(|| panic_site(i));
            }
            0
        })
    });
    // Waves of short-lived threads, four every half second.
    let mut others = Vec::new();
    let waves = (seconds * 2.0).floor().max(1.0) as u32 - 1;
    for w in 0..waves.max(1) {
        std::thread::sleep(Duration::from_millis(500));
        for i in 0..4 {
            others.push(spawn(
                &format!("wave-{w}-{i}"),
                Box::new(|| burn(Duration::from_millis(20))),
            ));
        }
    }
    let elapsed = Duration::from_millis(500) * waves.max(1);
    std::thread::sleep(total.saturating_sub(elapsed));
    stop.store(true, Ordering::Relaxed);
    let heavy_cpu = heavy.join().expect("burn-heavy");
    let light_cpu = light.join().expect("burn-light");
    let mut ended = 2;
    for h in [sleeper, panicker].into_iter().chain(others) {
        h.join().expect("worker");
        ended += 1;
    }
    // Let the periodic thread see every exit before the stop.
    std::thread::sleep(Duration::from_millis(100));
    recording.stop()?;

    let both = (heavy_cpu + light_cpu).max(1) as f64;
    println!(
        "{{\"threads_started\": {}, \"threads_ended\": {ended}, \"panics\": {}, \
         \"cpu_share\": {{\"burn-heavy\": {:.4}, \"burn-light\": {:.4}}}}}",
        started.load(Ordering::Relaxed),
        quiet.load(Ordering::Relaxed),
        heavy_cpu as f64 / both,
        light_cpu as f64 / both,
    );
    Ok(())
}
