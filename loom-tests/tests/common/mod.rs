//! Shared by the models: the loom runner with the suite's preemption bound,
//! negative-control plumbing, chunk bookkeeping, and one writer racing one
//! rotation.
#![allow(dead_code, unreachable_pub)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{Drained, Runtime, decode};

/// Runs `f` under loom with `LOOM_MAX_PREEMPTIONS` if set, else `bound`.
pub fn model<F>(bound: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut b = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        b.preemption_bound = Some(bound);
    }
    // Counts explored executions (std atomic: outside the model).
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!(
        "loom: {} executions, preemption bound {:?}",
        runs.load(std::sync::atomic::Ordering::Relaxed),
        b.preemption_bound
    );
}

/// A negative control: runs the model against the weakened protocol and
/// passes only if loom finds a failing execution.
pub fn expect_failure<F>(what: &str, bound: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let r = catch_unwind(AssertUnwindSafe(|| model(bound, f)));
    assert!(
        r.is_err(),
        "negative control `{what}`: the weakened protocol passed the model, \
         so the model would not notice this bug"
    );
    eprintln!("negative control `{what}`: the model failed as expected");
}

/// The chunks of one execution: (closed epoch, what was drained into it).
#[derive(Debug, Default)]
pub struct Chunks(pub Vec<(u64, Vec<Drained>)>);

impl Chunks {
    /// Adds the chunk that closed `epoch`.
    pub fn push(&mut self, epoch: u64, drained: Vec<Drained>) {
        self.0.push((epoch, drained));
    }

    /// Every record as (chunk epoch, block epoch, thread key, stack key, value).
    pub fn records(&self) -> Vec<(u64, u64, u64, u64, u64)> {
        let mut out = Vec::new();
        for (epoch, drained) in &self.0 {
            for d in drained {
                for (t, s, v) in decode(&d.bytes) {
                    out.push((*epoch, d.block_epoch, t, s, v));
                }
            }
        }
        out
    }

    /// The chunk epochs holding `value`, one entry per copy.
    pub fn chunks_of(&self, value: u64) -> Vec<u64> {
        self.records()
            .into_iter()
            .filter(|r| r.4 == value)
            .map(|r| r.0)
            .collect()
    }

    /// Every drained block is of the chunk's epoch: a chunk never receives
    /// events of another epoch.
    pub fn assert_epochs_match(&self) {
        for (epoch, drained) in &self.0 {
            for d in drained {
                assert_eq!(
                    d.block_epoch, *epoch,
                    "a block of epoch {} was drained into the chunk of epoch {epoch}",
                    d.block_epoch
                );
            }
        }
    }
}

/// One commit as the writer saw it: the epoch before and after `emit`
/// (the epoch loaded inside the section lies between) and whether it was
/// written (else dropped and counted).
#[derive(Debug, Clone, Copy)]
pub struct Commit {
    pub value: u64,
    pub before: u64,
    pub after: u64,
    pub written: bool,
}

/// Checks every commit against the chunks: a written event is in exactly
/// one chunk, of an epoch the writer could have loaded; a dropped one in
/// none; nothing else is in any chunk.
pub fn assert_exactly_once(commits: &[Commit], chunks: &Chunks) {
    for c in commits {
        let found = chunks.chunks_of(c.value);
        if c.written {
            assert_eq!(found.len(), 1, "event {c:?} drained into {found:?}");
            let e = found[0];
            assert!(
                c.before <= e && e <= c.after,
                "event {c:?} committed in epoch {}..={} but drained into chunk {e}",
                c.before,
                c.after
            );
        } else {
            assert!(
                found.is_empty(),
                "dropped event {c:?} drained into {found:?}"
            );
        }
    }
    let total = chunks.records().len();
    let written = commits.iter().filter(|c| c.written).count();
    assert_eq!(total, written, "chunks hold events nobody wrote");
}

/// One writer racing one rotation: `write` runs on a writer thread and
/// returns its commit while the recorder thread rotates once; then the model
/// rotates again, so every committed event reaches a chunk. `end` is the
/// chunk-end work the model checks, run for each closed chunk with its
/// epoch and drained bytes. Returns the commit and both chunks.
pub fn commit_during_rotation(
    rt: &Arc<Runtime>,
    write: impl FnOnce(&Runtime) -> Commit + Send + 'static,
    end: fn(&Runtime, u64, &[Drained]),
) -> (Commit, Chunks) {
    let writer = {
        let rt = rt.clone();
        thread::spawn(move || write(&rt))
    };
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut drained = Vec::new();
            let closed = rt.rotate(&mut drained);
            end(&rt, closed, &drained);
            (closed, drained)
        })
    };
    let mut chunks = Chunks::default();
    let (closed, drained) = recorder.join().unwrap();
    chunks.push(closed, drained);
    let commit = writer.join().unwrap();
    let mut drained = Vec::new();
    let closed = rt.rotate(&mut drained);
    end(rt, closed, &drained);
    chunks.push(closed, drained);
    (commit, chunks)
}
