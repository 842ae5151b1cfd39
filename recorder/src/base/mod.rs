//! The base layer: what every other module uses and what uses nothing of
//! theirs — the one `sync` module every atomic, cell and thread-local goes
//! through, the clock, the packed per-type settings word the hot path
//! reads, and the loss causes and counters.
//!
//! Invariant: nothing here imports from outside `base/`; the data path
//! (`event/`, `buffer/`, `epoch/`, `cpool/`) and the features build on it.

pub mod clock;
pub(crate) mod enabled;
pub(crate) mod loss;
pub(crate) mod sync;
