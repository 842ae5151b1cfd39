//! A leaked block that was sampled and then resized or moved by `realloc`
//! is still reported as a leak candidate (`jdk.OldObjectSample`), at its
//! new size, from the site of its first allocation.
//!
//! Each of 64 leaked blocks per site is first allocated at 256 KiB (sampled
//! with probability 1 - e^-4 ≈ 0.98 at a 64 KiB mean interval) and then
//! shrunk by `shrink_to_fit` to a size that is almost never sampled by
//! itself. At one site the blocks are bytes (glibc shrinks them in place);
//! at the other they are over-aligned lines, which `System` reallocates by
//! a new allocation and a copy, so every one moves. A wrapper that dropped
//! tracking at `realloc` reports almost none of them.

use std::alloc::System;

use flightrec::alloc::SamplingAllocator;
use flightrec::{Recording, RecordingConfig, Settings};

#[global_allocator]
static GLOBAL: SamplingAllocator<System> = SamplingAllocator::with_mean_interval(System, 64 << 10);

const LEAKED: usize = 64;
const KEPT: usize = 10;

/// A cache line: alignment above `System`'s `malloc` guarantee.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Line(#[allow(dead_code)] [u8; 64]);

/// Leaks `LEAKED` vectors of `KEPT` `T`s, first allocated at 256 KiB;
/// how many moved when shrunk.
#[inline(never)]
fn shrink_and_leak<T: Copy>(value: T) -> usize {
    let mut moved = 0;
    for _ in 0..LEAKED {
        let mut v: Vec<T> = Vec::with_capacity((256 << 10) / size_of::<T>());
        let before = v.as_ptr();
        v.extend(std::iter::repeat_n(value, KEPT));
        v.shrink_to_fit();
        moved += usize::from(v.as_ptr() != before);
        std::hint::black_box(v.leak());
    }
    moved
}

#[test]
fn a_block_moved_by_realloc_stays_a_leak_candidate() {
    let dir = flightrec_testkit::temp_dir("alloc_realloc_leak");
    let out = dir.join("leak.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.ObjectAllocationSample", "throttle", "off")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    let in_place = shrink_and_leak(7u8);
    let moved = shrink_and_leak(Line([7; 64]));
    // The allocation thread takes the samples in (every 20 ms).
    std::thread::sleep(std::time::Duration::from_millis(200));
    rec.stop().unwrap();
    assert_eq!(moved, LEAKED, "over-aligned blocks move when shrunk");
    eprintln!("{in_place} of {LEAKED} byte blocks moved");

    let events = flightrec_testkit::print_json(&out);
    let mut reported = [0usize; 2];
    for e in events.as_array().expect("events") {
        if e["type"].as_str() != Some("jdk.OldObjectSample") {
            continue;
        }
        let v = &e["values"];
        let frames = flightrec_testkit::samples::method_names(v);
        if !frames.contains(&"shrink_and_leak") {
            continue;
        }
        // The two sites share the generic function (their own frames may
        // be tail calls): their sizes tell them apart.
        match v["objectSize"].as_u64() {
            Some(s) if s == KEPT as u64 => reported[0] += 1,
            Some(s) if s == (KEPT * 64) as u64 => reported[1] += 1,
            _ => panic!("not a size after realloc: {v:#}"),
        }
    }
    eprintln!("reported (in place, moved): {reported:?} of {LEAKED} each");
    // 64 draws of p ≈ 0.98: fewer than 56 has probability below 1e-5.
    for n in reported {
        assert!(
            (56..=LEAKED).contains(&n),
            "{reported:?} of {LEAKED} shrunk leaks reported"
        );
    }
    let view = flightrec_testkit::view("memory-leaks-by-site", &out);
    assert!(view.contains("shrink_and_leak"), "{view}");
}
