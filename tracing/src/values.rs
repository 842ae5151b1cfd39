//! Field values: visited from `tracing` into fixed-size slots, converted to
//! the kinds of the callsite's JFR type, and encoded straight into the
//! recorder's buffer through its one-pass field writer
//! ([`EventType::commit_fields`](recorder::EventType::commit_fields); nothing is allocated once a
//! thread's scratch text buffer has grown to its largest event).
//!
//! Text (strings, `Debug`, errors) is formatted into one thread-local
//! `String` and the slots hold ranges of it, because `tracing` lends a
//! `&str` only for the duration of one `record_str` call.
//!
//! Invariant: after [`Slots::fix`], slot *i* holds a value of kind
//! `kinds[i]` (or nothing, written as that kind's zero / null).

use std::fmt::{self, Write as _};
use std::sync::atomic::Ordering;

use recorder::{FieldKind, FieldWriter};
use tracing_core::field::{Field, Visit};

use crate::site::STATS;

/// The most fields a `tracing` callsite can have.
pub(crate) const MAX_FIELDS: usize = 32;

/// One visited value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Slot {
    Empty,
    Int(i64),
    UInt(u64),
    F64(f64),
    Bool(bool),
    /// A range of the scratch text.
    Text(usize, usize),
}

impl Slot {
    /// The kind a type built from this first value gets.
    pub(crate) fn kind(self) -> FieldKind {
        match self {
            Self::Int(_) => FieldKind::I64,
            Self::UInt(_) => FieldKind::U64,
            Self::F64(_) => FieldKind::F64,
            Self::Bool(_) => FieldKind::Bool,
            Self::Empty | Self::Text(..) => FieldKind::String,
        }
    }
}

/// The values of one event or span, by callsite field index.
#[derive(Debug)]
pub(crate) struct Slots {
    pub(crate) slots: [Slot; MAX_FIELDS],
    pub(crate) text: String,
}

impl Slots {
    pub(crate) fn new() -> Self {
        Self {
            slots: [Slot::Empty; MAX_FIELDS],
            text: String::with_capacity(256),
        }
    }

    pub(crate) fn clear(&mut self, n: usize) {
        self.slots[..n.min(MAX_FIELDS)].fill(Slot::Empty);
        self.text.clear();
    }

    fn put_text(&mut self, i: usize, f: impl FnOnce(&mut String)) {
        let start = self.text.len();
        f(&mut self.text);
        self.slots[i] = Slot::Text(start, self.text.len());
    }

