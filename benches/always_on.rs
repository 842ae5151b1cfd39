//! The cost of the always-on default: the `always_on` example's workload
//! (a worker serving requests that hash `WORK` bytes, one
//! `com.example.Request` event each, no threshold) with no recording and
//! with `settings=default,disk=false,maxage=30s` plus the attach listener,
//! side by side in one run: for each request size, [`ROUNDS`] pairs of
//! rounds, one of each variant, in alternating order.
//!
//! ```text
//! cargo bench --bench always_on                  # a long-lived worker pool
//! FLIGHTREC_BENCH_SHAPE=thread-per-round cargo bench --bench always_on
//! ```
//!
//! # Shapes
//!
//! * `pool` (the default): one worker thread started once, serving every
//!   round of both variants, as a service's pool does. Rounds last
//!   [`POOL_ROUND`]; a recording's round starts [`POOL_WARM_UP`] after the
//!   recording does, past the periodic thread's faster polling while the
//!   thread list changes (the recording's own threads starting): what an
//!   always-on recording costs in its hours of steady state.
//! * `thread-per-round`: the first version of this bench: a new worker
//!   thread each round, 200 ms rounds, 300 ms of warm-up. A thread starting
//!   and ending every round keeps the periodic thread polling every 20 ms
//!   and each round pays a thread's start: kept to compare with.
//!
//! In both, the recording is flushed before its round and at its end,
//! inside the measured time, so the round pays for writing all of its
//! events (a flush per round: the default rate for `pool`'s 1 s rounds).
//!
//! Three measures per variant, medians over the rounds:
//! * requests per wall-clock second (what a service sees on an idle
//!   machine; on a shared one, neighbours make it swing by tens of %);
//! * the worker thread's CPU time per request (the commit path's cost);
//! * the process's CPU time per request (adds the recorder's threads:
//!   drain, encoding, in-memory chunks, periodic events): the figure the
//!   ≤ 1 % target is held to, as it does not move with the neighbours.
//!
//! The overheads are medians of the per-pair ratios. Per size, a line
//! gives the CPU time of each of the recorder's threads per round (from
//! `/proc/self/task/*/schedstat`): where the process's extra time goes.
//! The last line, `always_on summary: {..}`, gives the shape and per size
//! the medians and the paired overheads in %.

#[path = "../examples/always_on/workload.rs"]
mod workload;

use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use flightrec::{Recording, RecordingConfig};

const ROUNDS: usize = 15;
const SIZES: [usize; 2] = [4 << 10, 16 << 10];

/// `pool`: a round's length (the default flush interval).
const POOL_ROUND: Duration = Duration::from_secs(1);
/// `pool`: how long the recording runs before its round is measured:
/// past the periodic thread's 1 s of fast polls after a thread change.
const POOL_WARM_UP: Duration = Duration::from_millis(1500);
/// `thread-per-round`: the first version's round and warm-up.
const THREAD_ROUND: Duration = Duration::from_millis(200);
const THREAD_WARM_UP: Duration = Duration::from_millis(300);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Pool,
    ThreadPerRound,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Pool => "pool",
            Shape::ThreadPerRound => "thread-per-round",
        }
    }
}

fn process_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A long-lived worker: serves `work`-byte requests for each round it is
/// given and answers with (requests, its CPU ns in the round).
struct Pool {
    orders: mpsc::Sender<(usize, Duration)>,
    results: mpsc::Receiver<(u64, u64)>,
}

impl Pool {
    fn start() -> Self {
        let (orders, rx) = mpsc::channel::<(usize, Duration)>();
        let (tx, results) = mpsc::channel();
        std::thread::Builder::new()
            .name("worker".into())
            .spawn(move || {
                let mut buf = Vec::new();
                while let Ok((work, how_long)) = rx.recv() {
                    if buf.len() != work {
                        buf = (0..work).map(|i| (i * 31) as u8).collect();
                    }
                    let until = Instant::now() + how_long;
                    let cpu = workload::thread_cpu_ns();
                    let (mut n, mut sink) = (0u64, 0u64);
                    while !n.is_multiple_of(64) || Instant::now() < until {
                        sink ^= workload::serve(n, &buf);
                        n += 1;
                    }
                    std::hint::black_box(sink);
                    let _ = tx.send((n, workload::thread_cpu_ns() - cpu));
                }
            })
            .expect("worker starts");
        Self { orders, results }
    }

    fn run(&self, work: usize, how_long: Duration) -> (u64, u64) {
        self.orders.send((work, how_long)).expect("worker alive");
        self.results.recv().expect("worker answers")
    }
}

/// One round: (requests per second, worker CPU ns per request, process CPU
/// ns per request). `settle` runs inside the measured time, after the
/// workload.
fn round(shape: Shape, pool: &Pool, work: usize, settle: impl FnOnce()) -> [f64; 3] {
    let (t, cpu) = (Instant::now(), process_cpu_ns());
    let (n, worker_cpu) = match shape {
        Shape::Pool => pool.run(work, POOL_ROUND),
        Shape::ThreadPerRound => workload::run(1, THREAD_ROUND, work, &AtomicBool::new(false)),
    };
    settle();
    let (wall, cpu) = (t.elapsed(), process_cpu_ns() - cpu);
    let n = n.max(1) as f64;
    [
        n / wall.as_secs_f64(),
        worker_cpu as f64 / n,
        cpu as f64 / n,
    ]
}

