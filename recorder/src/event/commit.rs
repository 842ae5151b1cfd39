//! Committing events: the [`Event`] trait, duration timers and guards, and
//! the one emit function every path goes through.
//!
//! The hot path of a committed instant event is: one load of the type's
//! settings word and two tests of it (not off; then registered, enabled,
//! clock the TSC, no stack trace, not a duration type, so that nothing
//! later branches on a setting), a TLS load, the write section (two stores
//! of the thread's own word and one load of the epoch), one check that the
//! thread's block is of this epoch and has room for the record's largest
//! encoding (a derived event's bound is a constant, and the encoder is told
//! it: every position check of its own then folds away at compile time),
//! `rdtsc`, the record's stores (the start time spread into its varint by
//! one `pdep` where that is fast, see `super::spread`), and the Release
//! store of `committed`; no lock, no read-modify-write atomic, no
//! allocation. The clock is read inside the section, after the loads the
//! stores need (see `Start`). [`Event::commit`] is inlined whole into its
//! caller (`#[inline(always)]`: the fields stay in registers, and the
//! call's register saves are gone, at some 2 KB of code per call site).
//! Whatever is rare (another setting, a stack trace, keys too large to
//! pre-encode, a full block, a value that does not fit) is out of line, so
//! it is neither inlined into nor speculated on by every commit; and no
//! out-of-line call takes the event itself (see `commit_other`), so a
//! commit of a disabled type is one load and one branch.
//!
//! That path is for fields the recorder encodes itself (each field's type
//! carries `BuiltinEncoder`, which `#[derive(Event)]` sums up as
//! [`Event::BUILTIN_FIELDS`]). Every other event (a user's `FieldValue`, a
//! hand-written `write_fields`, a `commit_fields` writer) is encoded before
//! its write section into the thread's scratch, checked, and copied in (see
//! `super::scratch`): no user code ever runs inside a section.

use std::marker::PhantomData;

use super::descriptor::EventType;
use super::field::{BuiltinEncoder, FieldKind, FieldValue, FieldWriter};
use super::refs::Refs;
use super::scratch::{self, Encoded};
use jfr_format::write::encode::Sink;

use super::sink::{Packed, RecordSink};
use crate::base::enabled::EnabledWord;
use crate::base::loss::LossCause;
use crate::buffer::encode::Encode;
use crate::buffer::local;
use crate::buffer::slot::{Emitted, ThreadSlot, tag_stack};
use crate::cpool::threads::ThreadTags;
use crate::runtime;

/// An event type declared in Rust, usually with `#[derive(Event)]`.
pub trait Event {
    /// The type's static descriptor.
    fn event_type() -> &'static EventType;

