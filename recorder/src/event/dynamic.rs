//! Event types learned at run time (for the C ABI, `tracing`, or any program
//! that builds its schema from configuration).
//!
//! [`EventTypeBuilder::build`] validates the declaration exactly as the
//! metadata will see it and returns a `&'static EventType`: like the types of
//! `#[derive(Event)]`, a declared type lives for the rest of the process
//! (JFR has no way to retract a type from a recording, and the JDK's own
//! recorder never unloads event classes either).
//!
//! Events are committed with a slice of [`Value`]s, checked against the
//! declared kinds before anything is written; a mismatch drops the event and
//! counts it as [`LossCause::InvalidValues`].
//!
//! A caller that holds its values in another form (the C ABI's array of
//! tagged structs) implements [`ValueSource`] and commits with
//! [`EventType::commit_from`] / [`EventType::commit_span_from`]: the values
//! are read one at a time, checked and encoded straight into the thread's
//! buffer, so no `[Value]` is built and nothing is allocated.
//!
//! A caller that checks its values as it encodes them commits with
//! [`EventType::commit_fields`] / [`EventType::commit_span_fields`]: its
//! writer calls the [`FieldWriter`] method of each field's kind, or gives
//! up, which abandons the record (the C ABI checks and encodes an all-scalar
//! event in this one pass). Like [`Event::commit`](crate::Event::commit), an
//! instant commit settles every setting with one compare of the settings
//! word.
//!
//! A writer and a [`ValueSource`] are code the recorder does not own: they
//! run before the thread's write section, into its scratch, and what they
//! wrote is checked against the declared kinds before it is copied in (see
//! `crate::event::scratch`); a record that does not match is dropped and
//! counted as [`LossCause::InvalidEncoding`].

use std::borrow::Cow;
use std::time::Duration;

use jfr_format::write::metadata::{Metadata, SchemaError};

use super::builtin::{StackTrace, ThreadRef};
use super::commit::commit_span;
use super::descriptor::{DefaultSettings, EventKind, EventType, EventTypeInfo, FieldInfo};
use super::emit::{Fields, Start, emit};
use super::field::{ContentType, FieldKind, FieldValue, FieldWriter};
use crate::base::clock;
use crate::base::loss::LossCause;
use crate::runtime;

/// Declares an event type at run time.
#[derive(Debug, Clone)]
pub struct EventTypeBuilder {
    name: String,
    label: Option<String>,
    description: Option<String>,
    category: Vec<String>,
    kind: EventKind,
    defaults: DefaultSettings,
    fields: Vec<(String, FieldKind, Option<String>, Option<ContentType>)>,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl EventTypeBuilder {
    /// An instant event type called `name` (e.g. `com.example.Request`).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: None,
            description: None,
            category: Vec::new(),
            kind: EventKind::Instant,
            defaults: DefaultSettings::DEFAULT,
            fields: Vec::new(),
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.description = Some(d.into());
        self
    }

    /// Sets the category path, outermost first.
    pub fn category<S: Into<String>>(mut self, path: impl IntoIterator<Item = S>) -> Self {
        self.category = path.into_iter().map(Into::into).collect();
        self
    }

    /// Makes it a duration event.
    pub fn duration(mut self) -> Self {
        self.kind = EventKind::Duration;
        self
    }

    /// Default `enabled`.
    pub fn enabled(mut self, on: bool) -> Self {
        self.defaults.enabled = on;
        self
    }

    /// Default threshold (duration events).
    pub fn threshold(mut self, t: Duration) -> Self {
        self.defaults.threshold = t;
        self
    }

    /// Default `stackTrace`.
    pub fn stack_trace(mut self, on: bool) -> Self {
        self.defaults.stack_trace = on;
        self
    }

    /// Adds a field.
    pub fn field(mut self, name: impl Into<String>, kind: FieldKind) -> Self {
        self.fields.push((name.into(), kind, None, None));
        self
    }

    /// Adds a field with a label and content type.
    pub fn field_with(
        mut self,
        name: impl Into<String>,
        kind: FieldKind,
        label: Option<&str>,
        content: Option<ContentType>,
    ) -> Self {
        self.fields
            .push((name.into(), kind, label.map(str::to_owned), content));
        self
    }

