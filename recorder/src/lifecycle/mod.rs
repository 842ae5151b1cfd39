//! The recording lifecycle: the [`Recording`](handle::Recording) handle a
//! program holds, its errors and summary, the physical recorder that serves
//! every live recording, each recording's member state, the recorder's own
//! statistics.
//!
//! Invariant: the lifecycle names no feature. What a feature does when a
//! recording starts, changes its settings, dumps or stops goes through the
//! feature table ([`crate::feature`]); the lifecycle only calls its hooks.

#[cfg(not(flightrec_loom))]
pub(crate) mod active_recording;
#[cfg(not(flightrec_loom))]
pub(crate) mod handle;
#[cfg(not(flightrec_loom))]
pub(crate) mod member;
#[cfg(not(flightrec_loom))]
pub(crate) mod outcome;
#[cfg(not(flightrec_loom))]
pub(crate) mod physical;
#[cfg(not(flightrec_loom))]
pub(crate) mod start;
#[cfg(not(flightrec_loom))]
pub(crate) mod statistics;
