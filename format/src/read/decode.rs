//! Decoding field values by their metadata type, with the limits that make
//! hostile input harmless.
//!
//! # Mechanism
//!
//! A [`Decoder`] reads one value of a class: a primitive by its encoding, a
//! struct as its fields in declared order (recursively), an array as a count
//! and that many elements, a constant-pool field as a key. What a key
//! becomes depends on [`Refs`]: while pools are loaded it stays a
//! [`Value::Ref`] (pools may reference each other in any order); once every
//! pool is resolved, events look keys up directly and get the resolved
//! value, or [`Value::Null`] for an undefined key.
//!
//! # Limits
//!
//! * Structs nest at most [`MAX_NESTING`] deep ([`ReadError::TooDeep`]).
//! * Every value consumes at least one byte of its record, except a struct
//!   with no (non-empty) fields. Each such zero-width value draws one unit
//!   from a budget of [`ZERO_WIDTH_BUDGET`] per file
//!   ([`ReadError::BudgetExceeded`] when it runs out).
//! * An array count must not exceed the bytes left in the record plus the
//!   budget left, and memory for it is reserved only up to the bytes left.
//!
//! Invariant: every loop iteration of the decoder consumes a byte of input
//! or a unit of budget, and recursion is bounded by [`MAX_NESTING`], so
//! decoding time and memory are linear in the input (times the nesting
//! limit) plus the budget.

use std::sync::Arc;

use super::error::ReadError;
use super::input::{Input, RawStr};
use super::metadata::{ClassRecord, FieldRecord, Kind, MetadataRecord};
use super::pools::PoolSet;
use super::refs::{Unresolved, UnresolvedLog};
use super::value::{Object, Value};
use crate::types::TypeId;

/// Deepest nesting of struct values the reader accepts.
pub const MAX_NESTING: usize = 32;

/// Longest chain of constant-pool references the reader resolves; a deeper
/// reference stays a [`Value::Ref`].
pub const MAX_REF_DEPTH: usize = 32;

/// How many values that occupy no bytes (structs without fields) one call
/// of [`read_recording`](super::read_recording) accepts in total.
pub const ZERO_WIDTH_BUDGET: u64 = 1 << 16;

/// The file-wide allowance for zero-width values.
#[derive(Debug)]
pub(crate) struct Budget {
    zero_width: u64,
}

impl Budget {
    /// A full budget.
    pub(crate) fn new() -> Self {
        Self {
            zero_width: ZERO_WIDTH_BUDGET,
        }
    }

    fn charge(&mut self, at: usize) -> Result<(), ReadError> {
        self.zero_width = self
            .zero_width
            .checked_sub(1)
            .ok_or(ReadError::BudgetExceeded { at: at as u64 })?;
        Ok(())
    }
}

/// What constant-pool keys decode to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refs<'p> {
    /// [`Value::Ref`], to be resolved later.
    Raw,
    /// The resolved constant, or [`Value::Null`].
    Resolved(&'p PoolSet),
}

/// Decodes values of the classes of one chunk's metadata.
#[derive(Debug)]
pub(crate) struct Decoder<'a> {
    meta: &'a MetadataRecord,
    refs: Refs<'a>,
    /// The `java.lang.String` class, for string encoding 2.
    string_type: Option<TypeId>,
    budget: &'a mut Budget,
    /// The type of the value being decoded ([`Unresolved::used_by`]).
    owner: TypeId,
    /// References the resolved pools do not define.
    pub(crate) unresolved: UnresolvedLog,
}

impl<'a> Decoder<'a> {
    /// A decoder for `meta`'s classes.
    pub(crate) fn new(meta: &'a MetadataRecord, refs: Refs<'a>, budget: &'a mut Budget) -> Self {
        let string_type = meta.class_by_name("java.lang.String").map(|c| c.id);
        Self {
            meta,
            refs,
            string_type,
            budget,
            owner: TypeId(0),
            unresolved: UnresolvedLog::default(),
        }
    }

    /// Names `owner` as the type of the values decoded next (an event
    /// type), for the unresolved references they hold.
    pub(crate) fn set_owner(&mut self, owner: TypeId) {
        self.owner = owner;
    }

