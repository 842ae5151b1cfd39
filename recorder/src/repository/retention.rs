//! Which chunks a recording keeps, and when a chunk file goes.
//!
//! Finished chunks are shared by the recordings live when they ended and
//! reference-counted: each recording keeps its own list
//! ([`crate::lifecycle::member`]) and applies its own retention to it, dropping its
//! oldest chunks while they are older than `max_age` or larger than
//! `max_size`, never its newest one (so a `max_size` below one chunk still
//! leaves the newest chunk to dump or write at the stop). A chunk file is
//! deleted (its memory freed) when no recording holds it. A dump
//! concatenates one recording's chunks (optionally only those that overlap
//! a time window, and only as many whole chunks as fit a size, as the JDK's
//! `JFR.dump` chooses them) into one `.jfr` file. At a clean stop, once the
//! destination is written, the recording lets go of its chunks, and the
//! last stop removes the directory if this repository created it and
//! nothing is left in it, unless the user asked to keep the repository
//! (`keep_repository`, `preserve-repository=true`): its chunk files are
//! deleted for at most a quarter of a second, then the directory is
//! renamed away and the rest deleted on a thread of their own, so the stop
//! does not wait for a device that discards freed blocks
//! ([`reap`](mod@super::reap)). A recording whose
//! destination could not be written keeps its chunk files (the only copy);
//! so does one without a destination in a repository the user named. In
//! the default repository a recording stopped without a destination lets
//! its chunks go (as the JDK discards a recording stopped without a file),
//! so every recording, `jcmd`'s included, leaves no directory behind.
//!
//! Invariant: a chunk file is deleted (or its memory freed) only when no
//! recording holds it, and a recording's retention never drops its
//! newest chunk.

use std::collections::VecDeque;
use std::time::Duration;

use crate::base::loss::LossCounts;
use crate::repository::store::{ChunkFile, Repository};

/// What became of a stopping recording's destination, for
/// [`Repository::release_at_stop`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtStop {
    /// Its destination was written: the chunks are copied.
    Written,
    /// It has no destination, or was stopped without writing it.
    NotWritten,
    /// Writing its destination failed: the chunks are the only copy.
    WriteFailed,
}

impl AtStop {
    /// From whether a destination was to be written and whether the stop
    /// succeeded.
    pub(crate) fn of(to_write: bool, ok: bool) -> Self {
        match (to_write, ok) {
            (false, _) => Self::NotWritten,
            (true, true) => Self::Written,
            (true, false) => Self::WriteFailed,
        }
    }
}

/// What [`Repository::evict`] freed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Evicted {
    /// Event records of the freed chunks.
    pub(crate) events: u64,
    /// Their bytes.
    pub(crate) bytes: u64,
    /// What their loss records said.
    pub(crate) reported: LossCounts,
}

impl Repository {
    /// Keeps one recording's chunks kept in memory within `bound` bytes
    /// with `coming` more on their way (the chunk being finished, which
    /// joins `list`, and the next): drops the oldest of `list` while its
    /// in-memory chunks and `coming` exceed `bound`. Returns what the
    /// chunks this freed for good (no other recording still holds them)
    /// held: their events and bytes, to count lost
    /// ([`LossCause::Evicted`](crate::LossCause::Evicted)), and what their
    /// loss records said, to report again.
    pub(crate) fn evict(&mut self, list: &mut VecDeque<u64>, bound: u64, coming: u64) -> Evicted {
        let mut total: u64 = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .filter(|c| self.memory.contains_key(&c.path))
            .map(|c| c.size)
            .sum();
        let mut evicted = Evicted::default();
        while total.saturating_add(coming) > bound {
            let Some(seq) = list.pop_front() else {
                break;
            };
            let Some(held) = self.finished.get(&seq) else {
                continue;
            };
            if self.memory.contains_key(&held.chunk.path) {
                total -= held.chunk.size;
            }
            if held.refs == 1 {
                evicted.events += held.events;
                evicted.bytes += held.chunk.size;
                evicted.reported = evicted.reported.plus(&held.reported);
            }
            self.release(seq);
        }
        evicted
    }

