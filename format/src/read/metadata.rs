//! Parsing the metadata event into class descriptors.
//!
//! # Layout
//!
//! The record holds a string table, then an element tree whose names and
//! attribute keys and values are indices into that table; [`super::tree`]
//! interprets the tree into [`ClassRecord`]s as it reads it.
//!
//! # Linking
//!
//! Once every class is known, ids are checked and each field is pointed at
//! its class by index, so decoding values never looks a type up by id.
//!
//! # Validation
//!
//! Class ids must be unique, and every id a field, annotation or setting
//! names must be declared ([`ReadError::UnknownType`] otherwise, as the JDK
//! fails with "Type … is not defined"). So the value decoder can look up
//! every type it meets. A class without fields named like a primitive
//! (`int`, `java.lang.String`, …) is that primitive; any other class is a
//! struct, possibly one with no fields at all.
//!
//! Invariant: a [`MetadataRecord`] returned by [`read_metadata`] is closed:
//! every type id it mentions resolves with [`MetadataRecord::class`].

use std::collections::HashMap;
use std::sync::Arc;

use super::error::ReadError;
use super::input::{RawStr, Record};
use super::tree::{Parser, bad};
use crate::schema::EVENT_SUPER_TYPE;
use crate::types::TypeId;

/// The chunk's metadata: every declared class, and the region.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataRecord {
    /// File offset of the metadata record.
    pub offset: u64,
    /// The metadata id (equal ids promise identical metadata).
    pub id: u64,
    /// The record's start time, in ticks.
    pub start_ticks: i64,
    /// The record's duration, in ticks.
    pub duration_ticks: i64,
    /// Classes in declared order.
    pub classes: Vec<ClassRecord>,
    /// The `region` element, if present.
    pub region: Option<RegionRecord>,
    by_id: HashMap<TypeId, usize>,
}

impl MetadataRecord {
    /// The class with id `id`.
    pub fn class(&self, id: TypeId) -> Option<&ClassRecord> {
        self.by_id.get(&id).and_then(|&i| self.classes.get(i))
    }

    /// The index in [`classes`](Self::classes) of the class with id `id`.
    pub(crate) fn index(&self, id: TypeId) -> Option<usize> {
        self.by_id.get(&id).copied()
    }

    /// The first class called `name`.
    pub fn class_by_name(&self, name: &str) -> Option<&ClassRecord> {
        self.classes.iter().find(|c| &*c.name == name)
    }

    /// The event types (classes whose super type is `jdk.jfr.Event`).
    pub fn event_types(&self) -> impl Iterator<Item = &ClassRecord> {
        self.classes.iter().filter(|c| c.is_event())
    }
}

/// How values of a class are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Boolean,
    Char,
    Float,
    Double,
    Byte,
    Short,
    Int,
    Long,
    String,
    /// Fields inline, in order (possibly none).
    Struct,
}

/// One `class` element.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRecord {
    /// Type id.
    pub id: TypeId,
    /// Fully qualified name.
    pub name: Arc<str>,
    /// `superType`, e.g. `jdk.jfr.Event`.
    pub super_type: Option<Arc<str>>,
    /// `simpleType="true"`.
    pub simple_type: bool,
    /// Fields in payload order.
    pub fields: Vec<FieldRecord>,
    /// Annotations on the class.
    pub annotations: Vec<AnnotationRecord>,
    /// Settings (event types).
    pub settings: Vec<SettingRecord>,
    pub(crate) kind: Kind,
}

impl ClassRecord {
    /// True for event types.
    pub fn is_event(&self) -> bool {
        self.super_type.as_deref() == Some(EVENT_SUPER_TYPE)
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&FieldRecord> {
        self.fields.iter().find(|f| &*f.name == name)
    }
}

/// One `field` element.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldRecord {
    /// Field name.
    pub name: Arc<str>,
    /// Type of the value (of each element, for arrays).
    pub type_id: TypeId,
    /// `constantPool="true"`: the payload holds pool keys.
    pub constant_pool: bool,
    /// `dimension="1"`.
    pub array: bool,
    /// Annotations on the field.
    pub annotations: Vec<AnnotationRecord>,
    /// Index of the field's class in [`MetadataRecord::classes`].
    pub(crate) class: usize,
}

