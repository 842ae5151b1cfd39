//! Field kinds and how Rust values are written into an event record.
//!
//! A [`FieldValue`] knows its JFR kind at compile time (`KIND`), so a derived
//! event type's static description is a constant, and writes itself through
//! a [`FieldWriter`] without allocating.
//!
//! The recorder's own impls (numbers, strings, times, [`crate::ThreadRef`],
//! [`crate::StackTrace`]) carry a `BuiltinEncoder` token, which nothing outside
//! the crate can make: an event whose fields all carry it is encoded in
//! place, inside the thread's write section. Any other encoder is user code
//! and runs before the section, into the thread's scratch, where what it
//! wrote is checked against the declared kinds (see
//! `crate::event::scratch`).

use std::ptr::NonNull;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jfr_format::schema::{Annotation, DataAmountUnit, TimespanUnit, TimestampUnit};
use jfr_format::types::TypeId;
use jfr_format::write::encode::{MAX_VARINT_LEN, Sink};

use super::refs::Refs;
use super::sink::RecordSink;

/// The JFR type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldKind {
    /// `boolean`
    Bool,
    /// `char` (one UTF-16 unit)
    Char,
    /// `byte`
    I8,
    /// `short`
    I16,
    /// `int`
    I32,
    /// `long`
    I64,
    /// `byte` with `@Unsigned`
    U8,
    /// `short` with `@Unsigned`
    U16,
    /// `int` with `@Unsigned`
    U32,
    /// `long` with `@Unsigned`
    U64,
    /// `float`
    F32,
    /// `double`
    F64,
    /// `java.lang.String`
    String,
    /// `java.lang.Thread`, a constant-pool reference
    Thread,
    /// `jdk.types.StackTrace`, a constant-pool reference
    StackTrace,
}

impl FieldKind {
    /// The JFR type id of values of this kind.
    pub const fn type_id(self) -> TypeId {
        match self {
            Self::Bool => TypeId::BOOLEAN,
            Self::Char => TypeId::CHAR,
            Self::I8 | Self::U8 => TypeId::BYTE,
            Self::I16 | Self::U16 => TypeId::SHORT,
            Self::I32 | Self::U32 => TypeId::INT,
            Self::I64 | Self::U64 => TypeId::LONG,
            Self::F32 => TypeId::FLOAT,
            Self::F64 => TypeId::DOUBLE,
            Self::String => TypeId::STRING,
            Self::Thread => TypeId::THREAD,
            Self::StackTrace => TypeId::STACK_TRACE,
        }
    }

    /// True if the payload holds a constant-pool key.
    pub const fn is_pooled(self) -> bool {
        matches!(self, Self::Thread | Self::StackTrace)
    }

    /// True for the unsigned integer kinds (annotated `@Unsigned`).
    pub const fn is_unsigned(self) -> bool {
        matches!(self, Self::U8 | Self::U16 | Self::U32 | Self::U64)
    }

    /// The most bytes a value of this kind takes in a record: a varint is
    /// at most nine, a `byte` or `boolean` one, a `char` (one UTF-16 unit,
    /// a varint) three; `None` for a string, which has no bound.
    pub const fn max_len(self) -> Option<usize> {
        match self {
            Self::Bool | Self::I8 | Self::U8 => Some(1),
            Self::Char => Some(3),
            Self::F32 => Some(4),
            Self::F64 => Some(8),
            Self::I16
            | Self::I32
            | Self::I64
            | Self::U16
            | Self::U32
            | Self::U64
            | Self::Thread
            | Self::StackTrace => Some(MAX_VARINT_LEN),
            Self::String => None,
        }
    }

    /// The most bytes values of `kinds` take together (`None` if one of
    /// them is unbounded): what `#[derive(Event)]` declares as
    /// [`Event::FIELDS_MAX_LEN`](crate::Event::FIELDS_MAX_LEN).
    #[doc(hidden)]
    pub const fn max_len_of(kinds: &[FieldKind]) -> Option<usize> {
        let mut total = 0;
        let mut i = 0;
        while i < kinds.len() {
            match kinds[i].max_len() {
                Some(n) => total += n,
                None => return None,
            }
            i += 1;
        }
        Some(total)
    }

