//! The contended path's half in the recorder: the settings of
//! `jdk.JavaMonitorEnter` and `jdk.ThreadPark` as one word each, the
//! measured wait, the lock classes, and the event records.
//!
//! A wait is timed only when its type's word is enabled (a recording runs
//! and the type is on): [`Wait::begin`] loads the word and reads the clock,
//! [`Wait::enter`] / [`Wait::park`] read the clock again and, if the wait
//! reached the threshold in force *then*, write the event from the waiting
//! thread (still holding the lock it waited for) through the commit path.
//!
//! The class of a lock is a `java.lang.Class` constant named after the
//! lock's declared name, or the Rust type it protects: name `i` has class
//! key [`CLASS_KEY_BASE`] + 2i and name symbol `+1`, defined in every chunk
//! by [`write_class_constants`] ([`NamedClasses`], as the panic and
//! allocation classes are).
//!
//! Invariant: a record references only class keys registered before it was
//! written, so the chunk's next checkpoint defines them; the previous
//! owner's thread is tagged with the record's epoch (through
//! [`BuiltinRefs::thread`]).

use jfr_format::Checkpoint;
use jfr_format::write::events::{BuiltinEvent, JavaMonitorEnter, ThreadPark};

use crate::cpool::named_classes::NamedClasses;

use crate::base::clock;
use crate::base::loss::LossCause;
use crate::base::sync::global::{AtomicU64, Ordering};
use crate::buffer::local;
use crate::config::settings::Settings;
use crate::event::builtin::{BuiltinRefs, emit_builtin};
use crate::runtime;

/// Keys of the lock classes: a range of their own (`cpool::keys`).
const CLASS_KEY_BASE: u64 = crate::cpool::keys::LOCK_CLASSES;

/// The JDK's default threshold of both types.
const DEFAULT_THRESHOLD: std::time::Duration = std::time::Duration::from_millis(20);

/// Deepest stack an event keeps.
const MAX_FRAMES: usize = 128;

/// `Long.MIN_VALUE`: the JDK's "none" for `timeout` and `until`.
pub(crate) const NONE: i64 = i64::MIN;

const ENABLED: u64 = 1;
const STACK: u64 = 1 << 1;
const THRESHOLD_SHIFT: u32 = 2;

/// One event type's settings in one word: enabled (only while a recording
/// runs), stack trace, threshold in ticks.
#[derive(Debug)]
pub(crate) struct Kind {
    name: &'static str,
    word: AtomicU64,
}

/// `jdk.JavaMonitorEnter`: waits to lock a `Mutex` or `RwLock`.
pub(crate) static ENTER: Kind = Kind::new("jdk.JavaMonitorEnter");
/// `jdk.ThreadPark`: waits on a `Condvar`.
pub(crate) static PARK: Kind = Kind::new("jdk.ThreadPark");

impl Kind {
    const fn new(name: &'static str) -> Self {
        Self {
            name,
            word: AtomicU64::new(0),
        }
    }

    /// Whether waits of this kind are timed now.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.word.load(Ordering::Relaxed) & ENABLED != 0
    }

    fn apply(&self, settings: &Settings, recording: bool) {
        let s = settings.get(self.name);
        let enabled = recording && s.and_then(|s| s.enabled).unwrap_or(true);
        let word = if enabled {
            let stack = s.and_then(|s| s.stack_trace).unwrap_or(true);
            let threshold = s.and_then(|s| s.threshold).unwrap_or(DEFAULT_THRESHOLD);
            let ticks = (clock::duration_to_ticks(threshold).max(0) as u64)
                .min(u64::MAX >> THRESHOLD_SHIFT);
            ENABLED | if stack { STACK } else { 0 } | ticks << THRESHOLD_SHIFT
        } else {
            0
        };
        self.word.store(word, Ordering::Relaxed);
    }
}

/// Installs the settings of both types, and whether a recording runs.
/// Called by the event registry whenever it applies settings.
pub(crate) fn apply(settings: &Settings, recording: bool) {
    ENTER.apply(settings, recording);
    PARK.apply(settings, recording);
}

/// Called right after [`Wait::enter`] or [`Wait::park`]: keeps that call
/// from being a tail call, which would take its caller's frame off the
/// stack and make the capture leave out one frame too many.
#[inline(always)]
pub(crate) fn after_record() {
    std::hint::black_box(());
}

/// A wait being timed.
#[derive(Debug)]
pub(crate) struct Wait {
    start: i64,
}

/// What a `jdk.ThreadPark` says of the wait besides its class and address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Park {
    /// The relative timeout in nanoseconds, or [`NONE`].
    pub(crate) timeout: i64,
    /// The deadline in milliseconds since the Unix epoch, or [`NONE`].
    pub(crate) until: i64,
}

/// The fields of one type between the class and the address.
#[derive(Clone, Copy)]
enum Detail {
    /// `jdk.JavaMonitorEnter`: `previousOwner` (a thread key, 0: unknown).
    Enter { previous_owner: u64 },
    /// `jdk.ThreadPark`: `timeout` and `until`.
    Park(Park),
}

impl Wait {
    /// Starts timing a wait of `kind`, if its events are on.
    #[inline]
    pub(crate) fn begin(kind: &Kind) -> Option<Self> {
        // An enabled word is only stored while a recording runs, so the
        // clock is calibrated.
        kind.enabled().then(|| Self {
            start: clock::ticks(),
        })
    }

