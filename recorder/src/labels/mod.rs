//! Per-request labels: a thread says which request (endpoint, tenant, ...)
//! it works for, and every sample taken on it meanwhile carries a context
//! id that names that label set.
//!
//! ```
//! # use recorder as flightrec;
//! {
//!     let _g = flightrec::labels::scope(&[("endpoint", "/a"), ("tenant", "t1")]);
//!     // samples taken here carry the id of {endpoint=/a, tenant=t1}
//!     {
//!         let _inner = flightrec::labels::scope(&[("tenant", "t2")]);
//!         // ... and here the id of {endpoint=/a, tenant=t2}
//!     }
//! }
//! // no labels again: id 0
//! assert_eq!(flightrec::labels::current(), 0);
//! ```
//!
//! # Mechanism
//!
//! * `table`: label sets are interned to a *context id* (a nonzero `u64`;
//!   0 means no labels) in one process-wide table, bounded in contexts,
//!   strings and bytes. A set that does not fit gets id 0 and is counted as
//!   a loss ([`crate::LossCause::LabelsDropped`]), written into the file like
//!   every other loss. Ids are never reused, so an id in any file always
//!   names the same set.
//! * `published`: the current id of each thread that ever opened a scope,
//!   in a preallocated table keyed by kernel thread id, which the sampling
//!   signal handler reads with bounded probes (no lock, no allocation, no
//!   thread-local).
//! * this module: the thread's own label set (a thread-local only the
//!   thread itself touches, never the handler) and the [`LabelScope`] guard,
//!   which merges its labels over the enclosing set (same key: the inner
//!   value wins), publishes the new id, and restores the enclosing set and
//!   id when dropped.
//! * `snapshot`: the table as Pyroscope's `LabelsSnapshot` protobuf, sent
//!   beside the JFR in an upload.
//!
//! Samples (`jdk.ExecutionSample`, `jdk.CPUTimeSample`) carry the id in
//! their `contextId` field, the field Pyroscope's JFR parser reads, in a
//! recording that started with labels in samples on: Pyroscope's events
//! ([`crate::sampler::set_pyroscope_events`]), a Pyroscope upload, or
//! [`set_in_samples`]. The field is not the JDK's: readers that read the
//! samples field by field in the JDK's order (async-profiler's converter)
//! misread the records that have it, so without one of these the samples
//! are the JDK's, field for field. The choice is made when the recorder
//! starts and holds until it stops (a chunk's metadata and its records
//! agree); see `docs/pyroscope-events.md`.
//!
//! Opening a scope is control-path work: it takes the table's lock and may
//! allocate (a new string or set); it never touches the commit path.
//!
//! Invariant: the id the handler reads for a thread is the id of the label
//! set of the innermost scope open on that thread (0 outside every scope, or
//! when that set did not fit in the table).

mod published;
mod snapshot;
mod table;

pub use snapshot::{Context, DecodeError, LabelsSnapshot, snapshot};
pub use table::{MAX_CONTEXTS, MAX_STRING_BYTES, MAX_STRINGS};

pub(crate) use published::context_of;

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::base::sync::{AtomicBool, Ordering};

/// A thread's label set: (key, value) string ids, sorted by key id.
type Set = Vec<(i64, i64)>;

/// Asked for by [`set_in_samples`].
static ASKED: AtomicBool = AtomicBool::new(false);

/// Whether the running recorder's samples carry `contextId` (latched at
/// its start, [`latch_for_recording`]).
static IN_SAMPLES: AtomicBool = AtomicBool::new(false);

/// Makes the samples of recordings started from now on carry `contextId`
/// (the label set of the sampled thread), or not. Off by default, on
/// anyway while Pyroscope's events are on or a recording uploads to
/// Pyroscope. A running recording keeps the layout it started with.
pub fn set_in_samples(on: bool) {
    ASKED.store(on, Ordering::Relaxed);
}

/// Fixes, as the recorder starts, whether its samples carry `contextId`:
/// if [`set_in_samples`] asked for it or `pyroscope` (Pyroscope's events
/// or an upload are on). Returns the choice.
pub(crate) fn latch_for_recording(pyroscope: bool) -> bool {
    let on = pyroscope || ASKED.load(Ordering::Relaxed);
    IN_SAMPLES.store(on, Ordering::Relaxed);
    on
}

/// Whether the running recorder's samples carry `contextId`: the metadata
/// declares the field and the sampler writes it.
#[inline]
pub(crate) fn in_samples() -> bool {
    IN_SAMPLES.load(Ordering::Relaxed)
}

/// What a thread knows about its own labels.
#[derive(Debug, Default)]
struct ThreadLabels {
    set: Set,
    context: u64,
    /// This thread's entry in the published table, once claimed.
    entry: Option<published::Entry>,
}

impl Drop for ThreadLabels {
    fn drop(&mut self) {
        if let Some(e) = self.entry.take() {
            e.release();
        }
    }
}

crate::base::sync::thread_local! {
    static CURRENT: RefCell<ThreadLabels> = RefCell::new(ThreadLabels::default());
}

/// While alive, the calling thread's samples carry the labels of the
/// enclosing scopes merged with `labels` (a key given here overrides the
/// same key outside). Dropping it restores the enclosing labels.
///
/// Drop scopes in the reverse order of opening them (as blocks do): each
/// restores the set that was current when it was opened.
#[must_use = "the labels apply only while the guard is alive"]
#[derive(Debug)]
pub struct LabelScope {
    previous: Option<(Set, u64)>,
    /// The scope belongs to the thread that opened it.
    _not_send: PhantomData<*const ()>,
}

/// Opens a label scope on the calling thread: see [`LabelScope`].
///
/// Keys and values are any strings; a label set that does not fit in the
/// bounded table (see [`MAX_CONTEXTS`], [`MAX_STRINGS`],
/// [`MAX_STRING_BYTES`]) is recorded as no labels and counted as a loss.
pub fn scope(labels: &[(&str, &str)]) -> LabelScope {
    let previous = CURRENT
        .try_with(|cur| {
            let mut cur = cur.borrow_mut();
            let previous = (cur.set.clone(), cur.context);
            let (set, context) = table::merge_and_intern(&cur.set, labels);
            cur.set = set;
            publish(&mut cur, context);
            previous
        })
        .ok();
    LabelScope {
        previous,
        _not_send: PhantomData,
    }
}

/// Runs `f` inside a label scope (see [`scope`]) and returns its result.
pub fn with<R>(labels: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    let _g = scope(labels);
    f()
}

/// The calling thread's context id: 0 outside every scope.
pub fn current() -> u64 {
    CURRENT.try_with(|c| c.borrow().context).unwrap_or(0)
}

impl Drop for LabelScope {
    fn drop(&mut self) {
        let Some((set, context)) = self.previous.take() else {
            return;
        };
        let _ = CURRENT.try_with(|cur| {
            let mut cur = cur.borrow_mut();
            cur.set = set;
            publish(&mut cur, context);
        });
    }
}

/// Makes `context` the thread's id, where the handler reads it.
fn publish(cur: &mut ThreadLabels, context: u64) {
    cur.context = context;
    if cur.entry.is_none() && context != 0 {
        cur.entry = published::Entry::claim(crate::base::sync::os_thread_id() as u64);
    }
    if let Some(e) = &cur.entry {
        e.set(context);
    }
}
