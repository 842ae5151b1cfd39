//! CPU-time profiling of a small workload, written as `jdk.CPUTimeSample`
//! events; prints each worker thread's measured CPU time, the time it was
//! blocked (asleep: neither running nor waiting for a core) and how long it
//! lived, and how long the workers ran (ns), as one JSON line:
//! `{"threads": {"<name>": cpu, ..}, "slept": {"<name>": ns, ..},
//! "lived": {"<name>": ns, ..}, "ran": ns}`.
//!
//! ```text
//! cargo run --release --example cpu_profile -- --out OUT.jfr --seconds 5
//! jfr view cpu-time-hot-methods OUT.jfr
//! ```
//!
//! Workload:
//! * (a) `burn-heavy` burns CPU in `burn_heavy` three quarters of the time,
//!   `burn-light` in `burn_light` one quarter (it sleeps the rest of each
//!   period, 10 to 30 ms long, 20 on average): about 3:1 CPU time. The
//!   periods vary so that a sampler with a fixed interval does not keep
//!   finding the burners at the same point of their cycle;
//! * (b) JEP 509's demonstration: `fast-server` serves ten fast CPU-bound
//!   requests (`handle_fast_request`) in each round while `slow-server`
//!   serves one slow request (`handle_slow_request`) that mostly sleeps. A
//!   wall-clock profiler sees both handlers take the same time; CPU time
//!   shows where the CPU went.
//!
//! Options: `--throttle 10ms|500/s` (default `10ms`), `--wall` also turns
//! on wall-clock sampling (`jdk.ExecutionSample`), `--min-cpu MS` runs past
//! `--seconds` (at most a minute more) until `burn-heavy` and `fast-server`
//! have each used MS milliseconds of CPU time: on a busy machine the
//! threads get less of it than they ask for, and a comparison of shares
//! needs enough samples. `--swap` swaps the burners' shares (`burn_light`
//! burns three quarters, `burn_heavy` one): a second workload mix, for a
//! differential flame graph of two runs.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// Spins on arithmetic until `$cpu` of this thread's CPU time has passed.
/// A macro, not a function: the loop is part of the function that uses it,
/// so that function is the top frame of the samples (an inlined helper
/// would show up as a frame of its own). The loop calls nothing; the clock
/// is read once per ~100 µs of work.
macro_rules! spin_for {
    ($cpu:expr, $seed:expr) => {{
        let end = thread_cpu_nanos() + ($cpu as Duration).as_nanos() as u64;
        let mut x: u64 = $seed | 1;
        loop {
            let mut i = 0u32;
            while i < 100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                i += 1;
            }
            x = black_box(x);
            if thread_cpu_nanos() >= end {
                break x;
            }
        }
    }};
}

#[inline(never)]
fn burn_heavy(cpu: Duration) -> u64 {
    spin_for!(cpu, 3)
}

#[inline(never)]
fn burn_light(cpu: Duration) -> u64 {
    spin_for!(cpu, 5)
}

#[inline(never)]
fn handle_fast_request(id: u64) -> u64 {
    spin_for!(Duration::from_millis(8), id)
}

#[inline(never)]
fn handle_slow_request(id: u64) -> u64 {
    // Mostly waiting (a database, a downstream call), a little CPU.
    std::thread::sleep(Duration::from_millis(190));
    spin_for!(Duration::from_millis(2), id)
}

/// This thread's time on a CPU and time runnable but waiting for one, in
/// nanoseconds, as the scheduler counts them (`/proc/thread-self/schedstat`).
fn sched_nanos() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut f = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    Some((f.next()??, f.next()??))
}

/// What a worker measured of itself.
struct Lived {
    name: String,
    cpu: u64,
    /// Blocked: its life less its time running and waiting for a core.
    /// A wall-clock signal wakes a sleeping thread, which may then wait for
    /// a core to run the handler: that wait is runnable time, not sleep,
    /// and so is the wait after a sleep ends, so counting the time asked of
    /// `sleep` would be wrong both ways on a busy machine.
    slept: u64,
    lived: u64,
}

