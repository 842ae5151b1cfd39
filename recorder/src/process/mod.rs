//! The process around the recorder: starting from the `FLIGHTREC`
//! environment variable, children that `exec` with it, `fork()`, panics as
//! events and as errors of the recorder's own threads, and the program's
//! signal dispositions.
//!
//! Invariant: a hook chains to what the program had (its panic hook, its
//! signal handlers, its `fork` handlers) and never replaces it; nothing here
//! can stall or kill the host.

pub(crate) mod automatic;
pub mod autostart;
pub(crate) mod exec_child;
pub(crate) mod fork;
// `pub` for `crate::__signal_hook` (the interposers and `flightrec record`).
#[doc(hidden)]
#[allow(unreachable_pub)]
pub mod forwarded;
#[doc(hidden)]
pub mod panic_guard;
pub(crate) mod panics;
#[doc(hidden)]
#[allow(unreachable_pub)]
pub mod relay;
pub(crate) mod report;
pub(crate) mod shutdown;
// `pub` for `crate::__signal_hook`, the C library's interposers' path.
#[doc(hidden)]
#[allow(unreachable_pub)]
pub mod signals;
