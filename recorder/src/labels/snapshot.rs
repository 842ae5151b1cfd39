//! The label table as Pyroscope's `LabelsSnapshot` protobuf.
//!
//! Pyroscope's JFR ingest (`POST /ingest?format=jfr`, multipart) takes the
//! label sets beside the JFR, in a part named `labels`, as this message
//! (from `jfr_labels.proto` of Grafana's JFR parser):
//!
//! ```proto
//! message Context        { map<int64, int64> labels = 1; }
//! message LabelsSnapshot { map<int64, Context> contexts = 1;
//!                          map<int64, string>  strings  = 2; }
//! ```
//!
//! `contexts` maps each context id (the samples' `contextId`) to its
//! labels, as string id → string id; `strings` maps string ids to text.
//!
//! # Encoding
//!
//! Written by hand: two maps do not need a code generator. A protobuf map
//! is a repeated entry message with the key as field 1 and the value as
//! field 2; integers are varints (negative `int64`s take ten bytes), strings
//! and messages are length-delimited. The decoder (for tests and for
//! checking an upload) accepts entries in any order, skips unknown fields,
//! and takes a missing key or value as 0 / empty, as protobuf does.
//!
//! Invariant: `decode(encode(s)) == s` for every snapshot.

use std::collections::BTreeMap;
use std::fmt;

use super::table::TABLE;

/// One label set: string id of the key → string id of the value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Key string id → value string id.
    pub labels: BTreeMap<i64, i64>,
}

/// Every label set and string interned so far (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelsSnapshot {
    /// Context id → its labels.
    pub contexts: BTreeMap<i64, Context>,
    /// String id → string.
    pub strings: BTreeMap<i64, String>,
}

/// Every label set interned so far, with its strings.
pub fn snapshot() -> LabelsSnapshot {
    let t = TABLE.lock();
    let mut s = LabelsSnapshot::default();
    let Some(t) = t.as_ref() else {
        return s;
    };
    for (i, set) in t.contexts.iter().enumerate() {
        let labels = set.iter().copied().collect();
        s.contexts.insert(i as i64 + 1, Context { labels });
    }
    for (i, text) in t.strings.iter().enumerate() {
        s.strings.insert(i as i64 + 1, text.to_string());
    }
    s
}

impl LabelsSnapshot {
    /// The labels of `context_id` as (key, value) text, sorted by key; `None`
    /// if the snapshot has no such context or lacks one of its strings.
    pub fn labels_of(&self, context_id: u64) -> Option<Vec<(&str, &str)>> {
        let ctx = self.contexts.get(&i64::try_from(context_id).ok()?)?;
        let mut out = Vec::with_capacity(ctx.labels.len());
        for (k, v) in &ctx.labels {
            out.push((self.strings.get(k)?.as_str(), self.strings.get(v)?.as_str()));
        }
        out.sort_unstable();
        Some(out)
    }

    /// The protobuf encoding of this `LabelsSnapshot`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut entry = Vec::new();
        let mut ctx = Vec::new();
        let mut label = Vec::new();
        for (id, c) in &self.contexts {
            ctx.clear();
            for (k, v) in &c.labels {
                label.clear();
                put_tag(&mut label, 1, VARINT);
                put_varint(&mut label, *k as u64);
                put_tag(&mut label, 2, VARINT);
                put_varint(&mut label, *v as u64);
                put_bytes(&mut ctx, 1, &label);
            }
            entry.clear();
            put_tag(&mut entry, 1, VARINT);
            put_varint(&mut entry, *id as u64);
            put_bytes(&mut entry, 2, &ctx);
            put_bytes(&mut out, 1, &entry);
        }
        for (id, s) in &self.strings {
            entry.clear();
            put_tag(&mut entry, 1, VARINT);
            put_varint(&mut entry, *id as u64);
            put_bytes(&mut entry, 2, s.as_bytes());
            put_bytes(&mut out, 2, &entry);
        }
        out
    }

    /// Decodes a protobuf `LabelsSnapshot`.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut s = LabelsSnapshot::default();
        let mut r = Reader(bytes);
        while let Some((field, wire)) = r.tag()? {
            match (field, wire) {
                (1, LEN) => {
                    let mut e = Reader(r.bytes()?);
                    let (mut id, mut ctx) = (0i64, Context::default());
                    while let Some((f, w)) = e.tag()? {
                        match (f, w) {
                            (1, VARINT) => id = e.varint()? as i64,
                            (2, LEN) => ctx = decode_context(e.bytes()?)?,
                            _ => e.skip(w)?,
                        }
                    }
                    s.contexts.insert(id, ctx);
                }
                (2, LEN) => {
                    let mut e = Reader(r.bytes()?);
                    let (mut id, mut text) = (0i64, String::new());
                    while let Some((f, w)) = e.tag()? {
                        match (f, w) {
                            (1, VARINT) => id = e.varint()? as i64,
                            (2, LEN) => {
                                text = String::from_utf8(e.bytes()?.to_vec())
                                    .map_err(|_| DecodeError::BadUtf8)?;
                            }
                            _ => e.skip(w)?,
                        }
                    }
                    s.strings.insert(id, text);
                }
                (_, w) => r.skip(w)?,
            }
        }
        Ok(s)
    }
}

