//! The metadata event: the set of declared types, validated as it grows, and
//! its encoding as the element tree readers expect.
//!
//! ```text
//! root
//! ├── metadata
//! │   └── class*  (setting*, field* with annotation*, annotation*)
//! └── region     (locale, gmtOffset, dst)
//! ```
//!
//! Invariant: every type a [`Metadata`] holds has passed [`Metadata::add`]:
//! ids and names are unique, every referenced type id is declared, event
//! types start with `startTime` (and have `duration` second if at all), so the
//! encoded event is always one the JDK and JMC accept.

use std::collections::HashMap;
use std::fmt;

use crate::builtin::builtin_types_for;
use crate::schema::{Annotation, FieldDesc, TypeDesc};
use crate::types::TypeId;
use crate::write::encode::Sink;
use crate::write::record::{begin_record, end_record};

/// Why a type could not be declared.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaError {
    /// Another type already has this id.
    DuplicateId {
        /// The id.
        id: TypeId,
        /// Name of the type already holding it.
        existing: String,
    },
    /// Another type already has this name.
    DuplicateName(String),
    /// A type or field name is not a valid (dotted) Java identifier.
    InvalidName {
        /// The offending name.
        name: String,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A field or annotation refers to a type id that is not declared.
    UnknownType {
        /// The type being declared.
        in_type: String,
        /// The field (or `""` for a type annotation).
        field: String,
        /// The undeclared id.
        id: TypeId,
    },
    /// Two fields of one type share a name.
    DuplicateField {
        /// The type.
        in_type: String,
        /// The field name.
        field: String,
    },
    /// An event type does not start with `startTime: long`, or has
    /// `duration` anywhere but second, or a field is not allowed where it is.
    BadLayout {
        /// The type.
        in_type: String,
        /// What is wrong.
        reason: &'static str,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateId { id, existing } => {
                write!(f, "type id {id} is already used by `{existing}`")
            }
            Self::DuplicateName(n) => write!(f, "a type named `{n}` is already declared"),
            Self::InvalidName { name, reason } => write!(f, "invalid name `{name}`: {reason}"),
            Self::UnknownType { in_type, field, id } => {
                write!(
                    f,
                    "`{in_type}` field `{field}` refers to undeclared type id {id}"
                )
            }
            Self::DuplicateField { in_type, field } => {
                write!(f, "`{in_type}` declares field `{field}` twice")
            }
            Self::BadLayout { in_type, reason } => write!(f, "`{in_type}`: {reason}"),
        }
    }
}

impl std::error::Error for SchemaError {}

/// Checks that `name` is a Java identifier, or (with `dotted`) a sequence of
/// identifiers separated by single dots.
pub fn validate_name(name: &str, dotted: bool) -> Result<(), SchemaError> {
    let bad = |reason| {
        Err(SchemaError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > 1024 {
        return bad("longer than 1024 bytes");
    }
    let parts: Vec<&str> = if dotted {
        name.split('.').collect()
    } else {
        vec![name]
    };
    for part in parts {
        let mut chars = part.chars();
        match chars.next() {
            None => return bad("empty segment between dots"),
            Some(c) if !(c.is_alphabetic() || c == '_' || c == '$') => {
                return bad("a segment must start with a letter, `_` or `$`");
            }
            Some(_) => {}
        }
        if !chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            return bad("only letters, digits, `_` and `$` are allowed (and `.` between segments)");
        }
    }
    Ok(())
}

/// A metadata event's body, encoded once by [`Metadata::encode_body`]:
/// the string table and the element tree, ready to be framed as the
/// metadata event of any chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedMetadata {
    body: Vec<u8>,
}

impl EncodedMetadata {
    /// Appends the metadata event (a complete record) with this body to
    /// `out`: the same bytes as [`Metadata::encode`] of the metadata it
    /// was encoded from.
    ///
    /// `metadata_id` must change whenever the set of types changes: the JDK
    /// reuses the previous chunk's metadata when the ids are equal.
    pub fn encode(&self, out: &mut Vec<u8>, metadata_id: u64, start_ticks: i64) {
        let start = begin_record(out, TypeId::METADATA);
        out.put_i64(start_ticks);
        out.put_varint(0); // duration
        out.put_varint(metadata_id);
        out.extend_from_slice(&self.body);
        end_record(out, start);
    }
}

/// A validated set of types.
#[derive(Debug, Clone)]
pub struct Metadata {
    types: Vec<TypeDesc>,
    by_id: HashMap<TypeId, usize>,
    by_name: HashMap<String, TypeId>,
}