    /// Writes the event's own fields, in declared order.
    fn write_fields(&self, w: &mut FieldWriter<'_>);

    /// The most bytes [`write_fields`](Self::write_fields) writes, if that
    /// is bounded: `#[derive(Event)]` sums its fields' kinds
    /// ([`FieldKind::max_len`]); `None` (a string, or not declared) makes
    /// the commit check room value by value. With a bound, the commit checks
    /// the thread's block for room once for the whole record and encodes
    /// it once.
    #[doc(hidden)]
    const FIELDS_MAX_LEN: Option<usize> = None;

    /// [`BuiltinEncoder`] if every field's type is one of the recorder's own
    /// (`#[derive(Event)]` declares it from its fields' types): the event
    /// is then encoded in place, inside the thread's write section. `None`
    /// (a hand-written `write_fields`, a user's `FieldValue`) encodes it
    /// into the thread's scratch first (see [`crate::event::scratch`]).
    #[doc(hidden)]
    const BUILTIN_FIELDS: Option<BuiltinEncoder> = None;

    /// True if an event committed now would be written: lets a caller skip
    /// computing expensive fields. One load.
    #[inline]
    fn should_commit() -> bool {
        Self::event_type().is_enabled()
    }

    /// Commits the event as happening now (a duration event gets duration 0).
    #[inline(always)]
    fn commit(&self) {
        let ty = Self::event_type();
        match ty.instant_word() {
            // The common case, with every setting known from one compare:
            // the rest of the path has no branch on the settings.
            Ok(word) => {
                let _ = emit(ty, word, Start::Now(word), None, &EventFields(self));
            }
            Err(true) => {}
            Err(false) => {
                // Keeps the instant path the straight one in the caller's
                // layout (the out-of-line call after it is cold anyway).
                cold_path();
                commit_other(self)
            }
        }
    }

    /// Starts timing a duration event; see [`Timer`].
    #[inline]
    fn begin() -> Timer<Self>
    where
        Self: Sized,
    {
        Timer::start()
    }
}

/// The start of a duration event. `commit` checks the threshold and writes
/// the event with the elapsed time; a disabled type makes both no-ops.
#[derive(Debug)]
#[must_use = "a timer does nothing unless committed"]
pub struct Timer<E> {
    start: i64,
    /// `None` if `E` was disabled at the start.
    word: Option<EnabledWord>,
    _event: PhantomData<fn(E)>,
}

impl<E: Event> Timer<E> {
    /// Reads the clock if `E` is enabled.
    #[inline]
    pub fn start() -> Self {
        let word = E::event_type().enabled_word();
        let start = word.map_or(0, EnabledWord::ticks);
        Self {
            start,
            word,
            _event: PhantomData,
        }
    }

    /// True if committing now would write the event (enabled, and at least
    /// the threshold has elapsed).
    #[inline]
    pub fn should_commit(&self) -> bool {
        self.word
            .is_some_and(|w| (w.ticks() - self.start) as u64 >= w.threshold_ticks())
    }

    /// Commits `event` with the time elapsed since [`start`](Self::start).
    /// Returns true if the event was enabled and reached the threshold (it is
    /// then written, or counted as lost if memory ran out), and its write
    /// section did not come after the recording's last `stop()` (then it is
    /// neither, as if the type had been off).
    #[inline]
    pub fn commit(self, event: &E) -> bool {
        let Some(word) = self.word else {
            return false;
        };
        let end = word.ticks();
        commit_span(E::event_type(), word, self.start, end, &EventFields(event))
    }
}

/// Commits `event` on drop as a duration event spanning the guard's life.
/// Fields may be updated through [`DurationGuard::event_mut`].
#[derive(Debug)]
#[must_use = "the event is committed when the guard drops"]
pub struct DurationGuard<E: Event> {
    event: E,
    timer: Option<Timer<E>>,
}

impl<E: Event> DurationGuard<E> {
    /// Starts the span now.
    #[inline]
    pub fn new(event: E) -> Self {
        Self {
            event,
            timer: Some(Timer::start()),
        }
    }

