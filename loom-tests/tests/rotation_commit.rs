//! Model 1: writers commit while rotation flips the epoch.
//!
//! Writers run the real write section (`ThreadSlot::emit`) into the real
//! pool; the recorder runs the real rotation core (`rotation::rotate`:
//! flip, barrier, wait for open sections, drain live then sealed blocks of
//! the old epoch) with a sink that records what each chunk received; a final
//! rotation plays the recording's stop.
//!
//! Invariant: every committed event is drained into exactly one chunk, the
//! chunk of the epoch it was committed in (the writer sees that epoch
//! between its loads before and after `emit`); a dropped event is counted
//! and in no chunk.
//!
//! A third model arms the chunk's hard size mark so that the writer's seal
//! of its full block flips the epoch itself, racing the recorder's own
//! flip from the same epoch: one of them flips, once, and the invariant
//! holds either way.
//!
//! Negative control: with `--cfg flightrec_loom_weaken="skip_section_wait"`
//! the rotation does not wait for open sections, and an event whose writer
//! loaded the old epoch lands in no chunk (its block is tagged with an epoch
//! that is already closed).
#![cfg(flightrec_loom)]

mod common;

use common::{Chunks, Commit, assert_exactly_once, model};
use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{Runtime, Writer, record};

const TY: u64 = 100;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

fn commit(rt: &Runtime, w: &Writer, value: u64) -> Commit {
    let before = rt.epoch();
    let written = w.emit(rt, &record(TY, w.key(), 0, value));
    let after = rt.epoch();
    Commit {
        value,
        before,
        after,
        written,
    }
}

/// `writers` threads commit `events` each (values `10 * writer + i`) while
/// the recorder rotates once; then the stop's rotation.
fn rotation_while_committing(writers: u64, events: u64) {
    let rt = Arc::new(Runtime::new());
    let handles: Vec<_> = (1..=writers)
        .map(|id| {
            let rt = rt.clone();
            thread::spawn(move || {
                // Attaching is part of the model: a thread's first event
                // registers its slot, possibly while rotation runs.
                let w = rt.attach(id as i64);
                (1..=events)
                    .map(|i| commit(&rt, &w, 10 * id + i))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    // The recorder thread (a spawned loom thread: loom explores the main
    // thread's interleavings less thoroughly).
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut drained = Vec::new();
            (rt.rotate(&mut drained), drained)
        })
    };
    let mut chunks = Chunks::default();
    let (closed, drained) = recorder.join().unwrap();
    chunks.push(closed, drained);
    let commits: Vec<Commit> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let mut drained = Vec::new();
    let closed = rt.rotate(&mut drained);
    chunks.push(closed, drained);

    chunks.assert_epochs_match();
    assert_exactly_once(&commits, &chunks);
    let dropped = commits.iter().filter(|c| !c.written).count() as u64;
    assert_eq!(rt.losses().total_events(), dropped, "every drop is counted");
}

/// One writer, three events: the third finds its block full (two records
/// per block under loom), seals it and takes a fresh one, racing the flip.
#[test]
fn one_writer_block_full_during_rotation() {
    model(BOUND, || rotation_while_committing(1, 3));
}

/// Two writers, one event each: both sections race the same flip. Four
/// loom threads: bound 2 (10k executions; bound 3 explores 151k, 30 s).
#[test]
fn two_writers_during_rotation() {
    model(2, || rotation_while_committing(2, 1));
}

/// One writer, three events, with the hard size mark at one byte: the
/// third event's seal (its block is full) flips epoch 1 itself while the
/// recorder closes epoch 1 (its compare-exchange fails if the seal was
/// first); then the stop closes epoch 2.
fn seal_flip_while_rotating() {
    let rt = Arc::new(Runtime::new());
    rt.arm_seal_flip(1, 1);
    let writer = {
        let rt = rt.clone();
        thread::spawn(move || {
            let w = rt.attach(1);
            (1..=3).map(|i| commit(&rt, &w, 10 + i)).collect::<Vec<_>>()
        })
    };
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut drained = Vec::new();
            (rt.rotate_epoch(1, &mut drained), drained)
        })
    };
    let mut chunks = Chunks::default();
    let (closed, drained) = recorder.join().unwrap();
    assert_eq!(closed, 1);
    chunks.push(closed, drained);
    let commits = writer.join().unwrap();
    assert_eq!(rt.epoch(), 2, "epoch 1 flipped once");
    let mut drained = Vec::new();
    chunks.push(rt.rotate_epoch(2, &mut drained), drained);
    assert_eq!(rt.epoch(), 3);
    chunks.assert_epochs_match();
    assert_exactly_once(&commits, &chunks);
    let dropped = commits.iter().filter(|c| !c.written).count() as u64;
    assert_eq!(rt.losses().total_events(), dropped, "every drop is counted");
}

#[test]
fn seal_flips_while_recorder_rotates() {
    model(BOUND, seal_flip_while_rotating);
}

/// Negative control: without the wait for open sections an event is lost
/// or lands in the wrong chunk.
#[test]
#[cfg(flightrec_loom_weaken = "skip_section_wait")]
fn control_skip_section_wait_loses_events() {
    common::expect_failure("skip_section_wait / model 1", BOUND, || {
        rotation_while_committing(1, 1)
    });
}
