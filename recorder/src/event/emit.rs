//! The emit machinery every commit goes through: [`emit`] writes one
//! record (the implicit fields, start, duration, thread and stack keys,
//! then the type's own fields) into the calling thread's block inside its
//! write section; fields the recorder does not encode itself take
//! [`emit_via_scratch`]'s way (encoded into the thread's scratch with no
//! section open, checked, then copied in); stack traces are captured and
//! interned out of line ([`stack_keys`], [`capture_stack`]). The public
//! commit paths that call it are `super::commit`; records the recorder
//! pre-encodes itself are `super::builtin`.
//!
//! What is rare (a stack trace, a full block, a thread past its exit, a
//! loss) is `#[cold] #[inline(never)]`, so the inlined path stays the
//! straight one; the clock is read inside the section, after the loads
//! the stores need (see [`Start`]).
//!
//! Invariant: an emitted record is written whole into the thread's block,
//! or dropped and counted (a [`LossCause`]), or not committed at all (its
//! section came after the recording's last stop); no user code ever runs
//! inside a write section.

use super::descriptor::EventType;
use super::field::FieldWriter;
use super::refs::Refs;
use super::scratch::{self, Encoded};
use super::sink::{Packed, RecordSink};
use jfr_format::write::encode::Sink;

use crate::base::enabled::EnabledWord;
use crate::base::loss::LossCause;
use crate::buffer::encode::Encode;
use crate::buffer::local;
use crate::buffer::slot::{Emitted, ThreadSlot};
use crate::runtime;

/// The fields of one event after the implicit ones: a trait rather than a
/// closure so they are forced inline into the encoder.
pub(crate) trait Fields {
    /// True if `write` is the recorder's own code and is encoded in place,
    /// inside the write section; false (user code) encodes the fields into
    /// the thread's scratch first (see [`crate::event::scratch`]).
    const IN_SECTION: bool = false;

    /// True if `write` always returns true (every writer but a
    /// `commit_fields` one that checks values as it goes).
    const NEVER_ABANDONS: bool = false;

    /// Writes the fields, in declared order. False abandons the record:
    /// none of it is committed (a writer that checks values as it goes,
    /// see `EventType::commit_fields`); every other writer returns true.
    fn write(&self, w: &mut FieldWriter<'_>) -> bool;

    /// The most bytes `write` writes, if bounded (see
    /// [`Event::FIELDS_MAX_LEN`](super::commit::Event::FIELDS_MAX_LEN)).
    const MAX_LEN: Option<usize> = None;

    /// The most bytes `write` writes, if bounded, known at run time (a type
    /// declared at run time); [`MAX_LEN`](Self::MAX_LEN) takes precedence.
    #[inline(always)]
    fn max_len(&self) -> Option<usize> {
        Self::MAX_LEN
    }
}

impl<F: Fn(&mut FieldWriter<'_>)> Fields for F {
    const NEVER_ABANDONS: bool = true;

    #[inline(always)]
    fn write(&self, w: &mut FieldWriter<'_>) -> bool {
        self(w);
        true
    }
}

/// Writes one event: implicit fields (start, duration, thread, stack), then
/// `fields`. [`Emitted::written`] if it was written; else it was dropped
/// (counted), not committed (its section came after the recording's last
/// stop, or its type was switched off while a user encoder ran: as if the
/// type had been off) or `fields` abandoned it (`Written(0)`).
#[inline(always)]
pub(crate) fn emit(
    ty: &'static EventType,
    word: EnabledWord,
    start: Start,
    duration: Option<i64>,
    fields: &impl Fields,
) -> Emitted {
    if !fields_in_section(fields) {
        return emit_via_scratch(ty, word, start.ticks(), duration, fields);
    }
    let rt = runtime::enabled(word);
    let slot = local::slot_for_event(rt);
    // SAFETY: `slot_for_event` returned this thread's live slot, or the
    // runtime's closed one, valid for this frame (see
    // `local::slot_for_event`).
    let slot = unsafe { slot.as_ref() };
    let keys = if word.stack_trace() {
        stack_keys(rt, slot)
    } else {
        Keys {
            packed: Some(slot.thread_no_stack),
            stack: 0,
        }
    };
    let record = EventRecord {
        ty,
        start,
        duration,
        rt,
        slot,
        keys,
        fields,
    };
    slot.emit(&rt.epoch, &rt.pool, &rt.losses, &record)
}

/// When an event starts: at a time read already (a duration event's
/// start, or a commit that read the clock before its out-of-line path), or
/// now, read inside the write section right before the record's first
/// store.
///
/// Now, on the inlined instant path: the clock read is the costliest
/// instruction of a commit (`rdtsc`: some twenty micro-ops, 10–13 ns on
/// the Intel Xeon of docs/performance.md), and what comes after it waits
/// for it. Read after the thread's slot, the epoch and the block are
/// loaded and checked, it overlaps with those loads instead of preceding
/// them, and only the record's stores are left behind it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    At(i64),
    Now(EnabledWord),
}

