//! Method timing and tracing for Rust functions (JEP 520 for native code).
//!
//! # Sites
//!
//! Every instrumented function (`#[flightrec::timed]`) or block
//! ([`timed_scope!`](crate::timed_scope)) has one static [`Site`]: its path,
//! file, line and tags, and one word the hot path reads. Like an event type
//! (and a `tracing` callsite) a site registers itself on its first call, on a
//! `#[cold]` path: lazy registration needs no linker support (`linkme` and
//! `inventory` depend on platform-specific link sections, and a site that is
//! never called has nothing to time). So a filter may name a site that is
//! not registered yet; it is selected when it registers.
//!
//! ```text
//! bit 0      unregistered (the const initial value)
//! bit 1      selected for timing         bit 2  selected for tracing
//! bit 3      the clock is the TSC        bit 4  traces capture a stack
//! bits 8..32 the site's index            bits 32..64  timing generation
//! ```
//!
//! An unselected, registered site is one relaxed load and one test of the
//! word against `unregistered | timing | tracing`. A selected call reads the
//! clock at entry, and at exit (the [`Guard`]'s drop, so a panic unwinding
//! through the function is recorded too) adds the duration to the calling
//! thread's own accumulator for the site (see `accum`) and/or writes a
//! `jdk.MethodTrace` event.
//!
//! # What is measured
//!
//! Wall-clock time from entry to exit in ticks, every call, recursive calls
//! included (each level is a call). For an `async fn`, the guard is created
//! when the future is first polled and dropped when it completes (or is
//! dropped unfinished): the time includes every suspension.
//!
//! # Emission
//!
//! At the end of every chunk the recorder writes one `jdk.MethodTiming` per
//! site selected for timing, all with the same timestamp (the JDK's
//! `period=endChunk` batch), holding what the threads accumulated since the
//! site was selected (cumulative; a site deselected and selected again
//! starts over under a new generation). Each chunk defines the method,
//! class, package and symbol constants of every registered site itself,
//! under keys of its own range (see `emit`), so the events do not depend on
//! which stacks the chunk's epoch tagged.
//!
//! Invariant: a word with the timing or tracing bit is stored only while a
//! recording runs (so the runtime exists and the clock is calibrated), and
//! then its index names the site's entry in the site registry.

mod accum;
mod emit;
pub(crate) mod filter;
mod guard;
mod plug;
mod site;
mod sites;

pub use guard::Guard;
pub(crate) use plug::Timing;
pub use site::Site;
pub use sites::{SiteInfo, sites};