/// One `annotation` element: the annotation type and its attribute values
/// as text (`value`, or `value-0`, `value-1`, … for arrays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnotationRecord {
    /// The annotation type's id.
    pub type_id: TypeId,
    /// Attribute names and values, in file order, `class` excluded.
    pub values: Vec<(Arc<str>, Arc<str>)>,
}

impl AnnotationRecord {
    /// The attribute called `name`, e.g. `value`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| &**k == name)
            .map(|(_, v)| &**v)
    }
}

/// One `setting` element of an event type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingRecord {
    /// Setting name, e.g. `enabled`.
    pub name: Arc<str>,
    /// Setting type id.
    pub type_id: TypeId,
    /// `defaultValue` (empty if absent).
    pub default_value: Arc<str>,
    /// Annotations on the setting.
    pub annotations: Vec<AnnotationRecord>,
}

/// The `region` element: the recording's time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionRecord {
    /// `locale`, e.g. `en_US` (empty if absent).
    pub locale: Arc<str>,
    /// `gmtOffset` in milliseconds (0 if absent).
    pub gmt_offset_ms: i64,
    /// `dst` in milliseconds (0 if absent).
    pub dst_ms: i64,
}

/// Reads the metadata record at `at`, which must end by `chunk_end`.
pub(crate) fn read_metadata(
    buf: &[u8],
    at: usize,
    chunk_end: usize,
) -> Result<MetadataRecord, ReadError> {
    let rec = Record::read(buf, at, chunk_end)?;
    if rec.type_id != TypeId::METADATA.0 {
        return Err(ReadError::UnexpectedRecord {
            at: at as u64,
            expected: TypeId::METADATA.0,
            found: rec.type_id,
        });
    }
    let mut inp = rec.body;
    let start_ticks = inp.varint()? as i64;
    let duration_ticks = inp.varint()? as i64;
    let id = inp.varint()?;
    let n = inp.count()?;
    let mut strings = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(match inp.string(false)? {
            RawStr::Text(s) => Some(s),
            RawStr::Null | RawStr::Pool(_) => None,
        });
    }
    let (found, region) = Parser::new(inp, &strings).root()?;
    let mut by_id = HashMap::with_capacity(found.len());
    for (i, (el_at, class)) in found.iter().enumerate() {
        if by_id.insert(class.id, i).is_some() {
            return Err(bad(*el_at, "two classes share an id"));
        }
    }
    let mut classes = Vec::with_capacity(found.len());
    for (el_at, mut class) in found {
        link(&mut class, &by_id, el_at)?;
        classes.push(class);
    }
    Ok(MetadataRecord {
        offset: at as u64,
        id,
        start_ticks,
        duration_ticks,
        classes,
        region,
        by_id,
    })
}

