//! The allocation thread (`flightrec-alloc`) and what it writes: the queue's
//! raw samples become `jdk.ObjectAllocationSample` events (their stacks
//! interned, threads and classes named), the per-thread counts become
//! `jdk.ThreadAllocationStatistics`, and at each chunk end the recorder
//! thread writes the tracked blocks as `jdk.OldObjectSample`.
//!
//! # Keys
//!
//! Classes live in a key range of their own (`CLASS_KEY_BASE + 2i`, the
//! name symbol `+1`, as the panic classes do) and every chunk defines all
//! of them; `jdk.types.OldObject` constants get fresh keys (from
//! `OLD_KEY_BASE`) in the chunk that writes them. An allocation stack
//! starts with [`ALLOC_MARKER`], which the resolver (`cpool::methods`)
//! removes together with the allocation machinery's frames.
//!
//! Invariant: an event is written only with keys defined in its chunk: the
//! stack and thread tagged by the commit path, classes defined by every
//! checkpoint; an old object's stack and thread are tagged with the chunk's
//! epoch (and the next, so they are not released) before its constants are
//! written.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use jfr_format::write::encode::Sink;
use jfr_format::write::events::{
    BuiltinEvent, ObjectAllocationSample, OldObjectSample, ThreadAllocationStatistics,
};
use jfr_format::{Checkpoint, TypeId};

use super::shared::{LIVE, QUEUE, state};
use super::{queue::RawSample, threads};
use crate::base::loss::LossCause;
use crate::base::sync::Arc;
use crate::base::sync::global::{AtomicU64, Mutex, Ordering};
use crate::cpool::named_classes::NamedClasses;
use crate::cpool::threads::ThreadTags;
use crate::event::builtin::{BuiltinRefs, emit_builtin};
use crate::runtime::{self, Runtime};

/// The first frame of an allocation stack.
const ALLOC_MARKER: u64 = 0xFFFF_E000_0000_0001;

/// Keys of the allocation classes: a range of their own (`cpool::keys`).
const CLASS_KEY_BASE: u64 = crate::cpool::keys::ALLOC_CLASSES;

/// Keys of the `jdk.types.OldObject` constants, `OLD_KEY_BASE` plus this
/// counter modulo the range's width (`cpool::keys`): a key is fresh within
/// its chunk, which holds far fewer old objects than the range.
const OLD_KEY_BASE: u64 = crate::cpool::keys::OLD_OBJECTS;
static NEXT_OLD_KEY: AtomicU64 = AtomicU64::new(0);

/// How often the queue is drained.
const DRAIN_EVERY: Duration = Duration::from_millis(20);
/// The window of the adaptive throttle.
const RATE_WINDOW: Duration = Duration::from_millis(250);
const MIN_MEAN: u64 = 4 * 1024;
const MAX_MEAN: u64 = 1 << 30;

/// True if `frame` is the first frame of an allocation stack.
pub(crate) fn alloc_stack_marker(frame: u64) -> bool {
    frame == ALLOC_MARKER
}

/// The allocation classes, each named once.
static NAMES: NamedClasses = NamedClasses::new(CLASS_KEY_BASE);

/// The class keys given so far, by size class and by type.
#[derive(Debug, Default)]
struct Classes {
    by_size_class: BTreeMap<u32, u64>,
    by_type: BTreeMap<&'static str, u64>,
}

static CLASSES: Mutex<Classes> = Mutex::new(Classes {
    by_size_class: BTreeMap::new(),
    by_type: BTreeMap::new(),
});

impl Classes {
    fn add(&mut self, name: String) -> u64 {
        NAMES.add(name)
    }

    fn key(&mut self, size: u64, type_name: Option<&'static str>) -> u64 {
        if let Some(t) = type_name {
            if let Some(&k) = self.by_type.get(t) {
                return k;
            }
            let k = self.add(type_class_name(t));
            self.by_type.insert(t, k);
            return k;
        }
        let class = size_class(size);
        if let Some(&k) = self.by_size_class.get(&class) {
            return k;
        }
        let k = self.add(size_class_name(class));
        self.by_size_class.insert(class, k);
        k
    }
}

/// The power of two at or above `size` (its exponent).
fn size_class(size: u64) -> u32 {
    size.max(1).next_power_of_two().trailing_zeros()
}

/// `bytes_513_to_1024`; `bytes_1`, `bytes_2` for the first classes. (A
/// class name may hold no brackets: the JDK decodes a leading `[` as an
/// array descriptor.)
fn size_class_name(class: u32) -> String {
    let hi = 1u64 << class;
    let lo = (hi >> 1) + 1;
    if lo >= hi {
        format!("bytes_{hi}")
    } else {
        format!("bytes_{lo}_to_{hi}")
    }
}

