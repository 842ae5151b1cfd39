//! The stack-trace repository: captured stacks (raw return addresses) interned
//! to keys, symbolized only when a chunk that references them is written,
//! and released when no chunk still to be written can reference them.
//!
//! # Intern
//!
//! Interning happens on the emitting thread, after capture and before the
//! event's write section: a sharded mutex around a hash map keyed by the
//! addresses. A stack seen before costs a hash, a lock and a lookup, and no
//! allocation; a new stack allocates its entry once. Each intern stamps the
//! entry with the epoch the interning thread reads (`used_in`).
//!
//! # Epoch tags
//!
//! Each entry carries the epochs it was used in, one word per epoch modulo
//! 3 (`used[e % 3] == e` once used in `e`; see [`crate::cpool::threads`] for
//! why three words suffice and none needs clearing), and chunk *e* writes
//! exactly the entries tagged *e*. The intern tags the entry with the epoch
//! the interning thread reads before its write section; the event's section
//! compares the epoch it loads with that one and, in the rare case a flip
//! fell in between (intern and section are microseconds apart, a flip
//! happens once a chunk), tags the entry with the section's epoch too
//! ([`StackRepository::tag`], cold), before the event is committed. So
//! every event's stack is tagged with the epoch of the chunk the event lands
//! in; the intern's own tag then only costs chunk *e* one constant it may
//! not need. A stack held by the caller across epochs (a
//! [`crate::StackTrace`] value) is re-tagged the same way when an event
//! uses it.
//!
//! # Release
//!
//! When the recorder has finished the chunk of epoch *e* it releases every
//! entry not tagged *e + 1* or later (*e + 2* may have begun): no event of
//! a later chunk can reference it without tagging it first, and a tag
//! finding the entry released fails, so the event is written without a
//! stack trace and counted as a dropped stack instead of referencing a key
//! no chunk defines. (That needs the flip, the drains and the whole chunk
//! end to fall between an intern and its section.)
//!
//! # Bound
//!
//! The entries' bytes (an estimate of what they and their resolved frames
//! hold, maps included) and the recorder's name tables (methods, classes,
//! symbols: [`StackRepository::set_resolved_bytes`]) count against one
//! limit, a share of the recording's `max_memory`. A new stack is interned
//! only while the total stays under 7/8 of the limit (the rest absorbs the
//! names the recorder creates for the stacks admitted since it last
//! published its tables' size); a stack that would pass it is not
//! interned: the caller writes its event without a stack trace and counts
//! it ([`LossCause::StackDropped`]).
//!
//! Invariant: keys are never reused, so a key written in any chunk names the
//! stack that was captured; every key referenced by an event of epoch *e*
//! is tagged *e* before the event is committed and resolves until the chunk
//! of *e* is finished, and the bytes held stay under the limit.
//!
//! [`LossCause::StackDropped`]: crate::LossCause::StackDropped

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::base::sync::{AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::cpool::threads::{TAG_WORDS, tag_slot};

const SHARDS: usize = 16;

/// The shards' hasher: random per process, fixed under loom, whose models
/// must lock the same shards in every execution (see `base::sync`).
type ShardHasher = crate::base::sync::RandomState;

/// Bytes an entry costs besides its frames: the `Arc` headers, the two map
/// slots and their control bytes, the entry itself, and the recorder's map
/// slot for its resolved frames.
const ENTRY_OVERHEAD: usize = 176;

/// Bytes per frame: the address here, and its resolved frame in the
/// recorder's tables (an estimate: inlining can resolve one address to
/// several frames).
const FRAME_COST: usize = 8 + 24;

/// New stacks are admitted up to 7/8 of the limit: the rest is headroom
/// for the names (methods, classes, symbols) the recorder creates when it
/// resolves the stacks admitted since it last published its tables' size.
fn admission_limit(limit: usize) -> usize {
    limit - limit / 8
}

/// What interning `frames` costs, charged when it is interned.
fn cost(frames: usize) -> usize {
    frames * FRAME_COST + ENTRY_OVERHEAD
}

/// One interned stack.
#[derive(Debug)]
pub(crate) struct StackEntry {
    /// Lookup addresses, innermost first.
    pub(crate) frames: crate::base::sync::StdArc<[u64]>,
    /// The capture hit the depth limit.
    pub(crate) truncated: bool,
}

/// Interned stacks by key.
#[derive(Debug)]
pub(crate) struct StackRepository {
    next_key: AtomicU64,
    hasher: ShardHasher,
    shards: [Mutex<Shard>; SHARDS],
    /// Bytes held by the entries.
    bytes: AtomicUsize,
    /// Bytes of the recorder's resolved frames for these stacks.
    resolved_bytes: AtomicUsize,
    /// The most `bytes + resolved_bytes` may reach.
    limit: AtomicUsize,
}

#[derive(Debug)]
struct Interned {
    entry: crate::base::sync::StdArc<StackEntry>,
    /// The epochs it was used in, by epoch modulo 3 (see the module docs).
    used: [u64; TAG_WORDS],
    cost: usize,
}

#[derive(Debug, Default)]
struct Shard {
    /// Indexed by `truncated as usize`, so lookups borrow `&[u64]`.
    by_frames: [HashMap<crate::base::sync::StdArc<[u64]>, u64>; 2],
    by_key: HashMap<u64, Interned>,
}

impl StackRepository {
    /// An empty repository that may hold `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            next_key: AtomicU64::new(1),
            hasher: Default::default(),
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
            bytes: AtomicUsize::new(0),
            resolved_bytes: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
        }
    }

    fn shard_of_frames(&self, frames: &[u64], truncated: bool) -> usize {
        let mut h = self.hasher.build_hasher();
        frames.hash(&mut h);
        truncated.hash(&mut h);
        (h.finish() as usize) % SHARDS
    }

    /// The key of `frames`, interning them if new, stamped with `epoch`
    /// (the epoch the caller reads now, before its write section). `None`
    /// if the stack is new and would pass the memory limit. Keys encode
    /// their shard in the low bits so lookups by key find it directly.
    pub(crate) fn intern(&self, frames: &[u64], truncated: bool, epoch: u64) -> Option<u64> {
        let shard = self.shard_of_frames(frames, truncated);
        let mut s = self.shards[shard].lock();
        if let Some(&k) = s.by_frames[truncated as usize].get(frames) {
            if let Some(i) = s.by_key.get_mut(&k) {
                i.used[tag_slot(epoch)] = epoch;
            }
            return Some(k);
        }
        let cost = cost(frames.len());
        // Relaxed: a bound, not a synchronisation; interns racing on other
        // shards may pass it by one entry each.
        let held = self.bytes.load(Ordering::Relaxed) + self.resolved_bytes.load(Ordering::Relaxed);
        if held + cost > admission_limit(self.limit.load(Ordering::Relaxed)) {
            return None;
        }
        self.bytes.fetch_add(cost, Ordering::Relaxed);
        let key = self.next_key.fetch_add(1, Ordering::Relaxed) * SHARDS as u64 + shard as u64;
        let frames: crate::base::sync::StdArc<[u64]> = frames.into();
        s.by_frames[truncated as usize].insert(frames.clone(), key);
        s.by_key.insert(
            key,
            Interned {
                entry: crate::base::sync::StdArc::new(StackEntry { frames, truncated }),
                used: {
                    let mut used = [0; TAG_WORDS];
                    used[tag_slot(epoch)] = epoch;
                    used
                },
                cost,
            },
        );
        Some(key)
    }

    /// The stack under `key`, if it was not released.
    pub(crate) fn get(&self, key: u64) -> Option<crate::base::sync::StdArc<StackEntry>> {
        let shard = (key % SHARDS as u64) as usize;
        self.shards[shard]
            .lock()
            .by_key
            .get(&key)
            .map(|i| i.entry.clone())
    }

    /// Tags `key` with `epoch`, the epoch of the caller's open write
    /// section, when it differs from the epoch the stack was interned or
    /// last tagged in (see the module docs). False if the stack was
    /// released: the caller then writes no stack trace.
    #[cold]
    #[inline(never)]
    pub(crate) fn tag(&self, key: u64, epoch: u64) -> bool {
        let shard = (key % SHARDS as u64) as usize;
        match self.shards[shard].lock().by_key.get_mut(&key) {
            Some(i) => {
                i.used[tag_slot(epoch)] = epoch;
                true
            }
            None => false,
        }
    }

    /// The keys tagged with `epoch`, in key order: the stacks chunk
    /// `epoch` must hold.
    pub(crate) fn tagged(&self, epoch: u64) -> Vec<u64> {
        let mut keys = Vec::new();
        for shard in &self.shards {
            let s = shard.lock();
            keys.extend(
                s.by_key
                    .iter()
                    .filter(|(_, i)| i.used[tag_slot(epoch)] == epoch)
                    .map(|(&k, _)| k),
            );
        }
        keys.sort_unstable();
        keys
    }

    /// Releases every stack not tagged with `epoch` or later (the
    /// recorder, after finishing the chunk of `epoch - 1`, when no epoch
    /// after `epoch + 1` has begun; see the module docs). Returns the released
    /// keys.
    pub(crate) fn release_before(&self, epoch: u64) -> Vec<u64> {
        let mut released = Vec::new();
        for shard in &self.shards {
            let mut s = shard.lock();
            let Shard { by_frames, by_key } = &mut *s;
            by_key.retain(|&key, i| {
                if i.used.iter().any(|&u| u >= epoch) {
                    return true;
                }
                by_frames[i.entry.truncated as usize].remove(&*i.entry.frames);
                self.bytes.fetch_sub(i.cost, Ordering::Relaxed);
                released.push(key);
                false
            });
        }
        released
    }

    /// The bytes the recorder's name tables hold (they count against the
    /// same limit).
    pub(crate) fn set_resolved_bytes(&self, bytes: usize) {
        self.resolved_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Sets the limit (each recording's share of its `max_memory`).
    pub(crate) fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Bytes held now: the entries and the resolved frames.
    pub(crate) fn held_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed) + self.resolved_bytes.load(Ordering::Relaxed)
    }

    /// The limit in force.
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Stacks held now.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().by_key.len()).sum()
    }

    /// Holds every shard's lock across a `fork()`.
    pub(crate) fn fork_lock(&'static self) {
        for s in &self.shards {
            crate::base::sync::fork_lock(s);
        }
    }

    /// Releases what [`fork_lock`](Self::fork_lock) holds.
    ///
    /// # Safety
    ///
    /// Called once after [`fork_lock`](Self::fork_lock) on the same thread.
    pub(crate) unsafe fn fork_unlock(&self) {
        for s in self.shards.iter().rev() {
            // SAFETY: the caller's contract.
            unsafe { crate::base::sync::fork_unlock(s) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_keeps_its_key_until_released_and_then_gets_a_new_one() {
        let repo = StackRepository::new(1 << 20);
        let a = repo.intern(&[1, 2, 3], false, 1).unwrap();
        assert_eq!(repo.intern(&[1, 2, 3], false, 2), Some(a));
        assert_ne!(repo.intern(&[1, 2, 3], true, 2), Some(a));
        // Used in epoch 2: the chunk of epoch 2 may still reference it.
        assert!(repo.release_before(2).is_empty());
        assert!(repo.get(a).is_some());
        assert_eq!(repo.release_before(3).len(), 2);
        assert!(repo.get(a).is_none());
        assert_eq!(repo.held_bytes(), 0);
        let b = repo.intern(&[1, 2, 3], false, 3).unwrap();
        assert_ne!(a, b, "keys are never reused");
    }

    #[test]
    fn a_stack_is_in_the_chunks_of_the_epochs_it_was_tagged_in() {
        let repo = StackRepository::new(1 << 20);
        let a = repo.intern(&[1, 2, 3], false, 4).unwrap();
        let b = repo.intern(&[4, 5], false, 5).unwrap();
        assert_eq!(repo.tagged(4), vec![a]);
        assert_eq!(repo.tagged(5), vec![b]);
        // Interned in 4, its event's section loaded 5: tagged for chunk 5,
        // and still in chunk 4 (used there by the intern's epoch).
        assert!(repo.tag(a, 5));
        assert_eq!(repo.tagged(5), vec![a.min(b), a.max(b)]);
        assert_eq!(repo.tagged(4), vec![a]);
        // Chunk 4 finished: both are tagged 5, neither is released.
        assert!(repo.release_before(5).is_empty());
        // Epoch 6 may begin before chunk 4 is finished: its own word.
        assert!(repo.tag(b, 6));
        assert_eq!(repo.tagged(6), vec![b]);
        assert_eq!(repo.tagged(4), vec![a]);
        // Epoch 7 reuses the word of 4 (chunk 4 is finished by then):
        // `b`'s says 7.
        assert!(repo.tag(b, 7));
        assert!(repo.intern(&[4, 5], false, 7) == Some(b));
        assert_eq!(repo.tagged(7), vec![b]);
        assert_eq!(repo.tagged(6), vec![b]);
        // `a` was not used since: its word of 4 still says 4.
        assert_eq!(repo.tagged(4), vec![a]);
        // Chunk 5 finished: `a` was not used in 6 or 7.
        assert_eq!(repo.release_before(6), vec![a]);
        assert!(!repo.tag(a, 6), "a released stack cannot be tagged");
    }

    #[test]
    fn new_stacks_past_the_limit_are_refused_and_known_ones_still_resolve() {
        let one = cost(4);
        let limit = 2 * one + (2 * one) / 7 + 1;
        assert!(admission_limit(limit) >= 2 * one && admission_limit(limit) < 3 * one);
        let repo = StackRepository::new(limit);
        let a = repo.intern(&[1, 2, 3, 4], false, 1).unwrap();
        let _b = repo.intern(&[5, 6, 7, 8], false, 1).unwrap();
        assert_eq!(repo.intern(&[9, 10, 11, 12], false, 1), None);
        assert_eq!(repo.intern(&[1, 2, 3, 4], false, 1), Some(a));
        assert_eq!(repo.held_bytes(), 2 * one);
        // The resolved frames share the limit.
        repo.release_before(2);
        repo.set_resolved_bytes(2 * one);
        assert_eq!(repo.intern(&[1, 2, 3, 4], false, 2), None);
        repo.set_resolved_bytes(0);
        assert!(repo.intern(&[1, 2, 3, 4], false, 2).is_some());
    }
}