    /// True for integer kinds.
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            Self::I8
                | Self::I16
                | Self::I32
                | Self::I64
                | Self::U8
                | Self::U16
                | Self::U32
                | Self::U64
        )
    }
}

/// How a numeric field's value is to be read (a JFR content type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentType {
    /// A time span in nanoseconds.
    TimespanNanos,
    /// A time span in ticks of the event clock.
    TimespanTicks,
    /// A time span in milliseconds.
    TimespanMillis,
    /// A point in time, milliseconds since the Unix epoch.
    TimestampMillis,
    /// A point in time in ticks of the event clock.
    TimestampTicks,
    /// An amount of data in bytes.
    Bytes,
    /// An amount of data in bits.
    Bits,
    /// A fraction, 0..1 shown as a percentage.
    Percentage,
    /// A frequency in Hz.
    Frequency,
    /// A memory address.
    MemoryAddress,
}

impl ContentType {
    /// The annotation that marks this content type.
    pub fn annotation(self) -> Annotation {
        match self {
            Self::TimespanNanos => Annotation::Timespan(TimespanUnit::Nanoseconds),
            Self::TimespanTicks => Annotation::Timespan(TimespanUnit::Ticks),
            Self::TimespanMillis => Annotation::Timespan(TimespanUnit::Milliseconds),
            Self::TimestampMillis => Annotation::Timestamp(TimestampUnit::MillisSinceEpoch),
            Self::TimestampTicks => Annotation::Timestamp(TimestampUnit::Ticks),
            Self::Bytes => Annotation::DataAmount(DataAmountUnit::Bytes),
            Self::Bits => Annotation::DataAmount(DataAmountUnit::Bits),
            Self::Percentage => Annotation::Percentage,
            Self::Frequency => Annotation::Frequency,
            Self::MemoryAddress => Annotation::MemoryAddress,
        }
    }

    /// True if the content type applies to values of `kind`.
    pub fn fits(self, kind: FieldKind) -> bool {
        match self {
            Self::Percentage => matches!(kind, FieldKind::F32 | FieldKind::F64),
            Self::Frequency => kind.is_integer() || matches!(kind, FieldKind::F32 | FieldKind::F64),
            _ => kind.is_integer(),
        }
    }
}

/// Writes the fields of one event into its record. Handed to
/// [`crate::Event::write_fields`].
#[derive(Debug)]
pub struct FieldWriter<'a> {
    pub(crate) enc: RecordSink<'a>,
    /// The epoch of the write section the record is encoded in: constants
    /// the fields reference are tagged with it. [`SCRATCH_EPOCH`] while
    /// the fields are encoded into the thread's scratch, before the section.
    pub(crate) epoch: u64,
    /// The writer's own thread key (tagged by its slot).
    pub(crate) own_thread: u64,
    /// While encoding into the scratch: where the constants the fields
    /// reference are noted, to be tagged in the section (`None` in place).
    pub(crate) refs: Option<NonNull<Refs>>,
}

/// The `epoch` of a [`FieldWriter`] encoding into the scratch: no section
/// is open, so no epoch is known and nothing may be tagged yet.
pub(crate) const SCRATCH_EPOCH: u64 = u64::MAX;

/// Proof that a [`FieldValue`] impl (or a whole event's fields) is the
/// recorder's own: only this crate makes one. Encoders with it run inside
/// the write section, in place; every other encoder runs before it (see
/// the module docs).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct BuiltinEncoder(());

impl BuiltinEncoder {
    pub(crate) const YES: Option<BuiltinEncoder> = Some(BuiltinEncoder(()));