fn decode_context(bytes: &[u8]) -> Result<Context, DecodeError> {
    let mut c = Context::default();
    let mut r = Reader(bytes);
    while let Some((field, wire)) = r.tag()? {
        if (field, wire) != (1, LEN) {
            r.skip(wire)?;
            continue;
        }
        let mut e = Reader(r.bytes()?);
        let (mut k, mut v) = (0i64, 0i64);
        while let Some((f, w)) = e.tag()? {
            match (f, w) {
                (1, VARINT) => k = e.varint()? as i64,
                (2, VARINT) => v = e.varint()? as i64,
                _ => e.skip(w)?,
            }
        }
        c.labels.insert(k, v);
    }
    Ok(c)
}

/// Why [`LabelsSnapshot::decode`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The message ends inside a field.
    Truncated,
    /// A varint longer than ten bytes.
    BadVarint,
    /// A wire type protobuf does not define (or a group).
    BadWireType(u8),
    /// A string that is not UTF-8.
    BadUtf8,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("LabelsSnapshot: message ends inside a field"),
            Self::BadVarint => f.write_str("LabelsSnapshot: varint longer than ten bytes"),
            Self::BadWireType(w) => write!(f, "LabelsSnapshot: unsupported wire type {w}"),
            Self::BadUtf8 => f.write_str("LabelsSnapshot: string is not UTF-8"),
        }
    }
}

impl std::error::Error for DecodeError {}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, u64::from(field) << 3 | u64::from(wire));
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for i in 0..10 {
            let (&b, rest) = self.0.split_first().ok_or(DecodeError::Truncated)?;
            self.0 = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(DecodeError::BadVarint)
    }

    /// The next field number and wire type, `None` at the end.
    fn tag(&mut self) -> Result<Option<(u64, u8)>, DecodeError> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let t = self.varint()?;
        Ok(Some((t >> 3, (t & 7) as u8)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.0.len() {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| DecodeError::Truncated)?)
    }

    fn skip(&mut self, wire: u8) -> Result<(), DecodeError> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            I32 => self.take(4).map(drop),
            w => Err(DecodeError::BadWireType(w)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> LabelsSnapshot {
        let mut s = LabelsSnapshot::default();
        s.strings.insert(1, "endpoint".into());
        s.strings.insert(2, "/a".into());
        s.strings.insert(3, "tenant".into());
        s.strings.insert(4, "t1 é".into());
        s.contexts.insert(
            1,
            Context {
                labels: [(1, 2), (3, 4)].into_iter().collect(),
            },
        );
        s.contexts.insert(
            300,
            Context {
                labels: [(1, 2)].into_iter().collect(),
            },
        );
        s
    }

    #[test]
    fn encodes_the_bytes_protobuf_defines() {
        let mut s = LabelsSnapshot::default();
        s.strings.insert(1, "a".into());
        s.contexts.insert(
            2,
            Context {
                labels: [(1, 1)].into_iter().collect(),
            },
        );
        // contexts entry: field 1 LEN { key 2, value Context { labels
        // entry { 1: 1, 2: 1 } } }; strings entry: field 2 LEN { 1: 1, 2: "a" }.
        assert_eq!(
            s.encode(),
            [
                0x0a, 0x0a, 0x08, 0x02, 0x12, 0x06, 0x0a, 0x04, 0x08, 0x01, 0x10, 0x01, //
                0x12, 0x05, 0x08, 0x01, 0x12, 0x01, b'a'
            ]
        );
    }

    #[test]
    fn round_trips_and_resolves_labels() {
        let s = sample();
        let d = LabelsSnapshot::decode(&s.encode()).unwrap();
        assert_eq!(d, s);
        assert_eq!(
            d.labels_of(1),
            Some(vec![("endpoint", "/a"), ("tenant", "t1 é")])
        );
        assert_eq!(d.labels_of(2), None);
    }

    #[test]
    fn skips_unknown_fields_and_rejects_truncation() {
        let mut bytes = vec![0x18, 0x05, 0x25, 1, 2, 3, 4]; // field 3 varint, field 4 fixed32
        bytes.extend(sample().encode());
        assert_eq!(LabelsSnapshot::decode(&bytes).unwrap(), sample());
        let full = sample().encode();
        for cut in 1..full.len() {
            if let Ok(d) = LabelsSnapshot::decode(&full[..cut]) {
                assert_ne!(d, sample(), "a cut message never decodes whole");
            }
        }
        assert_eq!(
            LabelsSnapshot::decode(&[0x0b]),
            Err(DecodeError::BadWireType(3))
        );
    }
}
