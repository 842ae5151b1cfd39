//! Parsing `#[event(...)]` attributes on the struct and on its fields.
//!
//! # Errors
//!
//! Malformed syntax inside one attribute stops parsing that attribute (syn's
//! `parse_nested_meta` cannot resume). Well-formed keys with bad values
//! (unknown unit, invalid name, duplicate key, conflicting content types) are
//! collected in [`Errors`] and parsing goes on, so one build shows them all.
//!
//! Invariant: a value that reaches [`ContainerAttrs`] or [`FieldAttrs`] has
//! been validated; code generation never rejects anything.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, LitBool, LitStr, Path, Token, bracketed};

use crate::validate::{self, Threshold};

/// Errors collected while expanding one derive.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Records an error.
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// Records an error at `span`.
    pub(crate) fn at(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.push(syn::Error::new(span, msg));
    }

    /// `Ok(value)` if nothing was recorded, else every error at once.
    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// A value given at most once, with where it was given.
type Once<T> = Option<(Span, T)>;

/// Stores `value` into `slot` unless the key was already given.
fn set_once<T>(errors: &mut Errors, slot: &mut Once<T>, meta: &ParseNestedMeta<'_>, value: T) {
    let span = meta.path.span();
    if slot.is_some() {
        errors.at(span, format_args!("duplicate `{}`", key(meta)));
    } else {
        *slot = Some((span, value));
    }
}

/// The key of `meta` as written.
fn key(meta: &ParseNestedMeta<'_>) -> String {
    meta.path
        .get_ident()
        .map(ToString::to_string)
        .unwrap_or_else(|| "?".into())
}

/// `key` or `key = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

