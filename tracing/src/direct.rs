//! An event's fields encoded as `tracing` visits them: straight into the
//! recorder's buffer, inside [`EventType::commit_fields`](recorder::EventType::commit_fields)'s
//! writer, with no copy into slots first and no second pass over them.
//!
//! JFR fields are written in declared order and a callsite's fields are
//! declared in its field order, so this works while the values arrive in
//! field order, as the `tracing` macros hand them over; a field with no
//! value (skipped, or `Empty`) is written as its kind's zero / null. A
//! value arriving out of order (a hand-built `ValueSet`, a field given
//! twice) abandons the record, and the caller records the event again
//! through [`Slots`](crate::values::Slots), which sorts any order.
//!
//! A value of its field's own kind (a `u64` into an unsigned field, ...)
//! is written with one compare of its index against the next field's and
//! one of its kind against the type's plan ([`Built::plan`]: the kinds by
//! index, `None` past the last), then the [`FieldWriter`] method of that
//! kind. For integers below 2^14 and `f64`s that method is the `try_` one,
//! which leaves no call in the visit, so the visit saves no registers;
//! a longer integer takes the cold twin of the visit (reached by a jump),
//! as does anything else (a conversion, a skipped field, a value out of
//! order).
//!
//! `Debug` values are formatted into the thread's scratch text. The whole
//! visit is a `commit_fields` writer, which the recorder runs before the
//! thread's write section, into its own scratch (the recorder's `event::scratch`):
//! a `Debug` impl that blocks stalls no rotation; one that records a
//! flightrec event needing that scratch (a `tracing` event, a user field)
//! gets it dropped as reentrant (and counted), one of built-in fields is
//! written; one that panics has its event counted as panicked.
//!
//! Invariant: when [`Direct::finish`] returns `Some`, exactly one value of
//! each `kinds[i]`, in order, was written after the implicit fields.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use recorder::{FieldKind, FieldWriter};
use tracing_core::field::{Field, Visit};

use crate::site::{Built, PLAN};
use crate::values::{Val, write_value, write_zero};

thread_local! {
    /// Scratch text for `Debug` values (borrowed only while formatting).
    static TEXT: RefCell<String> = const { RefCell::new(String::new()) };
}

/// [`Direct::next`] once a value came out of order: the record is
/// abandoned, and no index matches it.
const ABANDONED: usize = usize::MAX;

/// The visitor: writes each value as it comes, converted to its field's
/// kind.
pub(crate) struct Direct<'a, 'w> {
    w: &'a mut FieldWriter<'w>,
    /// The type: its field kinds by index ([`Built::plan`]).
    built: &'a Built,
    /// The next field to write, or [`ABANDONED`].
    next: usize,
    /// Values that did not fit their field (written as zero / null).
    bad: u32,
}

impl<'a, 'w> Direct<'a, 'w> {
    #[inline(always)]
    pub(crate) fn new(w: &'a mut FieldWriter<'w>, built: &'a Built) -> Self {
        Self {
            w,
            built,
            next: 0,
            bad: 0,
        }
    }

    /// Writes the fields no value came for. Returns the count of values
    /// that did not fit, or `None` if the record must be abandoned.
    #[inline(always)]
    pub(crate) fn finish(mut self) -> Option<u32> {
        if self.next == ABANDONED {
            return None;
        }
        self.skip_to(self.built.kinds.len());
        Some(self.bad)
    }

    /// Zero / null for fields `next..i`.
    #[inline(always)]
    fn skip_to(&mut self, i: usize) {
        while self.next < i {
            write_zero(self.w, self.built.kinds[self.next]);
            self.next += 1;
        }
    }

    /// True, and the field taken, if `f` is the next field and of `kind`
    /// (the value's own kind): the common case, where the value is written
    /// as it is. One compare of the index and one of the kind, read from
    /// the plan without a bounds check: the next field's index is at most
    /// `MAX_FIELDS`, below [`PLAN`], and the plan holds `None` from the
    /// type's last field on, which matches no kind.
    #[inline(always)]
    fn next_is(&mut self, f: &Field, kind: FieldKind) -> bool {
        let i = f.index();
        if i == self.next && self.built.plan[i & (PLAN - 1)] == Some(kind) {
            self.next = i + 1;
            return true;
        }
        false
    }

