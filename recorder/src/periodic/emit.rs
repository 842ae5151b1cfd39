//! Writing a built-in event from a producer's own thread (the periodic
//! thread, the panic hook, thread start and end) through the commit path,
//! into that thread's buffer, like any program event.
//!
//! Invariant: a record written here starts with its type and start time
//! and tags the constants it references with the epoch of the chunk it
//! lands in (see [`crate::event::builtin::emit_builtin`]); a drop is
//! counted there and reported to the caller as `false`.

use jfr_format::write::events::BuiltinEvent;

use crate::event::builtin::{BuiltinRefs, emit_builtin};

/// Writes `event`, which references no thread or stack constant, through
/// the commit path (this thread's buffer). False if dropped.
pub(crate) fn emit(event: impl BuiltinEvent) -> bool {
    emit_builtin(BuiltinRefs::default(), |buf, _| event.encode(buf))
}

/// [`emit`] for a record that references the constants in `refs`: they are
/// tagged with the epoch of the chunk the record lands in, and `event` is
/// given the stack key to write (`refs.stack`, or 0 if it was released).
pub(crate) fn emit_with<E: BuiltinEvent>(refs: BuiltinRefs<'_>, event: impl Fn(u64) -> E) -> bool {
    emit_builtin(refs, |buf, stack| event(stack).encode(buf))
}
