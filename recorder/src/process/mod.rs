//! The process around the recorder: starting from the `FLIGHTREC`
//! environment variable, children that `exec` with it, `fork()`, panics as
//! events and as errors of the recorder's own threads, and the program's
//! signal dispositions.
//!
//! Invariant: a hook chains to what the program had (its panic hook, its
//! signal handlers, its `fork` handlers) and never replaces it; nothing here
//! can stall or kill the host.

#[cfg(not(flightrec_loom))]
pub(crate) mod automatic;
#[cfg(not(flightrec_loom))]
pub mod autostart;
#[cfg(not(flightrec_loom))]
pub(crate) mod exec_child;
#[cfg(not(flightrec_loom))]
pub(crate) mod fork;
#[cfg(not(flightrec_loom))]
#[doc(hidden)]
pub mod panic_guard;
#[cfg(not(flightrec_loom))]
pub(crate) mod panics;
#[cfg(not(flightrec_loom))]
pub(crate) mod shutdown;
// `pub` for `crate::__signal_hook`, the C library's interposers' path.
#[doc(hidden)]
#[allow(unreachable_pub)]
pub mod signals;
