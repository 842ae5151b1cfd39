//! The recording lifecycle: the [`Recording`](handle::Recording) handle a
//! program holds, its errors and summary, the physical recorder that serves
//! every live recording, each recording's member state, the recorder's own
//! statistics.
//!
//! Invariant: the lifecycle names no feature. What a feature does when a
//! recording starts, changes its settings, dumps or stops goes through the
//! feature table ([`crate::feature`]); the lifecycle only calls its hooks.

pub(crate) mod active_recording;
pub(crate) mod handle;
pub(crate) mod member;
pub(crate) mod outcome;
pub(crate) mod physical;
pub(crate) mod start;
pub(crate) mod statistics;