/// CPU ns so far of each thread of this process, by thread name, from
/// `/proc/self/task/*/schedstat` (ns run on a CPU).
fn threads_cpu_ns() -> std::collections::BTreeMap<String, u64> {
    let mut by_name = std::collections::BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = task.path();
        let name = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *by_name.entry(name.trim().to_owned()).or_insert(0) += ns;
    }
    by_name
}

fn always_on() -> RecordingConfig {
    let settings = flightrec::options::parse("settings=default")
        .unwrap()
        .settings;
    RecordingConfig::repository_only()
        .disk(false)
        .max_age(Some(Duration::from_secs(30)))
        .max_chunk_age(Some(Duration::from_millis(7500)))
        .settings(settings)
        .attach(true)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs once.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let shape = match std::env::var("FLIGHTREC_BENCH_SHAPE").as_deref() {
        Ok("thread-per-round") => Shape::ThreadPerRound,
        Ok("pool") | Err(_) => Shape::Pool,
        Ok(other) => panic!("FLIGHTREC_BENCH_SHAPE: `{other}`: pool or thread-per-round"),
    };
    let warm_up = match shape {
        Shape::Pool => POOL_WARM_UP,
        Shape::ThreadPerRound => THREAD_WARM_UP,
    };
    let pool = Pool::start();
    let mut summary = Vec::new();
    for work in SIZES {
        round(shape, &pool, work, || ()); // warm-up
        let (mut none, mut on) = (vec![[0.0; 3]; 0], vec![[0.0; 3]; 0]);
        let mut recorder_threads = std::collections::BTreeMap::new();
        for i in 0..rounds {
            let mut recorded = || {
                let rec = Recording::start(always_on()).expect("recording starts");
                std::thread::sleep(warm_up);
                rec.flush().expect("flush");
                let t0 = threads_cpu_ns();
                // The flush at the end writes this round's events: the
                // round pays for all of its recording.
                let b = round(shape, &pool, work, || rec.flush().expect("flush"));
                let t1 = threads_cpu_ns();
                let s = rec.stop().expect("recording stops");
                for (name, ns) in &t1 {
                    if name.starts_with("flightrec") {
                        let d = ns - t0.get(name).copied().unwrap_or(0);
                        *recorder_threads.entry(name.clone()).or_insert(0u64) += d;
                    }
                }
                assert_eq!(s.losses.total_events(), 0, "events lost: {:?}", s.losses);
                b
            };
            // Alternate which variant goes first: a drift in the
            // neighbours' load favours neither.
            let (a, b) = if i % 2 == 0 {
                let a = round(shape, &pool, work, || ());
                (a, recorded())
            } else {
                let b = recorded();
                (round(shape, &pool, work, || ()), b)
            };
            println!(
                "{work:>5} B round {i:2}: none {:>7.0} req/s {:>5.0}/{:>5.0} ns CPU/req (worker/process)   \
                 always-on {:>7.0} req/s {:>5.0}/{:>5.0} ns",
                a[0], a[1], a[2], b[0], b[1], b[2]
            );
            none.push(a);
            on.push(b);
        }
        println!(
            "{work:>5} B: recorder threads' CPU per round (mean): {:?}",
            recorder_threads
                .iter()
                .map(|(n, ns)| (n, format!("{:.2} ms", *ns as f64 / rounds as f64 / 1e6)))
                .collect::<Vec<_>>()
        );
        let m = |v: &[[f64; 3]], k: usize| median(v.iter().map(|r| r[k]).collect());
        let paired = |k: usize, slower_is_bigger: bool| {
            median(
                none.iter()
                    .zip(&on)
                    .map(|(a, b)| {
                        if slower_is_bigger {
                            (b[k] / a[k] - 1.0) * 100.0
                        } else {
                            (a[k] / b[k] - 1.0) * 100.0
                        }
                    })
                    .collect(),
            )
        };
        summary.push(format!(
            "\"{work}\": {{\"req_per_s\": [{:.0}, {:.0}], \"throughput_loss_pct\": {:.2}, \
             \"worker_cpu_ns\": [{:.0}, {:.0}], \"worker_cpu_pct\": {:.2}, \
             \"process_cpu_ns\": [{:.0}, {:.0}], \"process_cpu_pct\": {:.2}}}",
            m(&none, 0),
            m(&on, 0),
            paired(0, false),
            m(&none, 1),
            m(&on, 1),
            paired(1, true),
            m(&none, 2),
            m(&on, 2),
            paired(2, true),
        ));
    }
    println!(
        "always_on summary: {{\"shape\": \"{}\", {}}}",
        shape.name(),
        summary.join(", ")
    );
}
