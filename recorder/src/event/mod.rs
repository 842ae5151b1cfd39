//! Event types and committing events.

pub mod commit;
pub mod descriptor;
pub mod dynamic;
pub mod field;
pub(crate) mod registry;
pub(crate) mod sink;
pub(crate) mod spread;
#[cfg(not(flightrec_loom))]
pub mod watch;
