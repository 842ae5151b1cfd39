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
//!
//! This file is the public side: the [`Event`] trait, [`Timer`] and
//! [`DurationGuard`], and the paths a Rust event takes into the emit
//! machinery (`super::emit`). The built-in field values [`StackTrace`] and
//! [`ThreadRef`], and the records the recorder encodes itself, are
//! `super::builtin`.
//!
//! Invariant: a commit of a disabled type is one load and one branch, and
//! no out-of-line call takes the event itself.

use std::marker::PhantomData;

use super::descriptor::EventType;
use super::emit::{Fields, Start, commit_encoded, emit};
use super::field::{BuiltinEncoder, FieldWriter};
use super::refs::Refs;
use super::sink::RecordSink;
use crate::base::enabled::EnabledWord;
use crate::buffer::slot::Emitted;

pub use super::builtin::{StackTrace, ThreadRef};

/// An event type declared in Rust, usually with `#[derive(Event)]`.
pub trait Event {
    /// The type's static descriptor.
    fn event_type() -> &'static EventType;

    /// Writes the event's own fields, in declared order.
    fn write_fields(&self, w: &mut FieldWriter<'_>);

    /// The most bytes [`write_fields`](Self::write_fields) writes, if that
    /// is bounded: `#[derive(Event)]` sums its fields' kinds
    /// ([`FieldKind::max_len`](super::field::FieldKind::max_len)); `None` (a string, or not declared) makes
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
