//! The records and field values the recorder encodes itself. A built-in
//! record (a `jdk.*` event such as a CPU sample, encoded by its caller
//! with the keys it chose) is written by [`emit_builtin`], which tags the
//! constants it references ([`BuiltinRefs`]) with the section's epoch; a
//! [`StackTrace`] or [`ThreadRef`] is a field of a user's event that
//! references one of those constants.
//!
//! Invariant: every constant a record references (its threads, its stack
//! trace) is tagged with the epoch of the section that writes the record,
//! so it is in the chunk that holds the record; a stack released since it
//! was captured is written as none.

use super::emit::{capture_stack, thread_exiting};
use super::field::{BuiltinEncoder, FieldKind, FieldValue, FieldWriter};
use crate::buffer::encode::Encode;
use crate::buffer::local;
use crate::buffer::slot::{Emitted, tag_stack};
use crate::cpool::threads::ThreadTags;
use crate::runtime;

/// The constants a built-in record references (see [`emit_builtin`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BuiltinRefs<'a> {
    /// The thread it references, if any.
    pub(crate) thread: Option<&'a ThreadTags>,
    /// The stack trace it references (0: none), interned in `stack_epoch`.
    pub(crate) stack: u64,
    pub(crate) stack_epoch: u64,
}

/// A built-in record: its references and its encoder.
pub(crate) struct Builtin<'a, F> {
    rt: &'a runtime::Runtime,
    refs: BuiltinRefs<'a>,
    /// A second thread it references (`jdk.ThreadStart`'s parent).
    also: Option<&'a ThreadTags>,
    encode: F,
}

/// A built-in record for a caller that holds its slot already and emits it
/// with [`ThreadSlot::emit`](crate::buffer::slot::ThreadSlot::emit): tags `refs` as [`emit_builtin`] does.
pub(crate) fn builtin<'a, F: Fn(&mut [u8], u64) -> Option<usize>>(
    rt: &'a runtime::Runtime,
    refs: BuiltinRefs<'a>,
    encode: F,
) -> Builtin<'a, F> {
    Builtin {
        rt,
        refs,
        also: None,
        encode,
    }
}

impl<F: Fn(&mut [u8], u64) -> Option<usize>> Encode for Builtin<'_, F> {
    #[inline]
    fn encode(&self, buf: &mut [u8], epoch: u64) -> Option<usize> {
        if let Some(t) = self.refs.thread {
            t.tag(epoch);
        }
        if let Some(t) = self.also {
            t.tag(epoch);
        }
        let mut stack = self.refs.stack;
        if stack != 0 && self.refs.stack_epoch != epoch {
            stack = tag_stack(self.rt, stack, epoch);
        }
        (self.encode)(buf, stack)
    }
}

/// Writes one pre-encoded record (a built-in event such as a CPU sample,
/// whose thread and stack keys the caller chose) into the calling thread's
/// buffer, tagging the constants in `refs` with the section's epoch.
/// `encode` must write a whole record into the slice it is given, e.g. with
/// [`jfr_format::write::record::EventEncoder`], with the stack key it is given
/// (`refs.stack`, or 0 if that stack was released since), and return its
/// length, or `None` if it does not fit. Returns false if the event was
/// dropped (and counted), or not committed (its section came after the
/// recording's last stop, see [`Emitted::NotCommitted`]).
pub(crate) fn emit_builtin(
    refs: BuiltinRefs<'_>,
    encode: impl Fn(&mut [u8], u64) -> Option<usize>,
) -> bool {
    emit_builtin_also(refs, None, encode)
}

/// [`emit_builtin`] for a record that references a second thread, `also`
/// (tagged with the section's epoch as `refs.thread` is).
pub(crate) fn emit_builtin_also(
    refs: BuiltinRefs<'_>,
    also: Option<&ThreadTags>,
    encode: impl Fn(&mut [u8], u64) -> Option<usize>,
) -> bool {
    let Some(rt) = runtime::get() else {
        return false;
    };
    let record = Builtin {
        rt,
        refs,
        also,
        encode,
    };
    match local::with_slot(rt, |slot| {
        slot.emit(&rt.epoch, &rt.pool, &rt.losses, &record)
    }) {
        Some(Emitted::Written(_)) => true,
        Some(Emitted::Dropped | Emitted::NotCommitted) => false,
        None => {
            thread_exiting(rt);
            false
        }
    }
}

/// A stack trace captured now, for a field of kind [`FieldKind::StackTrace`].
/// An event that uses it in a later epoch tags it for that epoch's chunk;
/// if it was released meanwhile (no event used it in the epoch after the
/// one it was last used in), the event gets no stack trace, counted as a
/// dropped stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackTrace {
    key: u64,
    /// The epoch the intern tagged it with.
    epoch: u64,
}

impl StackTrace {
    /// Captures the calling thread's stack (no-op key 0 when nothing records).
    #[inline(never)]
    pub fn capture() -> Self {
        match runtime::get() {
            Some(rt) if crate::event::registry::registry().is_recording() => {
                let (key, epoch) = capture_stack(rt);
                Self { key, epoch }
            }
            _ => Self::NONE,
        }
    }

    /// No stack trace.
    pub const NONE: Self = Self { key: 0, epoch: 0 };
}

impl FieldValue for StackTrace {
    const KIND: FieldKind = FieldKind::StackTrace;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.stack_key(self.key, self.epoch);
    }
}

/// A thread, for a field of kind [`FieldKind::Thread`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRef(u64);

impl ThreadRef {
    /// The calling thread (registering it with the recorder if needed).
    pub fn current() -> Self {
        Self(
            runtime::get()
                .and_then(local::current_thread_key)
                .unwrap_or(0),
        )
    }

    /// No thread.
    pub const NONE: Self = Self(0);
}

impl FieldValue for ThreadRef {
    const KIND: FieldKind = FieldKind::Thread;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.thread_key(self.0);
    }
}
