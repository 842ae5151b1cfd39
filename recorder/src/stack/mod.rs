//! Stack traces: [`capture()`] on the event-commit path (no allocation, no lock
//! of ours), [`Symbolizer`] off it (addresses to JFR classes and methods).
//!
//! Captured slots hold lookup addresses (return address minus one), so they
//! go to [`Symbolizer::resolve`] as they are.

mod capture;
pub(crate) mod names;
mod symbolize;
mod syntax;

pub use capture::{Captured, capture};
pub use symbolize::{ResolvedFrame, Symbolizer};