impl Default for Metadata {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Metadata {
    /// The built-in types only.
    pub fn builtin() -> Self {
        Self::builtin_for(false)
    }

    /// The built-in types only, the samples with `contextId` if
    /// `context_ids` (see [`builtin_types_for`]).
    pub fn builtin_for(context_ids: bool) -> Self {
        let mut m = Self {
            types: Vec::new(),
            by_id: HashMap::new(),
            by_name: HashMap::new(),
        };
        for t in builtin_types_for(context_ids) {
            m.insert(t);
        }
        debug_assert!(m.types.iter().all(|t| m.check(t).is_ok()));
        m
    }

    /// Declares `t` after checking it against everything already declared.
    pub fn add(&mut self, t: TypeDesc) -> Result<(), SchemaError> {
        if let Some(&i) = self.by_id.get(&t.id) {
            return Err(SchemaError::DuplicateId {
                id: t.id,
                existing: self.types[i].name.to_string(),
            });
        }
        if self.by_name.contains_key(t.name.as_ref()) {
            return Err(SchemaError::DuplicateName(t.name.to_string()));
        }
        if t.id == TypeId::METADATA || t.id == TypeId::CHECKPOINT {
            return Err(SchemaError::BadLayout {
                in_type: t.name.to_string(),
                reason: "type ids 0 and 1 are reserved for metadata and checkpoint records",
            });
        }
        self.check(&t)?;
        self.insert(t);
        Ok(())
    }

    fn insert(&mut self, t: TypeDesc) {
        self.by_id.insert(t.id, self.types.len());
        self.by_name.insert(t.name.to_string(), t.id);
        self.types.push(t);
    }

    fn check(&self, t: &TypeDesc) -> Result<(), SchemaError> {
        validate_name(&t.name, true)?;
        let name = || t.name.to_string();
        let declared = |id: TypeId| id == t.id || self.by_id.contains_key(&id);
        let check_annotations = |field: &str, anns: &[Annotation]| {
            anns.iter()
                .find(|a| !declared(a.type_id()))
                .map_or(Ok(()), |a| {
                    Err(SchemaError::UnknownType {
                        in_type: name(),
                        field: field.to_owned(),
                        id: a.type_id(),
                    })
                })
        };
        check_annotations("", &t.annotations)?;
        for (i, f) in t.fields.iter().enumerate() {
            validate_name(&f.name, false)?;
            if t.fields[..i].iter().any(|g| g.name == f.name) {
                return Err(SchemaError::DuplicateField {
                    in_type: name(),
                    field: f.name.to_string(),
                });
            }
            if !declared(f.type_id) {
                return Err(SchemaError::UnknownType {
                    in_type: name(),
                    field: f.name.to_string(),
                    id: f.type_id,
                });
            }
            check_annotations(&f.name, &f.annotations)?;
            if f.constant_pool && self.is_primitive(f.type_id) {
                return Err(SchemaError::BadLayout {
                    in_type: name(),
                    reason: "a primitive field cannot be a constant-pool reference (JMC rejects it)",
                });
            }
            let target_has_fields = if f.type_id == t.id {
                !t.fields.is_empty()
            } else {
                self.get(f.type_id).is_some_and(|ft| !ft.fields.is_empty())
            };
            if f.array && f.constant_pool && target_has_fields {
                return Err(SchemaError::BadLayout {
                    in_type: name(),
                    reason: "an array of constant-pool references to a struct type cannot be \
                             read by the JDK (`jfr print` throws ClassCastException)",
                });
            }
        }
        if t.is_event() {
            check_event_layout(t)?;
        }
        Ok(())
    }

    fn is_primitive(&self, id: TypeId) -> bool {
        (TypeId::BOOLEAN.0..TypeId::STRING.0).contains(&id.0)
    }

    /// The type with id `id`.
    pub fn get(&self, id: TypeId) -> Option<&TypeDesc> {
        self.by_id.get(&id).map(|&i| &self.types[i])
    }

    /// The type called `name`.
    pub fn by_name(&self, name: &str) -> Option<&TypeDesc> {
        self.by_name.get(name).and_then(|&id| self.get(id))
    }

    /// Every declared type, in declaration order.
    pub fn types(&self) -> &[TypeDesc] {
        &self.types
    }

