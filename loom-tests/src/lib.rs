//! Loom models of the rotation protocol, over the recorder's real code
//! (through `recorder::loom_api`). They live in `tests/` and build only with
//! `RUSTFLAGS="--cfg flightrec_loom"`; `ci/loom.sh` runs them, and the
//! negative controls, as part of `scripts/test.sh`.
//!
//! | file | model | invariant |
//! |---|---|---|
//! | `rotation_commit.rs` | 1: writers commit while rotation flips the epoch | each committed event in exactly one chunk, the chunk of its epoch |
//! | `sealed_drain.rs` | 2: a block sealed to the pool while the recorder drains it | each event drained once, whole |
//! | `thread_exit.rs` | 3: a thread exits during rotation | its events in their chunks, its constant resolvable there, nothing leaked |
//! | `constants.rs` | 4: a constant first used while rotation runs | every event's thread and stack are tagged with its chunk's epoch and resolvable at chunk end (or the stack is dropped, counted) |
//! | `constants.rs` | 4b: a writer's seal flips the next epoch while the recorder finishes the chunk before | each chunk's events reference threads tagged with its epoch (three tag words); each event in exactly one chunk |
//! | `settings.rs` | 5: settings swapped while events commit | each event sees the old or the new word, whole |
//! | `sampler_queue.rs` | 6: the sampler's signal-to-consumer queue | each queued sample drained once, whole; none stranded |
//! | `stop_commit.rs` | 7: writers commit while the last stop closes the last chunk | each commit drained into the last chunk once, or not committed (after the final flip); nothing counted lost |
//!
//! Negative controls (tests that expect the model to fail), each built with
//! `--cfg flightrec_loom_weaken="…"`:
//!
//! * `relaxed_commit`: the block's `committed` store is Relaxed instead of
//!   Release; model 2 reports a causality violation (the recorder reads
//!   bytes the owner's write does not happen-before).
//! * `skip_section_wait`: rotation does not wait for open write sections;
//!   models 1 and 3 find an event drained into the wrong chunk, or never.
//! * `skip_retire_wait`: releasing a sampler slot does not wait for a
//!   handler inside it; model 6 finds a late sample stranded in the slot
//!   for its next owner. (Built together with `relaxed_commit`: the two
//!   weaken disjoint code.)
//! * `skip_stack_tag`: the write section does not tag a stack interned in
//!   the epoch before its own; model 4 finds an event in chunk N+1 whose
//!   stack only chunk N holds (or no chunk).
//! * `two_tag_slots`: constants carry two epoch tag words while the pool
//!   still lets a seal flip two epochs past the chunk being finished;
//!   model 4b finds chunk 1's thread tag overwritten by epoch 3. (Built
//!   together with `skip_stack_tag`: model 4b's events carry no stack.)
//! * `skip_pool_close`: the last stop leaves the pool open for the epoch
//!   its final flip opens; model 7 finds an event written into a block of
//!   that epoch, which no chunk drains. (Built with `skip_stack_tag`:
//!   model 7's events carry no stack, and models 4 and 4b never stop.)
