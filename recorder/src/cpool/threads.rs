//! The thread pool: one `java.lang.Thread` constant per thread that ever
//! emitted, under a key that is never reused.
//!
//! A thread registers when it first emits (cold path) and is marked exited by
//! its thread-local destructor. Its constant stays until the chunk that holds
//! its last events is finished, then it is pruned.
//!
//! # Epoch tags
//!
//! Each thread carries [`ThreadTags`]: three words, one per epoch modulo
//! 3 ([`TAG_SLOTS`]), the word `e % 3` holding `e` once the thread was used
//! in epoch `e`. A thread is tagged inside the write section of an event that
//! references it, with the epoch the section loaded, before the event is
//! committed: by its own writer slot when it takes a block of a new epoch
//! (every thread's first event of an epoch does, so the hot path pays
//! nothing), and by a writer that references another thread (CPU samples, a
//! [`crate::ThreadRef`] of another thread) through the thread's tags. The
//! chunk of epoch `e` writes exactly the threads whose word `e % 3` is `e`.
//! Only sections of epoch `e` store `e`, and they have all closed before
//! the recorder finishes chunk `e`; epoch `e + 3`, the next to store into
//! word `e % 3`, cannot begin before chunk `e` is finished (the recorder
//! flips only from the epoch of its open chunk, a writer's seal at most
//! two epochs past the chunk being finished, see [`crate::buffer::pool`]),
//! so the word is not overwritten while chunk `e` reads it, and no word
//! needs clearing: the stores never race a reset. The third word is what
//! lets a seal flip the epoch while the recorder still finishes the chunk
//! before (see [`crate::output::recorder_thread`] § "Chunk size").
//!
//! Invariant: a key, once handed out, names the same thread for the life of
//! the process (the JDK reuses a key's value from the previous chunk of a
//! file); a thread referenced by an event committed in epoch `e` is tagged
//! `e` before that event is committed (so before the recorder can drain it),
//! and stays resolvable until chunk `e` is finished.

use std::collections::HashMap;

use jfr_format::write::constants::{ThreadValue, write_thread};
use jfr_format::{Checkpoint, TypeId};

use crate::base::sync::{Arc, AtomicU64, Mutex, Ordering};

/// How many epochs' tags a constant carries: the chunk being finished,
/// the epoch after it, and the one a writer's seal may flip to before the
/// recorder has finished that chunk (see the module docs).
pub(crate) const TAG_SLOTS: u64 = 3;

/// The words of a constant's tags: [`TAG_SLOTS`], or two in the loom
/// negative control `two_tag_slots` (see `ci/loom.sh`; the pool still lets
/// a seal flip two epochs past the chunk being finished).
pub(crate) const TAG_WORDS: usize = if cfg!(flightrec_loom_weaken = "two_tag_slots") {
    2
} else {
    TAG_SLOTS as usize
};

/// The word of `epoch` in a constant's tags.
#[inline]
pub(crate) fn tag_slot(epoch: u64) -> usize {
    (epoch % TAG_WORDS as u64) as usize
}

/// The epochs a thread was used in, one word per epoch modulo
/// [`TAG_SLOTS`] (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ThreadTags([AtomicU64; TAG_WORDS]);

impl ThreadTags {
    /// True if the thread is tagged with `epoch`.
    #[inline]
    pub(crate) fn has(&self, epoch: u64) -> bool {
        self.0[tag_slot(epoch)].load(Ordering::Relaxed) == epoch
    }

    /// Tags the thread with `epoch`, the epoch of the caller's open write
    /// section. A plain store (Relaxed: the event's commit, a Release store
    /// after it, publishes it to the recorder): every writer of the word in
    /// one epoch stores the same value.
    #[inline]
    pub(crate) fn tag(&self, epoch: u64) {
        if !self.has(epoch) {
            self.0[tag_slot(epoch)].store(epoch, Ordering::Relaxed);
        }
    }
}

/// What is written for one thread.
#[derive(Debug, Clone)]
pub(crate) struct ThreadInfo {
    /// The thread's name (Rust name, else the OS name).
    pub(crate) name: String,
    /// Kernel thread id.
    pub(crate) os_tid: i64,
    /// Epoch in which the thread exited, if it did.
    pub(crate) exited_in: Option<u64>,
    /// The name came from the thread itself (its first event), not from
    /// another thread reading `/proc` (which may see the name it inherited
    /// before it set its own).
    pub(crate) named_by_owner: bool,
    /// The epochs it was used in.
    pub(crate) tags: Arc<ThreadTags>,
}

