//! Writing a built-in event from a producer's own thread (the periodic
//! thread, the panic hook, thread start and end) through the commit path,
//! into that thread's buffer, like any program event.
//!
//! Invariant: a record written here starts with its type and start time
//! and tags the constants it references with the epoch of the chunk it
//! lands in (see [`crate::event::commit::emit_builtin`]); a drop is
//! counted there and reported to the caller as `false`.

use jfr_format::TypeId;
use jfr_format::write::encode::Sink;
use jfr_format::write::record::EventEncoder;

use crate::event::commit::{BuiltinRefs, emit_builtin};

/// Writes one record of `ty` at `ticks` that references no thread or
/// stack constant, its other fields by `fields`, through the commit path
/// (this thread's buffer). False if dropped.
pub(crate) fn emit(ty: TypeId, ticks: i64, fields: impl Fn(&mut EventEncoder<'_>)) -> bool {
    emit_with(ty, ticks, BuiltinRefs::default(), |e, _| fields(e))
}

/// [`emit`] for a record that references the constants in `refs`: they are
/// tagged with the epoch of the chunk the record lands in, and `fields` is
/// given the stack key to write (`refs.stack`, or 0 if it was released).
pub(crate) fn emit_with(
    ty: TypeId,
    ticks: i64,
    refs: BuiltinRefs<'_>,
    fields: impl Fn(&mut EventEncoder<'_>, u64),
) -> bool {
    emit_builtin(refs, |buf, stack| {
        let mut e = EventEncoder::begin(buf, ty);
        e.put_i64(ticks);
        fields(&mut e, stack);
        e.finish()
    })
}
