//! Model 4: a constant first used in epoch N while rotation N→N+1 runs.
//!
//! Constants are tagged with the epochs they are used in, inside the write
//! section of the event that uses them (`cpool::threads`, `cpool::stacks`),
//! and a chunk writes exactly the constants tagged with its epoch. The
//! writer attaches (its thread's first event), interns a new stack (the
//! commit path's `capture_stack`, tagged with the epoch read then) and
//! commits an event referencing both through the real section, racing a
//! rotation: the flip may fall between the intern and the section. At each
//! chunk end the model does what the recorder does: checks the chunk's
//! tags, then releases the stacks not tagged since the flip.
//!
//! Invariant: for every event in a chunk, its thread and its stack (if it
//! has one) are tagged with the chunk's epoch and resolvable at chunk end,
//! so both are written in that chunk; an event that lost its stack (released
//! between its intern and its section) says so with a dropped-stack count.
//!
//! Negative control: `skip_stack_tag` (the section does not tag a stack
//! interned in the epoch before its own) puts an event in chunk N+1 whose
//! stack only chunk N holds.
//!
//! Model 4b: a writer's seal flips the next epoch while the recorder still
//! finishes the chunk before. The recorder closes epoch 1 and arms epoch
//! 2's hard mark at the flip (as `Recorder::finish_chunk` does); the writer,
//! committing on, fills a block of epoch 2, whose seal flips to 3, and tags
//! its thread with 3, while the recorder reads chunk 1's thread tags. Then
//! the recorder says chunk 1 is finished and closes 2 and 3.
//!
//! Invariant: each chunk's events reference threads tagged with its epoch
//! (three tag words: epoch 3 does not overwrite the word chunk 1 reads),
//! and every event is in exactly one chunk of an epoch it could load.
//!
//! Negative control: `two_tag_slots` (two tag words, the pool's flip limit
//! unchanged) lets epoch 3's tag overwrite epoch 1's before chunk 1 reads it.
#![cfg(flightrec_loom)]

mod common;

#[cfg(flightrec_loom_weaken = "skip_stack_tag")]
use common::expect_failure;
#[cfg(flightrec_loom_weaken = "two_tag_slots")]
use common::expect_failure as expect_failure_4b;
use common::{Chunks, Commit, assert_exactly_once, commit_during_rotation, model};
use loom::sync::Arc;
use loom::thread;
use recorder::LossCause;
use recorder::loom_api::{Drained, Runtime, decode};

const TY: u64 = 100;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

/// What `ChunkAssembler::finish` and then `Recorder::rotate` do for the
/// chunk of `closed`, checked.
fn check_chunk(rt: &Runtime, closed: u64, drained: &[Drained]) {
    let threads = rt.tagged_threads(closed);
    let stacks = rt.tagged_stacks(closed);
    for d in drained {
        for (thread, stack, value) in decode(&d.bytes) {
            assert!(
                threads.contains(&thread) && rt.thread_known(thread),
                "chunk {closed}: thread {thread} of event {value} is not in the chunk \
                 (tagged {threads:?})"
            );
            if stack == 0 {
                assert!(
                    rt.losses().events(LossCause::StackDropped) > 0,
                    "chunk {closed}: event {value} lost its stack uncounted"
                );
                continue;
            }
            assert!(
                stacks.contains(&stack) && rt.stack_known(stack),
                "chunk {closed}: stack {stack} of event {value} is not in the chunk \
                 (tagged {stacks:?})"
            );
        }
    }
    rt.release_stacks_after(closed);
}

fn constant_first_used_during_rotation() {
    let rt = Arc::new(Runtime::new());
    let (commit, chunks) = commit_during_rotation(
        &rt,
        |rt| {
            let w = rt.attach(1);
            let before = rt.epoch();
            let stack = rt.intern_stack_for(&w, &[0x10, 0x20]);
            let written = w.emit_event(rt, TY, stack, 1);
            Commit {
                value: 1,
                before,
                after: rt.epoch(),
                written,
            }
        },
        check_chunk,
    );
    assert_exactly_once(&[commit], &chunks);
}

#[test]
fn constant_first_used_while_rotating() {
    model(BOUND, constant_first_used_during_rotation);
}

#[test]
#[cfg(flightrec_loom_weaken = "skip_stack_tag")]
fn control_skip_stack_tag() {
    expect_failure("skip_stack_tag", BOUND, constant_first_used_during_rotation);
}

/// Model 4b's chunk end: every event's thread is tagged with the chunk's
/// epoch and resolvable.
fn check_threads(rt: &Runtime, closed: u64, drained: &[Drained]) {
    let threads = rt.tagged_threads(closed);
    for d in drained {
        for (thread, _, value) in decode(&d.bytes) {
            assert!(
                threads.contains(&thread) && rt.thread_known(thread),
                "chunk {closed}: thread {thread} of event {value} is not in the chunk \
                 (tagged {threads:?})"
            );
        }
    }
}

/// Preemption bound of model 4b (five events against a rotation).
const BOUND_4B: usize = 2;

fn seal_flips_next_epoch_during_chunk_end() {
    let rt = Arc::new(Runtime::new());
    rt.chunks_finished_before(1);
    let writer = {
        let rt = rt.clone();
        thread::spawn(move || {
            let w = rt.attach(1);
            // Two records per block under loom: the fourth event's seal of
            // a full block of epoch 2 flips to 3, the fifth writes in 3.
            (1..=5)
                .map(|value| {
                    let before = rt.epoch();
                    let written = w.emit_event(&rt, TY, 0, value);
                    Commit {
                        value,
                        before,
                        after: rt.epoch(),
                        written,
                    }
                })
                .collect::<Vec<_>>()
        })
    };
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut drained = Vec::new();
            let closed = rt.rotate_epoch_arming_next(1, 1, &mut drained);
            check_threads(&rt, closed, &drained);
            rt.chunks_finished_before(closed + 1);
            (closed, drained)
        })
    };
    let mut chunks = Chunks::default();
    let (closed, drained) = recorder.join().unwrap();
    assert_eq!(closed, 1);
    chunks.push(closed, drained);
    let commits = writer.join().unwrap();
    for open in [2, 3] {
        let mut drained = Vec::new();
        let closed = rt.rotate_epoch(open, &mut drained);
        check_threads(&rt, closed, &drained);
        rt.chunks_finished_before(closed + 1);
        chunks.push(closed, drained);
    }
    assert_eq!(rt.epoch(), 4, "epochs 1, 2 and 3 flipped once each");
    chunks.assert_epochs_match();
    assert_exactly_once(&commits, &chunks);
}

#[test]
fn seal_flips_next_epoch_while_chunk_is_finished() {
    model(BOUND_4B, seal_flips_next_epoch_during_chunk_end);
}

#[test]
#[cfg(flightrec_loom_weaken = "two_tag_slots")]
fn control_two_tag_slots() {
    expect_failure_4b(
        "two_tag_slots",
        BOUND_4B,
        seal_flips_next_epoch_during_chunk_end,
    );
}
