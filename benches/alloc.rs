//! The cost of `flightrec::alloc::SamplingAllocator` on a malloc-heavy
//! loop, against the bare allocator it wraps, in paired rounds on one
//! thread (thread CPU time, `CLOCK_THREAD_CPUTIME_ID`; the ratio wrapped /
//! bare is taken per round, and the median reported with the quartiles):
//!
//! * `floor`: a wrapper that only forwards to `System`: what the method
//!   itself shows (the loop compiled twice, code alignment, pairing);
//! * `off`: no recording (the wrapper counts nothing; target ≤ 1.02×);
//! * `default`: a recording samples allocations at the default settings
//!   (`jdk.ObjectAllocationSample`, `jdk.OldObjectSample` and
//!   `jdk.ThreadAllocationStatistics` enabled, `throttle=150/s`, adapted
//!   for a second before the rounds; target ≤ 1.05×);
//! * `default, sampled blocks alive`: the same with 48 untouched 64 MiB
//!   blocks kept alive (most of them sampled and tracked), so every free
//!   asks the leak table, as in a program with long-lived data;
//! * `recording, allocation events off`: a recording of the same settings
//!   with the three allocation events disabled: what a running recording
//!   (its sampler's signals, its threads sharing the caches) does to the
//!   ratio without any allocation work;
//! * `512k`: sampling with `throttle=off`: one sample per 512 KiB on
//!   average (the wrapper's own interval), far more samples than 150/s at
//!   this loop's rate: what a sample (its stack capture) costs shows here.
//!
//! The bare allocator is `System`, the allocator the wrapper wraps, called
//! through the same generic `GlobalAlloc` call as the wrapper (both
//! monomorphised into the same loop). The wrapper is called directly, not
//! installed as the global allocator, so all variants run in one process.
//! Each batch allocates 64 blocks of mixed sizes (8 B to 4 KiB, log-uniform,
//! so most are small; a fixed sequence), grows every fourth by `realloc` to
//! twice its size (as a `Vec` does), writes a byte of each, and frees them
//! in a shuffled order.
//!
//! The allocation thread's work (interning stacks, writing the events, the
//! adaptive throttle) runs on its own thread and is not in the measured
//! thread's CPU time; the process's CPU time per operation is reported
//! beside it.
//!
//! Prints a table and a last line `alloc summary: {json}`. Under `cargo
//! test --benches` it runs a small smoke version.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use flightrec::alloc::SamplingAllocator;
use flightrec::{Recording, RecordingConfig, Settings};
use flightrec_testkit::measure::{paired, process_cpu_ns, thread_cpu_ns};

static WRAPPED: SamplingAllocator<System> = SamplingAllocator::new(System);

/// A wrapper that only forwards: its row is the floor of the method (the
/// loop compiled twice, the pairing), not a cost of flightrec's.
struct Forward<A>(A);

// SAFETY: every method forwards to `A` unchanged.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Forward<A> {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.alloc(l) }
    }
    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(p, l) }
    }
    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.realloc(p, l, n) }
    }
}

static FORWARD: Forward<System> = Forward(System);

const BATCH: usize = 64;

/// The batch's fixed workload: sizes, which blocks grow, the free order.
struct Work {
    sizes: [usize; BATCH],
    grow: [bool; BATCH],
    free_order: [usize; BATCH],
}