impl Start {
    /// The start, in ticks (the clock read now, for [`Start::Now`]).
    #[inline(always)]
    pub(crate) fn ticks(self) -> i64 {
        match self {
            Self::At(t) => t,
            Self::Now(word) => word.ticks(),
        }
    }
}

/// `F::IN_SECTION`, of a value at hand (a constant: the branch is resolved
/// at compile time).
#[inline(always)]
fn fields_in_section<F: Fields + ?Sized>(_: &F) -> bool {
    F::IN_SECTION
}

/// [`emit`] of fields the recorder does not encode itself: encoded into the
/// thread's scratch with no section open, checked against the type's
/// kinds, then copied into the thread's block inside the section (see
/// [`crate::event::scratch`]).
#[inline(never)]
fn emit_via_scratch<F: Fields + ?Sized>(
    ty: &'static EventType,
    word: EnabledWord,
    start: i64,
    duration: Option<i64>,
    fields: &F,
) -> Emitted {
    let rt = runtime::enabled(word);
    let Some(slot) = local::current_slot(rt) else {
        return thread_exiting(rt);
    };
    // SAFETY: `current_slot` returned this thread's live slot, which stays
    // valid for this frame (see `local::current_slot`).
    let slot = unsafe { slot.as_ref() };
    let Some(mut lent) = scratch::lend() else {
        // A nested emit (from the encoder, or a signal handler that
        // interrupted it) while the scratch holds another record.
        return dropped(rt, LossCause::Reentrant);
    };
    let unwinding = EncoderUnwinding(&rt.losses);
    let encoded = lent.encode(
        slot.thread_key,
        rt.pool.block_size(),
        || ty.info.fields.iter().map(|f| f.kind),
        |w| fields.write(w),
    );
    std::mem::forget(unwinding);
    let n = match encoded {
        Encoded::Done(n) => n,
        Encoded::Abandoned => return Emitted::Written(0),
        Encoded::Invalid => return dropped(rt, LossCause::InvalidEncoding),
        Encoded::TooLarge => return dropped(rt, LossCause::TooLarge),
    };
    // The encoder may have taken any time: an event whose type was switched
    // off meanwhile (its recording stopped) was never committed to it.
    if ty.enabled_word().is_none() {
        return Emitted::NotCommitted;
    }
    let keys = if word.stack_trace() {
        stack_keys(rt, slot)
    } else {
        Keys {
            packed: Some(slot.thread_no_stack),
            stack: 0,
        }
    };
    let (bytes, refs) = lent.fields(n);
    let record = EventRecord {
        ty,
        start: Start::At(start),
        duration,
        rt,
        slot,
        keys,
        fields: &Copied { rt, bytes, refs },
    };
    slot.emit(&rt.epoch, &rt.pool, &rt.losses, &record)
}

#[cold]
#[inline(never)]
fn dropped(rt: &runtime::Runtime, cause: LossCause) -> Emitted {
    rt.losses.record(cause, 0);
    Emitted::Dropped
}

/// Counts an event whose encoder unwound (no section was open: the scratch
/// goes back by its own guard). Forgotten once the encoder returns.
struct EncoderUnwinding<'a>(&'a crate::base::loss::Losses);

impl Drop for EncoderUnwinding<'_> {
    #[cold]
    fn drop(&mut self) {
        self.0.record(LossCause::Panicked, 0);
    }
}

/// Fields encoded and checked in the scratch, copied into the block inside
/// the section, where the constants they reference are tagged.
struct Copied<'a> {
    rt: &'a runtime::Runtime,
    bytes: &'a [u8],
    refs: &'a Refs,
}

impl Fields for Copied<'_> {
    const IN_SECTION: bool = true;
    const NEVER_ABANDONS: bool = true;

    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) -> bool {
        let at = w.enc.position();
        w.enc.put_slice(self.bytes);
        self.refs.tag(self.rt, w.epoch, &mut w.enc, at);
        true
    }

    #[inline]
    fn max_len(&self) -> Option<usize> {
        Some(self.bytes.len())
    }
}

/// The keys of an event that captures a stack trace, captured now. Out of
/// line, and it never sees the event's fields: a call that took them would
/// make the caller build the event in memory before even checking whether
/// it is enabled.
#[cold]
#[inline(never)]
fn stack_keys(rt: &'static runtime::Runtime, slot: &ThreadSlot) -> Keys {
    if slot.turns_away() {
        // A thread past its exit, or an emit inside an emit: the event will
        // be dropped (counted), so no stack is interned for it and no note
        // is left in a slot that is not this thread's own.
        return Keys {
            packed: Some(slot.thread_no_stack),
            stack: 0,
        };
    }
    let (stack, epoch) = capture_stack(rt);
    slot.note_stack(stack, epoch);
    Keys {
        packed: Packed::varints(&[slot.thread_key, stack]),
        stack,
    }
}

#[cold]
#[inline(never)]
pub(crate) fn thread_exiting(rt: &runtime::Runtime) -> Emitted {
    rt.losses.record(LossCause::ThreadExiting, 0);
    Emitted::Dropped
}

