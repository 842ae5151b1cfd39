//! Model 6: the sampler's signal-to-consumer queue (`sampler/queue.rs`).
//!
//! The sampler thread and the handler are both spawned loom threads (loom
//! explores the main thread's interleavings less thoroughly).
//!
//! **Loom has no model of signals.** The timer signal's handler is modelled
//! as an extra loom thread that touches only what the real handler touches:
//! `SlotTable::admit` (slot pointer, generation, `tid`), the `in_handler`
//! flag and `SampleQueue::push_with` (the preallocated entry, `tail`, `lost`);
//! unwinding is replaced by filling the frames with a pattern. A real
//! handler runs *instead of* its thread, one at a time per thread (the
//! signal is blocked while it runs); a separate loom thread may interleave
//! in every way, so this over-approximates the real interleavings: a model
//! that passes also holds for the real handler.
//!
//! Invariants:
//! * every sample the handler queued is drained exactly once, in order and
//!   whole (loom checks the entry accesses through the queue's loom cells);
//!   every sample it could not queue is counted lost;
//! * after the sampler released a slot (retired it, then drained it), no
//!   signal of the released owner leaves a sample in the slot's queue: a
//!   sample it queued is drained once, by the release, as the released
//!   thread's.
//!
//! Negative control: with `--cfg flightrec_loom_weaken="skip_retire_wait"`
//! (the release does not wait for a handler already inside the slot) the
//! release model strands a sample for the next owner.
#![cfg(flightrec_loom)]

mod common;

use common::model;
use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{QUEUE_CAPACITY, SampleSlots};

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

/// The slot table with one slot assigned to thread 4242 (its index and
/// generation), made on a loom thread with a larger stack: the slot holds
/// the unwinder's scratch (framehop's cache), which is built in place and
/// needs more than the 32 KiB of a loom thread's default stack. The model's
/// main thread only waits for it, so no interleaving is added.
fn assigned_slots() -> (Arc<SampleSlots>, usize, u64) {
    thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let slots = Arc::new(SampleSlots::new());
            let (index, generation) = slots.assign(4242).expect("a free slot");
            (slots, index, generation)
        })
        .expect("spawn")
        .join()
        .expect("the table is built")
}

fn check_whole(samples: &[(i64, Vec<u64>)]) {
    for (ticks, frames) in samples {
        assert_eq!(frames.len(), *ticks as usize, "torn sample {ticks}");
        assert!(
            frames.iter().all(|&f| f == *ticks as u64),
            "torn sample {ticks}: {frames:?}"
        );
    }
}

/// The handler queues `n` samples (more than the queue holds) while the
/// sampler drains once; a final drain after.
fn handler_races_drain(n: i64) {
    let (slots, index, generation) = assigned_slots();
    let handler = {
        let slots = slots.clone();
        thread::spawn(move || {
            (1..=n)
                .filter(|&t| slots.handler(index, generation, t, t as u16))
                .collect::<Vec<i64>>()
        })
    };
    // The sampler thread's pass, racing the handler.
    let sampler = {
        let slots = slots.clone();
        thread::spawn(move || slots.drain(index))
    };
    let mut drained = sampler.join().unwrap();
    let queued = handler.join().unwrap();
    drained.extend(slots.drain(index));
    check_whole(&drained);
    let ticks: Vec<i64> = drained.iter().map(|s| s.0).collect();
    assert_eq!(ticks, queued, "queued samples are drained once, in order");
    assert_eq!(
        slots.take_lost(index),
        (n as u64) - queued.len() as u64,
        "every sample not queued is counted lost"
    );
}

#[test]
fn signal_races_sampler_drain() {
    model(BOUND, || handler_races_drain(QUEUE_CAPACITY as i64 + 1));
}

/// A late signal of a thread races the sampler releasing its slot
/// (`Consumer::release`: a drain, then `SampleSlot::retire` and the last
/// drain); then the slot is reassigned to another thread, whose first drain
/// must find nothing of the released thread.
fn late_signal_races_release() {
    let (slots, index, generation) = assigned_slots();
    let handler = {
        let slots = slots.clone();
        thread::spawn(move || slots.handler(index, generation, 1, 1))
    };
    let sampler = {
        let slots = slots.clone();
        thread::spawn(move || {
            let mut drained = slots.drain(index);
            drained.extend(slots.release(index));
            drained
        })
    };
    let mut drained = sampler.join().unwrap();
    let queued = handler.join().unwrap();
    let (again, _) = slots.assign(4343).expect("the released slot");
    assert_eq!(again, index);
    let stranded = slots.drain(index);
    check_whole(&drained);
    check_whole(&stranded);
    assert!(
        stranded.is_empty(),
        "a sample of the released thread (queued: {queued}) was left in the slot \
         and drained as the new owner's"
    );
    drained.extend(stranded);
    let ticks: Vec<i64> = drained.iter().map(|s| s.0).collect();
    let expected: Vec<i64> = if queued { vec![1] } else { Vec::new() };
    assert_eq!(
        ticks, expected,
        "a queued sample is drained once, as its thread's"
    );
}

/// The late signal passes `admit` (current generation, `tid` set) while the
/// sampler releases the slot; the handler may push only after the sampler
/// reset `tid`. `retire` waits for handlers inside the slot (the handler
/// enters before it checks `tid`; each side fences between its store and its
/// load), so that sample is taken by the release's last drain, never left
/// for the slot's next owner. A late signal after `timer_delete` makes this
/// race reachable in production; it was this model's finding before
/// `retire` existed.
#[test]
fn late_signal_races_slot_release() {
    model(BOUND, late_signal_races_release);
}

/// Negative control: with `--cfg flightrec_loom_weaken="skip_retire_wait"`
/// `retire` resets `tid` without waiting for handlers inside the slot; the
/// model above must then find a sample stranded in the released slot.
#[cfg(flightrec_loom_weaken = "skip_retire_wait")]
#[test]
fn control_skip_retire_wait_strands_sample() {
    common::expect_failure("skip_retire_wait", BOUND, late_signal_races_release);
}