    /// The next free id at or above [`TypeId::FIRST_DYNAMIC`].
    pub fn next_dynamic_id(&self) -> TypeId {
        let max = self.types.iter().map(|t| t.id.0).max().unwrap_or(0);
        TypeId(max.max(TypeId::FIRST_DYNAMIC.0 - 1) + 1)
    }

    /// Appends the metadata event (a complete record) to `out`.
    ///
    /// `metadata_id` must change whenever the set of types changes: the JDK
    /// reuses the previous chunk's metadata when the ids are equal.
    pub fn encode(&self, out: &mut Vec<u8>, metadata_id: u64, start_ticks: i64) {
        self.encode_body().encode(out, metadata_id, start_ticks);
    }

    /// The metadata event's body: its string table and element tree, which
    /// depend only on the declared types. Encoding it is most of the cost
    /// of the record (some 0.4 ms for the built-in types), so a writer
    /// whose types have not changed keeps it and frames it again for each
    /// chunk ([`EncodedMetadata::encode`]).
    pub fn encode_body(&self) -> EncodedMetadata {
        let mut strings = StringTable::default();
        let mut tree = Vec::new();
        self.encode_root(&mut tree, &mut strings);
        let mut body = Vec::with_capacity(tree.len() + 16 * strings.list.len());
        body.put_varint(strings.list.len() as u64);
        for s in &strings.list {
            body.put_str(s);
        }
        body.extend_from_slice(&tree);
        EncodedMetadata { body }
    }