    /// The token if every one of `of` has it: what `#[derive(Event)]`
    /// declares as `Event::BUILTIN_FIELDS` from its fields' types.
    pub const fn all(of: &[Option<BuiltinEncoder>]) -> Option<BuiltinEncoder> {
        let mut i = 0;
        while i < of.len() {
            if of[i].is_none() {
                return None;
            }
            i += 1;
        }
        Self::YES
    }
}

impl FieldWriter<'_> {
    /// Writes a value of kind [`FieldKind::Bool`].
    #[inline(always)]
    pub fn bool(&mut self, v: bool) {
        self.enc.put_bool(v);
    }

    /// Writes a signed integer of any integer kind.
    #[inline(always)]
    pub fn int(&mut self, v: i64) {
        self.enc.put_i64(v);
    }

    /// Writes an unsigned integer of any unsigned kind.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        self.enc.put_varint(v);
    }

    /// [`uint`](Self::uint) of a `v` below 2^14 (one or two bytes) with
    /// room ahead in the block, with nothing out of line: true, written;
    /// else false, nothing written, and the caller writes `v` with `uint`.
    /// For a writer called through `dyn` (a `tracing` visitor): a fast path
    /// with no call in it saves no registers.
    #[inline(always)]
    pub fn try_uint(&mut self, v: u64) -> bool {
        self.enc.try_put_varint(v)
    }

    /// [`int`](Self::int) when it needs nothing out of line; see
    /// [`try_uint`](Self::try_uint).
    #[inline(always)]
    pub fn try_int(&mut self, v: i64) -> bool {
        // `put_i64` is the varint of the two's complement bits.
        self.enc.try_put_varint(v as u64)
    }

    /// [`f64`](Self::f64) when it needs nothing out of line; see
    /// [`try_uint`](Self::try_uint).
    #[inline(always)]
    pub fn try_f64(&mut self, v: f64) -> bool {
        self.enc.try_put_f64(v)
    }

    /// Writes a `byte` (one raw byte).
    #[inline(always)]
    pub fn byte(&mut self, v: u8) {
        self.enc.put_u8(v);
    }

    /// Writes a `char`: one UTF-16 unit.
    #[inline(always)]
    pub fn char(&mut self, v: u16) {
        self.enc.put_char(v);
    }

    /// Writes a `float`.
    #[inline(always)]
    pub fn f32(&mut self, v: f32) {
        self.enc.put_f32(v);
    }

    /// Writes a `double`.
    #[inline(always)]
    pub fn f64(&mut self, v: f64) {
        self.enc.put_f64(v);
    }

    /// Writes a string inline.
    #[inline(always)]
    pub fn str(&mut self, v: &str) {
        self.enc.put_str(v);
    }

    /// Writes an optional string (`None` is JFR null).
    #[inline(always)]
    pub fn opt_str(&mut self, v: Option<&str>) {
        self.enc.put_opt_str(v);
    }

    /// Writes a constant-pool key as it is. The chunk holds the constant
    /// only if something tagged it for the event's epoch: [`crate::ThreadRef`]
    /// and [`crate::StackTrace`] values do (see
    /// `crate::cpool::threads`).
    #[inline(always)]
    pub fn key(&mut self, key: u64) {
        self.enc.put_varint(key);
    }

    /// Writes a thread key, tagging the thread with the section's epoch if
    /// it is not the writer's own (which its slot tags).
    #[inline(always)]
    pub(crate) fn thread_key(&mut self, key: u64) {
        if key != 0 && key != self.own_thread {
            tag_other_thread(key, self.epoch, self.refs);
        }
        self.enc.put_varint(key);
    }

    /// Writes a stack-trace key interned (or last tagged) in `tagged_in`,
    /// tagging it with the section's epoch if that differs; a stack
    /// released meanwhile is written as none, counted as dropped.
    #[inline(always)]
    pub(crate) fn stack_key(&mut self, key: u64, tagged_in: u64) {
        if key != 0 && tagged_in != self.epoch {
            if let Some(refs) = self.refs {
                // Written padded to nine bytes, so the section can replace
                // it by 0 in place if the stack was released meanwhile.
                note_stack(refs, key, tagged_in, self.enc.position());
                self.enc.put_varint_fixed9(key);
                return;
            }
            let key = retag_stack(key, self.epoch);
            self.enc.put_varint(key);
        } else {
            self.enc.put_varint(key);
        }
    }
}