/// All threads that emitted.
#[derive(Debug)]
pub(crate) struct ThreadRegistry {
    next_key: AtomicU64,
    threads: Mutex<Threads>,
}

#[derive(Debug, Default)]
struct Threads {
    by_key: HashMap<u64, ThreadInfo>,
    /// Live (not exited) threads by kernel id, so a thread found by the CPU
    /// sampler and the same thread emitting an event share one key.
    live_by_tid: HashMap<i64, u64>,
}

impl ThreadRegistry {
    pub(crate) fn new() -> Self {
        Self {
            next_key: AtomicU64::new(1),
            threads: Mutex::new(Threads::default()),
        }
    }

    /// The key of the live thread `os_tid`, registering it (as `name()`) if
    /// it has none. Keys are never 0.
    pub(crate) fn key_for_tid(&self, os_tid: i64, name: impl FnOnce() -> String) -> u64 {
        self.key_with(os_tid, name, false)
    }

    /// [`key_for_tid`](Self::key_for_tid) for the calling thread itself,
    /// `name` being its own name: a key another thread registered for it
    /// (the sampler, the thread-start poll) takes that name, since those
    /// read `/proc` and may have seen the name inherited from the parent.
    pub(crate) fn key_for_own_thread(&self, os_tid: i64, name: impl FnOnce() -> String) -> u64 {
        self.key_with(os_tid, name, true)
    }

    fn key_with(&self, os_tid: i64, name: impl FnOnce() -> String, own: bool) -> u64 {
        let mut t = self.threads.lock();
        if let Some(&key) = t.live_by_tid.get(&os_tid) {
            if let Some(info) = t.by_key.get_mut(&key)
                && own
                && !info.named_by_owner
            {
                info.name = name();
                info.named_by_owner = true;
            }
            return key;
        }
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        t.by_key.insert(
            key,
            ThreadInfo {
                name: name(),
                os_tid,
                exited_in: None,
                named_by_owner: own,
                tags: Arc::new(ThreadTags::default()),
            },
        );
        t.live_by_tid.insert(os_tid, key);
        key
    }

    /// Marks `key` as exited in `epoch`: its kernel id may be reused by a new
    /// thread, which gets a new key.
    pub(crate) fn exited(&self, key: u64, epoch: u64) {
        let mut t = self.threads.lock();
        if let Some(info) = t.by_key.get_mut(&key) {
            info.exited_in = Some(epoch);
            let tid = info.os_tid;
            if t.live_by_tid.get(&tid) == Some(&key) {
                t.live_by_tid.remove(&tid);
            }
        }
    }

    /// The tags of `key` (none if it was pruned).
    pub(crate) fn tags_of(&self, key: u64) -> Option<Arc<ThreadTags>> {
        self.threads.lock().by_key.get(&key).map(|t| t.tags.clone())
    }

    /// The tags of `key`, defining it again as thread `os_tid` named `name`
    /// if it was pruned: for the `jdk.ThreadEnd` of a thread that marked
    /// itself exited (its thread-local destructor) chunks before the
    /// lifecycle poll saw it gone. The entry comes back live and not under
    /// `os_tid` (which a new thread may have taken); the caller marks it
    /// [`exited`](Self::exited) once its event is committed, so it is
    /// written in the event's chunk and pruned after, as any other.
    pub(crate) fn tags_or_restore(&self, key: u64, os_tid: i64, name: &str) -> Arc<ThreadTags> {
        let mut t = self.threads.lock();
        let info = t.by_key.entry(key).or_insert_with(|| ThreadInfo {
            name: name.to_owned(),
            os_tid,
            exited_in: None,
            named_by_owner: true,
            tags: Arc::new(ThreadTags::default()),
        });
        info.tags.clone()
    }

    /// Tags `key` with `epoch` (see the module docs): for a writer that
    /// references a thread other than its own and holds no [`ThreadTags`]
    /// of it. Takes the registry's lock.
    #[cold]
    #[inline(never)]
    pub(crate) fn tag_key(&self, key: u64, epoch: u64) {
        if let Some(t) = self.threads.lock().by_key.get(&key) {
            t.tags.tag(epoch);
        }
    }

    /// The keys tagged with `epoch`, in key order: the threads chunk
    /// `epoch` must hold.
    pub(crate) fn tagged(&self, epoch: u64) -> Vec<u64> {
        let t = self.threads.lock();
        // In key order, not the map's: the loads of the tags are then in
        // the same order in every execution of a loom model.
        let mut keys: Vec<u64> = t.by_key.keys().copied().collect();
        keys.sort_unstable();
        keys.retain(|k| t.by_key[k].tags.has(epoch));
        keys
    }

