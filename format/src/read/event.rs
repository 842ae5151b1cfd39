//! Decoded events: [`EventRecord`], and decoding one event record against
//! its chunk's metadata and resolved pools.
//!
//! An event's payload is its type's fields in declared order. Constant-pool
//! fields come back resolved ([`Value::Null`] for undefined keys, as the JDK
//! reads them). Bytes left in the record after the last field are skipped,
//! as the JDK skips them: the record size, not the fields, decides where the
//! next record starts.
//!
//! Invariant: an [`EventRecord`]'s `fields` match its type's metadata
//! fields one to one, in order and by name.

use std::sync::Arc;

use super::decode::Decoder;
use super::error::ReadError;
use super::input::Record;
use super::metadata::ClassRecord;
use super::value::{Value, field};
use crate::types::TypeId;

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// File offset of the record.
    pub offset: u64,
    /// The event type's id.
    pub type_id: TypeId,
    /// The event type's name, e.g. `jdk.ExecutionSample`.
    pub type_name: Arc<str>,
    /// Field names and values, in declared order.
    pub fields: Vec<(Arc<str>, Value)>,
}

impl EventRecord {
    /// The value of the field called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        field(&self.fields, name)
    }

    /// Follows a dotted path from the event, e.g.
    /// `"sampledThread.javaName"`.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        let (first, rest) = match path.split_once('.') {
            Some((first, rest)) => (first, Some(rest)),
            None => (path, None),
        };
        let v = self.get(first)?;
        match rest {
            Some(rest) => v.get_path(rest),
            None => Some(v),
        }
    }

    /// `startTime` in ticks, if the event has it.
    pub fn start_ticks(&self) -> Option<i64> {
        self.get("startTime").and_then(Value::as_i64)
    }

    /// `duration` in ticks, if the event has it.
    pub fn duration_ticks(&self) -> Option<i64> {
        self.get("duration").and_then(Value::as_i64)
    }
}

/// Decodes the event in `rec`, of type `class`.
pub(crate) fn decode_event(
    rec: Record<'_>,
    class: &ClassRecord,
    decoder: &mut Decoder<'_>,
) -> Result<EventRecord, ReadError> {
    let mut body = rec.body;
    decoder.set_owner(class.id);
    let fields = decoder.fields(&mut body, &class.fields, 0)?;
    Ok(EventRecord {
        offset: rec.start as u64,
        type_id: class.id,
        type_name: class.name.clone(),
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::decode::{Budget, Refs};
    use crate::read::metadata::read_metadata;
    use crate::read::pools::PoolSet;
    use crate::{EventEncoder, Metadata, write::encode::Sink};

    #[test]
    fn decodes_a_builtin_event_and_skips_trailing_bytes() {
        let mut buf = Vec::new();
        Metadata::builtin().encode(&mut buf, 1, 0);
        let meta = read_metadata(&buf, 0, buf.len()).unwrap();

        let mut ev = [0u8; 64];
        let mut e = EventEncoder::begin(&mut ev, TypeId::CPU_INFORMATION);
        e.put_i64(1005);
        e.put_str("x86");
        e.put_opt_str(None);
        for n in [1, 8, 16] {
            e.put_i32(n);
        }
        e.put_u8(0xee); // trailing garbage inside the record
        let n = e.finish().unwrap();

        let pools = PoolSet::default();
        let mut budget = Budget::new();
        let mut d = Decoder::new(&meta, Refs::Resolved(&pools), &mut budget);
        let rec = Record::read(&ev, 0, n).unwrap();
        let class = meta.class(TypeId::CPU_INFORMATION).unwrap();
        let e = decode_event(rec, class, &mut d).unwrap();
        assert_eq!(&*e.type_name, "jdk.CPUInformation");
        assert_eq!(e.start_ticks(), Some(1005));
        assert_eq!(e.duration_ticks(), None);
        assert_eq!(e.get_path("cpu").and_then(Value::as_str), Some("x86"));
        assert!(e.get("description").is_some_and(Value::is_null));
        assert_eq!(e.get("hwThreads"), Some(&Value::Int(16)));
        assert_eq!(e.fields.len(), class.fields.len());
    }
}
