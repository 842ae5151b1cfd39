//! The stack-trace repository: captured stacks (raw return addresses) interned
//! to keys, symbolized only when a chunk that references them is written.
//!
//! Interning happens on the emitting thread, after capture and before the
//! event's write section: a sharded mutex around a hash map keyed by the
//! addresses. A stack seen before costs a hash, a lock and a lookup, and no
//! allocation; a new stack allocates its entry once.
//!
//! Invariant: a key names the same stack for the life of the process (keys
//! are never reused), so a key written in any chunk resolves to the frames
//! that were captured.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::sync::{AtomicU64, Mutex, Ordering};

const SHARDS: usize = 16;

/// One interned stack.
#[derive(Debug)]
pub(crate) struct StackEntry {
    /// Lookup addresses, innermost first.
    pub(crate) frames: Box<[u64]>,
    /// The capture hit the depth limit.
    pub(crate) truncated: bool,
}

/// Interned stacks by key.
#[derive(Debug)]
pub(crate) struct StackRepository {
    next_key: AtomicU64,
    hasher: std::collections::hash_map::RandomState,
    shards: [Mutex<Shard>; SHARDS],
}

#[derive(Debug, Default)]
struct Shard {
    /// Indexed by `truncated as usize`, so lookups borrow `&[u64]`.
    by_frames: [HashMap<Box<[u64]>, u64>; 2],
    by_key: HashMap<u64, std::sync::Arc<StackEntry>>,
}

impl StackRepository {
    pub(crate) fn new() -> Self {
        Self {
            next_key: AtomicU64::new(1),
            hasher: Default::default(),
            shards: std::array::from_fn(|_| Mutex::new(Shard::default())),
        }
    }

    fn shard_of_frames(&self, frames: &[u64], truncated: bool) -> usize {
        let mut h = self.hasher.build_hasher();
        frames.hash(&mut h);
        truncated.hash(&mut h);
        (h.finish() as usize) % SHARDS
    }

    /// The key of `frames`, interning them if new. Keys encode their shard
    /// in the low bits so lookups by key find it directly.
    pub(crate) fn intern(&self, frames: &[u64], truncated: bool) -> u64 {
        let shard = self.shard_of_frames(frames, truncated);
        let mut s = self.shards[shard].lock();
        if let Some(&k) = s.by_frames[truncated as usize].get(frames) {
            return k;
        }
        let key = self.next_key.fetch_add(1, Ordering::Relaxed) * SHARDS as u64 + shard as u64;
        let entry = StackEntry {
            frames: Box::from(frames),
            truncated,
        };
        s.by_frames[truncated as usize].insert(entry.frames.clone(), key);
        s.by_key.insert(key, std::sync::Arc::new(entry));
        key
    }

    /// Holds every shard's lock across a `fork()`.
    #[cfg(not(flightrec_loom))]
    pub(crate) fn fork_lock(&self) {
        for s in &self.shards {
            crate::sync::fork_lock(s);
        }
    }

    /// Releases what [`fork_lock`](Self::fork_lock) holds.
    ///
    /// # Safety
    ///
    /// Called once after [`fork_lock`](Self::fork_lock) on the same thread.
    #[cfg(not(flightrec_loom))]
    pub(crate) unsafe fn fork_unlock(&self) {
        for s in self.shards.iter().rev() {
            // SAFETY: the caller's contract.
            unsafe { crate::sync::fork_unlock(s) }
        }
    }

    /// The stack under `key`.
    pub(crate) fn get(&self, key: u64) -> Option<std::sync::Arc<StackEntry>> {
        let shard = (key % SHARDS as u64) as usize;
        self.shards[shard].lock().by_key.get(&key).cloned()
    }
}