    /// One recording lets go of chunk `seq`: the file is deleted (or its
    /// memory freed) when no recording holds it.
    pub(crate) fn release(&mut self, seq: u64) {
        let Some(held) = self.finished.get_mut(&seq) else {
            return;
        };
        held.refs -= 1;
        if held.refs == 0 {
            let held = self.finished.remove(&seq).expect("present");
            if self.memory.contains_key(&held.chunk.path) {
                self.in_memory -= held.chunk.size;
            }
            self.remove(&held.chunk.path);
        }
    }

    /// Drops the oldest chunks of one recording's `list` while they are
    /// older than `max_age` (measured from `now_nanos`) or their total
    /// exceeds `max_size`, but never the newest one. Returns the chunks
    /// this recording let go of.
    pub(crate) fn apply_retention(
        &mut self,
        list: &mut VecDeque<u64>,
        now_nanos: i64,
        max_age: Option<Duration>,
        max_size: Option<u64>,
    ) -> Vec<ChunkFile> {
        let mut removed = Vec::new();
        let mut total: u64 = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .map(|c| c.size)
            .sum();
        // Never the newest: a recording always keeps its latest chunk.
        while list.len() > 1 {
            let Some(oldest) = list.front().and_then(|s| self.chunk(*s)).cloned() else {
                list.pop_front();
                continue;
            };
            // Saturating: an age beyond i64 nanoseconds (`200000d`,
            // `Duration::MAX`) keeps everything rather than wrapping
            // negative and dropping all but the newest.
            let too_old = max_age.is_some_and(|a| {
                now_nanos.saturating_sub(oldest.end_nanos)
                    > i64::try_from(a.as_nanos()).unwrap_or(i64::MAX)
            });
            let too_big = max_size.is_some_and(|m| total > m);
            if !too_old && !too_big {
                break;
            }
            let seq = list.pop_front().expect("front exists");
            total -= oldest.size;
            self.release(seq);
            removed.push(oldest);
        }
        removed
    }

    /// The chunks of `list` a dump takes, oldest first, chosen as the JDK's
    /// `JFR.dump` does: those overlapping `[from, to]` (ns since the epoch;
    /// `None` is open); then, if `max_size` is given, only as many whole
    /// chunks as fit in it, the newest, or the oldest when only `from` is
    /// given (`begin=` or `maxage=` without `end=`); and at least one.
    pub(super) fn select(
        &self,
        list: &VecDeque<u64>,
        from: Option<i64>,
        to: Option<i64>,
        max_size: Option<u64>,
    ) -> Vec<&ChunkFile> {
        let mut chosen: Vec<&ChunkFile> = list
            .iter()
            .filter_map(|s| self.chunk(*s))
            .filter(|c| {
                !(from.is_some_and(|f| c.end_nanos < f) || to.is_some_and(|t| c.start_nanos > t))
            })
            .collect();
        let Some(max) = max_size else {
            return chosen;
        };
        let newest_first = !(from.is_some() && to.is_none());
        if newest_first {
            chosen.reverse();
        }
        let mut total = 0u64;
        let fit = chosen
            .iter()
            .take_while(|c| {
                total = total.saturating_add(c.size);
                total <= max
            })
            .count();
        chosen.truncate(fit.max(1));
        if newest_first {
            chosen.reverse();
        }
        chosen
    }

