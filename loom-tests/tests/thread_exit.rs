//! Model 3: a thread exits (its block sealed, its slot retired, its thread
//! constant marked exited) while the recorder rotates.
//!
//! The writer attaches, commits one event and exits through the real exit
//! path (`local::exit`: `ThreadRegistry::exited` with the epoch it sees,
//! `ThreadSlot::retire`). The recorder rotates; each chunk is "finished" by
//! checking that the thread constant of every event in it can still be
//! resolved, then prunes threads exited before the closed epoch, as the
//! recorder thread does after writing the chunk.
//!
//! Invariant: the exiting thread's event is in exactly one chunk, of its
//! epoch; its thread constant is resolvable when that chunk ends; after the
//! stop no block stays sealed and the retired slot is forgotten.
//!
//! Negative control: with `skip_section_wait` (see model 1) the exiting
//! thread's event is lost.
#![cfg(flightrec_loom)]

mod common;

use common::{Commit, assert_exactly_once, commit_during_rotation, model};
use loom::sync::Arc;
use recorder::loom_api::{Runtime, decode, record};

const TY: u64 = 100;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

/// Rotation's tail as the recorder does it: the chunk's constants are
/// written (here: checked resolvable), then exited threads are pruned.
fn finish_chunk(rt: &Runtime, closed: u64, drained: &[recorder::loom_api::Drained]) {
    for d in drained {
        for (thread, _, value) in decode(&d.bytes) {
            assert!(
                rt.thread_known(thread),
                "event {value} in chunk {closed} references thread {thread}, already pruned"
            );
        }
    }
    rt.prune_exited_before(closed);
}

fn exit_during_rotation() {
    let rt = Arc::new(Runtime::new());
    let (commit, chunks) = commit_during_rotation(
        &rt,
        |rt| {
            let w = rt.attach(1);
            let before = rt.epoch();
            let written = w.emit(rt, &record(TY, w.key(), 0, 1));
            let after = rt.epoch();
            w.exit(rt);
            Commit {
                value: 1,
                before,
                after,
                written,
            }
        },
        finish_chunk,
    );
    chunks.assert_epochs_match();
    assert_exactly_once(&[commit], &chunks);
    assert_eq!(rt.sealed_count(), 0, "a retired block stayed sealed");
    // The next drain forgets the retired slot.
    rt.flush(&mut Vec::new());
    assert_eq!(rt.slot_count(), 0, "the retired slot is still registered");
}

#[test]
fn thread_exits_during_rotation() {
    model(BOUND, exit_during_rotation);
}

#[test]
#[cfg(flightrec_loom_weaken = "skip_section_wait")]
fn control_skip_section_wait_loses_exiting_threads_event() {
    common::expect_failure("skip_section_wait / model 3", BOUND, exit_during_rotation);
}