    /// Drops text no slot refers to any more (a span whose fields are
    /// recorded again and again), once it is worth it.
    pub(crate) fn compact(&mut self) {
        let live: usize = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Text(a, b) => b - a,
                _ => 0,
            })
            .sum();
        if self.text.len() <= 1024 || self.text.len() <= 2 * live {
            return;
        }
        let mut text = String::with_capacity(live);
        for s in &mut self.slots {
            if let Slot::Text(a, b) = *s {
                let start = text.len();
                text.push_str(&self.text[a..b]);
                *s = Slot::Text(start, text.len());
            }
        }
        self.text = text;
    }

    #[cfg(test)]
    pub(crate) fn text(&self, r: std::ops::Range<usize>) -> &str {
        &self.text[r]
    }

    /// Converts every slot in `0..kinds.len()` to its field's kind (see the
    /// crate docs for what converts); values that cannot be are counted and
    /// emptied.
    pub(crate) fn fix(&mut self, kinds: &[FieldKind]) {
        for (i, kind) in kinds.iter().enumerate().take(MAX_FIELDS) {
            let s = self.slots[i];
            let fixed = match (s, kind) {
                (Slot::Empty, _) => Slot::Empty,
                (Slot::Int(_), FieldKind::I64)
                | (Slot::UInt(_), FieldKind::U64)
                | (Slot::F64(_), FieldKind::F64)
                | (Slot::Bool(_), FieldKind::Bool)
                | (Slot::Text(..), FieldKind::String) => s,
                (Slot::Int(v), FieldKind::U64) if v >= 0 => Slot::UInt(v as u64),
                (Slot::UInt(v), FieldKind::I64) if v <= i64::MAX as u64 => Slot::Int(v as i64),
                (Slot::Int(v), FieldKind::F64) => Slot::F64(v as f64),
                (Slot::UInt(v), FieldKind::F64) => Slot::F64(v as f64),
                (_, FieldKind::String) => {
                    self.put_text(i, |t| {
                        let _ = match s {
                            Slot::Int(v) => write!(t, "{v}"),
                            Slot::UInt(v) => write!(t, "{v}"),
                            Slot::F64(v) => write!(t, "{v}"),
                            Slot::Bool(v) => write!(t, "{v}"),
                            Slot::Empty | Slot::Text(..) => Ok(()),
                        };
                    });
                    self.slots[i]
                }
                _ => {
                    STATS.mismatched_values.fetch_add(1, Ordering::Relaxed);
                    Slot::Empty
                }
            };
            self.slots[i] = fixed;
        }
    }

    /// The value of slot `i` as a field of `kind` (after [`fix`](Self::fix)).
    #[cfg(test)]
    pub(crate) fn value(&self, i: usize, kind: FieldKind) -> recorder::Value<'_> {
        use recorder::Value;
        match self.slots[i] {
            Slot::Int(v) => Value::Int(v),
            Slot::UInt(v) => Value::UInt(v),
            Slot::F64(v) => Value::F64(v),
            Slot::Bool(v) => Value::Bool(v),
            Slot::Text(a, b) => Value::Str(Some(self.text(a..b))),
            Slot::Empty => match kind {
                FieldKind::I64 => Value::Int(0),
                FieldKind::U64 => Value::UInt(0),
                FieldKind::F64 => Value::F64(0.0),
                FieldKind::Bool => Value::Bool(false),
                _ => Value::Str(None),
            },
        }
    }
}

impl Visit for Slots {
    fn record_i64(&mut self, f: &Field, v: i64) {
        if f.index() < MAX_FIELDS {
            self.slots[f.index()] = Slot::Int(v);
        }
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        if f.index() < MAX_FIELDS {
            self.slots[f.index()] = Slot::UInt(v);
        }
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        if f.index() < MAX_FIELDS {
            self.slots[f.index()] = Slot::F64(v);
        }
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        if f.index() < MAX_FIELDS {
            self.slots[f.index()] = Slot::Bool(v);
        }
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        if f.index() < MAX_FIELDS {
            self.put_text(f.index(), |t| t.push_str(v));
        }
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        if f.index() < MAX_FIELDS {
            self.put_text(f.index(), |t| {
                let _ = write!(t, "{v:?}");
            });
        }
    }
}

impl Slots {
    /// Encodes slots `0..kinds.len()` as fields of `kinds`, converting as
    /// [`fix`](Self::fix) does (see [`write_value`]). Returns how many
    /// values could not be converted.
    #[inline]
    pub(crate) fn write_fields(&self, kinds: &[FieldKind], w: &mut FieldWriter<'_>) -> u32 {
        let mut bad = 0;
        for (i, &kind) in kinds.iter().enumerate().take(MAX_FIELDS) {
            let v = match self.slots[i] {
                Slot::Empty => Val::Empty,
                Slot::Int(v) => Val::Int(v),
                Slot::UInt(v) => Val::UInt(v),
                Slot::F64(v) => Val::F64(v),
                Slot::Bool(v) => Val::Bool(v),
                Slot::Text(a, b) => Val::Str(&self.text[a..b]),
            };
            bad += write_value(w, v, kind);
        }
        bad
    }
}

/// One value as `tracing` hands it over (text borrowed, not copied).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Val<'a> {
    Empty,
    Int(i64),
    UInt(u64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
}

