//! Model 4: a constant first used in epoch N while rotation N→N+1 runs.
//!
//! Constants are not tagged by writers: the recorder finds them by scanning
//! the records it drains into a chunk (`scan.rs`), and writes the chunk's
//! pools from the stack and thread registries at chunk end (`chunk.rs`).
//! The writer interns a new stack (the commit path's `capture_stack`) and
//! commits an event referencing it and its thread, racing a rotation. At
//! each chunk end the model runs the real `Scanner` over the chunk's bytes.
//!
//! Invariant: for every event in a chunk, the scan of that chunk yields the
//! event's stack and thread keys, and both registries resolve them at chunk
//! end, so the constants are written in the chunk of every event that
//! references them.
#![cfg(flightrec_loom)]

mod common;

use common::{Commit, assert_exactly_once, commit_during_rotation, model};
use loom::sync::Arc;
use recorder::loom_api::{Drained, Runtime, decode, record, scan};

const TY: u64 = 100;

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

/// What `ChunkAssembler::finish` relies on for `drained`.
fn check_chunk(rt: &Runtime, closed: u64, drained: &[Drained]) {
    let bytes: Vec<u8> = drained.iter().flat_map(|d| d.bytes.clone()).collect();
    let (threads, stacks, n) = scan(&bytes, TY);
    let events = decode(&bytes);
    assert_eq!(n, events.len(), "the scanner walked every record");
    for (thread, stack, value) in events {
        assert!(
            stacks.contains(&stack) && threads.contains(&thread),
            "chunk {closed}: event {value}'s keys ({thread}, {stack}) not found by the scan"
        );
        assert!(
            rt.stack_known(stack),
            "chunk {closed}: stack {stack} of event {value} cannot be resolved"
        );
        assert!(
            rt.thread_known(thread),
            "chunk {closed}: thread {thread} of event {value} cannot be resolved"
        );
    }
}

fn constant_first_used_during_rotation() {
    let rt = Arc::new(Runtime::new());
    let (commit, chunks) = commit_during_rotation(
        &rt,
        |rt| {
            let w = rt.attach(1);
            let before = rt.epoch();
            let stack = rt.intern_stack(&[0x10, 0x20]);
            let written = w.emit(rt, &record(TY, w.key(), stack, 1));
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