#[cold]
#[inline(never)]
fn tag_other_thread(key: u64, epoch: u64, refs: Option<NonNull<Refs>>) {
    match refs {
        // SAFETY: a writer's `refs` points to a list that outlives the
        // writer and nothing else touches meanwhile: its scratch's, lent to
        // this thread for the writer's life (`scratch::Lent`), or one on
        // the stack of `commit::commit_other`, which made the writer.
        Some(mut refs) => unsafe { refs.as_mut() }.thread(key),
        None => {
            if let Some(rt) = crate::runtime::get() {
                rt.threads.tag_key(key, epoch);
            }
        }
    }
}

#[cold]
#[inline(never)]
fn note_stack(mut refs: NonNull<Refs>, key: u64, tagged_in: u64, at: usize) {
    // SAFETY: as in `tag_other_thread`.
    unsafe { refs.as_mut() }.stack(key, tagged_in, at);
}

#[cold]
#[inline(never)]
fn retag_stack(key: u64, epoch: u64) -> u64 {
    match crate::runtime::get() {
        Some(rt) => crate::buffer::slot::tag_stack(rt, key, epoch),
        None => 0,
    }
}

/// A Rust value that can be an event field.
///
/// `write` writes exactly one value of kind `KIND`, with the
/// [`FieldWriter`] method of that kind. An impl outside this crate is
/// called before the thread's write section, into a scratch buffer: it may
/// take locks, block or commit other events without stalling the recorder,
/// and what it wrote is checked against `KIND` before the record is copied
/// into the thread's buffer; a record with a missing, extra or malformed
/// value is dropped and counted as
/// [`LossCause::InvalidEncoding`](crate::LossCause::InvalidEncoding).
pub trait FieldValue {
    /// The JFR kind of the field.
    const KIND: FieldKind;
    /// The content type a field of this Rust type has unless one is given.
    const CONTENT: Option<ContentType> = None;
    /// Set by the recorder's own impls only (see [`BuiltinEncoder`]); leave it.
    #[doc(hidden)]
    const BUILTIN: Option<BuiltinEncoder> = None;
    /// Writes the value.
    fn write(&self, w: &mut FieldWriter<'_>);
}

macro_rules! impl_field {
    ($($t:ty => $kind:ident, |$v:ident, $w:ident| $body:expr;)*) => {$(
        impl FieldValue for $t {
            const KIND: FieldKind = FieldKind::$kind;
            const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
            #[inline]
            fn write(&self, $w: &mut FieldWriter<'_>) {
                let $v = *self;
                $body
            }
        }
    )*};
}

impl_field! {
    bool => Bool, |v, w| w.bool(v);
    i8 => I8, |v, w| w.byte(v as u8);
    i16 => I16, |v, w| w.int(i64::from(v));
    i32 => I32, |v, w| w.int(i64::from(v));
    i64 => I64, |v, w| w.int(v);
    isize => I64, |v, w| w.int(v as i64);
    u8 => U8, |v, w| w.byte(v);
    u16 => U16, |v, w| w.uint(u64::from(v));
    u32 => U32, |v, w| w.uint(u64::from(v));
    u64 => U64, |v, w| w.uint(v);
    usize => U64, |v, w| w.uint(v as u64);
    f32 => F32, |v, w| w.f32(v);
    f64 => F64, |v, w| w.f64(v);
}

/// A Rust `char` is written as one UTF-16 unit; characters outside the Basic
/// Multilingual Plane (which need two) are written as U+FFFD. Use a string
/// field for arbitrary text.
impl FieldValue for char {
    const KIND: FieldKind = FieldKind::Char;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        let unit = u16::try_from(u32::from(*self)).unwrap_or(0xFFFD);
        w.char(unit);
    }
}