    /// Forgets threads that exited before `epoch` (their events are all in
    /// finished chunks), unless tagged with `epoch + 1` or `epoch + 2`, the
    /// epochs whose chunks are still to be written (a CPU sample written
    /// after the thread exited).
    pub(crate) fn prune_exited_before(&self, epoch: u64) {
        let mut t = self.threads.lock();
        // In key order (see `tagged`).
        let mut keys: Vec<u64> = t.by_key.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            let info = &t.by_key[&k];
            if info.exited_in.is_some_and(|e| e < epoch)
                && !info.tags.has(epoch + 1)
                && !info.tags.has(epoch + 2)
            {
                t.by_key.remove(&k);
            }
        }
    }

    /// Holds the registry's lock across a `fork()`.
    pub(crate) fn fork_lock(&'static self) {
        crate::base::sync::fork_lock(&self.threads);
    }

    /// Releases what [`fork_lock`](Self::fork_lock) holds.
    ///
    /// # Safety
    ///
    /// Called once after [`fork_lock`](Self::fork_lock) on the same thread.
    pub(crate) unsafe fn fork_unlock(&self) {
        // SAFETY: the caller's contract.
        unsafe { crate::base::sync::fork_unlock(&self.threads) }
    }

    /// In a forked child: every thread but `own` (the forking thread's key,
    /// if it ever emitted) exited in `epoch`; `own` lives on as `own_tid`,
    /// the child's id for it.
    ///
    /// # Safety
    ///
    /// Called in the child between [`fork_lock`](Self::fork_lock) and
    /// [`fork_unlock`](Self::fork_unlock), with no other thread running.
    pub(crate) unsafe fn keep_only_in_child(&self, own: Option<u64>, own_tid: i64, epoch: u64) {
        // SAFETY: the caller's contract: the lock is held for us and we are
        // the only thread.
        let t = unsafe { crate::base::sync::fork_data(&self.threads) };
        t.live_by_tid.clear();
        for (&key, info) in t.by_key.iter_mut() {
            if Some(key) == own {
                info.os_tid = own_tid;
                t.live_by_tid.insert(own_tid, key);
            } else if info.exited_in.is_none() {
                info.exited_in = Some(epoch);
            }
        }
    }

    /// True if `key` is still known (its pool entry can be written). For the
    /// loom models.
    #[allow(dead_code)] // called by `loom_api` only
    pub(crate) fn is_known(&self, key: u64) -> bool {
        self.threads.lock().by_key.contains_key(&key)
    }

    /// Writes the pool of the threads in `keys` into `cp`.
    pub(crate) fn write_pool(&self, cp: &mut Checkpoint, keys: &[u64]) {
        let threads = self.threads.lock();
        let mut pool = cp.pool(TypeId::THREAD);
        for &key in keys {
            let Some(t) = threads.by_key.get(&key) else {
                continue;
            };
            let value = ThreadValue {
                os_name: &t.name,
                os_thread_id: t.os_tid,
                java_name: Some(&t.name),
                java_thread_id: key as i64,
                group: 0,
            };
            write_thread(pool.entry(key), &value);
        }
    }
}

/// The current thread's name: its Rust name, else the kernel's `comm`.
pub(crate) fn current_thread_name() -> String {
    if let Some(name) = std::thread::current().name() {
        return name.to_owned();
    }
    let tid = crate::base::sync::os_thread_id();
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| format!("thread-{tid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pruned_key_is_defined_again_for_its_last_event() {
        let reg = ThreadRegistry::new();
        let key = reg.key_for_tid(4242, || "worker".to_owned());
        // The thread marks itself exited in epoch 3; chunk 4 is finished
        // and prunes it.
        reg.exited(key, 3);
        reg.prune_exited_before(4);
        assert!(reg.tags_of(key).is_none());
        // Its ThreadEnd, written in epoch 6, brings the key back and tags
        // it, so chunk 6 writes the thread.
        let tags = reg.tags_or_restore(key, 4242, "worker");
        tags.tag(6);
        assert_eq!(reg.tagged(6), vec![key]);
        // The same tags while it lives; a new thread with the id gets a new
        // key (the restored one is not live under it).
        assert!(Arc::ptr_eq(&tags, &reg.tags_or_restore(key, 4242, "x")));
        assert_ne!(reg.key_for_tid(4242, || "next".to_owned()), key);
        // Marked exited after the event, it is pruned after its chunk.
        reg.exited(key, 6);
        reg.prune_exited_before(7);
        assert!(reg.tags_of(key).is_none());
    }
}
