//! A registered type's layout: what `flightrec_commit` reads to check and
//! encode a type's values, compiled once by `flightrec_register` so the
//! commit finds it with one indexed load and reads one byte per field.
//!
//! # Paths
//!
//! [`Layout::scalar`] says every field is a number, a boolean or a char.
//! Such a type's commit checks each value as it encodes it, in one pass,
//! with the thread's record cursor in registers (see `crate::commit`).
//! A type with a string, thread or stack-trace field is checked first and
//! encoded after, out of line: a string is read twice (length and UTF-8,
//! then its bytes), and a thread or stack value is resolved before the
//! record is begun.
//!
//! Invariant: `kinds[i]` is the kind of field `i` of `ty`, and `scalar` is
//! true exactly when no kind is a string, thread or stack trace.

use recorder::{EventType, FieldKind};

/// A registered type and its fields' kinds; leaked, like the type.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The type.
    pub(crate) ty: &'static EventType,
    /// The kind of each field, in order.
    pub(crate) kinds: &'static [FieldKind],
    /// No string, thread or stack-trace field.
    pub(crate) scalar: bool,
}

impl Layout {
    /// The layout of `ty`, leaked.
    pub(crate) fn leak(ty: &'static EventType) -> &'static Self {
        let kinds: Vec<FieldKind> = ty.info().fields.iter().map(|f| f.kind).collect();
        let scalar = kinds.iter().all(|&k| is_scalar(k));
        Box::leak(Box::new(Self {
            ty,
            kinds: Box::leak(kinds.into_boxed_slice()),
            scalar,
        }))
    }
}

/// True for the kinds whose value is its payload alone.
fn is_scalar(kind: FieldKind) -> bool {
    !matches!(
        kind,
        FieldKind::String | FieldKind::Thread | FieldKind::StackTrace
    )
}
