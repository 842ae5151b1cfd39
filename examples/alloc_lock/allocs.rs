//! The allocation half of the `alloc_lock` workload: four sites of distinct
//! sizes and rates, one of which leaks.
//!
//! Every round of a worker allocates (and, but for the leak, frees) the same
//! amounts, so the sites' shares are fixed whatever the machine's speed:
//!
//! | site | per round | freed |
//! |---|---|---|
//! | `fill_large_blocks` | 1 × 256 KiB | yes |
//! | `churn_buffers` | 24 × 4 KiB | yes |
//! | `build_small_strings` | 1000 × 48 B | yes |
//! | `leak_records` | 4 × 1 KiB | never |

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// What `jfr view allocation-by-site` prints for each site's function.
pub(crate) const LARGE: &str = "alloc_lock.allocs.fill_large_blocks()";
pub(crate) const BUFFERS: &str = "alloc_lock.allocs.churn_buffers()";
pub(crate) const SMALL: &str = "alloc_lock.allocs.build_small_strings()";
pub(crate) const LEAK: &str = "alloc_lock.allocs.leak_records()";

const LARGE_SIZE: usize = 256 << 10;
const BUFFER_SIZE: usize = 4 << 10;
const BUFFERS_PER_ROUND: usize = 24;
const SMALL_SIZE: usize = 48;
const SMALLS_PER_ROUND: usize = 1000;
const LEAK_SIZE: usize = 1 << 10;
const LEAKS_PER_ROUND: usize = 4;

/// Rounds per second per worker (paced, so the sample rate stays modest
/// on a loaded machine).
const ROUNDS_PER_SECOND: u32 = 200;

/// Bytes each site allocated, and leaked.
#[derive(Debug, Default, Clone)]
pub(crate) struct Totals {
    pub(crate) allocated: BTreeMap<String, u64>,
    pub(crate) leaked: BTreeMap<String, u64>,
}

#[inline(never)]
fn fill_large_blocks() -> usize {
    let v: Vec<u8> = Vec::with_capacity(LARGE_SIZE);
    black_box(&v);
    v.capacity()
}

#[inline(never)]
fn churn_buffers() -> usize {
    let mut total = 0;
    for _ in 0..BUFFERS_PER_ROUND {
        let v: Vec<u8> = Vec::with_capacity(BUFFER_SIZE);
        black_box(&v);
        total += v.capacity();
    }
    total
}

#[inline(never)]
fn build_small_strings() -> usize {
    let mut total = 0;
    for _ in 0..SMALLS_PER_ROUND {
        let s: Vec<u8> = Vec::with_capacity(SMALL_SIZE);
        black_box(&s);
        total += s.capacity();
    }
    total
}

#[inline(never)]
fn leak_records() -> usize {
    let mut total = 0;
    for _ in 0..LEAKS_PER_ROUND {
        let v: Vec<u8> = Vec::with_capacity(LEAK_SIZE);
        total += v.capacity();
        black_box(v.leak());
    }
    total
}

/// One worker: paced rounds until `until`.
fn worker(until: Instant) -> Totals {
    let mut t = Totals::default();
    let period = Duration::from_secs(1) / ROUNDS_PER_SECOND;
    let mut next = Instant::now();
    let (mut large, mut buffers, mut small, mut leak) = (0u64, 0u64, 0u64, 0u64);
    while Instant::now() < until {
        large += fill_large_blocks() as u64;
        buffers += churn_buffers() as u64;
        small += build_small_strings() as u64;
        leak += leak_records() as u64;
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    t.allocated.insert(LARGE.into(), large);
    t.allocated.insert(BUFFERS.into(), buffers);
    t.allocated.insert(SMALL.into(), small);
    t.allocated.insert(LEAK.into(), leak);
    t.leaked.insert(LEAK.into(), leak);
    t
}

/// Runs `threads` workers until `until`; the sums of their totals.
pub(crate) fn run(threads: usize, until: Instant) -> Totals {
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("alloc-worker-{i}"))
                .spawn(move || worker(until))
                .expect("spawn worker")
        })
        .collect();
    let mut sum = Totals::default();
    for h in handles {
        let t = h.join().expect("worker panicked");
        for (k, v) in t.allocated {
            *sum.allocated.entry(k).or_default() += v;
        }
        for (k, v) in t.leaked {
            *sum.leaked.entry(k).or_default() += v;
        }
    }
    sum
}
