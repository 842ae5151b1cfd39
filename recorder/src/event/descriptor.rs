//! Event types: a static description, and the per-type runtime state the hot
//! path reads.
//!
//! # Registration
//!
//! An [`EventType`] is a `static` (one per `#[derive(Event)]` type, or leaked
//! by the runtime builder). Like a `tracing` callsite it starts
//! unregistered; the first emit registers it with the global registry
//! (assigning its JFR type id and applying the active recording's settings)
//! on a `#[cold]` path, once.
//!
//! ```text
//!  unregistered (word 0) ──first emit──► registered, disabled ◄──settings──► enabled
//!        (anyone)                (registry lock)            (registry lock)
//! ```
//!
//! The hot path performs one load of the settings word (see
//! [`crate::base::enabled`]): enabled writes the event, registered-but-disabled
//! returns, unregistered goes to the cold path.
//!
//! Invariant: the enabled bit is set only while a recording is running and its
//! settings enable the type, and then `type_id` is the id under which the type
//! is declared in that recording's metadata.

use std::borrow::Cow;
use std::time::Duration;

use jfr_format::builtin::{duration, event_thread, stack_trace, start_time};
use jfr_format::schema::{Annotation, EVENT_SUPER_TYPE, FieldDesc, SettingDesc, TypeDesc};
use jfr_format::types::TypeId;

use super::field::{ContentType, FieldKind};
use crate::base::enabled::{self, EnabledWord};
use crate::base::sync::{AtomicU64, Ordering};

/// Static description of one field.
#[derive(Debug, Clone, Copy)]
pub struct FieldInfo {
    /// Field name (a Java identifier).
    pub name: &'static str,
    /// JFR kind.
    pub kind: FieldKind,
    /// Human-readable label.
    pub label: Option<&'static str>,
    /// Description.
    pub description: Option<&'static str>,
    /// How the value is to be read.
    pub content: Option<ContentType>,
}

impl FieldInfo {
    /// A field with just a name and kind.
    pub const fn new(name: &'static str, kind: FieldKind) -> Self {
        Self {
            name,
            kind,
            label: None,
            description: None,
            content: None,
        }
    }
}

/// Whether an event has a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A point in time.
    Instant,
    /// A start time and a duration; subject to the threshold setting.
    Duration,
}

/// Defaults for an event type's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultSettings {
    /// Enabled unless the recording says otherwise.
    pub enabled: bool,
    /// Duration events shorter than this are dropped.
    pub threshold: Duration,
    /// Capture a stack trace with each event.
    pub stack_trace: bool,
}

impl DefaultSettings {
    /// Enabled, no threshold, no stack trace.
    pub const DEFAULT: Self = Self {
        enabled: true,
        threshold: Duration::ZERO,
        stack_trace: false,
    };
}

/// Static description of an event type.
#[derive(Debug, Clone, Copy)]
pub struct EventTypeInfo {
    /// Fully qualified name, e.g. `com.example.Request`.
    pub name: &'static str,
    /// Human-readable label.
    pub label: Option<&'static str>,
    /// Description.
    pub description: Option<&'static str>,
    /// Category path, outermost first.
    pub category: &'static [&'static str],
    /// Marked `@Experimental`.
    pub experimental: bool,
    /// Instant or duration event.
    pub kind: EventKind,
    /// Setting defaults.
    pub defaults: DefaultSettings,
    /// The event's own fields, in order (after the implicit ones).
    pub fields: &'static [FieldInfo],
}

/// An event type and the runtime state the hot path reads.
#[derive(Debug)]
pub struct EventType {
    pub(crate) info: &'static EventTypeInfo,
    /// The settings word (see [`crate::base::enabled`]); 0 = unregistered.
    pub(crate) word: AtomicU64,
    /// JFR type id, set once at registration, before `word` is published.
    pub(crate) type_id: AtomicU64,
    /// The record header (size slot and type id) pre-encoded, as
    /// `Packed` bits; set with `type_id`.
    pub(crate) header: AtomicU64,
    /// The most bytes the type's own fields take in a record, if none is a
    /// string: set by [`EventTypeBuilder::build`] for a type declared at
    /// run time, whose commit checks its block for room once with it (a
    /// derived type has its bound as a constant instead).
    ///
    /// [`EventTypeBuilder::build`]: crate::EventTypeBuilder::build
    pub(crate) fields_max_len: Option<usize>,
}

impl EventType {
    /// A type described by `info`, not yet registered.
    #[cfg(not(flightrec_loom))]
    pub const fn new(info: &'static EventTypeInfo) -> Self {
        Self {
            info,
            word: AtomicU64::new(0),
            type_id: AtomicU64::new(0),
            header: AtomicU64::new(0),
            fields_max_len: None,
        }
    }

    /// A type described by `info`, not yet registered (loom atomics are not
    /// const-constructible).
    #[cfg(flightrec_loom)]
    pub fn new(info: &'static EventTypeInfo) -> Self {
        Self {
            info,
            word: AtomicU64::new(0),
            type_id: AtomicU64::new(0),
            header: AtomicU64::new(0),
            fields_max_len: None,
        }
    }