/// `key = "string"`.
fn string(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

/// `key` or `key = "string"`.
fn opt_string(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(Token![=]) {
        Ok(Some(meta.value()?.parse()?))
    } else {
        Ok(None)
    }
}

/// Calls `f` for each key of each `#[event(...)]` in `attrs`; false if an
/// attribute's syntax stopped parsing part way (so keys may be missing).
fn each_event_meta(
    attrs: &[Attribute],
    errors: &mut Errors,
    mut f: impl FnMut(&ParseNestedMeta<'_>, &mut Errors) -> syn::Result<()>,
) -> bool {
    let mut complete = true;
    for attr in attrs.iter().filter(|a| a.path().is_ident("event")) {
        if let Err(e) = attr.parse_nested_meta(|meta| f(&meta, errors)) {
            errors.push(e);
            complete = false;
        }
    }
    complete
}

// === impl ContainerAttrs ===

/// The struct-level attributes, validated.
pub(crate) struct ContainerAttrs {
    /// `crate = "path"`: where `__private` lives; `::flightrec` if absent.
    pub(crate) krate: Option<Path>,
    /// `name = "..."`, checked to be dotted Java identifiers.
    pub(crate) name: Option<LitStr>,
    /// `label = "..."`.
    pub(crate) label: Option<LitStr>,
    /// `description = "..."`.
    pub(crate) description: Option<LitStr>,
    /// `category = "A"` or `category = ["A", "B"]`, outermost first.
    pub(crate) category: Vec<LitStr>,
    /// `experimental`.
    pub(crate) experimental: bool,
    /// `duration`: a duration event rather than an instant one.
    pub(crate) duration: bool,
    /// `enabled = false` turns the type off by default.
    pub(crate) enabled: bool,
    /// `threshold = "10 ms"`, only on duration events.
    pub(crate) threshold: Option<Threshold>,
    /// `stack_trace`: capture a stack trace by default.
    pub(crate) stack_trace: bool,
}

const CONTAINER_KEYS: &str = "crate, name, label, description, category, experimental, duration, enabled, threshold, stack_trace";

impl ContainerAttrs {
    /// Parses every `#[event(...)]` on the struct; `ident` is where a
    /// missing-name error points.
    pub(crate) fn parse(attrs: &[Attribute], ident: &syn::Ident, errors: &mut Errors) -> Self {
        let mut krate = None;
        let mut name = None;
        let mut label = None;
        let mut description = None;
        let mut category = None;
        let mut experimental = None;
        let mut duration = None;
        let mut enabled = None;
        let mut threshold: Once<LitStr> = None;
        let mut stack_trace = None;
        let complete = each_event_meta(attrs, errors, |meta, errors| {
            let p = &meta.path;
            if p.is_ident("crate") {
                let lit = string(meta)?;
                match lit.parse::<Path>() {
                    Ok(path) => set_once(errors, &mut krate, meta, path),
                    Err(_) => {
                        errors.at(lit.span(), format_args!("`{}` is not a path", lit.value()))
                    }
                }
            } else if p.is_ident("name") {
                let lit = string(meta)?;
                if let Err(msg) = validate::event_name(&lit.value()) {
                    errors.at(lit.span(), msg);
                }
                set_once(errors, &mut name, meta, lit);
            } else if p.is_ident("label") {
                set_once(errors, &mut label, meta, string(meta)?);
            } else if p.is_ident("description") {
                set_once(errors, &mut description, meta, string(meta)?);
            } else if p.is_ident("category") {
                let list = category_list(meta)?;
                for lit in list.iter().filter(|l| l.value().is_empty()) {
                    errors.at(lit.span(), "empty category name");
                }
                set_once(errors, &mut category, meta, list);
            } else if p.is_ident("experimental") {
                set_once(errors, &mut experimental, meta, flag(meta)?);
            } else if p.is_ident("duration") {
                set_once(errors, &mut duration, meta, flag(meta)?);
            } else if p.is_ident("enabled") {
                set_once(errors, &mut enabled, meta, flag(meta)?);
            } else if p.is_ident("threshold") {
                set_once(errors, &mut threshold, meta, string(meta)?);
            } else if p.is_ident("stack_trace") {
                set_once(errors, &mut stack_trace, meta, flag(meta)?);
            } else {
                return Err(meta.error(format_args!(
                    "unknown event attribute `{}`; expected one of: {CONTAINER_KEYS}",
                    key(meta)
                )));
            }
            Ok(())
        });
        // After a syntax error the name may sit in the part not parsed.
        if name.is_none() && complete {
            errors.at(
                ident.span(),
                "missing #[event(name = \"...\")]: a JFR event type needs a fully qualified name such as \"com.example.Request\"",
            );
        }
        let is_duration = duration.as_ref().is_some_and(|(_, d)| *d);
        let threshold = threshold.and_then(|(span, lit)| {
            if !is_duration {
                errors.at(
                    span,
                    "`threshold` applies only to duration events; add #[event(duration)]",
                );
            }
            validate::threshold(&lit.value())
                .map_err(|msg| errors.at(lit.span(), msg))
                .ok()
        });
        Self {
            krate: krate.map(|(_, p)| p),
            name: name.map(|(_, n)| n),
            label: label.map(|(_, l)| l),
            description: description.map(|(_, d)| d),
            category: category.map(|(_, c)| c).unwrap_or_default(),
            experimental: experimental.is_some_and(|(_, e)| e),
            duration: is_duration,
            enabled: enabled.is_none_or(|(_, e)| e),
            threshold,
            stack_trace: stack_trace.is_some_and(|(_, s)| s),
        }
    }
}

/// `category = "A"` or `category = ["A", "B", ...]`.
fn category_list(meta: &ParseNestedMeta<'_>) -> syn::Result<Vec<LitStr>> {
    let input = meta.value()?;
    if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        let list = content.parse_terminated(<LitStr as syn::parse::Parse>::parse, Token![,])?;
        Ok(list.into_iter().collect())
    } else {
        Ok(vec![input.parse()?])
    }
}

// === impl FieldAttrs ===

/// A field's content type, as the name of a `ContentType` variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Content {
    /// `timespan`, `timespan = "ns"`.
    TimespanNanos,
    /// `timespan = "ticks"`.
    TimespanTicks,
    /// `timespan = "ms"`.
    TimespanMillis,
    /// `timestamp`, `timestamp = "millis"`.
    TimestampMillis,
    /// `timestamp = "ticks"`.
    TimestampTicks,
    /// `data_amount`, `data_amount = "bytes"`.
    Bytes,
    /// `data_amount = "bits"`.
    Bits,
    /// `percentage`.
    Percentage,
    /// `frequency`.
    Frequency,
    /// `memory_address`.
    MemoryAddress,
}

impl Content {
    /// The `ContentType` variant name.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Self::TimespanNanos => "TimespanNanos",
            Self::TimespanTicks => "TimespanTicks",
            Self::TimespanMillis => "TimespanMillis",
            Self::TimestampMillis => "TimestampMillis",
            Self::TimestampTicks => "TimestampTicks",
            Self::Bytes => "Bytes",
            Self::Bits => "Bits",
            Self::Percentage => "Percentage",
            Self::Frequency => "Frequency",
            Self::MemoryAddress => "MemoryAddress",
        }
    }

    /// The attribute key that gives this content type.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::TimespanNanos | Self::TimespanTicks | Self::TimespanMillis => "timespan",
            Self::TimestampMillis | Self::TimestampTicks => "timestamp",
            Self::Bytes | Self::Bits => "data_amount",
            Self::Percentage => "percentage",
            Self::Frequency => "frequency",
            Self::MemoryAddress => "memory_address",
        }
    }

    /// Which field kinds the content type fits, mirroring the recorder's
    /// `ContentType::fits` (which is not `const`, so the generated check
    /// spells it out).
    pub(crate) fn fits(self) -> Fits {
        match self {
            Self::Percentage => Fits::Float,
            Self::Frequency => Fits::IntegerOrFloat,
            _ => Fits::Integer,
        }
    }
}