/// Encodes `v` as a field of `kind`, converting where nothing is lost (a
/// number into a `String` field is formatted on the stack, so nothing is
/// allocated) and writing a value that cannot be converted as `kind`'s
/// zero / null. Returns 1 for such a value, else 0 (`Empty` is not one).
#[inline(always)]
pub(crate) fn write_value(w: &mut FieldWriter<'_>, v: Val<'_>, kind: FieldKind) -> u32 {
    match (v, kind) {
        (Val::Int(v), FieldKind::I64) => w.int(v),
        (Val::UInt(v), FieldKind::U64) => w.uint(v),
        (Val::F64(v), FieldKind::F64) => w.f64(v),
        (Val::Bool(v), FieldKind::Bool) => w.bool(v),
        (Val::Str(s), FieldKind::String) => w.opt_str(Some(s)),
        (Val::Int(v), FieldKind::U64) if v >= 0 => w.uint(v as u64),
        (Val::UInt(v), FieldKind::I64) if v <= i64::MAX as u64 => w.int(v as i64),
        (Val::Int(v), FieldKind::F64) => w.f64(v as f64),
        (Val::UInt(v), FieldKind::F64) => w.f64(v as f64),
        (v @ (Val::Int(_) | Val::UInt(_) | Val::F64(_) | Val::Bool(_)), FieldKind::String) => {
            write_number_text(w, v)
        }
        (v, kind) => {
            write_zero(w, kind);
            return u32::from(v != Val::Empty);
        }
    }
    0
}

/// The zero / null of `kind`: an absent value.
#[inline]
pub(crate) fn write_zero(w: &mut FieldWriter<'_>, kind: FieldKind) {
    match kind {
        FieldKind::I64 => w.int(0),
        FieldKind::U64 => w.uint(0),
        FieldKind::F64 => w.f64(0.0),
        FieldKind::Bool => w.bool(false),
        _ => w.opt_str(None),
    }
}

/// A number or `bool` into a `String` field, formatted on the stack (out
/// of line: the buffer stays out of the hot frames).
#[cold]
#[inline(never)]
fn write_number_text(w: &mut FieldWriter<'_>, v: Val<'_>) {
    let mut t = StackText::new();
    let _ = match v {
        Val::Int(v) => write!(t, "{v}"),
        Val::UInt(v) => write!(t, "{v}"),
        Val::F64(v) => write!(t, "{v}"),
        Val::Bool(v) => write!(t, "{v}"),
        Val::Empty | Val::Str(_) => Ok(()),
    };
    w.opt_str(Some(t.as_str()));
}

/// Text formatted on the stack: the `Display` of an `f64` (its longest)
/// fits.
struct StackText {
    buf: [u8; 512],
    len: usize,
}

impl StackText {
    fn new() -> Self {
        Self {
            buf: [0; 512],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s are appended, so this never fails.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use recorder::Value;

    #[test]
    fn stack_text_holds_the_longest_f64() {
        for v in [f64::MAX, f64::MIN, f64::MIN_POSITIVE, 5e-324, -5e-324] {
            let mut t = StackText::new();
            write!(t, "{v}").unwrap();
            assert_eq!(t.as_str(), format!("{v}"));
        }
    }

    #[test]
    fn compact_keeps_live_text_and_drops_the_rest() {
        let mut s = Slots::new();
        for i in 0..200 {
            s.put_text(0, |t| t.push_str(&format!("value number {i}")));
            s.put_text(1, |t| t.push_str("kept"));
            s.compact();
        }
        assert!(s.text.len() <= 1024 + 32, "{}", s.text.len());
        assert_eq!(
            s.value(0, FieldKind::String),
            Value::Str(Some("value number 199"))
        );
        assert_eq!(s.value(1, FieldKind::String), Value::Str(Some("kept")));
        assert_eq!(s.value(2, FieldKind::I64), Value::Int(0));
    }
}
