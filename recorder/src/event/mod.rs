//! Event types and committing events.

pub(crate) mod builtin;
pub(crate) mod check;
pub mod commit;
pub mod descriptor;
pub mod dynamic;
pub(crate) mod emit;
pub mod field;
pub(crate) mod refs;
pub(crate) mod registry;
pub(crate) mod scratch;
pub(crate) mod sink;
pub(crate) mod spread;
pub mod watch;
