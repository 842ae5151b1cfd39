//! The service-like workload of `always_on` and `benches/always_on.rs`:
//! worker threads serve requests, each a few microseconds of hashing, and
//! every request commits one `com.example.Request` duration event (no
//! threshold: the recorder sees every request, the costliest case).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec::Event;

/// One served request.
#[derive(Event)]
#[event(
    name = "com.example.Request",
    label = "Request",
    category = ["Example", "Server"],
    duration,
    threshold = "0 ms"
)]
pub(crate) struct Request<'a> {
    #[event(label = "Path")]
    pub(crate) path: &'a str,
    #[event(label = "Status")]
    pub(crate) status: u16,
    #[event(label = "Response Size", data_amount)]
    pub(crate) bytes: u64,
}

const PATHS: [&str; 4] = ["/", "/api/v1/items", "/api/v1/items/42", "/health"];

/// Serves one request: hashes `work` bytes (FNV-1a over a buffer) and
/// commits its event. Returns the hash, so the work cannot be optimised out.
#[inline(never)]
pub(crate) fn serve(i: u64, buf: &[u8]) -> u64 {
    let timer = Request::begin();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ i;
    for &b in buf {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    timer.commit(&Request {
        path: PATHS[(i % 4) as usize],
        status: if h.is_multiple_of(50) { 500 } else { 200 },
        bytes: h % 8192,
    });
    h
}

/// Runs `threads` workers until `stop` is set or `for_how_long` passed;
/// returns the requests served and the workers' CPU time in nanoseconds.
pub(crate) fn run(
    threads: usize,
    for_how_long: Duration,
    work: usize,
    stop: &AtomicBool,
) -> (u64, u64) {
    let served = AtomicU64::new(0);
    let cpu = AtomicU64::new(0);
    let until = Instant::now() + for_how_long;
    std::thread::scope(|s| {
        for t in 0..threads {
            let (served, cpu) = (&served, &cpu);
            s.spawn(move || {
                let cpu_at_start = thread_cpu_ns();
                let buf: Vec<u8> = (0..work).map(|i| (i * 31 + t) as u8).collect();
                let mut n = 0u64;
                let mut sink = 0u64;
                while !stop.load(Ordering::Relaxed)
                    && (!n.is_multiple_of(64) || Instant::now() < until)
                {
                    sink ^= serve(n, &buf);
                    n += 1;
                }
                std::hint::black_box(sink);
                served.fetch_add(n, Ordering::Relaxed);
                cpu.fetch_add(thread_cpu_ns() - cpu_at_start, Ordering::Relaxed);
            });
        }
    });
    (served.load(Ordering::Relaxed), cpu.load(Ordering::Relaxed))
}

/// This thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for writes; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