    fn encode_root(&self, out: &mut Vec<u8>, st: &mut StringTable) {
        element(out, st, "root", &[], 2);
        element(out, st, "metadata", &[], self.types.len());
        for t in &self.types {
            encode_class(out, st, t);
        }
        element(
            out,
            st,
            "region",
            &[("locale", "en_US"), ("gmtOffset", "0"), ("dst", "0")],
            0,
        );
    }
}

fn check_event_layout(t: &TypeDesc) -> Result<(), SchemaError> {
    let bad = |reason| {
        Err(SchemaError::BadLayout {
            in_type: t.name.to_string(),
            reason,
        })
    };
    match t.fields.first() {
        Some(f) if f.name == "startTime" && f.type_id == TypeId::LONG && !f.array => {}
        _ => return bad("an event type's first field must be `startTime: long`"),
    }
    if let Some(i) = t.field_index("duration") {
        let f = &t.fields[i];
        if i != 1 || f.type_id != TypeId::LONG || f.array {
            return bad("`duration` must be the second field and a `long`");
        }
    }
    Ok(())
}

fn encode_class(out: &mut Vec<u8>, st: &mut StringTable, t: &TypeDesc) {
    let id = t.id.0.to_string();
    let mut attrs: Vec<(&str, &str)> = vec![("name", &t.name), ("id", &id)];
    if let Some(s) = &t.super_type {
        attrs.push(("superType", s));
    }
    if t.simple_type {
        attrs.push(("simpleType", "true"));
    }
    let children = t.settings.len() + t.fields.len() + t.annotations.len();
    element(out, st, "class", &attrs, children);
    for s in t.settings.iter() {
        let class = s.type_id.0.to_string();
        let attrs = [
            ("name", s.name.as_ref()),
            ("class", &class),
            ("defaultValue", &s.default_value),
        ];
        element(out, st, "setting", &attrs, 0);
    }
    for f in t.fields.iter() {
        encode_field(out, st, f);
    }
    for a in t.annotations.iter() {
        encode_annotation(out, st, a);
    }
}

fn encode_field(out: &mut Vec<u8>, st: &mut StringTable, f: &FieldDesc) {
    let class = f.type_id.0.to_string();
    let mut attrs: Vec<(&str, &str)> = vec![("name", &f.name), ("class", &class)];
    if f.constant_pool {
        attrs.push(("constantPool", "true"));
    }
    if f.array {
        attrs.push(("dimension", "1"));
    }
    element(out, st, "field", &attrs, f.annotations.len());
    for a in f.annotations.iter() {
        encode_annotation(out, st, a);
    }
}

fn encode_annotation(out: &mut Vec<u8>, st: &mut StringTable, a: &Annotation) {
    let class = a.type_id().0.to_string();
    let values = a.attributes();
    let mut attrs: Vec<(&str, &str)> = vec![("class", &class)];
    attrs.extend(values.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
    element(out, st, "annotation", &attrs, 0);
}

/// Writes an element header: name, attributes; the caller writes `children`
/// child elements right after.
fn element(
    out: &mut Vec<u8>,
    st: &mut StringTable,
    name: &str,
    attrs: &[(&str, &str)],
    children: usize,
) {
    out.put_varint(st.index(name));
    out.put_varint(attrs.len() as u64);
    for (k, v) in attrs {
        out.put_varint(st.index(k));
        out.put_varint(st.index(v));
    }
    out.put_varint(children as u64);
}

/// The metadata's string table: each distinct string once, by first use.
#[derive(Default)]
struct StringTable {
    list: Vec<String>,
    index: HashMap<String, u64>,
}

impl StringTable {
    fn index(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as u64;
        self.list.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::start_time;
    use std::borrow::Cow;

    fn event(name: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
        TypeDesc {
            id: TypeId(1000),
            name: Cow::Borrowed(name),
            super_type: Some(Cow::Borrowed(crate::schema::EVENT_SUPER_TYPE)),
            simple_type: false,
            fields: Cow::Owned(fields),
            annotations: Cow::Borrowed(&[]),
            settings: Cow::Borrowed(&[]),
        }
    }

    /// A body kept from one chunk frames, for a later chunk, exactly the
    /// record encoding afresh would write: nothing in the body depends on
    /// the chunk (its start time, the metadata id).
    #[test]
    fn a_kept_body_frames_the_same_record_as_a_fresh_encoding() {
        let mut m = Metadata::builtin();
        m.add(event(
            "x.Ev",
            vec![start_time(), FieldDesc::new("n", TypeId::LONG)],
        ))
        .unwrap();
        let kept = m.encode_body();
        for (id, ticks) in [(1, 0), (7, 123_456_789), (300, i64::MAX)] {
            let (mut framed, mut fresh) = (Vec::new(), Vec::new());
            kept.encode(&mut framed, id, ticks);
            m.encode(&mut fresh, id, ticks);
            assert_eq!(framed, fresh, "metadata id {id}, ticks {ticks}");
        }
        let mut before = Vec::new();
        kept.encode(&mut before, 1, 0);
        let mut other = event("x.Other", vec![start_time()]);
        other.id = TypeId(1001);
        m.add(other).unwrap();
        let mut after = Vec::new();
        m.encode(&mut after, 1, 0);
        assert_ne!(before, after, "a new type changes the body");
    }

    #[test]
    fn builtins_validate() {
        let m = Metadata::builtin();
        assert!(m.by_name("jdk.CPUTimeSample").is_some());
        assert_eq!(m.next_dynamic_id(), TypeId(1000));
    }

    #[test]
    fn rejects_bad_declarations() {
        let mut m = Metadata::builtin();
        let e = m
            .add(event("x.Ev", vec![FieldDesc::new("n", TypeId::LONG)]))
            .unwrap_err();
        assert!(matches!(e, SchemaError::BadLayout { .. }), "{e}");
        let e = m
            .add(event(
                "x.Ev",
                vec![
                    start_time(),
                    FieldDesc::new("a", TypeId::INT),
                    FieldDesc::new("duration", TypeId::LONG),
                ],
            ))
            .unwrap_err();
        assert!(matches!(e, SchemaError::BadLayout { .. }), "{e}");
        let e = m
            .add(event(
                "x.Ev",
                vec![start_time(), FieldDesc::new("n", TypeId(9999))],
            ))
            .unwrap_err();
        assert!(matches!(e, SchemaError::UnknownType { .. }), "{e}");
        let e = m.add(event("x..Ev", vec![start_time()])).unwrap_err();
        assert!(matches!(e, SchemaError::InvalidName { .. }), "{e}");
        let e = m
            .add(event(
                "x.Ev",
                vec![start_time(), FieldDesc::new("a b", TypeId::INT)],
            ))
            .unwrap_err();
        assert!(matches!(e, SchemaError::InvalidName { .. }), "{e}");
        let e = m
            .add(event("jdk.CPUTimeSample", vec![start_time()]))
            .unwrap_err();
        assert!(matches!(e, SchemaError::DuplicateName(_)), "{e}");
        let e = m
            .add(event(
                "x.Ev",
                vec![
                    start_time(),
                    FieldDesc::pooled("threads", TypeId::THREAD).into_array(),
                ],
            ))
            .unwrap_err();
        assert!(matches!(e, SchemaError::BadLayout { .. }), "{e}");
        m.add(event("x.Ev", vec![start_time()])).unwrap();
        let e = m.add(event("x.Other", vec![start_time()])).unwrap_err();
        assert!(matches!(e, SchemaError::DuplicateId { .. }), "{e}");
    }
}
