//! The type model: classes with fields, annotations and settings, exactly as
//! the metadata event describes them.
//!
//! Built-in types are `'static` tables ([`crate::builtin`]); types learned at
//! run time (custom events) own their strings. Both are the same
//! [`TypeDesc`], through `Cow`, so one encoder serves both and the metadata
//! can never describe a type differently from how it was declared.

use std::borrow::Cow;

use crate::types::TypeId;

/// A string that is either `'static` or owned.
pub type Text = Cow<'static, str>;

/// One class of the metadata: primitive, value type, annotation, setting or
/// event type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDesc {
    /// The type id (unique within the metadata).
    pub id: TypeId,
    /// Fully qualified name, e.g. `jdk.ExecutionSample` or `long`.
    pub name: Text,
    /// `jdk.jfr.Event`, `java.lang.annotation.Annotation`,
    /// `jdk.jfr.SettingControl`, or `None`.
    pub super_type: Option<Text>,
    /// True for single-field wrappers whose constants collapse to the value.
    pub simple_type: bool,
    /// Fields in payload order.
    pub fields: Cow<'static, [FieldDesc]>,
    /// Annotations on the type itself.
    pub annotations: Cow<'static, [Annotation]>,
    /// Settings (event types only).
    pub settings: Cow<'static, [SettingDesc]>,
}

/// The super type of every event type.
pub const EVENT_SUPER_TYPE: &str = "jdk.jfr.Event";
/// The super type of every annotation type.
pub const ANNOTATION_SUPER_TYPE: &str = "java.lang.annotation.Annotation";
/// The super type of every setting type.
pub const SETTING_SUPER_TYPE: &str = "jdk.jfr.SettingControl";

impl TypeDesc {
    /// True if this is an event type.
    pub fn is_event(&self) -> bool {
        self.super_type.as_deref() == Some(EVENT_SUPER_TYPE)
    }

    /// The index of the field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// One field of a class.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDesc {
    /// Field name.
    pub name: Text,
    /// Type of the field's value (of each element, for arrays).
    pub type_id: TypeId,
    /// The payload holds a key into the pool of `type_id` instead of the value.
    pub constant_pool: bool,
    /// The field is a one-dimensional array.
    pub array: bool,
    /// Annotations on the field.
    pub annotations: Cow<'static, [Annotation]>,
}

impl FieldDesc {
    /// A plain field.
    pub const fn new(name: &'static str, type_id: TypeId) -> Self {
        Self {
            name: Cow::Borrowed(name),
            type_id,
            constant_pool: false,
            array: false,
            annotations: Cow::Borrowed(&[]),
        }
    }

    /// A constant-pool reference field.
    pub const fn pooled(name: &'static str, type_id: TypeId) -> Self {
        let mut f = Self::new(name, type_id);
        f.constant_pool = true;
        f
    }

    /// A field with annotations.
    pub fn annotated(
        name: &'static str,
        type_id: TypeId,
        annotations: impl Into<Cow<'static, [Annotation]>>,
    ) -> Self {
        Self {
            name: Cow::Borrowed(name),
            type_id,
            constant_pool: false,
            array: false,
            annotations: annotations.into(),
        }
    }

    /// The same field as a constant-pool reference.
    pub const fn pooled_field(mut self) -> Self {
        self.constant_pool = true;
        self
    }

    /// The same field as an array.
    pub const fn into_array(mut self) -> Self {
        self.array = true;
        self
    }
}

/// A `setting` element of an event type (informational for readers).
#[derive(Debug, Clone, PartialEq)]
pub struct SettingDesc {
    /// Setting name, e.g. `enabled`.
    pub name: Text,
    /// Setting type, e.g. [`TypeId::SETTING_ENABLED`].
    pub type_id: TypeId,
    /// Default value as text, e.g. `true` or `0 ms`.
    pub default_value: Text,
}

impl SettingDesc {
    /// A static setting descriptor.
    pub const fn new(name: &'static str, type_id: TypeId, default_value: &'static str) -> Self {
        Self {
            name: Cow::Borrowed(name),
            type_id,
            default_value: Cow::Borrowed(default_value),
        }
    }
}

/// Unit of a `@Timestamp` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampUnit {
    /// Ticks of the chunk's clock.
    Ticks,
    /// Milliseconds since the Unix epoch.
    MillisSinceEpoch,
}

/// Unit of a `@Timespan` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimespanUnit {
    /// Ticks of the chunk's clock.
    Ticks,
    /// Nanoseconds.
    Nanoseconds,
    /// Microseconds (JMC does not know this unit).
    Microseconds,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
    Seconds,
}

/// Unit of a `@DataAmount` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataAmountUnit {
    /// Bytes.
    Bytes,
    /// Bits.
    Bits,
}

