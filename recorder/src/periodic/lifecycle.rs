//! `jdk.ThreadStart` and `jdk.ThreadEnd` for every thread of the process,
//! found by polling `/proc/self/task` (see [`crate::sampler::threads`]:
//! one `fstat` per poll, a listing only when the thread count changed or
//! every [`RELIST`]), whether or not the thread ever commits an event.
//!
//! A poll that finds nothing changed touches no per-thread state: the
//! threads waiting to name themselves are counted, not searched for. A
//! listing goes into a kept sorted `Vec` and is merged with the previous
//! one (kept too) to find the threads that started and ended: nothing is
//! allocated but for a thread that is new.
//!
//! # Why polling, not a `pthread_create` hook
//!
//! Stable Rust has no spawn hook, and interposing `pthread_create` in a
//! library changes every program that links it (the sampler does, only
//! with the `thread-hook` feature: [`crate::sampler::birth`]). Polling sees
//! every thread that lives longer than one poll: [`super::cadence::POLL`] (20 ms)
//! while threads come and go, [`super::cadence::QUIET_POLL`] (200 ms) once none
//! did for [`super::cadence::QUIET_AFTER`] — while sampling runs, the sampler's
//! own watch of the thread list (`sampler::wake`) asks for a poll at once.
//! A thread that starts as another ends between two polls leaves the
//! thread count as it was, but is still seen: the watch also compares the
//! newest task id (`sampler::threads`); [`RELIST`] is only a backstop.
//! A thread first seen with the process's own name, with the name it
//! inherited from its creator (known for threads the hook saw), or with the
//! name of any other live thread (its creator's, most likely) is given up
//! to 200 ms to name itself (Rust's `Builder::name` takes effect in the new
//! thread, once it runs): a thread announced under its creator's name would
//! keep that name in every chunk.
//!
//! With the `thread-hook` feature, a thread created through the hook while
//! `jdk.ThreadStart` is on has its creator and the creator's stack at the
//! creation in its `jdk.ThreadStart` ([`crate::sampler::birth::take_parent`]),
//! as the JDK writes them; without it (or for a thread the hook did not
//! see) both are empty and `eventThread` is the new thread.
//!
//! Invariant: every thread that appears after the first listing gets one
//! `jdk.ThreadStart` before its `jdk.ThreadEnd`, and every thread seen gets
//! at most one `jdk.ThreadEnd`; a thread's key is marked exited only after
//! its `jdk.ThreadEnd` is committed, and the chunk of a `jdk.ThreadEnd`
//! defines the thread it names (a key pruned since the thread marked
//! itself exited is defined again).

use std::collections::HashMap;
use std::time::Instant;

use jfr_format::write::events::{BuiltinEvent, ThreadEnd, ThreadStart};

use super::emit::emit_with;
use crate::base::clock;
use crate::base::sync::global::Ordering;
use crate::event::builtin::{BuiltinRefs, emit_builtin_also};
use crate::runtime::Runtime;
use crate::sampler::birth::Parent;
use crate::sampler::threads;

#[derive(Debug)]
struct Known {
    /// Registered with the thread registry (when announced).
    key: Option<u64>,
    /// Seen after the first listing, not announced yet (waiting for its
    /// name), and how many polls it has waited.
    pending: Option<String>,
    waited: u32,
    /// The name it had when listed or announced: a new thread showing the
    /// name of a live one waits to name itself.
    name: String,
}

/// Polls a new thread with the process's name may wait to name itself
/// (200 ms: on a loaded machine a new thread may not run for a while).
const NAME_WAIT: u32 = 10;

/// Longest time between two listings when the thread count did not change
/// (a listing of a few hundred threads costs more than all else a poll
/// does; the sampler relists more often, for its own reasons).
const RELIST: std::time::Duration = std::time::Duration::from_secs(1);

