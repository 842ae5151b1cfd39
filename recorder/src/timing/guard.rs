//! The guard of one call of a site (see the [module docs](super)): the
//! inline test of the site's word at entry, the clock read, and the record
//! at drop.
//!
//! Invariant: a word with the timing or tracing bit was stored (Release)
//! while a recording ran; the Acquire fence after loading it makes the
//! runtime and the calibrated clock visible.

use super::site::{
    CLOCK_TSC, GEN_SHIFT, INDEX_MASK, INDEX_SHIFT, Site, TIMING, TRACE, UNREGISTERED,
};
use super::{accum, emit, sites};
use crate::base::sync::global::{Ordering, fence};

impl Site {
    /// Starts a call: one relaxed load and one branch when the site is not
    /// selected. The guard records the call when it drops.
    #[inline(always)]
    pub fn enter(&'static self) -> Guard {
        let w = self.word.load(Ordering::Relaxed);
        if w & (UNREGISTERED | TIMING | TRACE) == 0 {
            return Guard { word: 0, start: 0 };
        }
        self.enter_selected(w)
    }

    #[inline(always)]
    fn enter_selected(&'static self, w: u64) -> Guard {
        let w = if w & UNREGISTERED != 0 {
            sites::register(self)
        } else {
            // Pairs with the Release store of the word: a selected word
            // implies the runtime exists and the clock is calibrated.
            fence(Ordering::Acquire);
            w
        };
        if w & (TIMING | TRACE) == 0 {
            return Guard { word: 0, start: 0 };
        }
        Guard {
            word: w,
            start: ticks(w),
        }
    }
}

/// The clock, read inline when the word says it is the TSC.
#[inline(always)]
fn ticks(w: u64) -> i64 {
    if w & CLOCK_TSC != 0 {
        crate::base::clock::read_tsc()
    } else {
        crate::base::clock::ticks()
    }
}

/// One call of a selected site: records it when dropped, also while a
/// panic unwinds. `Send`, so an `async fn`'s future stays `Send`.
#[derive(Debug)]
#[must_use = "the call is recorded when the guard drops"]
pub struct Guard {
    /// The site's word at entry; 0 when not selected.
    word: u64,
    start: i64,
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if self.word != 0 {
            finish(self.word, self.start);
        }
    }
}

/// Out of line, so the drop an unselected call inlines is one test of a
/// register (the drop glue of a larger body is not inlined, and would be a
/// call on every unselected call).
#[inline(never)]
fn finish(w: u64, start: i64) {
    let end = ticks(w);
    let d = end.saturating_sub(start).max(0) as u64;
    let index = ((w >> INDEX_SHIFT) & INDEX_MASK) as usize;
    if w & TIMING != 0 {
        accum::record(index, w >> GEN_SHIFT, d);
    }
    if w & TRACE != 0 {
        emit::trace(w, index, start, d);
    }
}

/// Times the rest of the enclosing block as a site named
/// `module_path!()::NAME`, optionally tagged:
///
/// ```
/// # use recorder as flightrec;
/// fn work() {
///     let _timed = flightrec::timed_scope!("parse", "io");
///     // ...
/// }
/// ```
#[macro_export]
macro_rules! timed_scope {
    ($name:literal $(, $tag:literal)* $(,)?) => {{
        static __FLIGHTREC_SITE: $crate::timing::Site = $crate::timing::Site::named(
            ::core::concat!(::core::module_path!(), "::", $name),
            ::core::file!(),
            ::core::line!(),
            &[$($tag),*],
        );
        __FLIGHTREC_SITE.enter()
    }};
}