    /// Validates the declaration and returns the type.
    pub fn build(self) -> Result<&'static EventType, SchemaError> {
        for (name, kind, _, content) in &self.fields {
            if matches!(
                name.as_str(),
                "startTime" | "duration" | "eventThread" | "stackTrace"
            ) {
                return Err(SchemaError::BadLayout {
                    in_type: self.name.clone(),
                    reason: "startTime, duration, eventThread and stackTrace are implicit fields",
                });
            }
            if content.is_some_and(|c| !c.fits(*kind)) {
                return Err(SchemaError::BadLayout {
                    in_type: self.name.clone(),
                    reason: "content type does not fit the field's kind",
                });
            }
        }
        let fields: Vec<FieldInfo> = self
            .fields
            .into_iter()
            .map(|(name, kind, label, content)| FieldInfo {
                name: leak(name),
                kind,
                label: label.map(leak),
                description: None,
                content,
            })
            .collect();
        let category: Vec<&'static str> = self.category.into_iter().map(leak).collect();
        let info = EventTypeInfo {
            name: leak(self.name),
            label: self.label.map(leak),
            description: self.description.map(leak),
            category: Box::leak(category.into_boxed_slice()),
            experimental: false,
            kind: self.kind,
            defaults: self.defaults,
            fields: Box::leak(fields.into_boxed_slice()),
        };
        let info: &'static EventTypeInfo = Box::leak(Box::new(info));
        let mut ty = EventType::new(info);
        ty.fields_max_len = fields_max_len(info.fields);
        let ty: &'static EventType = Box::leak(Box::new(ty));
        validate(ty)?;
        Ok(ty)
    }
}

/// The most bytes `fields` take in a record, if none is a string (see
/// [`FieldKind::max_len`]).
fn fields_max_len(fields: &[FieldInfo]) -> Option<usize> {
    fields.iter().map(|f| f.kind.max_len()).sum()
}

/// Checks `ty` the way the metadata will: names, layout, no clash with a
/// registered type of the same name.
pub(crate) fn validate(ty: &EventType) -> Result<(), SchemaError> {
    let mut m = Metadata::builtin();
    let id = m.next_dynamic_id();
    m.add(ty.describe(id))?;
    if crate::event::registry::registry()
        .types()
        .iter()
        .any(|t| t.name() == ty.name() && !std::ptr::eq(*t, ty))
    {
        return Err(SchemaError::DuplicateName(ty.name().to_owned()));
    }
    Ok(())
}

/// One field value of a dynamically typed event.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Value<'a> {
    /// [`FieldKind::Bool`]
    Bool(bool),
    /// [`FieldKind::Char`]
    Char(u16),
    /// Any signed integer kind.
    Int(i64),
    /// Any unsigned integer kind.
    UInt(u64),
    /// [`FieldKind::F32`]
    F32(f32),
    /// [`FieldKind::F64`]
    F64(f64),
    /// [`FieldKind::String`]; `None` is null.
    Str(Option<&'a str>),
    /// [`FieldKind::Thread`]
    Thread(ThreadRef),
    /// [`FieldKind::StackTrace`]
    StackTrace(StackTrace),
}

impl Value<'_> {
    /// True if this value can be written into a field of `kind` (the kind
    /// matches and an integer is in its range).
    #[inline]
    pub fn fits(&self, kind: FieldKind) -> bool {
        use FieldKind as K;
        match self {
            Self::Bool(_) => kind == K::Bool,
            Self::Char(_) => kind == K::Char,
            Self::Int(v) => match kind {
                K::I8 => i8::try_from(*v).is_ok(),
                K::I16 => i16::try_from(*v).is_ok(),
                K::I32 => i32::try_from(*v).is_ok(),
                K::I64 => true,
                _ => false,
            },
            Self::UInt(v) => match kind {
                K::U8 => u8::try_from(*v).is_ok(),
                K::U16 => u16::try_from(*v).is_ok(),
                K::U32 => u32::try_from(*v).is_ok(),
                K::U64 => true,
                _ => false,
            },
            Self::F32(_) => kind == K::F32,
            Self::F64(_) => kind == K::F64,
            Self::Str(_) => kind == K::String,
            Self::Thread(_) => kind == K::Thread,
            Self::StackTrace(_) => kind == K::StackTrace,
        }
    }

    fn write(&self, kind: FieldKind, w: &mut FieldWriter<'_>) {
        match *self {
            Self::Bool(v) => w.bool(v),
            Self::Char(v) => w.char(v),
            Self::Int(v) if kind == FieldKind::I8 => w.byte(v as i8 as u8),
            Self::Int(v) => w.int(v),
            Self::UInt(v) if kind == FieldKind::U8 => w.byte(v as u8),
            Self::UInt(v) => w.uint(v),
            Self::F32(v) => w.f32(v),
            Self::F64(v) => w.f64(v),
            Self::Str(v) => w.opt_str(v),
            Self::Thread(t) => t.write(w),
            Self::StackTrace(s) => s.write(w),
        }
    }
}

