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
#![cfg(flightrec_loom)]

mod common;

#[cfg(flightrec_loom_weaken = "skip_stack_tag")]
use common::expect_failure;
use common::{Commit, assert_exactly_once, commit_during_rotation, model};
use loom::sync::Arc;
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