/// A Rust type's path as a JFR class in internal form, as stack frames
/// name theirs (`my_app::Order` → `my_app/Order`; generic arguments
/// dropped: `alloc::vec::Vec<u8>` → `alloc/vec/Vec`).
fn type_class_name(type_name: &str) -> String {
    crate::stack::names::jfr_name(&format!("{type_name}::new"), None, None).class
}

/// Defines, in `cp`, the classes `from..`; returns the number of classes.
pub(crate) fn write_class_constants(cp: &mut Checkpoint, from: usize) -> usize {
    NAMES.write_constants(cp, from)
}

/// The drain's state: threads named so far, the adaptive throttle's
/// window, the statistics' schedule.
#[derive(Debug)]
struct Drain {
    threads: HashMap<i64, (u64, Arc<ThreadTags>)>,
    window_start: Instant,
    window_weight: u64,
    next_statistics: Instant,
}

static DRAIN: Mutex<Option<Drain>> = Mutex::new(None);

/// The pid the allocation thread was started in (0: none).
static STARTED_IN: AtomicU64 = AtomicU64::new(0);

/// Starts the allocation thread if this process has none.
pub(super) fn start_thread() {
    let pid = u64::from(std::process::id());
    if STARTED_IN.swap(pid, Ordering::AcqRel) == pid {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("flightrec-alloc".into())
        .spawn(|| {
            super::sampler::never_sample_this_thread();
            loop {
                std::thread::sleep(DRAIN_EVERY);
                if u64::from(std::process::id()) != STARTED_IN.load(Ordering::Acquire) {
                    return;
                }
                drain_now();
            }
        });
    if spawned.is_err() {
        STARTED_IN.store(0, Ordering::Release);
    }
}

/// Writes what the queue holds, the statistics if due, and adjusts the
/// adaptive throttle. Called with the thread's sampling suspended.
pub(super) fn drain_now() {
    let Some(rt) = runtime::get() else { return };
    let mut guard = DRAIN.lock();
    let now = Instant::now();
    let d = guard.get_or_insert_with(|| Drain {
        threads: HashMap::new(),
        window_start: now,
        window_weight: 0,
        next_statistics: now,
    });
    let st = state();
    let events = st.events.load(Ordering::Relaxed);
    while let Some(s) = QUEUE.pop() {
        write_sample(rt, d, &s, events);
    }
    let stats_ms = st.statistics_ms.load(Ordering::Relaxed);
    if stats_ms != 0 && now >= d.next_statistics {
        d.next_statistics = now + Duration::from_millis(stats_ms);
        write_statistics(rt, d);
    }
    adapt(d, now);
    if d.threads.len() > 4096 {
        d.threads.clear();
    }
}

/// The adaptive throttle (see the module docs of `alloc`).
fn adapt(d: &mut Drain, now: Instant) {
    let elapsed = now.duration_since(d.window_start);
    if elapsed < RATE_WINDOW {
        return;
    }
    let st = state();
    let per_sec = st.throttle_per_sec.load(Ordering::Relaxed);
    let old = st.adaptive_mean.load(Ordering::Relaxed);
    if per_sec != 0 && old != 0 {
        let rate = d.window_weight as f64 / elapsed.as_secs_f64();
        let target = if d.window_weight == 0 {
            old / 2
        } else {
            (rate / per_sec as f64) as u64
        };
        let new = target.clamp(old / 8, old.saturating_mul(8));
        st.adaptive_mean
            .store(new.clamp(MIN_MEAN, MAX_MEAN), Ordering::Relaxed);
    }
    d.window_start = now;
    d.window_weight = 0;
}

/// The key and epoch tags of thread `tid`, registering it the first time.
fn thread_of(rt: &Runtime, d: &mut Drain, tid: i64) -> (u64, Arc<ThreadTags>) {
    d.threads
        .entry(tid)
        .or_insert_with(|| {
            let key = rt
                .threads
                .key_for_tid(tid, || crate::sampler::threads::name(tid as u64));
            let tags = rt
                .threads
                .tags_of(key)
                .unwrap_or_else(|| Arc::new(ThreadTags::default()));
            (key, tags)
        })
        .clone()
}

fn write_sample(rt: &Runtime, d: &mut Drain, s: &RawSample, events: bool) {
    d.window_weight = d.window_weight.saturating_add(s.weight);
    let class = CLASSES.lock().key(s.size, s.type_name);
    let (thread, tags) = thread_of(rt, d, s.tid);
    // Read before the write section loads it (see `cpool::stacks`).
    let epoch = rt.epoch.load(Ordering::Relaxed);
    let stack = if s.len > 0 {
        let mut frames = [0u64; super::queue::MAX_FRAMES + 1];
        frames[0] = ALLOC_MARKER;
        frames[1..=s.len].copy_from_slice(&s.frames[..s.len]);
        match rt.stacks.intern(&frames[..=s.len], s.truncated, epoch) {
            Some(k) => k,
            None => {
                rt.losses.record(LossCause::StackDropped, 0);
                0
            }
        }
    } else {
        0
    };
    if let Some((index, seq)) = s.live {
        LIVE.fill(index, seq, stack, thread, class);
    }
    if !events {
        return;
    }
    let refs = BuiltinRefs {
        thread: Some(&tags),
        stack,
        stack_epoch: epoch,
    };
    emit_builtin(refs, |buf, stack| {
        ObjectAllocationSample {
            start_time: s.ticks,
            event_thread: thread,
            stack_trace: stack,
            object_class: class,
            weight: s.weight as i64,
        }
        .encode(buf)
    });
}

fn write_statistics(rt: &Runtime, d: &mut Drain) {
    let ticks = crate::base::clock::ticks();
    for (tid, allocated) in threads::snapshot() {
        let (key, tags) = thread_of(rt, d, tid as i64);
        let refs = BuiltinRefs {
            thread: Some(&tags),
            ..BuiltinRefs::default()
        };
        emit_builtin(refs, |buf, _| {
            ThreadAllocationStatistics {
                start_time: ticks,
                allocated: allocated as i64,
                thread: key,
            }
            .encode(buf)
        });
    }
}

/// The tracked blocks a chunk writes as `jdk.OldObjectSample`, with their
/// `jdk.types.OldObject` keys.
#[derive(Debug, Default)]
pub(crate) struct OldObjects {
    entries: Vec<(super::live::LiveEntry, u64)>,
    heap: u64,
}

/// Collects the tracked blocks for the chunk of `epoch` (at its end,
/// before its constants are written) and tags their stacks and threads
/// with `epoch` and the next.
pub(crate) fn prepare_old_objects(rt: &Runtime, epoch: u64) -> OldObjects {
    // Not the settings in force: the last chunk is finished after they
    // are turned off. The table is cleared once it is written.
    if LIVE.is_empty() {
        return OldObjects::default();
    }
    let mut entries = Vec::new();
    let mut heap = 0u64;
    for mut e in LIVE.snapshot() {
        heap = heap.saturating_add(e.weight);
        if e.stack != 0 && !(rt.stacks.tag(e.stack, epoch) && rt.stacks.tag(e.stack, epoch + 1)) {
            e.stack = 0;
        }
        if e.thread != 0 {
            match rt.threads.tags_of(e.thread) {
                Some(t) => {
                    t.tag(epoch);
                    t.tag(epoch + 1);
                }
                None => e.thread = 0,
            }
        }
        let key = OLD_KEY_BASE
            + NEXT_OLD_KEY.fetch_add(1, Ordering::Relaxed)
                % (crate::cpool::keys::OLD_OBJECTS_END - OLD_KEY_BASE);
        entries.push((e, key));
    }
    OldObjects { entries, heap }
}

impl OldObjects {
    /// Defines the `jdk.types.OldObject` constants in `cp`.
    pub(crate) fn write_constants(&self, cp: &mut Checkpoint) {
        if self.entries.is_empty() {
            return;
        }
        let mut pool = cp.pool(TypeId::OLD_OBJECT);
        for (e, key) in &self.entries {
            let out = pool.entry(*key);
            out.put_i64(e.addr as i64);
            out.put_varint(e.class);
            out.put_str(&format!(
                "{} bytes, sample weight {} bytes",
                e.size, e.weight
            ));
            out.put_varint(0);
        }
    }
}

/// Appends one `jdk.OldObjectSample` per tracked block, stamped `ticks`.
pub(crate) fn write_old_object_events(out: &mut Vec<u8>, ticks: i64, old: &OldObjects) {
    for (e, key) in &old.entries {
        OldObjectSample {
            start_time: ticks,
            duration: 0,
            event_thread: e.thread,
            stack_trace: e.stack,
            allocation_time: e.ticks,
            object_size: e.size as i64,
            object_age: ticks.saturating_sub(e.ticks).max(0),
            last_known_heap_usage: old.heap as i64,
            object: *key,
            array_elements: i32::MIN,
            root: 0,
        }
        .append(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_powers_of_two() {
        assert_eq!(size_class_name(size_class(1)), "bytes_1");
        assert_eq!(size_class_name(size_class(2)), "bytes_2");
        assert_eq!(size_class_name(size_class(3)), "bytes_3_to_4");
        assert_eq!(size_class_name(size_class(1000)), "bytes_513_to_1024");
        assert_eq!(size_class_name(size_class(1024)), "bytes_513_to_1024");
    }

    #[test]
    fn type_names_become_class_paths() {
        assert_eq!(type_class_name("my_app::Order"), "my_app/Order");
        assert_eq!(type_class_name("alloc::vec::Vec<u8>"), "alloc/vec/Vec");
    }
}