/// The threads seen, and the counts of `jdk.JavaThreadStatistics`.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    watch: threads::Watch,
    known: HashMap<u64, Known>,
    /// The keys of `known`, sorted: the threads at the last listing.
    live: Vec<u64>,
    /// The listing being merged with `live` (kept for its allocation).
    listing: Vec<u64>,
    /// Entries of `known` whose `pending` is set.
    pending: usize,
    listed_once: bool,
    process_name: String,
    pid: u64,
    /// Threads alive at the first listing plus those started since.
    pub(crate) accumulated: u64,
    pub(crate) peak: u64,
}

impl Lifecycle {
    pub(crate) fn new() -> Self {
        Self {
            watch: threads::Watch::with_relist(RELIST),
            known: HashMap::new(),
            live: Vec::new(),
            listing: Vec::new(),
            pending: 0,
            listed_once: false,
            process_name: threads::name(u64::from(std::process::id())),
            pid: u64::from(std::process::id()),
            accumulated: 0,
            peak: 0,
        }
    }

    /// Live threads now (as of the last listing).
    pub(crate) fn live(&self) -> u64 {
        self.known.len() as u64
    }

    /// The kernel id of the `i`th live thread (in id order), if there are
    /// that many.
    pub(crate) fn tid_at(&self, i: usize) -> Option<u64> {
        self.live.get(i).copied()
    }

    /// The key of live thread `tid`, registering it; `None` while the
    /// thread waits to name itself (a key's name is fixed when it is
    /// registered).
    pub(crate) fn key(&mut self, rt: &Runtime, tid: u64) -> Option<u64> {
        let k = self.known.get_mut(&tid)?;
        if k.pending.is_some() {
            return None;
        }
        Some(
            *k.key
                .get_or_insert_with(|| rt.threads.key_for_tid(tid as i64, || threads::name(tid))),
        )
    }

    /// One poll: announces new threads and ends gone ones (writing the
    /// events if `start`/`end` are enabled). True if a thread started or
    /// ended, or one still waits to name itself: the caller polls again
    /// soon.
    pub(crate) fn poll(&mut self, rt: &Runtime, start: bool, end: bool, now: Instant) -> bool {
        // Threads waiting for their name are announced once named, or
        // after `NAME_WAIT` polls.
        if self.pending > 0 {
            let named: Vec<u64> = self
                .known
                .iter_mut()
                .filter(|(_, k)| k.pending.is_some())
                .filter_map(|(&t, k)| {
                    k.waited += 1;
                    let seen = k.pending.as_deref().unwrap_or_default();
                    (k.waited >= NAME_WAIT || threads::name(t) != seen).then_some(t)
                })
                .collect();
            for tid in named {
                self.announce(rt, tid, start);
            }
        }
        if !self.watch.poll_into(now, &mut self.listing) {
            return self.waiting();
        }
        let (live, listing) = (
            std::mem::take(&mut self.live),
            std::mem::take(&mut self.listing),
        );
        let mut changed = false;
        // Both sorted: the ends first (as `jdk.ThreadEnd` before the
        // starts the same listing found), then the starts.
        let mut j = 0;
        for &tid in &live {
            while listing.get(j).is_some_and(|&t| t < tid) {
                j += 1;
            }
            if listing.get(j) != Some(&tid) {
                changed = true;
                self.ended(rt, tid, start, end);
            }
        }
        let mut i = 0;
        for &tid in &listing {
            while live.get(i).is_some_and(|&t| t < tid) {
                i += 1;
            }
            if live.get(i) != Some(&tid) {
                changed = true;
                self.started(rt, tid, start);
            }
        }
        // The new listing is the live set; the old one's room takes the
        // next listing.
        self.live = listing;
        self.listing = live;
        self.listed_once = true;
        self.peak = self.peak.max(self.known.len() as u64);
        changed || self.waiting()
    }

    /// A thread in a listing that was not in the previous one.
    fn started(&mut self, rt: &Runtime, tid: u64, start: bool) {
        if self.known.contains_key(&tid) {
            return;
        }
        self.accumulated += 1;
        if !self.listed_once {
            self.known.insert(
                tid,
                Known {
                    key: None,
                    pending: None,
                    waited: 0,
                    name: threads::name(tid),
                },
            );
            return;
        }
        let name = threads::name(tid);
        let unnamed = (name == self.process_name && tid != self.pid)
            || crate::sampler::birth::inherited_name(tid).is_some_and(|n| n == name)
            || self.known.values().any(|k| k.name == name);
        self.known.insert(
            tid,
            Known {
                key: None,
                pending: Some(name.clone()),
                waited: 0,
                name,
            },
        );
        self.pending += 1;
        if !unnamed {
            self.announce(rt, tid, start);
        }
    }

