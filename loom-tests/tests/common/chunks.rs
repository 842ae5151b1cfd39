//! Chunk bookkeeping: what each closed epoch drained, and the check that
//! every written commit is in exactly one chunk.

use recorder::loom_api::{Drained, decode};

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