/// The field kinds a content type applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fits {
    /// Any integer kind.
    Integer,
    /// `float` or `double`.
    Float,
    /// Integers and floats.
    IntegerOrFloat,
}

/// A field's attributes, validated (except the name, which needs the
/// field's identifier; see [`crate::expand`]).
pub(crate) struct FieldAttrs {
    /// `rename = "javaName"`.
    pub(crate) rename: Option<LitStr>,
    /// `label = "..."`.
    pub(crate) label: Option<LitStr>,
    /// `description = "..."`.
    pub(crate) description: Option<LitStr>,
    /// A content attribute, and the span of its key (for the kind check).
    pub(crate) content: Option<(Span, Content)>,
    /// `skip`: the field is not recorded.
    pub(crate) skip: bool,
}

const FIELD_KEYS: &str = "rename, label, description, timespan, timestamp, data_amount, percentage, frequency, memory_address, skip";

impl FieldAttrs {
    /// Parses every `#[event(...)]` on one field.
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut Errors) -> Self {
        let mut rename = None;
        let mut label = None;
        let mut description = None;
        let mut content: Once<Content> = None;
        let mut skip: Once<()> = None;
        // Spans of every key other than `skip`, to report combinations with it.
        let mut others = Vec::new();
        let _ = each_event_meta(attrs, errors, |meta, errors| {
            let p = &meta.path;
            if p.is_ident("skip") {
                set_once(errors, &mut skip, meta, ());
                return Ok(());
            }
            others.push(p.span());
            if p.is_ident("rename") {
                let lit = string(meta)?;
                if let Err(msg) = validate::field_name(&lit.value(), false) {
                    errors.at(lit.span(), msg);
                }
                set_once(errors, &mut rename, meta, lit);
            } else if p.is_ident("label") {
                set_once(errors, &mut label, meta, string(meta)?);
            } else if p.is_ident("description") {
                set_once(errors, &mut description, meta, string(meta)?);
            } else if let Some(c) = content_of(meta, errors)? {
                if let Some((_, first)) = content {
                    errors.at(
                        p.span(),
                        format_args!(
                            "a field has one content type; this one already has `{}`",
                            first.key()
                        ),
                    );
                } else {
                    content = Some((p.span(), c));
                }
            } else {
                return Err(meta.error(format_args!(
                    "unknown field attribute `{}`; expected one of: {FIELD_KEYS}",
                    key(meta)
                )));
            }
            Ok(())
        });
        if skip.is_some() {
            for span in others {
                errors.at(
                    span,
                    "a skipped field is not recorded; remove this or `skip`",
                );
            }
        }
        Self {
            rename: rename.map(|(_, r)| r),
            label: label.map(|(_, l)| l),
            description: description.map(|(_, d)| d),
            content,
            skip: skip.is_some(),
        }
    }
}

/// The content type `meta` names, `None` if it is not a content key. A bad
/// unit is recorded in `errors` and read as the key's default unit.
fn content_of(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<Content>> {
    let p = &meta.path;
    let units: &[(&str, Content)] = if p.is_ident("timespan") {
        &[
            ("ns", Content::TimespanNanos),
            ("nanos", Content::TimespanNanos),
            ("ticks", Content::TimespanTicks),
            ("ms", Content::TimespanMillis),
            ("millis", Content::TimespanMillis),
        ]
    } else if p.is_ident("timestamp") {
        &[
            ("millis", Content::TimestampMillis),
            ("ms", Content::TimestampMillis),
            ("ticks", Content::TimestampTicks),
        ]
    } else if p.is_ident("data_amount") {
        &[("bytes", Content::Bytes), ("bits", Content::Bits)]
    } else {
        let plain = if p.is_ident("percentage") {
            Content::Percentage
        } else if p.is_ident("frequency") {
            Content::Frequency
        } else if p.is_ident("memory_address") {
            Content::MemoryAddress
        } else {
            return Ok(None);
        };
        if meta.input.peek(Token![=]) {
            return Err(meta.error(format_args!("`{}` takes no value", key(meta))));
        }
        return Ok(Some(plain));
    };
    let default = units[0].1;
    let Some(lit) = opt_string(meta)? else {
        return Ok(Some(default));
    };
    let unit = lit.value();
    match units.iter().find(|(name, _)| *name == unit) {
        Some((_, c)) => Ok(Some(*c)),
        None => {
            let expected: Vec<String> = units.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            errors.at(
                lit.span(),
                format_args!(
                    "unknown {} unit \"{unit}\"; expected {}",
                    key(meta),
                    expected.join(", ")
                ),
            );
            Ok(Some(default))
        }
    }
}
