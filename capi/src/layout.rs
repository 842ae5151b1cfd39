//! A registered type's layout: what `flightrec_commit` checks each value
//! against, compiled once by `flightrec_register` so the commit reads no
//! more than one small entry per field.
//!
//! # Fast check
//!
//! Each field has the tag its values carry and, for an integer kind
//! narrower than 64 bits, its range as one unsigned compare: `payload +
//! bias <= max` (wrapping; for `I32`, bias 2³¹ and max 2³² − 1). A value
//! that passes [`FieldLayout::accepts`] fits its field.
//!
//! Kinds whose values take more than one tag or a look at their bytes (a
//! string: `NULL` or UTF-8; a thread or a stack trace: `NULL` or resolved
//! at the commit) have tag 0, which no value carries: each of their values
//! goes through the full check (`commit::fits`), and so does any value the
//! fast check turns down, before it is rejected.
//!
//! # Paths
//!
//! [`Layout::scalar`] says every field is a number, a boolean or a char:
//! the commit then encodes without the string, thread and stack-trace
//! cases, and the thread's record cursor stays in registers.
//!
//! Invariant: `fields[i].kind` is the kind of field `i` of `ty`, and
//! `accepts` is true only for values `commit::fits` accepts for that kind.

use recorder::{EventType, FieldKind};

use crate::commit::{FLIGHTREC_VALUE_BOOL, FLIGHTREC_VALUE_CHAR, flightrec_value};
use crate::commit::{
    FLIGHTREC_VALUE_F32, FLIGHTREC_VALUE_F64, FLIGHTREC_VALUE_INT, FLIGHTREC_VALUE_UINT,
};

/// A registered type and its fields' checks; leaked, like the type.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The type.
    pub(crate) ty: &'static EventType,
    /// One entry per field, in order.
    pub(crate) fields: &'static [FieldLayout],
    /// No string, thread or stack-trace field.
    pub(crate) scalar: bool,
}

/// One field's check (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldLayout {
    /// The field's kind.
    pub(crate) kind: FieldKind,
    /// The payload is range-checked: `tag` is `INT` or `UINT`.
    ranged: bool,
    /// The tag the fast check accepts; 0 sends every value to `fits`.
    tag: u32,
    bias: u64,
    max: u64,
}

impl Layout {
    /// The layout of `ty`, leaked.
    pub(crate) fn leak(ty: &'static EventType) -> &'static Self {
        let fields: Vec<FieldLayout> = ty
            .info()
            .fields
            .iter()
            .map(|f| FieldLayout::new(f.kind))
            .collect();
        let scalar = fields.iter().all(|f| f.tag != 0);
        Box::leak(Box::new(Self {
            ty,
            fields: Box::leak(fields.into_boxed_slice()),
            scalar,
        }))
    }
}

impl FieldLayout {
    fn new(kind: FieldKind) -> Self {
        use FieldKind as K;
        let exact = |tag| (tag, false, 0, 0);
        let signed = |bits: u32| (FLIGHTREC_VALUE_INT, true, 1 << (bits - 1), (1 << bits) - 1);
        let unsigned = |bits: u32| (FLIGHTREC_VALUE_UINT, true, 0, (1 << bits) - 1);
        let (tag, ranged, bias, max) = match kind {
            K::Bool => exact(FLIGHTREC_VALUE_BOOL),
            K::Char => exact(FLIGHTREC_VALUE_CHAR),
            K::I8 => signed(8),
            K::I16 => signed(16),
            K::I32 => signed(32),
            K::I64 => exact(FLIGHTREC_VALUE_INT),
            K::U8 => unsigned(8),
            K::U16 => unsigned(16),
            K::U32 => unsigned(32),
            K::U64 => exact(FLIGHTREC_VALUE_UINT),
            K::F32 => exact(FLIGHTREC_VALUE_F32),
            K::F64 => exact(FLIGHTREC_VALUE_F64),
            // Strings, threads, stack traces (and any kind added later):
            // the full check.
            _ => exact(0),
        };
        Self {
            kind,
            ranged,
            tag,
            bias,
            max,
        }
    }

    /// The fast check: true if `v` carries this field's tag and, for a
    /// narrow integer, is in range. False sends `v` to the full check.
    ///
    /// # Safety
    ///
    /// `v` is initialised per its tag.
    #[inline(always)]
    pub(crate) unsafe fn accepts(&self, v: &flightrec_value) -> bool {
        v.tag == self.tag
            && (!self.ranged
                // SAFETY: a ranged field's tag is INT or UINT (`new`) and
                // `v` carries it, so the eight bytes of `i`/`u` are the
                // initialised member (the caller's contract).
                || unsafe { v.v.u }.wrapping_add(self.bias) <= self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::{FLIGHTREC_VALUE_STRING, flightrec_payload};

    fn int(i: i64) -> flightrec_value {
        flightrec_value {
            tag: FLIGHTREC_VALUE_INT,
            v: flightrec_payload { i },
        }
    }

    fn uint(u: u64) -> flightrec_value {
        flightrec_value {
            tag: FLIGHTREC_VALUE_UINT,
            v: flightrec_payload { u },
        }
    }

    /// The fast check agrees with the kinds' ranges at and past every edge.
    #[test]
    fn ranges_are_exact() {
        use FieldKind as K;
        let signed = [
            (K::I8, i64::from(i8::MIN), i64::from(i8::MAX)),
            (K::I16, i64::from(i16::MIN), i64::from(i16::MAX)),
            (K::I32, i64::from(i32::MIN), i64::from(i32::MAX)),
        ];
        for (kind, lo, hi) in signed {
            let f = FieldLayout::new(kind);
            // SAFETY: each value is initialised per its tag.
            unsafe {
                for ok in [lo, hi, 0, -1, 1] {
                    assert!(f.accepts(&int(ok)), "{kind:?} {ok}");
                }
                for bad in [lo - 1, hi + 1, i64::MIN, i64::MAX] {
                    assert!(!f.accepts(&int(bad)), "{kind:?} {bad}");
                }
                assert!(!f.accepts(&uint(0)), "{kind:?} takes INT only");
            }
        }
        let unsigned = [
            (K::U8, u64::from(u8::MAX)),
            (K::U16, u64::from(u16::MAX)),
            (K::U32, u64::from(u32::MAX)),
            (K::U64, u64::MAX),
        ];
        for (kind, hi) in unsigned {
            let f = FieldLayout::new(kind);
            // SAFETY: as above.
            unsafe {
                assert!(f.accepts(&uint(0)) && f.accepts(&uint(hi)), "{kind:?}");
                assert!(hi == u64::MAX || !f.accepts(&uint(hi + 1)), "{kind:?}");
                assert!(!f.accepts(&int(0)), "{kind:?} takes UINT only");
            }
        }
        let long = FieldLayout::new(K::I64);
        // SAFETY: as above.
        unsafe { assert!(long.accepts(&int(i64::MIN)) && long.accepts(&int(i64::MAX))) };
    }

    /// Kinds with more than one tag never pass the fast check.
    #[test]
    fn strings_threads_and_stacks_take_the_full_check() {
        let s = flightrec_value {
            tag: FLIGHTREC_VALUE_STRING,
            v: flightrec_payload { u: 0 },
        };
        for kind in [FieldKind::String, FieldKind::Thread, FieldKind::StackTrace] {
            let f = FieldLayout::new(kind);
            // SAFETY: `s` is never read past its tag here.
            assert!(!unsafe { f.accepts(&s) }, "{kind:?}");
            assert_eq!(f.tag, 0);
        }
    }
}
