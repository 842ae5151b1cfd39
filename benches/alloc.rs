//! The cost of `flightrec::alloc::SamplingAllocator` on a malloc-heavy
//! loop, against the bare allocator it wraps (`System`), in paired rounds
//! on one thread (thread CPU time, `CLOCK_THREAD_CPUTIME_ID`; the ratio
//! wrapped / bare is taken per round, and the median reported):
//!
//! * `off`: no recording (the countdown runs, sampling is off; target
//!   ≤ 1.02×);
//! * `default`: a recording samples allocations at the default settings
//!   (`jdk.ObjectAllocationSample` and `jdk.OldObjectSample` enabled,
//!   `throttle=150/s`, adapted for a second before the rounds; target
//!   ≤ 1.05×);
//! * `512k`: the same with `throttle=off`: one sample per 512 KiB on
//!   average (the wrapper's own interval), far more samples than 150/s at
//!   this loop's rate: what a sample (its stack capture) costs shows here.
//!
//! The allocation thread's work (interning stacks, writing the events) is
//! on its own thread and not in this thread's CPU time.
//!
//! The wrapper is called directly (`GlobalAlloc::alloc`/`dealloc`), not
//! installed as the global allocator, so both variants run in one process.
//! Each segment allocates 64 blocks of mixed sizes (16 B to 4 KiB, a fixed
//! sequence) and frees them, many times.
//!
//! Prints a table and a last line `alloc summary: {json}`. Under `cargo
//! test --benches` it runs a small smoke version.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use flightrec::alloc::SamplingAllocator;
use flightrec::{Recording, RecordingConfig, Settings};
use flightrec_testkit::measure::{median, thread_cpu_ns};

static WRAPPED: SamplingAllocator<System> = SamplingAllocator::new(System);

const BATCH: usize = 64;

fn sizes() -> [usize; BATCH] {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    std::array::from_fn(|_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        16 << (s % 9) // 16 B ..= 4 KiB
    })
}

/// `batches` rounds of 64 allocations and frees through `a`; thread CPU ns.
fn segment<A: GlobalAlloc>(a: &A, sizes: &[usize; BATCH], batches: usize) -> f64 {
    let mut ptrs = [std::ptr::null_mut::<u8>(); BATCH];
    let t0 = thread_cpu_ns();
    for _ in 0..batches {
        for (p, &size) in ptrs.iter_mut().zip(sizes) {
            let l = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: a non-zero layout.
            *p = unsafe { a.alloc(l) };
            assert!(!p.is_null());
            // SAFETY: one byte of the block just allocated.
            unsafe { p.write_volatile(1) };
        }
        for (p, &size) in ptrs.iter().zip(sizes) {
            let l = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: allocated above by `a` with this layout.
            unsafe { a.dealloc(black_box(*p), l) };
        }
    }
    (thread_cpu_ns() - t0) as f64
}

/// Paired rounds: the median of wrapped/bare and each variant's median ns
/// per allocation+free.
fn compare(rounds: usize, batches: usize) -> (f64, f64, f64) {
    let sizes = sizes();
    let (mut ratios, mut bare, mut wrapped) = (Vec::new(), Vec::new(), Vec::new());
    // Warm-up: both paths, caches, the thread's countdown.
    segment(&System, &sizes, batches);
    segment(&WRAPPED, &sizes, batches);
    for r in 0..rounds {
        // Alternate which goes first.
        let (b, w) = if r % 2 == 0 {
            let b = segment(&System, &sizes, batches);
            (b, segment(&WRAPPED, &sizes, batches))
        } else {
            let w = segment(&WRAPPED, &sizes, batches);
            (segment(&System, &sizes, batches), w)
        };
        ratios.push(w / b);
        let per = (batches * BATCH) as f64;
        bare.push(b / per);
        wrapped.push(w / per);
    }
    (median(&mut ratios), median(&mut bare), median(&mut wrapped))
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, batches) = if full { (41, 2000) } else { (3, 20) };
    let off = compare(rounds, batches);

    let dir = std::env::temp_dir().join(format!("flightrec-alloc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let mut lost = 0;
    let mut recorded = |throttle: Option<&str>| {
        let mut settings = Settings::new();
        if let Some(t) = throttle {
            settings
                .set("jdk.ObjectAllocationSample", "throttle", t)
                .expect("throttle");
        }
        let rec = Recording::start(
            RecordingConfig::repository_only()
                .repository(dir.join("repo"))
                .max_memory(256 << 20)
                .settings(settings),
        )
        .expect("start recording");
        // Lets an adaptive throttle settle on this loop's rate.
        let until = std::time::Instant::now()
            + std::time::Duration::from_millis(if full { 1500 } else { 300 });
        let sizes = sizes();
        while std::time::Instant::now() < until {
            segment(&WRAPPED, &sizes, batches);
        }
        let r = compare(rounds, batches);
        lost += rec.stop().expect("stop").losses.total_events();
        r
    };
    let on = recorded(None);
    let dense = recorded(Some("off"));
    let _ = std::fs::remove_dir_all(&dir);

    println!("| variant | bare ns/op | wrapped ns/op | median ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| off (no recording) | {:.2} | {:.2} | {:.3} | ≤ 1.02 |",
        off.1, off.2, off.0
    );
    println!(
        "| default (sampling, throttle 150/s) | {:.2} | {:.2} | {:.3} | ≤ 1.05 |",
        on.1, on.2, on.0
    );
    println!(
        "| 512k (sampling, throttle off) | {:.2} | {:.2} | {:.3} | — |",
        dense.1, dense.2, dense.0
    );
    println!(
        "alloc summary: {{\"off_ratio\": {:.4}, \"default_ratio\": {:.4}, \"dense_ratio\": {:.4}, \"bare_ns\": {:.2}, \"off_ns\": {:.2}, \"default_ns\": {:.2}, \"dense_ns\": {:.2}, \"rounds\": {rounds}, \"lost\": {lost}}}",
        off.0, on.0, dense.0, off.1, off.2, on.2, dense.2,
    );
}