/// An annotation usage on a type or field.
#[derive(Debug, Clone, PartialEq)]
pub enum Annotation {
    /// `@Label`: a human-readable name.
    Label(Text),
    /// `@Description`.
    Description(Text),
    /// `@Category`: the category path, outermost first.
    Category(Cow<'static, [Text]>),
    /// `@Name`.
    Name(Text),
    /// `@Experimental`.
    Experimental,
    /// `@Enabled` default.
    Enabled(bool),
    /// `@StackTrace` default.
    StackTrace(bool),
    /// `@Threshold` default, e.g. `20 ms`.
    Threshold(Text),
    /// `@Period` default, e.g. `everyChunk`.
    Period(Text),
    /// `@Throttle` default, e.g. `off`.
    Throttle(Text),
    /// `@Timestamp`.
    Timestamp(TimestampUnit),
    /// `@Timespan`.
    Timespan(TimespanUnit),
    /// `@DataAmount`.
    DataAmount(DataAmountUnit),
    /// `@Unsigned`.
    Unsigned,
    /// `@Percentage` (a fraction 0..1).
    Percentage,
    /// `@Frequency` (Hz).
    Frequency,
    /// `@MemoryAddress`.
    MemoryAddress,
    /// `@Contextual`.
    Contextual,
    /// `@ContentType` (a meta-annotation on content-type annotations).
    ContentType,
}

impl Annotation {
    /// The annotation type's id.
    pub fn type_id(&self) -> TypeId {
        match self {
            Self::Label(_) => TypeId::LABEL,
            Self::Description(_) => TypeId::DESCRIPTION,
            Self::Category(_) => TypeId::CATEGORY,
            Self::Name(_) => TypeId::NAME,
            Self::Experimental => TypeId::EXPERIMENTAL,
            Self::Enabled(_) => TypeId::ENABLED,
            Self::StackTrace(_) => TypeId::STACK_TRACE_ANNOTATION,
            Self::Threshold(_) => TypeId::THRESHOLD,
            Self::Period(_) => TypeId::PERIOD,
            Self::Throttle(_) => TypeId::THROTTLE,
            Self::Timestamp(_) => TypeId::TIMESTAMP,
            Self::Timespan(_) => TypeId::TIMESPAN,
            Self::DataAmount(_) => TypeId::DATA_AMOUNT,
            Self::Unsigned => TypeId::UNSIGNED,
            Self::Percentage => TypeId::PERCENTAGE,
            Self::Frequency => TypeId::FREQUENCY,
            Self::MemoryAddress => TypeId::MEMORY_ADDRESS,
            Self::Contextual => TypeId::CONTEXTUAL,
            Self::ContentType => TypeId::CONTENT_TYPE,
        }
    }

    /// The annotation's attributes as the metadata writes them: `value`, or
    /// `value-0`, `value-1`, … for the array-valued `@Category`.
    pub fn attributes(&self) -> Vec<(Cow<'static, str>, Cow<'_, str>)> {
        let value = |v: &str| vec![(Cow::Borrowed("value"), Cow::Owned(v.to_owned()))];
        match self {
            Self::Label(v)
            | Self::Description(v)
            | Self::Name(v)
            | Self::Threshold(v)
            | Self::Period(v)
            | Self::Throttle(v) => vec![(Cow::Borrowed("value"), Cow::Borrowed(v.as_ref()))],
            Self::Category(path) => path
                .iter()
                .enumerate()
                .map(|(i, v)| (Cow::Owned(format!("value-{i}")), Cow::Borrowed(v.as_ref())))
                .collect(),
            Self::Enabled(b) | Self::StackTrace(b) => value(if *b { "true" } else { "false" }),
            Self::Timestamp(u) => value(match u {
                TimestampUnit::Ticks => "TICKS",
                TimestampUnit::MillisSinceEpoch => "MILLISECONDS_SINCE_EPOCH",
            }),
            Self::Timespan(u) => value(match u {
                TimespanUnit::Ticks => "TICKS",
                TimespanUnit::Nanoseconds => "NANOSECONDS",
                TimespanUnit::Microseconds => "MICROSECONDS",
                TimespanUnit::Milliseconds => "MILLISECONDS",
                TimespanUnit::Seconds => "SECONDS",
            }),
            Self::DataAmount(u) => value(match u {
                DataAmountUnit::Bytes => "BYTES",
                DataAmountUnit::Bits => "BITS",
            }),
            Self::Experimental
            | Self::Unsigned
            | Self::Percentage
            | Self::Frequency
            | Self::MemoryAddress
            | Self::Contextual
            | Self::ContentType => Vec::new(),
        }
    }
}
