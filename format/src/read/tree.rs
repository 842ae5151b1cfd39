//! Interpreting the metadata event's element tree as it is read.
//!
//! # Mechanism
//!
//! Each element is `name attrCount (key value)* childCount child*`, every
//! name, key and value an index into the record's string table. A
//! [`Parser`] reads one element header at a time ([`Head`]), keeps its
//! attributes in one reusable buffer, and interprets them before reading
//! any child: `root/metadata/class` elements with their `field`,
//! `annotation` and `setting` children, and `root/region`. Subtrees of
//! unknown elements are read and dropped (the JDK ignores them). No tree is
//! built, and each string that ends up in a record is shared, not copied.
//!
//! Invariant: every string index is checked against the table, every count
//! against the bytes left (an element takes at least three bytes), and
//! nesting is bounded by [`MAX_ELEMENT_DEPTH`], so any byte sequence is
//! either interpreted or rejected in time linear in its length.

use std::borrow::Cow;
use std::sync::Arc;

use super::error::ReadError;
use super::input::Input;
use super::metadata::{
    AnnotationRecord, ClassRecord, FieldRecord, Kind, RegionRecord, SettingRecord,
};
use crate::types::TypeId;

/// Deepest element nesting accepted (the real tree is 5 deep).
const MAX_ELEMENT_DEPTH: usize = 32;

/// What the tree declares: the classes, each with the offset of its
/// element, and the region.
pub(crate) type Declared = (Vec<(usize, ClassRecord)>, Option<RegionRecord>);

/// A metadata error at `at`.
pub(crate) fn bad(at: usize, reason: &'static str) -> ReadError {
    ReadError::BadMetadata {
        at: at as u64,
        reason,
    }
}

/// The kind of a class: a primitive if it has no fields and a primitive's
/// name, else a struct.
fn kind(name: &str, has_fields: bool) -> Kind {
    match (has_fields, name) {
        (false, "boolean") => Kind::Boolean,
        (false, "char") => Kind::Char,
        (false, "float") => Kind::Float,
        (false, "double") => Kind::Double,
        (false, "byte") => Kind::Byte,
        (false, "short") => Kind::Short,
        (false, "int") => Kind::Int,
        (false, "long") => Kind::Long,
        (false, "java.lang.String") => Kind::String,
        _ => Kind::Struct,
    }
}

/// An element's header. Its attributes sit in [`Parser::attrs`] until the
/// next header is read, so they are interpreted before any child.
struct Head {
    at: usize,
    name: usize,
    children: usize,
}

/// Interprets the element tree as it reads it (no intermediate tree);
/// subtrees of unknown elements are read and dropped.
pub(crate) struct Parser<'a, 's> {
    inp: Input<'a>,
    /// The string table (`None` for null strings).
    strings: &'s [Option<Cow<'a, str>>],
    /// Shared copies of the strings that went into records, made on first
    /// use: a name used by many fields is allocated once.
    arcs: Vec<Option<Arc<str>>>,
    /// The current element's attributes, as string indices.
    attrs: Vec<(usize, usize)>,
}

impl<'a, 's> Parser<'a, 's> {
    /// A parser for the tree that starts at `inp`, over `strings`.
    pub(crate) fn new(inp: Input<'a>, strings: &'s [Option<Cow<'a, str>>]) -> Self {
        Self {
            inp,
            arcs: vec![None; strings.len()],
            strings,
            attrs: Vec::new(),
        }
    }

    fn index(&mut self) -> Result<usize, ReadError> {
        let at = self.inp.pos();
        let i = self.inp.varint()?;
        usize::try_from(i)
            .ok()
            .filter(|&i| i < self.strings.len())
            .ok_or(bad(at, "string index out of range"))
    }

    fn head(&mut self, depth: usize) -> Result<Head, ReadError> {
        let at = self.inp.pos();
        if depth > MAX_ELEMENT_DEPTH {
            return Err(ReadError::TooDeep {
                at: at as u64,
                limit: MAX_ELEMENT_DEPTH,
            });
        }
        let name = self.index()?;
        let n = self.inp.count()?;
        self.attrs.clear();
        for _ in 0..n {
            let key = self.index()?;
            let value = self.index()?;
            self.attrs.push((key, value));
        }
        let children = self.inp.count()?;
        Ok(Head { at, name, children })
    }

    /// Reads and drops `n` elements at `depth`, with their subtrees.
    fn skip(&mut self, n: usize, depth: usize) -> Result<(), ReadError> {
        for _ in 0..n {
            let h = self.head(depth)?;
            self.skip(h.children, depth + 1)?;
        }
        Ok(())
    }

    fn str(&self, i: usize) -> Option<&'s str> {
        self.strings.get(i).and_then(|s| s.as_deref())
    }

