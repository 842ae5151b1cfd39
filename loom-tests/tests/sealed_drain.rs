//! Model 2: a thread's block is sealed (handed to the pool) while the
//! recorder thread drains it.
//!
//! The writer commits three events: two fill its block (two records per
//! block under loom), the third seals it into the pool's queue and takes a
//! fresh block. Meanwhile the recorder runs its periodic flush (real
//! `rotation::drain_sealed` then `rotation::drain_live` of the current
//! epoch), reading the live block through `committed` while its owner
//! writes and seals it. The stop's rotation drains the rest.
//!
//! Invariant: every event is drained exactly once, whole (never a torn or
//! half-published record), and the recorder reads only bytes whose write
//! happens-before the read (loom checks this on the per-byte shadow cells
//! of `Block`).
//!
//! Negative control: with `--cfg flightrec_loom_weaken="relaxed_commit"`
//! the owner publishes `committed` with Relaxed instead of Release; loom
//! reports a causality violation when the flush reads the live block.
#![cfg(flightrec_loom)]

mod common;

use common::{Chunks, Commit, assert_exactly_once, model};
use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{Runtime, record};

const TY: u64 = 100;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

fn flush_while_sealing(events: u64) {
    let rt = Arc::new(Runtime::new());
    let writer = {
        let rt = rt.clone();
        thread::spawn(move || {
            let w = rt.attach(1);
            (1..=events)
                .map(|value| Commit {
                    value,
                    before: 1,
                    after: 1,
                    written: w.emit(&rt, &record(TY, w.key(), 0, value)),
                })
                .collect::<Vec<_>>()
        })
    };
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut chunk = Vec::new();
            rt.flush(&mut chunk);
            chunk
        })
    };
    let mut chunk = recorder.join().unwrap();
    let commits = writer.join().unwrap();
    let closed = rt.rotate(&mut chunk);
    assert_eq!(closed, 1);
    let mut chunks = Chunks::default();
    chunks.push(closed, chunk);

    chunks.assert_epochs_match();
    assert_exactly_once(&commits, &chunks);
    // One writer, pool of three: nothing is dropped.
    assert!(commits.iter().all(|c| c.written));
    assert_eq!(rt.sealed_count(), 0, "the sealed block was freed");
}

#[test]
fn block_sealed_while_recorder_drains() {
    model(BOUND, || flush_while_sealing(3));
}

/// Negative control: a Relaxed commit store lets the flush read bytes that
/// do not happen-before it.
#[test]
#[cfg(flightrec_loom_weaken = "relaxed_commit")]
fn control_relaxed_commit_is_a_race() {
    common::expect_failure("relaxed_commit / model 2", BOUND, || flush_while_sealing(1));
}
