//! Which threads the sampler thread tracks: listing the process's threads
//! when their count changed, attaching a slot and timers to each new one,
//! releasing exited ones after their last drain, and leaving flightrec's
//! own threads unsampled (see the parent module's docs).
//!
//! Invariant: a slot is retired before its thread's last drain and freed
//! only after it, so no sample of one thread is written with another's key.

use std::time::Instant;

use super::{Consumer, Tracked};
use crate::base::loss::LossCause;
use crate::base::sync::Ordering;
use crate::sampler::engine::Sampler;
use crate::sampler::handler::doorbell;
use crate::sampler::handler::entry as handler_entry;
use crate::sampler::handler::sample::SampleKind;
use crate::sampler::threads;

impl Consumer {
    pub(super) fn discover(&mut self) {
        if !self.config.as_ref().is_some_and(|c| c.any()) {
            return;
        }
        let Some(now) = self.threads.poll(Instant::now()) else {
            return;
        };
        doorbell::listed(self.threads.links());
        let gone: Vec<u64> = self
            .tracked
            .keys()
            .filter(|tid| !now.contains(tid))
            .copied()
            .collect();
        let fresh = now.iter().any(|t| {
            *t != self.own_tid
                && !self.tracked.contains_key(t)
                && !self.untracked.contains(t)
                && !self.excluded.contains(t)
        });
        if fresh || !gone.is_empty() {
            // The thread-start poll hears of it now, not at its next round.
            crate::periodic::control::threads_changed();
        }
        for tid in gone {
            self.release(tid);
        }
        self.untracked.retain(|tid| now.contains(tid));
        self.excluded.retain(|tid| now.contains(tid));
        for tid in now {
            let _ = self.track(tid);
        }
    }

    /// Attaches a slot and timers to `tid`, unless it is tracked already.
    /// Returns its CPU-time signal value and slot index if it has a CPU
    /// timer (for [`birth`](crate::sampler::birth)).
    pub(super) fn track(&mut self, tid: u64) -> Option<(u64, usize)> {
        if !self.config.as_ref().is_some_and(|c| c.any())
            || tid == self.own_tid
            || self.excluded.contains(&tid)
        {
            return None;
        }
        if !self.tracked.contains_key(&tid) {
            self.attach_new(tid);
        }
        let t = self.tracked.get(&tid)?;
        self.cpu.as_ref()?;
        Some((
            handler_entry::encode(t.index, t.generation, SampleKind::CpuTime),
            t.index,
        ))
    }

    fn attach_new(&mut self, tid: u64) {
        let Some((index, generation)) = self.slots.assign(tid) else {
            if self.untracked.insert(tid) {
                self.rt.losses.record(LossCause::ThreadNotSampled, 0);
            }
            return;
        };
        let signals = self
            .slots
            .get(index)
            .map_or(0, |s| s.cpu_signals.load(Ordering::Relaxed));
        self.tracked.insert(
            tid,
            Tracked {
                index,
                generation,
                key: None,
                bounds_tries: 0,
                foreign_cpu_seen: None,
                own_checked: false,
                discard: false,
                // From its attach on: a thread that blocks the signal from
                // its start is found at the first check.
                blocked_seen: crate::base::clock::thread_cpu_time_ns(tid).map(|cpu| (cpu, signals)),
                blocked: false,
            },
        );
        if !self.arm(tid, index, generation) {
            // The thread exited between the listing and the timer.
            self.release(tid);
        }
    }

    /// Detaches `tid`: deletes its timers, retires its slot (waiting out a
    /// late signal's handler already inside it), writes its last samples,
    /// frees the slot for reuse and marks its key exited.
    pub(super) fn release(&mut self, tid: u64) {
        if let Some(t) = &mut self.cpu {
            t.detach(tid);
        }
        if let Some(t) = &mut self.wall {
            t.detach(tid);
        }
        if let Some(slot) = self.tracked.get(&tid).and_then(|t| self.slots.get(t.index)) {
            // After this no signal of `tid` writes into the slot, so the
            // drain below is its last and the next owner starts empty.
            slot.retire();
        }
        self.drain(tid);
        let Some(t) = self.tracked.remove(&tid) else {
            return;
        };
        if let Some((key, _)) = &t.key {
            self.rt
                .threads
                .exited(*key, self.rt.epoch.load(Ordering::Relaxed));
        }
    }

    /// True if `tid` is one of flightrec's own threads and they are not
    /// sampled (module docs): its samples are dropped from now on, and it
    /// is released and not attached again.
    pub(super) fn exclude_own(&mut self, tid: u64) -> bool {
        if self.config.as_ref().is_none_or(|c| c.own_threads) {
            return false;
        }
        let Some(t) = self.tracked.get_mut(&tid) else {
            return false;
        };
        if t.own_checked {
            return t.discard;
        }
        t.own_checked = true;
        if !threads::comm(tid).is_some_and(|n| n.starts_with("flightrec-")) {
            return false;
        }
        t.discard = true;
        self.excluded.insert(tid);
        self.release(tid);
        true
    }
}
