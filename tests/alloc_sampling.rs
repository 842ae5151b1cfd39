//! `flightrec::alloc::SamplingAllocator` as this test binary's global
//! allocator, sampling densely (one sample per 256 bytes on average), so
//! the recorder's own allocations (stack interning, symbolization, chunk
//! buffers) and the program's run through the sampler many thousands of
//! times while a recording runs: nothing deadlocks or recurses, and the
//! file is whole. Types given with `with_type`/`boxed` name the class.

use std::alloc::System;
use std::time::{Duration, Instant};

use flightrec::alloc::SamplingAllocator;
use flightrec::{Recording, RecordingConfig, Settings};

#[global_allocator]
static GLOBAL: SamplingAllocator<System> = SamplingAllocator::with_mean_interval(System, 256);

/// A type whose boxes are named by `boxed`.
#[allow(dead_code)]
struct Order {
    id: u64,
    lines: [u32; 30],
}

#[inline(never)]
fn make_orders(n: u64) -> u64 {
    let mut sum = 0;
    for id in 0..n {
        let o = flightrec::alloc::boxed(Order { id, lines: [1; 30] });
        sum += std::hint::black_box(&o).id;
    }
    sum
}

#[inline(never)]
fn churn(until: Instant) -> usize {
    let mut n = 0;
    while Instant::now() < until {
        let mut v = Vec::new();
        for i in 0..64u32 {
            v.push(i.to_string());
        }
        n += std::hint::black_box(v).len();
    }
    n
}

#[test]
fn dense_sampling_with_the_recorder_allocating_neither_deadlocks_nor_recurses() {
    let dir = flightrec_testkit::temp_dir("alloc_sampling");
    let out = dir.join("dense.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.ObjectAllocationSample", "throttle", "off")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    // The boxed orders come first, in small batches the allocation thread
    // drains in between: once the churners run, the 1024-sample queue is
    // full most of the time and a burst of 2000 boxes could be dropped
    // whole (counted as `AllocationSampleDropped`, but then no `Order`
    // would name a class).
    let mut orders = 0;
    for _ in 0..20 {
        orders += make_orders(100);
        std::thread::sleep(Duration::from_millis(5));
    }
    let until = Instant::now() + Duration::from_secs(2);
    let workers: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(move || churn(until)))
        .collect();
    // Dumps make the recorder allocate (files, constants) while samples
    // come in.
    for i in 0..3 {
        rec.dump(dir.join(format!("dump{i}.jfr"))).unwrap();
    }
    for w in workers {
        assert!(w.join().unwrap() > 0);
    }
    assert_eq!(orders, 20 * (0..100).sum::<u64>());
    let summary = rec.stop().unwrap();
    eprintln!("losses: {:?}", summary.losses);

    flightrec_testkit::assert_prints(&out);
    let counts = flightrec_testkit::summary(&out).counts;
    let samples = counts
        .get("jdk.ObjectAllocationSample")
        .copied()
        .unwrap_or(0);
    assert!(samples > 10_000, "{samples} allocation samples");
    let by_class = flightrec_testkit::view("allocation-by-class", &out);
    assert!(
        by_class.contains("alloc_sampling.Order"),
        "the boxed type is not a class:\n{by_class}"
    );
    let by_site = flightrec_testkit::view("allocation-by-site", &out);
    for site in ["alloc_sampling.churn()", "alloc_sampling.make_orders()"] {
        assert!(by_site.contains(site), "{site} missing:\n{by_site}");
    }
}