    /// The static description.
    pub fn info(&self) -> &'static EventTypeInfo {
        self.info
    }

    /// The type's name.
    pub fn name(&self) -> &'static str {
        self.info.name
    }

    /// True if events of this type are currently written: one load once
    /// the type is registered.
    #[inline]
    pub fn is_enabled(&'static self) -> bool {
        self.enabled_word().is_some()
    }

    /// The settings word if events of the type are written now, registering
    /// the type on first use: one load and two bit tests.
    ///
    /// Acquire pairs with the Release stores of registration and of
    /// `Registry::apply`, so `type_id` and `header` are visible once a
    /// registered word is, and the runtime exists once an enabled word is.
    #[inline(always)]
    pub(crate) fn enabled_word(&'static self) -> Option<EnabledWord> {
        let w = self.word.load(Ordering::Acquire);
        let w = if w & enabled::REGISTERED != 0 {
            w
        } else {
            crate::event::registry::global().register(self)
        };
        EnabledWord::new(w)
    }

    /// The settings word, for [`Event::commit`](crate::Event::commit):
    /// `Err(true)` if the type is registered and disabled, decided first,
    /// by one bit ([`enabled::OFF`]); `Ok` if an instant event of the type
    /// takes the shortest path (see [`EnabledWord::instant`]); `Err(false)`
    /// for everything else (registration, a stack trace, a duration type,
    /// a clock other than the TSC), which
    /// [`enabled_word`](Self::enabled_word) sorts out. One load.
    #[inline(always)]
    pub(crate) fn instant_word(&'static self) -> Result<EnabledWord, bool> {
        let w = self.word.load(Ordering::Acquire);
        if w & enabled::OFF != 0 {
            return Err(true);
        }
        EnabledWord::instant(w).ok_or(false)
    }

    /// The JFR type id (0 before registration).
    #[inline]
    pub(crate) fn id(&self) -> TypeId {
        TypeId(self.type_id.load(Ordering::Relaxed))
    }

    /// The pre-encoded record header, read after an enabled `word`, like
    /// `type_id`: registration stores it before it publishes the word, and
    /// every type id fits one (`Registry::register` asserts it).
    ///
    /// # Safety
    ///
    /// The type is registered, and the caller saw it: it read an enabled
    /// word of it (with Acquire, as `enabled_word` and `instant_word` do).
    #[inline(always)]
    pub(crate) unsafe fn header(&self) -> super::sink::Packed {
        let bits = self.header.load(Ordering::Relaxed);
        debug_assert_ne!(bits, 0, "the header of an unregistered type");
        // SAFETY: registration stored the bits of a `Packed` here before it
        // published the word the caller read.
        unsafe { super::sink::Packed::from_stored(bits) }
    }

    /// The metadata description of this type under id `id`.
    pub(crate) fn describe(&self, id: TypeId) -> TypeDesc {
        let info = self.info;
        let mut fields = vec![start_time()];
        if info.kind == EventKind::Duration {
            fields.push(duration());
        }
        fields.push(event_thread());
        fields.push(stack_trace());
        fields.extend(info.fields.iter().map(describe_field));
        let mut annotations = Vec::new();
        if let Some(l) = info.label {
            annotations.push(Annotation::Label(Cow::Borrowed(l)));
        }
        if let Some(d) = info.description {
            annotations.push(Annotation::Description(Cow::Borrowed(d)));
        }
        if !info.category.is_empty() {
            annotations.push(Annotation::Category(
                info.category.iter().map(|c| Cow::Borrowed(*c)).collect(),
            ));
        }
        if info.experimental {
            annotations.push(Annotation::Experimental);
        }
        let d = info.defaults;
        annotations.push(Annotation::Enabled(d.enabled));
        annotations.push(Annotation::StackTrace(d.stack_trace));
        let mut settings = vec![
            SettingDesc::new(
                "enabled",
                TypeId::SETTING_ENABLED,
                if d.enabled { "true" } else { "false" },
            ),
            SettingDesc::new(
                "stackTrace",
                TypeId::SETTING_STACK_TRACE,
                if d.stack_trace { "true" } else { "false" },
            ),
        ];
        if info.kind == EventKind::Duration {
            let threshold = crate::config::settings::format_duration(d.threshold);
            annotations.push(Annotation::Threshold(Cow::Owned(threshold.clone())));
            settings.push(SettingDesc {
                name: Cow::Borrowed("threshold"),
                type_id: TypeId::SETTING_THRESHOLD,
                default_value: Cow::Owned(threshold),
            });
        }
        TypeDesc {
            id,
            name: Cow::Borrowed(info.name),
            super_type: Some(Cow::Borrowed(EVENT_SUPER_TYPE)),
            simple_type: false,
            fields: Cow::Owned(fields),
            annotations: Cow::Owned(annotations),
            settings: Cow::Owned(settings),
        }
    }
}

fn describe_field(f: &FieldInfo) -> FieldDesc {
    let mut annotations = Vec::new();
    if let Some(l) = f.label {
        annotations.push(Annotation::Label(Cow::Borrowed(l)));
    }
    if let Some(d) = f.description {
        annotations.push(Annotation::Description(Cow::Borrowed(d)));
    }
    if let Some(c) = f.content {
        annotations.push(c.annotation());
    }
    if f.kind.is_unsigned() {
        annotations.push(Annotation::Unsigned);
    }
    let mut desc = FieldDesc::annotated(f.name, f.kind.type_id(), annotations);
    desc.constant_pool = f.kind.is_pooled();
    desc
}