/// The fields of [`EventType::commit_fields`]: a writer that may abandon
/// the record, and the most bytes it writes if its type has no string
/// (the type's `fields_max_len`): the commit then checks the block for room
/// once and encodes the record once.
struct Checking<F> {
    write: F,
    max_len: Option<usize>,
}

impl<F: Fn(&mut FieldWriter<'_>) -> bool> Fields for Checking<F> {
    #[inline(always)]
    fn write(&self, w: &mut FieldWriter<'_>) -> bool {
        (self.write)(w)
    }

    #[inline(always)]
    fn max_len(&self) -> Option<usize> {
        self.max_len
    }
}

/// Field values read one at a time, in field order: lets a caller that
/// holds them in its own form (the C ABI's tagged structs) commit without
/// building a `[Value]`. `get` is called up to twice per value (once to
/// check the kinds, once to encode) and must return the same value both
/// times.
pub trait ValueSource {
    /// How many values there are.
    fn len(&self) -> usize;

    /// The value at `index` (`index < len()`).
    fn get(&self, index: usize) -> Value<'_>;

    /// True if there are no values.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ValueSource for [Value<'_>] {
    #[inline]
    fn len(&self) -> usize {
        <[Value<'_>]>::len(self)
    }

    #[inline]
    fn get(&self, index: usize) -> Value<'_> {
        self[index]
    }
}