    /// Some thread waits to name itself.
    fn waiting(&self) -> bool {
        self.pending > 0
    }

    fn announce(&mut self, rt: &Runtime, tid: u64, start: bool) {
        let parent = crate::sampler::birth::take_parent(tid);
        crate::sampler::birth::forget(tid);
        let Some(k) = self.known.get_mut(&tid) else {
            return;
        };
        let Some(seen_name) = k.pending.take() else {
            return;
        };
        self.pending -= 1;
        let key = *k.key.get_or_insert_with(|| {
            rt.threads.key_for_tid(tid as i64, || {
                let name = crate::sampler::threads::comm(tid).unwrap_or(seen_name);
                k.name.clone_from(&name);
                name
            })
        });
        if start {
            write_thread_start(rt, key, parent);
        }
    }

    fn ended(&mut self, rt: &Runtime, tid: u64, start: bool, end: bool) {
        if self.known.get(&tid).is_some_and(|k| k.pending.is_some()) {
            self.announce(rt, tid, start);
        }
        crate::sampler::birth::forget(tid);
        let Some(k) = self.known.remove(&tid) else {
            return;
        };
        let key = k.key.unwrap_or_else(|| {
            rt.threads
                .key_for_tid(tid as i64, || format!("thread-{tid}"))
        });
        if end {
            write_thread_end(rt, key, tid, &k.name);
        }
        rt.threads.exited(key, rt.epoch.load(Ordering::Acquire));
    }
}

/// `jdk.ThreadStart`: ts, eventThread, stackTrace, thread, parentThread.
/// As the JDK writes it, the event is the new thread's: `eventThread` and
/// `thread` are `key`; the stack and `parentThread` are the creator's
/// (none without one).
pub(crate) fn write_thread_start(rt: &Runtime, key: u64, parent: Option<Parent>) {
    let ticks = clock::ticks();
    let tags = rt.threads.tags_of(key);
    // A creator pruned since (exited, its last chunk finished) is left out.
    let parent_tags = parent.and_then(|p| rt.threads.tags_of(p.key));
    let parent_key = if parent_tags.is_some() {
        parent.map_or(0, |p| p.key)
    } else {
        0
    };
    let refs = BuiltinRefs {
        thread: tags.as_deref(),
        stack: parent.map_or(0, |p| p.stack),
        stack_epoch: parent.map_or(0, |p| p.stack_epoch),
    };
    emit_builtin_also(refs, parent_tags.as_deref(), |buf, stack| {
        ThreadStart {
            start_time: ticks,
            event_thread: key,
            stack_trace: stack,
            thread: key,
            parent_thread: parent_key,
        }
        .encode(buf)
    });
}

/// `jdk.ThreadEnd`: ts, eventThread, thread. A thread that emitted marks
/// its key exited itself (its thread-local destructor), and the key may be
/// pruned chunks before this poll sees the thread gone: it is defined again
/// ([`ThreadRegistry::tags_or_restore`]), so the event's chunk holds the
/// thread it names (`tid`, `name`).
///
/// [`ThreadRegistry::tags_or_restore`]: crate::cpool::threads::ThreadRegistry::tags_or_restore
pub(crate) fn write_thread_end(rt: &Runtime, key: u64, tid: u64, name: &str) {
    let ticks = clock::ticks();
    let tags = rt.threads.tags_or_restore(key, tid as i64, name);
    let refs = BuiltinRefs {
        thread: Some(&tags),
        ..BuiltinRefs::default()
    };
    emit_with(refs, |_| ThreadEnd {
        start_time: ticks,
        event_thread: key,
        thread: key,
    });
}