    /// A recording stops: it lets go of the chunks of `list`. Its chunk
    /// files on disk stay when the user asked to keep the repository
    /// (`keep`), when writing its destination failed (they are the only
    /// copy), or when nothing was written and the repository is one the
    /// user named; in the default repository (a temporary directory nobody
    /// else knows) an unwritten recording's chunks go, as the JDK discards
    /// a recording stopped without a file.
    pub(crate) fn release_at_stop(&mut self, list: &mut VecDeque<u64>, keep: bool, at: AtStop) {
        let keep_files = keep
            || self.keep
            || at == AtStop::WriteFailed
            || (at == AtStop::NotWritten && !self.temporary);
        for seq in list.drain(..) {
            let on_disk = self
                .chunk(seq)
                .is_some_and(|c| !self.memory.contains_key(&c.path));
            if !(keep_files && on_disk) {
                self.release(seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_age_beyond_i64_nanoseconds_keeps_every_chunk() {
        let mut repo = Repository::in_memory();
        let mut list = VecDeque::new();
        for i in 0..4i64 {
            let (path, mut f) = repo.create_chunk(i, true).unwrap();
            f.write_all(b"x").unwrap();
            let c = ChunkFile {
                path,
                start_nanos: i * 1_000_000_000,
                end_nanos: (i + 1) * 1_000_000_000,
                size: 1,
            };
            list.push_back(repo.add_finished(c, 1, 0, LossCounts::default()));
        }
        let now = 3_600_000_000_000;
        for age in [
            Duration::from_secs(200_000 * 86_400),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            assert!(
                repo.apply_retention(&mut list, now, Some(age), None)
                    .is_empty()
            );
            assert!(
                repo.apply_retention(&mut list, i64::MAX, Some(age), None)
                    .is_empty()
            );
            assert_eq!(list.len(), 4, "{age:?}");
        }
        // An age that fits still drops the old ones, never the newest.
        assert_eq!(
            repo.apply_retention(&mut list, now, Some(Duration::from_secs(1)), None)
                .len(),
            3
        );
        repo.release_at_stop(&mut list, false, AtStop::Written);
    }

    #[test]
    fn a_chunk_held_by_two_recordings_goes_when_both_let_go() {
        let mut repo = Repository::in_memory();
        let chunk = |repo: &mut Repository, at: i64, holders| {
            let (path, mut f) = repo.create_chunk(at, false).unwrap();
            f.write_all(b"x").unwrap();
            let c = ChunkFile {
                path,
                start_nanos: at,
                end_nanos: at + 1,
                size: 1,
            };
            repo.add_finished(c, holders, 0, LossCounts::default())
        };
        // Chunk 0: only a; chunk 1: a and b; chunk 2: only b.
        let s0 = chunk(&mut repo, 0, 1);
        let s1 = chunk(&mut repo, 1, 2);
        let s2 = chunk(&mut repo, 2, 1);
        let mut a = VecDeque::from([s0, s1]);
        let mut b = VecDeque::from([s1, s2]);
        // a's max_size drops its chunk 0 only; chunk 1 stays for both.
        repo.apply_retention(&mut a, 10, None, Some(1));
        assert_eq!(a, [s1]);
        assert_eq!(repo.memory.len(), 2);
        repo.release_at_stop(&mut a, false, AtStop::Written);
        assert!(repo.chunk(s1).is_some(), "b still holds chunk 1");
        let mut out = Vec::new();
        assert_eq!(repo.concat_into(&mut out, &b, None, None, None).unwrap(), 2);
        repo.release_at_stop(&mut b, false, AtStop::Written);
        assert!(repo.memory.is_empty() && repo.finished.is_empty());
    }

    #[test]
    fn eviction_drops_the_oldest_in_memory_chunks_and_counts_what_only_they_held() {
        let mut repo = Repository::in_memory();
        let chunk = |repo: &mut Repository, at: i64, holders, events| {
            let (path, mut f) = repo.create_chunk(at, false).unwrap();
            f.write_all(&[0; 100]).unwrap();
            let c = ChunkFile {
                path,
                start_nanos: at,
                end_nanos: at + 1,
                size: 100,
            };
            repo.add_finished(c, holders, events, LossCounts::default())
        };
        // Chunk 0 held by a and b; chunks 1-3 by a only.
        let s0 = chunk(&mut repo, 0, 2, 7);
        let mut a = VecDeque::from([s0]);
        let b = VecDeque::from([s0]);
        for (i, events) in [(1, 11), (2, 13), (3, 17)] {
            a.push_back(chunk(&mut repo, i, 1, events));
        }
        assert_eq!(repo.in_memory_bytes(), 400);
        // Within the bound: nothing goes.
        assert_eq!(repo.evict(&mut a, 500, 100), Evicted::default());
        assert_eq!(a.len(), 4);
        // 400 + 150 coming over 350: the two oldest go; chunk 0 stays for
        // b (not counted), chunk 1 is freed and counted.
        assert_eq!(repo.evict(&mut a, 350, 150).events, 11);
        assert_eq!(a.len(), 2);
        assert_eq!(repo.in_memory_bytes(), 300);
        assert!(repo.chunk(s0).is_some());
        let mut out = Vec::new();
        assert_eq!(repo.concat_into(&mut out, &b, None, None, None).unwrap(), 1);
        // A bound below what is coming empties the list.
        let last = repo.evict(&mut a, 100, 150);
        assert_eq!((last.events, last.bytes), (30, 200));
        assert!(a.is_empty());
        assert_eq!(repo.in_memory_bytes(), 100);
    }
}