impl EventType {
    /// Commits an event of this (dynamically declared) type now, with
    /// `values` in field order. Values that do not match the declared kinds
    /// drop the event (counted).
    #[inline]
    pub fn commit_values(&'static self, values: &[Value<'_>]) {
        self.commit_from(values)
    }

    /// [`commit_values`](Self::commit_values) with the values read from a
    /// [`ValueSource`]; allocates nothing.
    #[inline]
    pub fn commit_from<S: ValueSource + ?Sized>(&'static self, values: &S) {
        let Some(word) = self.enabled_word() else {
            return;
        };
        if !self.values_fit(values) {
            return;
        }
        let duration = (self.info.kind == EventKind::Duration).then_some(0);
        emit(
            self,
            word,
            Start::At(clock::ticks()),
            duration,
            &|w: &mut FieldWriter<'_>| self.write_values(values, w),
        );
    }

    /// Commits a duration event from `start` to `end` (values of
    /// [`clock_ticks`](crate::base::clock::ticks)), applying the threshold.
    pub fn commit_span_values(&'static self, start: i64, end: i64, values: &[Value<'_>]) -> bool {
        self.commit_span_from(start, end, values)
    }

    /// [`commit_span_values`](Self::commit_span_values) with the values
    /// read from a [`ValueSource`]; allocates nothing.
    #[inline]
    pub fn commit_span_from<S: ValueSource + ?Sized>(
        &'static self,
        start: i64,
        end: i64,
        values: &S,
    ) -> bool {
        let Some(word) = self.enabled_word() else {
            return false;
        };
        if !self.values_fit(values) {
            return false;
        }
        commit_span(self, word, start, end, &|w: &mut FieldWriter<'_>| {
            self.write_values(values, w)
        })
    }

    /// Commits an event of this type now, its own fields written by
    /// `write` (the implicit ones are written before it). For a caller that
    /// checks its values as it encodes them, in one pass, like the C ABI; a
    /// Rust caller with values in hand uses
    /// [`commit_values`](Self::commit_values).
    ///
    /// `write` must write every declared field once, in order, with the
    /// [`FieldWriter`] method of its kind (the one the kind's
    /// [`FieldValue`] impl uses), exactly as [`Event::write_fields`] does,
    /// and return true; or return false, having found a value it will not
    /// write, to abandon the event (nothing of it is kept). What it wrote
    /// is checked against the declared kinds: a missing, extra or
    /// malformed value drops the event, counted as
    /// [`LossCause::InvalidEncoding`]. `write` runs only if the type is
    /// enabled, before the thread's write section (into its scratch), so it
    /// may block or commit events of built-in fields without stalling the
    /// recorder; an event it commits that needs the scratch too is dropped
    /// as reentrant. It runs twice for a record larger than the scratch's
    /// first size (4 KiB), once it has grown.
    ///
    /// Returns true if the event was written; false if the type is
    /// disabled, the event was dropped (counted as a loss) or `write`
    /// abandoned it. A commit that races the recording's last `stop()`
    /// either is written (its file holds it) or returns false as for a
    /// disabled type, neither written nor counted: the write section it
    /// opened came after the stop.
    ///
    /// [`Event::write_fields`]: crate::Event::write_fields
    #[inline]
    pub fn commit_fields(&'static self, write: impl Fn(&mut FieldWriter<'_>) -> bool) -> bool {
        let fields = Checking {
            write,
            max_len: self.fields_max_len,
        };
        match self.instant_word() {
            // One compare settles every setting (see `Event::commit`).
            Ok(word) => emit(self, word, Start::Now(word), None, &fields).written(),
            Err(true) => false,
            Err(false) => self.commit_fields_general(&fields),
        }
    }

    /// [`commit_fields`](Self::commit_fields) of a type that is not
    /// registered yet, captures stack traces, is a duration type, or whose
    /// clock is not the TSC: out of line, so the common path stays short.
    #[inline(never)]
    fn commit_fields_general<F: Fn(&mut FieldWriter<'_>) -> bool>(
        &'static self,
        fields: &Checking<F>,
    ) -> bool {
        let Some(word) = self.enabled_word() else {
            return false;
        };
        let duration = word.is_duration().then_some(0);
        emit(self, word, Start::At(word.ticks()), duration, fields).written()
    }

    /// A duration event from `start` to `end` (values of
    /// [`clock::ticks`]) with its fields written by `write`, under
    /// [`commit_fields`](Self::commit_fields)' contract, if it lasted at
    /// least the threshold. Returns true if the event was written; false
    /// also when it was shorter than the threshold.
    #[inline]
    pub fn commit_span_fields(
        &'static self,
        start: i64,
        end: i64,
        write: impl Fn(&mut FieldWriter<'_>) -> bool,
    ) -> bool {
        let Some(word) = self.enabled_word() else {
            return false;
        };
        let duration = end.saturating_sub(start).max(0);
        if (duration as u64) < word.threshold_ticks() {
            return false;
        }
        let fields = Checking {
            write,
            max_len: self.fields_max_len,
        };
        emit(self, word, Start::At(start), Some(duration), &fields).written()
    }

    #[inline]
    fn values_fit<S: ValueSource + ?Sized>(&self, values: &S) -> bool {
        let fields = self.info.fields;
        let ok = values.len() == fields.len()
            && fields
                .iter()
                .enumerate()
                .all(|(i, f)| values.get(i).fits(f.kind));
        if !ok && let Some(rt) = runtime::get() {
            rt.losses.record(LossCause::InvalidValues, 0);
        }
        ok
    }

    #[inline]
    fn write_values<S: ValueSource + ?Sized>(&self, values: &S, w: &mut FieldWriter<'_>) {
        for (i, f) in self.info.fields.iter().enumerate() {
            values.get(i).write(f.kind, w);
        }
    }

    /// The label, if any.
    pub fn label(&self) -> Option<Cow<'static, str>> {
        self.info.label.map(Cow::Borrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound the commit checks room with: the sum of the kinds' widest
    /// values, none for a type with a string.
    #[test]
    fn a_type_without_strings_has_a_bound() {
        let scalar = EventTypeBuilder::new("test.dynamic.Bounded")
            .field("a", FieldKind::U64)
            .field("b", FieldKind::F64)
            .field("c", FieldKind::Bool)
            .build()
            .unwrap();
        assert_eq!(scalar.fields_max_len, Some(18));
        let text = EventTypeBuilder::new("test.dynamic.Unbounded")
            .field("a", FieldKind::U64)
            .field("s", FieldKind::String)
            .build()
            .unwrap();
        assert_eq!(text.fields_max_len, None);
        let empty = EventTypeBuilder::new("test.dynamic.Empty").build().unwrap();
        assert_eq!(empty.fields_max_len, Some(0));
    }
}