    /// The event, to update fields before the guard drops.
    pub fn event_mut(&mut self) -> &mut E {
        &mut self.event
    }
}

impl<E: Event> Drop for DurationGuard<E> {
    #[inline]
    fn drop(&mut self) {
        if let Some(t) = self.timer.take() {
            t.commit(&self.event);
        }
    }
}

/// Marks the branch that calls it as unlikely, so the compiler lays the
/// other one out as the straight path (what `std::hint::cold_path` does
/// since Rust 1.95, newer than this crate's MSRV).
#[cold]
#[inline(always)]
fn cold_path() {}

/// The most bytes of fields [`commit_other`] encodes on the caller's
/// stack: at most 16 of them can be references (a thread or stack-trace
/// field takes up to nine), what a [`Refs`] notes.
const ENCODED_ON_STACK: usize = 16 * jfr_format::write::encode::MAX_VARINT_LEN;

/// [`Event::commit`] of a type that is not registered yet, captures stack
/// traces, is a duration type, or whose clock is not the TSC.
///
/// A derived event of the recorder's own field types and of at most
/// [`ENCODED_ON_STACK`] bytes has its fields encoded here, inline, into a
/// buffer on the stack, and the rest is out of line
/// ([`commit_encoded`]); the event itself is never handed to a call. A
/// call that took `&E` would make the caller keep the event in memory, so
/// every commit, of an enabled type or of a disabled one, would first
/// store its fields there; this way they stay in registers, and a disabled
/// commit is one load and one branch. Any other event goes out of line
/// whole ([`commit_general`]).
#[inline(always)]
fn commit_other<E: Event + ?Sized>(event: &E) {
    match (E::BUILTIN_FIELDS, E::FIELDS_MAX_LEN) {
        (Some(_), Some(max)) if max <= ENCODED_ON_STACK => {
            let mut bytes = [0u8; ENCODED_ON_STACK];
            let mut refs = Refs::default();
            let mut w = FieldWriter {
                enc: RecordSink::begin_fields(&mut bytes),
                epoch: super::field::SCRATCH_EPOCH,
                // Not known before the slot is: every thread the fields
                // reference is noted, the writer's own too (tagging it
                // again costs nothing).
                own_thread: 0,
                refs: Some(std::ptr::NonNull::from(&mut refs)),
            };
            event.write_fields(&mut w);
            let n = w.enc.fields_len();
            commit_encoded(E::event_type(), &bytes, n, &refs);
        }
        _ => commit_general(event),
    }
}

/// [`commit_other`]'s out-of-line half: `bytes[..n]` are the event's fields
/// encoded with no section open, `refs` the constants they reference
/// (`n` is `None` if they did not fit, which their bound rules out).
#[cold]
#[inline(never)]
fn commit_encoded(ty: &'static EventType, bytes: &[u8], n: Option<usize>, refs: &Refs) {
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

/// [`Event::commit`] of a type that is not registered yet, captures stack
/// traces, is a duration type, or whose clock is not the TSC, with fields
/// [`commit_other`] does not encode itself: out of line, so the common
/// path inlined at every call site stays short.
#[inline(never)]
fn commit_general<E: Event + ?Sized>(event: &E) {
    let ty = E::event_type();
    let Some(word) = ty.enabled_word() else {
        return;
    };
    let now = word.ticks();
    let duration = word.is_duration().then_some(0);
    let _ = emit(ty, word, Start::At(now), duration, &EventFields(event));
}

/// Commits a duration event from `start` to `end` (ticks), applying the
/// threshold.
#[inline]
pub(crate) fn commit_span(
    ty: &'static EventType,
    word: EnabledWord,
    start: i64,
    end: i64,
    fields: &impl Fields,
) -> bool {
    let duration = end.saturating_sub(start).max(0);
    if (duration as u64) < word.threshold_ticks() {
        return false;
    }
    // Written or counted lost; not an event the writer's section found
    // after the recording's last stop (see `Emitted::NotCommitted`).
    emit(ty, word, Start::At(start), Some(duration), fields) != Emitted::NotCommitted
}

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
    /// [`Event::FIELDS_MAX_LEN`]).
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

/// A Rust event's own fields.
struct EventFields<'a, E: ?Sized>(&'a E);

impl<E: Event + ?Sized> Fields for EventFields<'_, E> {
    const MAX_LEN: Option<usize> = E::FIELDS_MAX_LEN;
    const IN_SECTION: bool = E::BUILTIN_FIELDS.is_some();
    const NEVER_ABANDONS: bool = true;

    #[inline(always)]
    fn write(&self, w: &mut FieldWriter<'_>) -> bool {
        self.0.write_fields(w);
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
fn thread_exiting(rt: &runtime::Runtime) -> Emitted {
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
/// with [`ThreadSlot::emit`]: tags `refs` as [`emit_builtin`] does.
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

/// Captures the caller's stack and interns it; returns its key and the
/// epoch the intern tagged it with.
#[cold]
#[inline(never)]
fn capture_stack(rt: &'static runtime::Runtime) -> (u64, u64) {
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
