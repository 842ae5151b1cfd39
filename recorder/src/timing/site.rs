//! The static descriptor of one instrumented function or block, and the
//! layout of its word: what the call path ([`super::guard`]), the site
//! registry ([`super::sites`](mod@super::sites)) and the trace writer ([`super::emit`]) share.
//!
//! Invariant: a site's word starts as [`UNREGISTERED`]; only the site
//! registry stores another value (see the [module docs](super)).

use crate::base::sync::global::AtomicU64;

/// Bit: not registered yet.
pub(super) const UNREGISTERED: u64 = 1;
/// Bit: calls are timed.
pub(super) const TIMING: u64 = 1 << 1;
/// Bit: calls are traced.
pub(super) const TRACE: u64 = 1 << 2;
/// Bit: the clock is the TSC.
pub(super) const CLOCK_TSC: u64 = 1 << 3;
/// Bit: traces capture a stack trace.
pub(super) const TRACE_STACK: u64 = 1 << 4;
pub(super) const INDEX_SHIFT: u32 = 8;
pub(super) const INDEX_MASK: u64 = (1 << 24) - 1;
pub(super) const GEN_SHIFT: u32 = 32;

/// How a site's path is known.
#[derive(Debug, Clone, Copy)]
pub(super) enum SitePath {
    /// The `type_name` of an item nested in the function (see
    /// `#[flightrec::timed]`); the item's own segment is dropped.
    Nested(fn() -> &'static str),
    /// Given whole (`timed_scope!`).
    Named(&'static str),
}

/// The static descriptor of one instrumented function or block.
#[derive(Debug)]
pub struct Site {
    pub(super) path: SitePath,
    pub(super) file: &'static str,
    pub(super) line: u32,
    pub(super) tags: &'static [&'static str],
    pub(super) word: AtomicU64,
}

impl Site {
    /// A function's site: `nested` returns the `type_name` of an item
    /// declared inside the function (so the path is the compiler's own,
    /// `krate::module::Type::method::item`). Used by `#[timed]`.
    #[doc(hidden)]
    pub const fn nested(
        nested: fn() -> &'static str,
        file: &'static str,
        line: u32,
        tags: &'static [&'static str],
    ) -> Self {
        Self {
            path: SitePath::Nested(nested),
            file,
            line,
            tags,
            word: AtomicU64::new(UNREGISTERED),
        }
    }

    /// A block's site, named `path` (`krate::module::name`). Used by
    /// [`timed_scope!`](crate::timed_scope).
    #[doc(hidden)]
    pub const fn named(
        path: &'static str,
        file: &'static str,
        line: u32,
        tags: &'static [&'static str],
    ) -> Self {
        Self {
            path: SitePath::Named(path),
            file,
            line,
            tags,
            word: AtomicU64::new(UNREGISTERED),
        }
    }
}