    /// True if `type_id` is declared.
    pub(crate) fn knows(&self, type_id: TypeId) -> bool {
        self.meta.class(type_id).is_some()
    }

    /// Decodes `fields` in order; `depth` is the struct nesting so far.
    pub(crate) fn fields(
        &mut self,
        inp: &mut Input<'_>,
        fields: &[FieldRecord],
        depth: usize,
    ) -> Result<Vec<(Arc<str>, Value)>, ReadError> {
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            out.push((f.name.clone(), self.field(inp, f, depth)?));
        }
        Ok(out)
    }

    fn field(
        &mut self,
        inp: &mut Input<'_>,
        f: &FieldRecord,
        depth: usize,
    ) -> Result<Value, ReadError> {
        if !f.array {
            return self.element(inp, f, depth);
        }
        let at = inp.at();
        let n = inp.varint()?;
        // Each element takes a byte or a unit of budget (see module docs).
        let limit = (inp.remaining() as u64).saturating_add(self.budget.zero_width);
        let n = match usize::try_from(n) {
            Ok(n) if n as u64 <= limit => n,
            _ => return Err(ReadError::BadCount { at, count: n }),
        };
        let mut items = Vec::with_capacity(n.min(inp.remaining()));
        for _ in 0..n {
            items.push(self.element(inp, f, depth)?);
        }
        Ok(Value::Array(items.into()))
    }

    fn element(
        &mut self,
        inp: &mut Input<'_>,
        f: &FieldRecord,
        depth: usize,
    ) -> Result<Value, ReadError> {
        if f.constant_pool {
            let key = inp.varint()?;
            return Ok(self.pool_ref(f.type_id, key));
        }
        let meta = self.meta;
        match meta.classes.get(f.class) {
            Some(class) => self.class_value(inp, class, depth),
            None => Err(ReadError::UnknownType {
                at: inp.at(),
                id: f.type_id.0,
            }),
        }
    }

    /// Decodes one inline value of class `type_id`.
    pub(crate) fn value(
        &mut self,
        inp: &mut Input<'_>,
        type_id: TypeId,
        depth: usize,
    ) -> Result<Value, ReadError> {
        let meta = self.meta;
        let class = meta.class(type_id).ok_or(ReadError::UnknownType {
            at: inp.at(),
            id: type_id.0,
        })?;
        self.class_value(inp, class, depth)
    }

    fn class_value(
        &mut self,
        inp: &mut Input<'_>,
        class: &ClassRecord,
        depth: usize,
    ) -> Result<Value, ReadError> {
        let at = inp.pos();
        Ok(match class.kind {
            Kind::Boolean => Value::Boolean(inp.u8()? != 0),
            Kind::Byte => Value::Byte(inp.u8()? as i8),
            // Narrow integers are cut from the varint, as the JDK's casts do.
            Kind::Char => Value::Char(inp.varint()? as u16),
            Kind::Short => Value::Short(inp.varint()? as i16),
            Kind::Int => Value::Int(inp.varint()? as i32),
            Kind::Long => Value::Long(inp.varint()? as i64),
            Kind::Float => Value::Float(inp.f32()?),
            Kind::Double => Value::Double(inp.f64()?),
            Kind::String => match inp.string(true)? {
                RawStr::Null => Value::Null,
                RawStr::Text(s) => Value::String(Arc::from(s)),
                RawStr::Pool(key) => match self.string_type {
                    Some(t) => self.pool_ref(t, key),
                    None => Value::Null,
                },
            },
            Kind::Struct => {
                if depth >= MAX_NESTING {
                    return Err(ReadError::TooDeep {
                        at: at as u64,
                        limit: MAX_NESTING,
                    });
                }
                let mut fields = self.fields(inp, &class.fields, depth + 1)?;
                if inp.pos() == at {
                    self.budget.charge(at)?;
                }
                if class.simple_type && fields.len() == 1 {
                    // A simple type is presented as its one field's value.
                    fields.pop().map_or(Value::Null, |(_, v)| v)
                } else {
                    Value::Object(Arc::new(Object {
                        type_id: class.id,
                        type_name: class.name.clone(),
                        fields,
                    }))
                }
            }
        })
    }

    fn pool_ref(&mut self, type_id: TypeId, key: u64) -> Value {
        match self.refs {
            Refs::Raw => Value::Ref { type_id, key },
            Refs::Resolved(pools) => match pools.get(type_id, key) {
                Some(v) => v.clone(),
                None => {
                    if key != 0 {
                        self.unresolved.note(Unresolved {
                            type_id,
                            key,
                            used_by: self.owner,
                        });
                    }
                    Value::Null
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::metadata::read_metadata;
    use crate::schema::{FieldDesc, TypeDesc};
    use crate::write::metadata::Metadata;
    use std::borrow::Cow;

    fn value_type(id: u64, name: &'static str, fields: Vec<FieldDesc>) -> TypeDesc {
        TypeDesc {
            id: TypeId(id),
            name: Cow::Borrowed(name),
            super_type: None,
            simple_type: false,
            fields: Cow::Owned(fields),
            annotations: Cow::Borrowed(&[]),
            settings: Cow::Borrowed(&[]),
        }
    }

    /// Builtins plus `x.Empty {}`, `x.Pair { a: x.Empty, b: x.Empty }` and
    /// `x.Bag { items: x.Pair[] }`.
    fn meta() -> MetadataRecord {
        let mut m = Metadata::builtin();
        m.add(value_type(1000, "x.Empty", vec![])).unwrap();
        let pair = vec![
            FieldDesc::new("a", TypeId(1000)),
            FieldDesc::new("b", TypeId(1000)),
        ];
        m.add(value_type(1001, "x.Pair", pair)).unwrap();
        let bag = vec![FieldDesc::new("items", TypeId(1001)).into_array()];
        m.add(value_type(1002, "x.Bag", bag)).unwrap();
        let mut buf = Vec::new();
        m.encode(&mut buf, 1, 0);
        read_metadata(&buf, 0, buf.len()).unwrap()
    }

    fn decode(meta: &MetadataRecord, t: u64, bytes: &[u8]) -> Result<Value, ReadError> {
        let mut budget = Budget::new();
        let mut d = Decoder::new(meta, Refs::Raw, &mut budget);
        d.value(&mut Input::new(bytes, 0, bytes.len()), TypeId(t), 0)
    }

    #[test]
    fn structs_simple_types_and_refs() {
        let m = meta();
        // Symbol is a simple type: it collapses to its string.
        assert_eq!(
            decode(&m, TypeId::SYMBOL.0, &[3, 1, b'x']),
            Ok(Value::String("x".into()))
        );
        // A thread group: parent key 7 stays a reference while raw.
        let v = decode(&m, TypeId::THREAD_GROUP.0, &[7, 0]).unwrap();
        assert_eq!(
            v.get("parent"),
            Some(&Value::Ref {
                type_id: TypeId::THREAD_GROUP,
                key: 7
            })
        );
        assert_eq!(v.get("name"), Some(&Value::Null));
        assert_eq!(
            decode(&m, TypeId::INT.0, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
            Ok(Value::Int(-1))
        );
        assert!(matches!(
            decode(&m, 999, &[0]),
            Err(ReadError::UnknownType { id: 999, .. })
        ));
    }

    #[test]
    fn zero_width_values_draw_on_the_budget() {
        let m = meta();
        let v = decode(&m, 1001, &[]).unwrap();
        assert_eq!(v.as_object().unwrap().fields.len(), 2);
        // A small bag of empties is fine; a huge one is refused up front.
        let v = decode(&m, 1002, &[3]).unwrap();
        assert_eq!(
            v.get("items").and_then(Value::as_array).map(<[_]>::len),
            Some(3)
        );
        assert!(matches!(
            decode(&m, 1002, &[0xff, 0xff, 0xff, 0x0f]),
            Err(ReadError::BadCount { .. })
        ));
        // Each pair costs three units (itself and two empties): a count equal
        // to the budget passes the count check, then runs dry.
        let mut b = Vec::new();
        crate::write::encode::Sink::put_varint(&mut b, ZERO_WIDTH_BUDGET);
        assert!(matches!(
            decode(&m, 1002, &b),
            Err(ReadError::BudgetExceeded { .. })
        ));
    }
}