/// Checks that every id `class` mentions is declared, and points each
/// field at its class's index.
fn link(
    class: &mut ClassRecord,
    by_id: &HashMap<TypeId, usize>,
    at: usize,
) -> Result<(), ReadError> {
    let index = |id: TypeId| {
        by_id.get(&id).copied().ok_or(ReadError::UnknownType {
            at: at as u64,
            id: id.0,
        })
    };
    for f in &mut class.fields {
        f.class = index(f.type_id)?;
    }
    let annotations = class
        .annotations
        .iter()
        .chain(class.fields.iter().flat_map(|f| &f.annotations))
        .chain(class.settings.iter().flat_map(|s| &s.annotations));
    let ids = class
        .settings
        .iter()
        .map(|s| s.type_id)
        .chain(annotations.map(|a| a.type_id));
    for id in ids {
        index(id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Annotation;
    use crate::write::metadata::Metadata;

    #[test]
    fn reads_back_the_builtin_table() {
        let m = Metadata::builtin();
        let mut buf = Vec::new();
        m.encode(&mut buf, 42, 1005);
        let r = read_metadata(&buf, 0, buf.len()).unwrap();
        assert_eq!((r.id, r.start_ticks, r.duration_ticks), (42, 1005, 0));
        assert_eq!(r.classes.len(), m.types().len());
        for (t, c) in m.types().iter().zip(&r.classes) {
            assert_eq!((t.id, &*t.name), (c.id, &*c.name));
            assert_eq!(t.super_type.as_deref(), c.super_type.as_deref());
            assert_eq!(t.simple_type, c.simple_type);
            assert_eq!(t.fields.len(), c.fields.len());
            for (f, g) in t.fields.iter().zip(&c.fields) {
                assert_eq!((&*f.name, f.type_id), (&*g.name, g.type_id));
                assert_eq!((f.constant_pool, f.array), (g.constant_pool, g.array));
                assert_eq!(f.annotations.len(), g.annotations.len());
            }
            assert_eq!(t.settings.len(), c.settings.len());
        }
        let cat = r.class_by_name("jdk.ExecutionSample").unwrap().annotations[1].clone();
        assert_eq!(
            cat.type_id,
            Annotation::Category(Default::default()).type_id()
        );
        assert_eq!(cat.value("value-1"), Some("Profiling"));
        assert_eq!(r.class(TypeId::INT).unwrap().kind, Kind::Int);
        assert_eq!(r.class(TypeId::THREAD).unwrap().kind, Kind::Struct);
        // 11 from the samplers and the recorder, 2 of method timing (issue
        // 13), 20 system events (issue 14), the recorder's statistics
        // (issue 12), 8 of waits (issue 19: 2 written, 6 declared for
        // `latencies-by-type`), 3 of allocation profiling (issue 19).
        assert_eq!(r.event_types().count(), 45);
        let region = r.region.unwrap();
        assert_eq!((&*region.locale, region.gmt_offset_ms), ("en_US", 0));
    }

    /// A metadata record whose tree is `root > metadata > class(attrs)`.
    fn one_class(attrs: &[(&str, &str)]) -> Vec<u8> {
        use crate::write::encode::Sink;
        let mut strings = vec!["root", "metadata", "class"];
        for (k, v) in attrs {
            strings.extend([*k, *v]);
        }
        let mut body = vec![0, 0, 0, 0, 0]; // size slot, type 0, start, duration, id
        body.put_varint(strings.len() as u64);
        for s in &strings {
            body.put_str(s);
        }
        body.extend([0, 0, 1, 1, 0, 1, 2]); // root, metadata, class
        body.put_varint(attrs.len() as u64);
        for i in 0..attrs.len() as u64 {
            body.extend([3 + 2 * i as u8, 4 + 2 * i as u8]);
        }
        body.push(0);
        let (total, width) = crate::write::record::framed_size(body.len() - 1);
        assert_eq!(width, 1);
        body[0] = total as u8;
        body
    }

    #[test]
    fn rejects_malformed_trees() {
        let ok = one_class(&[("name", "x.A"), ("id", "7")]);
        assert_eq!(
            read_metadata(&ok, 0, ok.len()).unwrap().classes[0].id,
            TypeId(7)
        );
        for (attrs, want) in [
            (&[("id", "7")][..], "a class has no name"),
            (&[("name", "x.A"), ("id", "-7")], "a class has no valid id"),
        ] {
            let b = one_class(attrs);
            assert!(
                matches!(read_metadata(&b, 0, b.len()), Err(ReadError::BadMetadata { reason, .. }) if reason == want)
            );
        }
        // A string index past the table.
        let mut b = ok.clone();
        let last = b.len() - 1;
        b[last - 1] = 99;
        assert!(matches!(
            read_metadata(&b, 0, b.len()),
            Err(ReadError::BadMetadata { .. })
        ));
        // Not a metadata record.
        let mut b = ok;
        b[1] = 1;
        assert!(matches!(
            read_metadata(&b, 0, b.len()),
            Err(ReadError::UnexpectedRecord { found: 1, .. })
        ));
    }
}
