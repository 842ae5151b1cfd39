//! A sampled block's way in: into the queue for its
//! `jdk.ObjectAllocationSample` and, when leaks are tracked, into the live
//! table; a tracked block that moves follows it there. Never blocks: a full
//! queue or table counts the sample lost.
//!
//! # The sampled path
//!
//! A sample takes no lock and calls nothing that does, so it cannot
//! deadlock with whatever the thread holds (the recorder's own locks
//! included, whose holders allocate): it reads the clock, tracks the block
//! in the leak table, and captures the stack straight into a slot of a
//! bounded lock-free queue ([`queue`](super::queue)). The thread's sampling is suspended
//! meanwhile (a thread-local flag, restored on unwind), so an allocation
//! made by the capture is counted but never sampled. The allocation thread
//! (`flightrec-alloc`) drains the queue every 20 ms: it interns the stack,
//! names the thread and the class, writes the event through the commit
//! path, and fills the keys into the block's leak-table slot. A full queue
//! or leak table drops the sample or leaves the block untracked, counted in
//! `flightrec.EventsLost`.
//!
//! # Leaks
//!
//! Sampled blocks stay in a bounded table ([`live`]) until freed. At the
//! end of every chunk each one still there is written as a
//! `jdk.OldObjectSample`: allocation time, age, size, its stack and
//! thread, an `object` of its class (with the address and the weight in
//! its description), and as `lastKnownHeapUsage` the summed weights of
//! every tracked block (an estimate of the live memory sampled). `jfr view
//! memory-leaks-by-site` groups them by their top frame.

use super::shared::{LIVE, QUEUE, state};
use super::{allocator, live};
use crate::base::loss::LossCause;
use crate::base::sync::global::Ordering;

/// The sampled path, with the thread's sampling suspended: tracks the
/// block (if `track`: not for one tracked already), queues the raw sample
/// with its stack. Takes no lock.
pub(super) fn record(ptr: *mut u8, size: u64, weight: u64, track: bool) {
    let st = state();
    if !st.sampling.load(Ordering::Relaxed) {
        return;
    }
    let ticks = crate::base::clock::ticks();
    let addr = ptr.addr();
    let live = if track && st.leaks.load(Ordering::Relaxed) {
        let at = LIVE.track(addr, size, weight, ticks);
        if at.is_none() {
            lost(LossCause::LeakNotTracked);
        }
        at
    } else {
        None
    };
    let stacks = st.stacks.load(Ordering::Relaxed);
    let type_name = allocator::current_type_name();
    let queued = QUEUE.push(|s| {
        s.ticks = ticks;
        s.tid = crate::base::sync::os_thread_id();
        s.size = size;
        s.weight = weight;
        s.type_name = type_name;
        s.live = live;
        if stacks {
            let c = crate::stack::capture(0, &mut s.frames);
            s.len = c.len;
            s.truncated = c.truncated;
        } else {
            s.len = 0;
            s.truncated = false;
        }
    });
    if !queued {
        if live.is_some() {
            LIVE.untrack(addr);
        }
        lost(LossCause::AllocationSampleDropped);
    }
}

/// `realloc` of the tracked block `m` from `old` returned `new` (null:
/// the call failed, the block stays at `old`): it stays tracked where it
/// is now, with its first sample's stack, time and weight.
#[cold]
#[inline(never)]
pub(super) fn moved(m: live::Moving, old: *mut u8, new: *mut u8, old_size: usize, new_size: usize) {
    if !state().leaks.load(Ordering::Relaxed) {
        LIVE.cancel_move(m);
        return;
    }
    let (addr, size) = if new.is_null() {
        (old.addr(), old_size)
    } else {
        (new.addr(), new_size)
    };
    if !LIVE.end_move(m, addr, size as u64) {
        lost(LossCause::LeakNotTracked);
    }
}

fn lost(cause: LossCause) {
    if let Some(rt) = crate::runtime::get() {
        rt.losses.record(cause, 0);
    }
}