    /// Ends a wait to enter the lock at `address`, called by the function
    /// that called `lock` (its frame and this one are left out of the
    /// stack): writes a `jdk.JavaMonitorEnter` if the wait reached the
    /// threshold. `previous_owner`: the key of the thread that last
    /// released the lock while a thread waited (0: unknown).
    #[inline(never)]
    pub(crate) fn enter(self, class: &'static str, address: usize, previous_owner: u64) {
        self.record(&ENTER, class, address, Detail::Enter { previous_owner });
    }

    /// Ends a wait on the condition variable at `address`, called as
    /// [`Wait::enter`] is: writes a `jdk.ThreadPark` if the wait reached
    /// the threshold.
    #[inline(never)]
    pub(crate) fn park(self, class: &'static str, address: usize, park: Park) {
        self.record(&PARK, class, address, Detail::Park(park));
    }

    /// The body of [`Wait::enter`] and [`Wait::park`], inlined into each
    /// (so the stack leaves out the same frames): the common fields
    /// (start, duration, thread, stack, class), the type's own, the
    /// address.
    #[inline(always)]
    fn record(self, kind: &Kind, class: &'static str, address: usize, detail: Detail) {
        let Some((word, d)) = self.end(kind) else {
            return;
        };
        let start = self.start;
        let other_thread = match detail {
            Detail::Enter { previous_owner } => previous_owner,
            Detail::Park(_) => 0,
        };
        let r = Record {
            word,
            class,
            other_thread,
        };
        r.write(|buf, k| match detail {
            Detail::Enter { .. } => JavaMonitorEnter {
                start_time: start,
                duration: d as i64,
                event_thread: k.thread,
                stack_trace: k.stack,
                monitor_class: k.class,
                previous_owner: k.other_thread,
                address: address as i64,
            }
            .encode(buf),
            Detail::Park(park) => ThreadPark {
                start_time: start,
                duration: d as i64,
                event_thread: k.thread,
                stack_trace: k.stack,
                parked_class: k.class,
                timeout: park.timeout,
                until: park.until,
                address: address as i64,
            }
            .encode(buf),
        });
    }

    /// The word in force now and the wait's length in ticks, if the kind is
    /// still on and the wait reached its threshold.
    #[inline(always)]
    fn end(&self, kind: &Kind) -> Option<(u64, u64)> {
        let d = (clock::ticks() - self.start).max(0) as u64;
        let word = kind.word.load(Ordering::Relaxed);
        (word & ENABLED != 0 && d >= word >> THRESHOLD_SHIFT).then_some((word, d))
    }
}

/// One event about to be written.
struct Record {
    /// The word in force (stack trace or not).
    word: u64,
    /// The lock's class name.
    class: &'static str,
    /// A thread the record references besides its own (0: none).
    other_thread: u64,
}

/// The constant keys a record's fields write.
#[derive(Clone, Copy)]
struct Keys {
    /// The writing thread.
    thread: u64,
    /// Its stack (0: none).
    stack: u64,
    /// The lock's class.
    class: u64,
    /// [`Record::other_thread`], or 0 if the recorder no longer knows it.
    other_thread: u64,
}

impl Record {
    /// Writes the record from the calling thread: `encode` encodes it
    /// with the given keys into the buffer. Inlined into [`Wait::enter`] and [`Wait::park`]:
    /// the stack leaves out their frame and their caller's (the wrapper's
    /// contended path), so it starts at the function that took the lock.
    #[inline(always)]
    fn write(&self, encode: impl Fn(&mut [u8], &Keys) -> Option<usize>) {
        let Some(rt) = runtime::get() else { return };
        let (stack, stack_epoch) = if self.word & STACK != 0 {
            let mut frames = [0u64; MAX_FRAMES];
            let depth = rt.max_stack_depth.min(MAX_FRAMES);
            let c = crate::stack::capture(2, &mut frames[..depth]);
            // Read before the write section loads it (see `cpool::stacks`).
            let epoch = rt.epoch.load(Ordering::Relaxed);
            let key = (c.len > 0)
                .then(|| rt.stacks.intern(&frames[..c.len], c.truncated, epoch))
                .flatten();
            match key {
                Some(key) => (key, epoch),
                None => {
                    if c.len > 0 {
                        rt.losses.record(LossCause::StackDropped, 0);
                    }
                    (0, 0)
                }
            }
        } else {
            (0, 0)
        };
        let class = CLASSES.key(self.class);
        let Some(thread) = local::current_thread_key(rt) else {
            return;
        };
        // The other thread's tags, if it is still known: the record's epoch
        // tags it, so the chunk defines it.
        let other = (self.other_thread != 0)
            .then(|| rt.threads.tags_of(self.other_thread))
            .flatten();
        let keys = Keys {
            thread,
            stack,
            class,
            other_thread: if other.is_some() {
                self.other_thread
            } else {
                0
            },
        };
        let refs = BuiltinRefs {
            thread: other.as_deref(),
            stack,
            stack_epoch,
        };
        emit_builtin(refs, |buf, stack| encode(buf, &Keys { stack, ..keys }));
    }
}

/// The lock names seen, each a class.
static CLASSES: NamedClasses = NamedClasses::new(CLASS_KEY_BASE);

/// Defines the lock classes registered since the `from`th in `cp`; returns
/// how many are defined now (see [`NamedClasses::write_constants`]).
pub(crate) fn write_class_constants(cp: &mut Checkpoint, from: usize) -> usize {
    CLASSES.write_constants(cp, from)
}