impl FieldValue for str {
    const KIND: FieldKind = FieldKind::String;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.str(self);
    }
}

impl FieldValue for String {
    const KIND: FieldKind = FieldKind::String;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.str(self);
    }
}

impl<T: FieldValue + ?Sized> FieldValue for &T {
    const KIND: FieldKind = T::KIND;
    const CONTENT: Option<ContentType> = T::CONTENT;
    const BUILTIN: Option<BuiltinEncoder> = T::BUILTIN;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        (**self).write(w);
    }
}

impl FieldValue for Option<&str> {
    const KIND: FieldKind = FieldKind::String;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.opt_str(*self);
    }
}

impl FieldValue for Option<String> {
    const KIND: FieldKind = FieldKind::String;
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.opt_str(self.as_deref());
    }
}

/// A `Duration` is a `long` time span in nanoseconds (saturating).
impl FieldValue for Duration {
    const KIND: FieldKind = FieldKind::I64;
    const CONTENT: Option<ContentType> = Some(ContentType::TimespanNanos);
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.int(i64::try_from(self.as_nanos()).unwrap_or(i64::MAX));
    }
}

/// A `SystemTime` is a `long` timestamp in milliseconds since the Unix epoch.
impl FieldValue for SystemTime {
    const KIND: FieldKind = FieldKind::I64;
    const CONTENT: Option<ContentType> = Some(ContentType::TimestampMillis);
    const BUILTIN: Option<BuiltinEncoder> = BuiltinEncoder::YES;
    #[inline]
    fn write(&self, w: &mut FieldWriter<'_>) {
        let ms = match self.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        w.int(ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes `v` takes in a record, written through the commit path's sink.
    fn written<T: FieldValue + ?Sized>(v: &T) -> usize {
        let mut buf = [0u8; 64];
        let mut w = FieldWriter {
            enc: RecordSink::begin(&mut buf, Err(1)),
            epoch: 0,
            own_thread: 0,
            refs: None,
        };
        let before = w.enc.position();
        v.write(&mut w);
        w.enc.position() - before
    }

    /// `max_len` is what a derived event reserves room by: no value of a
    /// kind may take more, and the widest value of most kinds takes exactly
    /// that (`u16` and `u32` are varints whose kinds allow nine bytes).
    #[test]
    fn max_len_is_the_widest_value_of_each_kind() {
        let widest: [(usize, FieldKind, bool); 13] = [
            (written(&true), bool::KIND, true),
            (written(&'\u{FFFF}'), char::KIND, true),
            (written(&i8::MIN), i8::KIND, true),
            (written(&i16::MIN), i16::KIND, true),
            (written(&i32::MIN), i32::KIND, true),
            (written(&i64::MIN), i64::KIND, true),
            (written(&u8::MAX), u8::KIND, true),
            (written(&u16::MAX), u16::KIND, false),
            (written(&u32::MAX), u32::KIND, false),
            (written(&u64::MAX), u64::KIND, true),
            (written(&f32::MAX), f32::KIND, true),
            (written(&f64::MAX), f64::KIND, true),
            (written(&Duration::MAX), Duration::KIND, true),
        ];
        for (n, kind, exact) in widest {
            let max = kind.max_len().expect("bounded");
            assert!(n <= max, "{kind:?}: {n} > {max}");
            assert!(!exact || n == max, "{kind:?}: {n} < {max}");
        }
        // A string has no bound.
        assert_eq!(FieldKind::String.max_len(), None);
        assert_eq!(
            FieldKind::max_len_of(&[FieldKind::U64, FieldKind::F64, FieldKind::Bool]),
            Some(18)
        );
        assert_eq!(
            FieldKind::max_len_of(&[FieldKind::U64, FieldKind::String]),
            None
        );
    }
}