    /// Field `f`'s kind if its value is written now, after any skipped
    /// fields; `None` for a field past the type's (beyond `MAX_FIELDS`) or
    /// out of order.
    #[inline(always)]
    fn at(&mut self, f: &Field) -> Option<FieldKind> {
        let i = f.index();
        if i == self.next
            && let Some(kind) = self.built.plan[i & (PLAN - 1)]
        {
            self.next = i + 1;
            return Some(kind);
        }
        self.at_cold(i)
    }

    #[cold]
    #[inline(never)]
    fn at_cold(&mut self, i: usize) -> Option<FieldKind> {
        let kinds = &self.built.kinds;
        if i >= kinds.len() || self.next == ABANDONED {
            return None;
        }
        if i < self.next {
            self.next = ABANDONED;
            return None;
        }
        self.skip_to(i);
        self.next = i + 1;
        Some(kinds[i])
    }

    /// A value that is not of its field's kind, or not the next field's:
    /// converted, skipped to, or found out of order (out of line, so the
    /// visits of the common case stay short).
    #[cold]
    #[inline(never)]
    fn put(&mut self, f: &Field, v: Val<'_>) {
        if let Some(kind) = self.at(f) {
            self.bad += write_value(self.w, v, kind);
        }
    }
}

/// The visit of a value of kind `$kind`: the fast path (the next field, of
/// the value's own kind, written by `FieldWriter::$try` with nothing out of
/// line) has no call in it, so it saves no registers; everything else is
/// the cold `$slow`, reached by a jump.
macro_rules! visit_fast {
    ($name:ident, $slow:ident, $ty:ty, $kind:expr, $try:ident, $write:ident, $val:path) => {
        #[inline(always)]
        fn $name(&mut self, f: &Field, v: $ty) {
            let i = f.index();
            if self.fits_next(i, $kind) && self.w.$try(v) {
                self.next = i + 1;
            } else {
                self.$slow(f, v);
            }
        }

        #[cold]
        #[inline(never)]
        fn $slow(&mut self, f: &Field, v: $ty) {
            if self.next_is(f, $kind) {
                self.w.$write(v);
            } else {
                self.put(f, $val(v));
            }
        }
    };
}

impl Direct<'_, '_> {
    /// True if field `i` is the next and of `kind`; nothing is taken (see
    /// [`next_is`](Self::next_is)).
    #[inline(always)]
    fn fits_next(&self, i: usize, kind: FieldKind) -> bool {
        i == self.next && self.built.plan[i & (PLAN - 1)] == Some(kind)
    }

    visit_fast!(
        visit_i64,
        i64_slow,
        i64,
        FieldKind::I64,
        try_int,
        int,
        Val::Int
    );
    visit_fast!(
        visit_u64,
        u64_slow,
        u64,
        FieldKind::U64,
        try_uint,
        uint,
        Val::UInt
    );
    visit_fast!(
        visit_f64,
        f64_slow,
        f64,
        FieldKind::F64,
        try_f64,
        f64,
        Val::F64
    );
}

impl Visit for Direct<'_, '_> {
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.visit_i64(f, v);
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.visit_u64(f, v);
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.visit_f64(f, v);
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        if self.next_is(f, FieldKind::Bool) {
            self.w.bool(v);
        } else {
            self.put(f, Val::Bool(v));
        }
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        if self.next_is(f, FieldKind::String) {
            self.w.opt_str(Some(v));
        } else {
            self.put(f, Val::Str(v));
        }
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        let Some(kind) = self.at(f) else { return };
        if kind != FieldKind::String {
            // Text into a number field: not converted (as in `Slots::fix`).
            self.bad += write_value(self.w, Val::Str(""), kind);
            return;
        }
        // Taken only by a `Debug` impl that records an event with a
        // `Debug` value of its own (that event is dropped as reentrant):
        // it formats into a fresh string.
        let w = &mut *self.w;
        let fresh = TEXT.try_with(|t| match t.try_borrow_mut() {
            Ok(mut text) => {
                text.clear();
                let _ = write!(text, "{v:?}");
                w.opt_str(Some(&text));
                false
            }
            Err(_) => true,
        });
        if fresh.unwrap_or(true) {
            self.w.opt_str(Some(&format!("{v:?}")));
        }
    }
}
