//! [`Value`]: the generic tree a decoded field becomes, whatever its type.
//!
//! # Shape
//!
//! Primitives map to one variant each; `java.lang.String` to
//! [`Value::String`] (or [`Value::Null`]); a struct to [`Value::Object`]
//! with its fields in declared order; an array (`dimension="1"`) to
//! [`Value::Array`]. A value of a `simpleType` class with one field (such as
//! `jdk.types.Symbol` or `jdk.types.FrameType`) collapses to that field's
//! value, as the JDK presents it.
//!
//! # Sharing
//!
//! Strings, objects and arrays sit behind `Arc`, so a resolved constant
//! (say, a stack trace referenced by ten thousand events) is stored once and
//! every reference to it is a pointer copy: memory stays linear in the file
//! size however often constants are referenced.
//!
//! # Equality
//!
//! Floats compare by bit pattern, so `NaN == NaN` (same payload) and
//! `0.0 != -0.0`: equality is exact and reflexive, which is what round-trip
//! tests need, and `Value` is `Eq`.
//!
//! Invariant: a [`Value::Ref`] appears only where a constant-pool reference
//! was left unresolved on purpose (it would have closed a cycle or exceeded
//! the resolution depth); a key that is simply not defined reads as
//! [`Value::Null`], as in the JDK.

use std::sync::Arc;

use crate::types::TypeId;

/// One decoded value.
#[derive(Debug, Clone)]
pub enum Value {
    /// A null string, a missing constant, or a reference to key 0 that the
    /// pool does not define.
    Null,
    /// `boolean`.
    Boolean(bool),
    /// `byte`.
    Byte(i8),
    /// `short`.
    Short(i16),
    /// `char`: one UTF-16 code unit.
    Char(u16),
    /// `int`.
    Int(i32),
    /// `long`.
    Long(i64),
    /// `float`.
    Float(f32),
    /// `double`.
    Double(f64),
    /// `java.lang.String`.
    String(Arc<str>),
    /// A struct value (inline or a resolved constant).
    Object(Arc<Object>),
    /// A one-dimensional array.
    Array(Arc<[Value]>),
    /// A constant-pool reference left unresolved because resolving it would
    /// close a cycle or nest too deep; look it up with
    /// [`PoolSet::get`](super::PoolSet::get).
    Ref {
        /// The pool's type.
        type_id: TypeId,
        /// The key.
        key: u64,
    },
}

/// A struct value: its type and its fields in declared order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// The struct's type id.
    pub type_id: TypeId,
    /// The struct's type name, e.g. `java.lang.Thread`.
    pub type_name: Arc<str>,
    /// Field names and values, in declared order.
    pub fields: Vec<(Arc<str>, Value)>,
}

impl Object {
    /// The value of the field called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        field(&self.fields, name)
    }
}

/// The value of the field called `name` in a field list.
pub(crate) fn field<'v>(fields: &'v [(Arc<str>, Value)], name: &str) -> Option<&'v Value> {
    fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
}

impl Value {
    /// True for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Boolean(b) => Some(b),
            _ => None,
        }
    }

    /// Any integral value (`byte`, `short`, `char`, `int`, `long`) widened
    /// to `i64`.
    ///
    /// ```
    /// use jfr_format::read::Value;
    /// assert_eq!(Value::Int(-1).as_i64(), Some(-1));
    /// assert_eq!(Value::Char(0xffff).as_i64(), Some(65535));
    /// assert_eq!(Value::Double(1.0).as_i64(), None);
    /// ```
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::Byte(v) => Some(v.into()),
            Self::Short(v) => Some(v.into()),
            Self::Char(v) => Some(v.into()),
            Self::Int(v) => Some(v.into()),
            Self::Long(v) => Some(v),
            _ => None,
        }
    }

    /// A `float` or `double` as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::Float(v) => Some(v.into()),
            Self::Double(v) => Some(v),
            _ => None,
        }
    }

    /// The string, if this is one (null strings are [`Value::Null`]).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// The struct, if this is one.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Self::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The pool type and key of an unresolved reference.
    pub fn as_pool_ref(&self) -> Option<(TypeId, u64)> {
        match *self {
            Self::Ref { type_id, key } => Some((type_id, key)),
            _ => None,
        }
    }

    /// The field `name` of a struct value.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use jfr_format::{read::{Object, Value}, TypeId};
    /// let o = Value::Object(Arc::new(Object {
    ///     type_id: TypeId(20),
    ///     type_name: "java.lang.Thread".into(),
    ///     fields: vec![("osName".into(), Value::String("main".into()))],
    /// }));
    /// assert_eq!(o.get("osName").and_then(Value::as_str), Some("main"));
    /// assert!(o.get("nope").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(name))
    }

    /// Follows a dotted path of field names, e.g. `"stackTrace.frames"`.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        path.split('.').try_fold(self, |v, name| v.get(name))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Boolean(a), Boolean(b)) => a == b,
            (Byte(a), Byte(b)) => a == b,
            (Short(a), Short(b)) => a == b,
            (Char(a), Char(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Long(a), Long(b)) => a == b,
            (Float(a), Float(b)) => a.to_bits() == b.to_bits(),
            (Double(a), Double(b)) => a.to_bits() == b.to_bits(),
            (String(a), String(b)) => a == b,
            (Object(a), Object(b)) => Arc::ptr_eq(a, b) || a == b,
            (Array(a), Array(b)) => Arc::ptr_eq(a, b) || a == b,
            (
                Ref {
                    type_id: t1,
                    key: k1,
                },
                Ref {
                    type_id: t2,
                    key: k2,
                },
            ) => t1 == t2 && k1 == k2,
            _ => false,
        }
    }
}

impl Eq for Value {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_compare_by_bits() {
        let nan = f32::from_bits(0x7fc0_0001);
        assert_eq!(Value::Float(nan), Value::Float(nan));
        assert_ne!(Value::Float(nan), Value::Float(f32::NAN));
        assert_ne!(Value::Double(0.0), Value::Double(-0.0));
        assert_ne!(Value::Int(1), Value::Long(1));
    }

    #[test]
    fn paths_walk_objects() {
        let inner = Value::Object(Arc::new(Object {
            type_id: TypeId(1001),
            type_name: "x.In".into(),
            fields: vec![("n".into(), Value::Long(7))],
        }));
        let outer = Value::Object(Arc::new(Object {
            type_id: TypeId(1002),
            type_name: "x.Out".into(),
            fields: vec![("in".into(), inner), ("s".into(), Value::Null)],
        }));
        assert_eq!(outer.get_path("in.n").and_then(Value::as_i64), Some(7));
        assert!(outer.get_path("s").is_some_and(Value::is_null));
        assert!(outer.get_path("s.x").is_none());
        assert_eq!(Value::Array(Arc::from([])).as_array(), Some(&[][..]));
        assert_eq!(
            Value::Ref {
                type_id: TypeId(20),
                key: 3
            }
            .as_pool_ref(),
            Some((TypeId(20), 3))
        );
    }
}