/// The implicit `eventThread` and `stackTrace` keys of a record. Two
/// words, not an enum: `stack_keys` returns them in registers, where
/// anything larger would come back through memory and take the common
/// path's keys with it.
#[derive(Debug, Clone, Copy)]
struct Keys {
    /// Both keys pre-encoded; `None` if they do not fit one (one word:
    /// `Packed` is never 0).
    packed: Option<Packed>,
    /// The stack-trace key, for `packed == None`.
    stack: u64,
}

/// An event's record: the implicit fields, then the type's own.
struct EventRecord<'a, F: ?Sized> {
    ty: &'static EventType,
    start: Start,
    duration: Option<i64>,
    rt: &'static runtime::Runtime,
    /// The writer's slot: its thread key, for `keys.packed == None`, and the
    /// note of the stack it interned.
    slot: &'a ThreadSlot,
    keys: Keys,
    fields: &'a F,
}

/// The most bytes of a record besides its fields: the header (size slot
/// and a type id of up to nine bytes), the start time (nine), a duration
/// (nine), the thread and stack-trace keys (nine each), and one more byte
/// of size for a record over 127 bytes.
const RECORD_OVERHEAD: usize = 1 + 9 + 9 + 9 + 2 * 9 + 1;

impl<F: Fields + ?Sized> Encode for EventRecord<'_, F> {
    const NEVER_EMPTY: bool = F::NEVER_ABANDONS;
    const MAX_LEN: Option<usize> = match F::MAX_LEN {
        Some(n) => Some(n + RECORD_OVERHEAD),
        None => None,
    };

    #[inline(always)]
    fn max_len(&self) -> Option<usize> {
        match Self::MAX_LEN {
            Some(n) => Some(n),
            None => self.fields.max_len().map(|n| n + RECORD_OVERHEAD),
        }
    }

    #[inline(always)]
    fn encode(&self, buf: &mut [u8], epoch: u64) -> Option<usize> {
        self.encode_in(buf, 0, epoch)
    }

    #[inline(always)]
    fn encode_in(&self, buf: &mut [u8], room: usize, epoch: u64) -> Option<usize> {
        let keys = if self.keys.stack != 0 {
            // Stack-traced: the stack's tag for this section's epoch (see
            // `ThreadSlot::stack_in_section`).
            let stack = self.slot.stack_in_section(self.rt, self.keys.stack, epoch);
            if stack == self.keys.stack {
                self.keys
            } else {
                Keys {
                    packed: Some(self.slot.thread_no_stack),
                    stack: 0,
                }
            }
        } else {
            self.keys
        };
        // Final JFR (the start a padded varint): the recorder copies the
        // record as it is.
        let mut w = FieldWriter {
            enc: RecordSink::begin_event(
                buf,
                room,
                // SAFETY: a record is made by `emit`, which was handed an
                // enabled word of `ty` (read with Acquire).
                unsafe { self.ty.header() },
                || self.start.ticks() as u64,
                self.duration,
                keys.packed.ok_or([self.slot.thread_key, keys.stack]),
            ),
            epoch,
            own_thread: self.slot.thread_key,
            refs: None,
        };
        if !self.fields.write(&mut w) {
            // Abandoned: nothing is committed; the bytes written past the
            // block's committed end are free space again.
            return Some(0);
        }
        w.enc.finish()
    }
}

/// [`commit_other`](super::commit)'s out-of-line half: `bytes[..n]` are the event's fields
/// encoded with no section open, `refs` the constants they reference
/// (`n` is `None` if they did not fit, which their bound rules out).
#[cold]
#[inline(never)]
pub(crate) fn commit_encoded(ty: &'static EventType, bytes: &[u8], n: Option<usize>, refs: &Refs) {
    let Some(word) = ty.enabled_word() else {
        return;
    };
    let now = word.ticks();
    let rt = runtime::enabled(word);
    let (Some(n), false) = (n, refs.overflowed()) else {
        rt.losses.record(LossCause::TooLarge, 0);
        return;
    };
    let duration = word.is_duration().then_some(0);
    let fields = Copied {
        rt,
        bytes: &bytes[..n],
        refs,
    };
    let _ = emit(ty, word, Start::At(now), duration, &fields);
}

/// Captures the caller's stack and interns it; returns its key and the
/// epoch the intern tagged it with.
#[cold]
#[inline(never)]
pub(crate) fn capture_stack(rt: &'static runtime::Runtime) -> (u64, u64) {
    let mut frames = [0u64; 128];
    let depth = rt.max_stack_depth.min(frames.len());
    // Skips this function and `emit`'s caller chain inside the recorder.
    let captured = crate::stack::capture(1, &mut frames[..depth]);
    if captured.len == 0 {
        return (0, 0);
    }
    // Read before the write section loads it (see `cpool::stacks`).
    let epoch = rt.epoch.load(crate::base::sync::Ordering::Relaxed);
    match rt
        .stacks
        .intern(&frames[..captured.len], captured.truncated, epoch)
    {
        Some(key) => (key, epoch),
        None => {
            rt.losses.record(LossCause::StackDropped, 0);
            (0, 0)
        }
    }
}
