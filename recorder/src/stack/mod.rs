//! Stack traces: [`capture()`] on the event-commit path (no allocation, no lock
//! of ours), [`Symbolizer`] off it (addresses to JFR classes and methods).
//!
//! Captured slots hold lookup addresses (return address minus one), so they
//! go to [`Symbolizer::resolve`] as they are.

mod capture;
mod debug_budget;
mod dispatch;
pub(crate) mod names;
mod symbolize;
mod syntax;

pub use capture::{Captured, capture};
pub(crate) use dispatch::leading_cut;
pub use dispatch::trim_dispatch_frames;
pub use symbolize::{ResolvedFrame, Symbolizer};