fn work() -> Work {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    // 2^(3 + 9u): 8 B ..= 4 KiB, log-uniform.
    let sizes = std::array::from_fn(|_| {
        let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
        (2f64.powf(3.0 + 9.0 * u) as usize).max(8)
    });
    let grow = std::array::from_fn(|i| i % 4 == 3);
    let mut free_order: [usize; BATCH] = std::array::from_fn(|i| i);
    for i in (1..BATCH).rev() {
        free_order.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    Work {
        sizes,
        grow,
        free_order,
    }
}

/// Allocations, reallocations and frees in one batch.
const OPS_PER_BATCH: usize = BATCH + BATCH / 4 + BATCH;

/// `batches` batches through `a`; thread CPU ns.
fn segment<A: GlobalAlloc>(a: &A, w: &Work, batches: usize) -> f64 {
    let mut ptrs = [(std::ptr::null_mut::<u8>(), 0usize); BATCH];
    let t0 = thread_cpu_ns();
    for _ in 0..batches {
        for (i, p) in ptrs.iter_mut().enumerate() {
            let size = w.sizes[i];
            let l = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: a non-zero layout.
            let mut q = unsafe { a.alloc(l) };
            assert!(!q.is_null());
            let mut size = size;
            if w.grow[i] {
                // SAFETY: `q` was allocated by `a` with `l`; the new size is
                // non-zero and does not overflow.
                q = unsafe { a.realloc(black_box(q), l, size * 2) };
                assert!(!q.is_null());
                size *= 2;
            }
            // SAFETY: one byte of the block just allocated.
            unsafe { q.write_volatile(1) };
            *p = (q, size);
        }
        for &i in &w.free_order {
            let (p, size) = ptrs[i];
            let l = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: allocated above by `a` with this layout.
            unsafe { a.dealloc(black_box(p), l) };
        }
    }
    (thread_cpu_ns() - t0) as f64
}

/// One variant's paired rounds.
struct Compared {
    /// wrapped / bare per round: median, first and third quartile.
    ratio: (f64, f64, f64),
    /// Median thread CPU ns per operation, bare and wrapped.
    bare_ns: f64,
    wrapped_ns: f64,
    /// The process's CPU ns per operation over the rounds (every thread).
    process_ns: f64,
}

/// Paired rounds (`flightrec_testkit::measure::paired`): per round one
/// segment through `System` and one through the wrapper, which goes first
/// alternating, after one of each as a warm-up (caches, the thread's
/// countdown).
fn compare(rounds: usize, batches: usize) -> Compared {
    compare_with(&WRAPPED, rounds, batches)
}

fn compare_with<W: GlobalAlloc>(wrapper: &W, rounds: usize, batches: usize) -> Compared {
    let w = work();
    let p0 = process_cpu_ns();
    let p = paired(
        rounds,
        || segment(&System, &w, batches),
        || segment(wrapper, &w, batches),
    );
    let ops = (batches * OPS_PER_BATCH) as f64;
    // The warm-up round included.
    let process_ns = (process_cpu_ns() - p0) as f64 / (2.0 * (rounds + 1) as f64 * ops);
    Compared {
        ratio: (p.ratio, p.quartiles.0, p.quartiles.1),
        bare_ns: p.a / ops,
        wrapped_ns: p.b / ops,
        process_ns,
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// `--count=off|counting`: runs 2000 batches through each allocator (20
/// interleaved runs of 100; no timing) for an instruction count under callgrind
/// (`scripts/callgrind-alloc.sh`); `counting` with a recording that asks
/// for allocation statistics only, so the countdown runs and never samples.
fn count_only(which: &str) {
    let dir = std::env::temp_dir().join(format!("flightrec-alloc-count-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let rec = (which == "counting").then(|| {
        let mut settings = Settings::new();
        for event in ["jdk.ObjectAllocationSample", "jdk.OldObjectSample"] {
            settings.set(event, "enabled", "false").expect("setting");
        }
        Recording::start(
            RecordingConfig::repository_only()
                .repository(dir.join("repo"))
                .settings(settings),
        )
        .expect("start recording")
    });
    let w = work();
    // Interleaved, so both see the C allocator in the same states (the
    // recording's threads allocate too).
    for _ in 0..20 {
        segment(&System, &w, 100);
        segment(&WRAPPED, &w, 100);
    }
    if let Some(rec) = rec {
        rec.stop().expect("stop");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    if let Some(which) =
        std::env::args().find_map(|a| a.strip_prefix("--count=").map(str::to_owned))
    {
        return count_only(&which);
    }
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, batches) = if full { (101, 1000) } else { (3, 20) };
    let load_before = loadavg();
    let floor = compare_with(&FORWARD, rounds, batches);
    let off = compare(rounds, batches);

    let dir = std::env::temp_dir().join(format!("flightrec-alloc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    // Runs the loop on the wrapped allocator for a while: lets an adaptive
    // throttle settle on this loop's rate before a recording is measured.
    let settle = || {
        let until = std::time::Instant::now()
            + std::time::Duration::from_millis(if full { 1500 } else { 300 });
        let w = work();
        while std::time::Instant::now() < until {
            segment(&WRAPPED, &w, batches);
        }
    };
    let mut lost = 0;
    let mut recorded = |set: &[(&str, &str, &str)]| {
        let mut settings = Settings::new();
        for &(event, setting, value) in set {
            settings.set(event, setting, value).expect("setting");
        }
        let rec = Recording::start(
            RecordingConfig::repository_only()
                .repository(dir.join("repo"))
                .max_memory(256 << 20)
                .settings(settings),
        )
        .expect("start recording");
        settle();
        let r = compare(rounds, batches);
        lost += rec.stop().expect("stop").losses.total_events();
        r
    };
    let on = recorded(&[]);
    // The same with sampled blocks alive, as a program's long-lived data
    // is: every free then asks the leak table. 48 blocks of 64 MiB, never
    // touched (no memory behind them), allocated once the throttle has
    // settled: most are sampled.
    let resident = {
        let rec = Recording::start(
            RecordingConfig::repository_only()
                .repository(dir.join("repo"))
                .max_memory(256 << 20),
        )
        .expect("start recording");
        settle();
        let big = Layout::from_size_align(64 << 20, 8).unwrap();
        // SAFETY: a non-zero layout; each block is freed below with it.
        let kept: Vec<*mut u8> = (0..48).map(|_| unsafe { WRAPPED.alloc(big) }).collect();
        let r = compare(rounds, batches);
        for p in kept.into_iter().filter(|p| !p.is_null()) {
            // SAFETY: allocated above with `big`.
            unsafe { WRAPPED.dealloc(p, big) };
        }
        (r, rec.stop().expect("stop").losses.total_events())
    };
    let quiet = recorded(&[
        ("jdk.ObjectAllocationSample", "enabled", "false"),
        ("jdk.OldObjectSample", "enabled", "false"),
        ("jdk.ThreadAllocationStatistics", "enabled", "false"),
    ]);
    let dense = recorded(&[("jdk.ObjectAllocationSample", "throttle", "off")]);
    let _ = std::fs::remove_dir_all(&dir);
    let (resident, resident_lost) = resident;
    lost += resident_lost;
    let load_after = loadavg();

    println!(
        "| variant | bare ns/op | wrapped ns/op | median ratio (quartiles) | process ns/op | target |"
    );
    println!("|---|---|---|---|---|---|");
    let row = |name: &str, c: &Compared, target: &str| {
        println!(
            "| {name} | {:.2} | {:.2} | {:.3} ({:.3}–{:.3}) | {:.2} | {target} |",
            c.bare_ns, c.wrapped_ns, c.ratio.0, c.ratio.1, c.ratio.2, c.process_ns
        );
    };
    row("floor (a wrapper that only forwards)", &floor, "—");
    row("off (no recording)", &off, "≤ 1.02");
    row("default (sampling, throttle 150/s)", &on, "≤ 1.05");
    row("default, sampled blocks alive", &resident, "—");
    row("recording, allocation events off", &quiet, "—");
    row("512k (sampling, throttle off)", &dense, "—");
    println!("load average (1 min): {load_before} before, {load_after} after");
    let json = |c: &Compared| {
        format!(
            "{{\"ratio\": {:.4}, \"q1\": {:.4}, \"q3\": {:.4}, \"bare_ns\": {:.2}, \"wrapped_ns\": {:.2}, \"process_ns\": {:.2}}}",
            c.ratio.0, c.ratio.1, c.ratio.2, c.bare_ns, c.wrapped_ns, c.process_ns
        )
    };
    println!(
        "alloc summary: {{\"off_ratio\": {:.4}, \"default_ratio\": {:.4}, \"dense_ratio\": {:.4}, \"floor\": {}, \"off\": {}, \"default\": {}, \"default_resident\": {}, \"recording_quiet\": {}, \"dense\": {}, \"rounds\": {rounds}, \"lost\": {lost}, \"load\": [\"{load_before}\", \"{load_after}\"]}}",
        off.ratio.0,
        on.ratio.0,
        dense.ratio.0,
        json(&floor),
        json(&off),
        json(&on),
        json(&resident),
        json(&quiet),
        json(&dense),
    );
}