    fn is(&self, h: &Head, name: &str) -> bool {
        self.str(h.name) == Some(name)
    }

    /// The string index of attribute `key`'s (non-null) value.
    fn attr_index(&self, key: &str) -> Option<usize> {
        self.attrs
            .iter()
            .find(|&&(k, v)| self.str(k) == Some(key) && self.str(v).is_some())
            .map(|&(_, v)| v)
    }

    fn attr(&self, key: &str) -> Option<&'s str> {
        self.attr_index(key).and_then(|v| self.str(v))
    }

    /// The shared copy of string `i` (`None` if null or out of range).
    fn arc(&mut self, i: usize) -> Option<Arc<str>> {
        let slot = self.arcs.get_mut(i)?;
        if slot.is_none() {
            *slot = self.strings.get(i)?.as_deref().map(Arc::from);
        }
        slot.clone()
    }

    fn attr_arc(&mut self, key: &str) -> Option<Arc<str>> {
        self.attr_index(key).and_then(|v| self.arc(v))
    }

    fn required(
        &mut self,
        h: &Head,
        key: &str,
        reason: &'static str,
    ) -> Result<Arc<str>, ReadError> {
        self.attr_arc(key).ok_or(bad(h.at, reason))
    }

    fn type_id(&self, h: &Head, key: &str, reason: &'static str) -> Result<TypeId, ReadError> {
        self.attr(key)
            .and_then(|v| v.parse().ok())
            .map(TypeId)
            .ok_or(bad(h.at, reason))
    }

    /// `root`: the first `metadata` child's classes (with their element
    /// offsets) and the first `region`.
    pub(crate) fn root(&mut self) -> Result<Declared, ReadError> {
        let root = self.head(0)?;
        let mut classes = None;
        let mut region = None;
        for _ in 0..root.children {
            let h = self.head(1)?;
            if classes.is_none() && self.is(&h, "metadata") {
                let mut list = Vec::new();
                for _ in 0..h.children {
                    let c = self.head(2)?;
                    if self.is(&c, "class") {
                        list.push((c.at, self.class(&c)?));
                    } else {
                        self.skip(c.children, 3)?;
                    }
                }
                classes = Some(list);
            } else if region.is_none() && self.is(&h, "region") {
                region = Some(self.region(&h)?);
                self.skip(h.children, 2)?;
            } else {
                self.skip(h.children, 2)?;
            }
        }
        let classes = classes.ok_or(bad(root.at, "no `metadata` element"))?;
        Ok((classes, region))
    }

    fn class(&mut self, h: &Head) -> Result<ClassRecord, ReadError> {
        let name = self.required(h, "name", "a class has no name")?;
        let id = self.type_id(h, "id", "a class has no valid id")?;
        let super_type = self.attr_arc("superType");
        let simple_type = self.attr("simpleType") == Some("true");
        let mut fields = Vec::new();
        let mut settings = Vec::new();
        let mut annotations = Vec::new();
        for _ in 0..h.children {
            let c = self.head(3)?;
            if self.is(&c, "field") {
                let name = self.required(&c, "name", "a field has no name")?;
                let type_id = self.type_id(&c, "class", "a field has no valid class")?;
                let constant_pool = self.attr("constantPool") == Some("true");
                let array = match self.attr("dimension") {
                    None | Some("0") => false,
                    Some("1") => true,
                    Some(_) => return Err(bad(c.at, "array dimension other than 0 or 1")),
                };
                fields.push(FieldRecord {
                    name,
                    type_id,
                    constant_pool,
                    array,
                    annotations: self.annotations(c.children, 4)?,
                    class: usize::MAX, // set by `link`
                });
            } else if self.is(&c, "setting") {
                let name = self.required(&c, "name", "a setting has no name")?;
                let type_id = self.type_id(&c, "class", "a setting has no valid class")?;
                let default_value = self.attr_arc("defaultValue").unwrap_or_else(|| "".into());
                settings.push(SettingRecord {
                    name,
                    type_id,
                    default_value,
                    annotations: self.annotations(c.children, 4)?,
                });
            } else if self.is(&c, "annotation") {
                annotations.push(self.annotation(&c)?);
                self.skip(c.children, 4)?;
            } else {
                self.skip(c.children, 4)?;
            }
        }
        Ok(ClassRecord {
            id,
            kind: kind(&name, !fields.is_empty()),
            name,
            super_type,
            simple_type,
            fields,
            annotations,
            settings,
        })
    }

    /// The `annotation` elements among `n` children at `depth`.
    fn annotations(&mut self, n: usize, depth: usize) -> Result<Vec<AnnotationRecord>, ReadError> {
        let mut out = Vec::new();
        for _ in 0..n {
            let h = self.head(depth)?;
            if self.is(&h, "annotation") {
                out.push(self.annotation(&h)?);
            }
            self.skip(h.children, depth + 1)?;
        }
        Ok(out)
    }

    fn annotation(&mut self, h: &Head) -> Result<AnnotationRecord, ReadError> {
        let type_id = self.type_id(h, "class", "an annotation has no valid class")?;
        let mut values = Vec::with_capacity(self.attrs.len().saturating_sub(1));
        for i in 0..self.attrs.len() {
            let (k, v) = self.attrs[i];
            if self.str(k) == Some("class") {
                continue;
            }
            if let (Some(k), Some(v)) = (self.arc(k), self.arc(v)) {
                values.push((k, v));
            }
        }
        Ok(AnnotationRecord { type_id, values })
    }

    fn region(&mut self, h: &Head) -> Result<RegionRecord, ReadError> {
        let ms = |v: Option<&str>| match v {
            None => Ok(0),
            Some(v) => v
                .parse()
                .map_err(|_| bad(h.at, "region offset is not a number")),
        };
        let gmt_offset_ms = ms(self.attr("gmtOffset"))?;
        let dst_ms = ms(self.attr("dst"))?;
        Ok(RegionRecord {
            locale: self.attr_arc("locale").unwrap_or_else(|| "".into()),
            gmt_offset_ms,
            dst_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends an element header: name index, attribute index pairs, child
    /// count.
    fn el(out: &mut Vec<u8>, name: u8, attrs: &[(u8, u8)], children: u8) {
        out.push(name);
        out.push(attrs.len() as u8);
        for &(k, v) in attrs {
            out.extend([k, v]);
        }
        out.push(children);
    }

    const STRINGS: [&str; 9] = [
        "root", "metadata", "class", "name", "x.A", "id", "7", "comment", "region",
    ];

    fn parse(tree: &[u8]) -> Result<Declared, ReadError> {
        let strings: Vec<Option<Cow<'_, str>>> =
            STRINGS.iter().map(|s| Some(Cow::Borrowed(*s))).collect();
        Parser::new(Input::new(tree, 0, tree.len()), &strings).root()
    }

    #[test]
    fn unknown_elements_are_skipped_with_their_subtrees() {
        let mut t = Vec::new();
        el(&mut t, 0, &[], 3); // root
        el(&mut t, 7, &[(3, 4)], 1); // comment, with a child
        el(&mut t, 2, &[(3, 4), (5, 6)], 0); //   a class inside: ignored
        el(&mut t, 1, &[], 2); // metadata
        el(&mut t, 2, &[(3, 4), (5, 6)], 1); //   class x.A id 7
        el(&mut t, 7, &[], 0); //     comment
        el(&mut t, 7, &[], 0); //   comment
        el(&mut t, 8, &[], 0); // region, no attributes
        let (classes, region) = parse(&t).unwrap();
        assert_eq!(classes.len(), 1);
        assert_eq!((classes[0].1.id, &*classes[0].1.name), (TypeId(7), "x.A"));
        assert_eq!(classes[0].1.kind, Kind::Struct);
        let region = region.unwrap();
        assert_eq!(
            (&*region.locale, region.gmt_offset_ms, region.dst_ms),
            ("", 0, 0)
        );
    }

    #[test]
    fn hostile_trees_are_rejected() {
        // No metadata element.
        let mut t = Vec::new();
        el(&mut t, 0, &[], 0);
        assert!(matches!(parse(&t), Err(ReadError::BadMetadata { .. })));
        // Unknown elements nested past the limit.
        let mut t = Vec::new();
        for _ in 0..40 {
            el(&mut t, 7, &[], 1);
        }
        assert!(matches!(
            parse(&t),
            Err(ReadError::TooDeep { limit: 32, .. })
        ));
        // Counts larger than the bytes left.
        assert!(matches!(
            parse(&[0, 0, 0x7f]),
            Err(ReadError::BadCount { .. })
        ));
        assert!(matches!(
            parse(&[0, 9, 0, 0]),
            Err(ReadError::BadCount { .. })
        ));
        // A string index past the table.
        assert!(matches!(
            parse(&[9, 0, 0]),
            Err(ReadError::BadMetadata { .. })
        ));
    }
}
