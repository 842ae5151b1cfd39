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

pub(crate) mod latch;
pub(crate) mod published;
mod scope;
mod snapshot;
mod table;

pub use snapshot::{Context, DecodeError, LabelsSnapshot, snapshot};
pub use table::{MAX_CONTEXTS, MAX_STRING_BYTES, MAX_STRINGS};

pub use latch::set_in_samples;
pub use scope::{LabelScope, current, scope, with};