/// Runs `work` in a loop on a thread named `name` until `stop`, keeping
/// `used` at the thread's CPU time after each call.
fn worker(
    name: &str,
    stop: Arc<AtomicBool>,
    used: Arc<AtomicU64>,
    mut work: impl FnMut() + Send + 'static,
) -> std::thread::JoinHandle<Lived> {
    let name = name.to_owned();
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            let born = Instant::now();
            let (run0, wait0) = sched_nanos().expect("/proc/thread-self/schedstat");
            while !stop.load(Ordering::Relaxed) {
                work();
                used.store(thread_cpu_nanos(), Ordering::Relaxed);
            }
            let (run, wait) = sched_nanos().expect("/proc/thread-self/schedstat");
            let lived = born.elapsed().as_nanos() as u64;
            Lived {
                name,
                cpu: thread_cpu_nanos(),
                slept: lived.saturating_sub((run - run0) + (wait - wait0)),
                lived,
            }
        })
        .expect("spawn worker")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut out = None;
    let mut seconds = 5.0f64;
    let mut throttle = "10ms".to_owned();
    let mut wall = false;
    let mut min_cpu = Duration::ZERO;
    // Quarters of its period `burn-heavy` burns (`burn-light`: the rest).
    let mut heavy_quarters = 3u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next(),
            "--seconds" => seconds = args.next().ok_or("--seconds N")?.parse()?,
            "--throttle" => throttle = args.next().ok_or("--throttle T")?,
            "--wall" => wall = true,
            "--swap" => heavy_quarters = 1,
            "--min-cpu" => {
                min_cpu = Duration::from_millis(args.next().ok_or("--min-cpu MS")?.parse()?)
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let out = out.ok_or(
        "usage: cpu_profile --out OUT.jfr [--seconds N] [--throttle 10ms] [--wall] [--min-cpu MS] [--swap]",
    )?;

    let mut settings = Settings::new();
    settings.set("jdk.CPUTimeSample", "enabled", "true")?;
    settings.set("jdk.CPUTimeSample", "throttle", &throttle)?;
    if wall {
        settings.set("jdk.ExecutionSample", "enabled", "true")?;
    }
    let recording = Recording::start(RecordingConfig::new(&out).settings(settings))?;

    let stop = Arc::new(AtomicBool::new(false));
    // 10..30 ms, drawn anew each cycle (xorshift; the seed is the thread's).
    let periods = |mut x: u64| {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Duration::from_micros(10_000 + x % 20_000)
        }
    };
    let (mut heavy_period, mut light_period) = (periods(0x9e37_79b9), periods(0x7f4a_7c15));
    let used: [Arc<AtomicU64>; 4] = Default::default();
    let started = Instant::now();
    let workers = vec![
        worker("burn-heavy", stop.clone(), used[0].clone(), move || {
            let period = heavy_period();
            burn_heavy(period * heavy_quarters / 4);
            std::thread::sleep(period * (4 - heavy_quarters) / 4);
        }),
        worker("burn-light", stop.clone(), used[1].clone(), move || {
            let period = light_period();
            burn_light(period * (4 - heavy_quarters) / 4);
            std::thread::sleep(period * heavy_quarters / 4);
        }),
        worker("fast-server", stop.clone(), used[2].clone(), {
            let mut id = 0;
            move || {
                let round = Instant::now();
                for _ in 0..10 {
                    id += 1;
                    black_box(handle_fast_request(id));
                }
                std::thread::sleep(Duration::from_millis(200).saturating_sub(round.elapsed()));
            }
        }),
        worker("slow-server", stop.clone(), used[3].clone(), {
            let mut id = 0;
            move || {
                id += 1;
                black_box(handle_slow_request(id));
            }
        }),
    ];
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let enough = |i: usize| Duration::from_nanos(used[i].load(Ordering::Relaxed)) >= min_cpu;
    let give_up = Instant::now() + Duration::from_secs(60);
    while !(enough(0) && enough(2)) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let mut lives = Vec::new();
    for w in workers {
        lives.push(w.join().expect("worker panicked"));
    }
    let ran = started.elapsed().as_nanos() as u64;
    recording.stop()?;

    let object = |value: fn(&Lived) -> u64| {
        let fields: Vec<String> = lives
            .iter()
            .map(|l| format!("\"{}\": {}", l.name, value(l)))
            .collect();
        format!("{{{}}}", fields.join(", "))
    };
    println!(
        "{{\"threads\": {}, \"slept\": {}, \"lived\": {}, \"ran\": {ran}}}",
        object(|l| l.cpu),
        object(|l| l.slept),
        object(|l| l.lived),
    );
    Ok(())
}
