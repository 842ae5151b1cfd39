//! Loading a chunk's constant pools: walking the checkpoint chain, decoding
//! every entry, and resolving references between entries.
//!
//! # Walk
//!
//! The header points at the last checkpoint; each checkpoint's `delta` leads
//! to the one before it, and a delta of 0 ends the chain (format notes
//! §6.3). Each step must land strictly before the checkpoint it came from,
//! after the header, and on a record that ends where or before that
//! checkpoint begins, so the walk terminates and reads each byte of the chunk
//! at most once. A checkpoint's pools must fill its record exactly, as the
//! JDK requires.
//!
//! # Resolution
//!
//! Entries are first decoded raw (references are [`Value::Ref`]). When a key
//! is defined twice in a chunk, the earliest definition in file order wins,
//! as in the JDK. Then every entry is resolved, in file order, depth first,
//! with memoisation: a reference becomes the (shared) resolved value of its
//! entry, or [`Value::Null`] if the key is undefined. A reference that would
//! close a cycle, or lie more than [`MAX_REF_DEPTH`] references deep, stays a
//! [`Value::Ref`].
//!
//! # Growth
//!
//! A chunk followed while it is written (see [`super::follow`]) gains
//! checkpoints at each flush; [`GrowingPools`] walks the chain back only to
//! the last checkpoint it read and resolves only the entries added. An
//! entry resolved earlier is not revisited, so a reference from it to a key
//! first defined in a later checkpoint stays [`Value::Null`] (a writer that
//! defines constants before the records that use them, as JFR writers do,
//! never produces one).
//!
//! Invariant: each entry is resolved once and then shared by pointer, so
//! resolution is linear in the size of the pools however the entries refer
//! to each other; and the result depends only on the bytes of the chunk.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::decode::{Budget, Decoder, MAX_REF_DEPTH, Refs};
use super::error::ReadError;
use super::input::Record;
use super::metadata::MetadataRecord;
use super::refs::{Unresolved, UnresolvedLog};
use super::value::{Object, Value};
use crate::types::TypeId;
use crate::write::header::HEADER_LEN;

/// A pool entry's identity: its type and key.
type PoolKey = (TypeId, u64);

/// The framing fields of one checkpoint record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// File offset of the record.
    pub offset: u64,
    /// Start time, in ticks.
    pub start_ticks: i64,
    /// Duration, in ticks.
    pub duration_ticks: i64,
    /// Offset of the previous checkpoint minus this one's (0 for the first).
    pub delta: i64,
    /// Type flags (bit 0: end of a flush segment).
    pub flags: u8,
    /// Number of pools in the record.
    pub pool_count: u64,
}

/// A chunk's constants, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolSet {
    entries: HashMap<PoolKey, Value>,
    checkpoints: Vec<CheckpointRecord>,
    /// References from one constant to a key the chunk does not define.
    unresolved: UnresolvedLog,
}

impl PoolSet {
    /// The resolved constant `key` of the pool of `type_id`.
    pub fn get(&self, type_id: TypeId, key: u64) -> Option<&Value> {
        self.entries.get(&(type_id, key))
    }

    /// Number of constants, all pools together.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if the chunk has no constants.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The keys defined for `type_id`, in no particular order.
    pub fn keys(&self, type_id: TypeId) -> impl Iterator<Item = u64> + '_ {
        self.entries
            .keys()
            .filter(move |(t, _)| *t == type_id)
            .map(|&(_, k)| k)
    }

    /// The checkpoints of the chain, in file order.
    pub fn checkpoints(&self) -> &[CheckpointRecord] {
        &self.checkpoints
    }

    /// References from constants to keys the chunk does not define (each
    /// resolved to [`Value::Null`]); key 0 (null) is not one.
    pub fn unresolved(&self) -> &UnresolvedLog {
        &self.unresolved
    }
}

/// Reads the checkpoint chain whose last record is at `last` (absolute).
pub(crate) fn read_pools(
    buf: &[u8],
    chunk_start: usize,
    chunk_end: usize,
    last: usize,
    meta: &MetadataRecord,
    budget: &mut Budget,
) -> Result<PoolSet, ReadError> {
    let mut pools = GrowingPools::default();
    pools.extend(buf, chunk_start, chunk_end, last, meta, budget)?;
    Ok(pools.pools)
}

/// The pools of a chunk that grows: each [`extend`](Self::extend) reads
/// only the checkpoints written since the last one, and resolves only the
/// entries they add (entries already resolved are kept as they are).
#[derive(Debug, Default)]
pub(crate) struct GrowingPools {
    /// Unresolved entries, every checkpoint read so far.
    raw: HashMap<PoolKey, Value>,
    /// Offset of the last checkpoint read (absolute; 0: none).
    last: usize,
    pub(crate) pools: PoolSet,
}

impl GrowingPools {
    /// Reads the checkpoints of the chain ending at `last` (absolute) that
    /// come after the last one read, and resolves what they define.
    pub(crate) fn extend(
        &mut self,
        buf: &[u8],
        chunk_start: usize,
        chunk_end: usize,
        last: usize,
        meta: &MetadataRecord,
        budget: &mut Budget,
    ) -> Result<(), ReadError> {
        if last == self.last {
            return Ok(());
        }
        let mut decoder = Decoder::new(meta, Refs::Raw, budget);
        let mut chain = Vec::new();
        let mut at = last;
        let mut limit = chunk_end;
        loop {
            let (cp, entries, start) = read_checkpoint(buf, at, limit, &mut decoder)?;
            chain.push((cp, entries));
            let bad = ReadError::BadCheckpoint {
                at: at as u64,
                reason: "delta does not lead back to an earlier record of the chunk",
            };
            if cp.delta == 0 {
                if self.last != 0 {
                    // The chain no longer passes through the checkpoint read
                    // before: not the same chunk growing.
                    return Err(bad);
                }
                break;
            }
            let prev = i64::try_from(at)
                .ok()
                .and_then(|a| a.checked_add(cp.delta))
                .and_then(|p| usize::try_from(p).ok())
                .ok_or(bad.clone())?;
            if prev >= at || prev < chunk_start + HEADER_LEN || prev < self.last {
                return Err(bad);
            }
            if prev == self.last {
                break;
            }
            // The earlier checkpoint must end before this one starts.
            limit = start;
            at = prev;
        }

        let mut order = Vec::new();
        for (_, entries) in chain.iter_mut().rev() {
            for (key, value) in entries.drain(..) {
                // The earliest definition in file order wins (JDK behaviour).
                self.raw.entry(key).or_insert_with(|| {
                    order.push(key);
                    value
                });
            }
        }
        let mut resolver = Resolver {
            raw: &self.raw,
            done: &mut self.pools.entries,
            active: HashSet::new(),
            unresolved: &mut self.pools.unresolved,
        };
        for &key in &order {
            resolver.key(key, 0);
        }
        self.pools
            .checkpoints
            .extend(chain.into_iter().rev().map(|(cp, _)| cp));
        self.last = last;
        Ok(())
    }
}

/// Entries of one checkpoint, in record order.
type Entries = Vec<(PoolKey, Value)>;

/// Reads the checkpoint at `at`, which must end by `limit`; returns it, its
/// entries and its start.
fn read_checkpoint(
    buf: &[u8],
    at: usize,
    limit: usize,
    decoder: &mut Decoder<'_>,
) -> Result<(CheckpointRecord, Entries, usize), ReadError> {
    let rec = Record::read(buf, at, limit)?;
    if rec.type_id != TypeId::CHECKPOINT.0 {
        return Err(ReadError::UnexpectedRecord {
            at: at as u64,
            expected: TypeId::CHECKPOINT.0,
            found: rec.type_id,
        });
    }
    let mut inp = rec.body;
    let start_ticks = inp.varint()? as i64;
    let duration_ticks = inp.varint()? as i64;
    let delta = inp.varint()? as i64;
    let flags = inp.u8()?;
    let pool_count = inp.count()?;
    let mut entries = Vec::new();
    for _ in 0..pool_count {
        let type_at = inp.at();
        let type_id = TypeId(inp.varint()?);
        if !decoder.knows(type_id) {
            return Err(ReadError::UnknownType {
                at: type_at,
                id: type_id.0,
            });
        }
        // Each entry starts with a key, so the count is bounded by the bytes.
        let n = inp.count()?;
        for _ in 0..n {
            let key = inp.varint()?;
            let value = decoder.value(&mut inp, type_id, 0)?;
            entries.push(((type_id, key), value));
        }
    }
    if inp.remaining() != 0 {
        return Err(ReadError::BadCheckpoint {
            at: at as u64,
            reason: "the pools do not fill the record exactly",
        });
    }
    let cp = CheckpointRecord {
        offset: at as u64,
        start_ticks,
        duration_ticks,
        delta,
        flags,
        pool_count: pool_count as u64,
    };
    Ok((cp, entries, rec.start))
}

/// Depth-first, memoised resolution of pool entries (see module docs).
struct Resolver<'r> {
    raw: &'r HashMap<PoolKey, Value>,
    done: &'r mut HashMap<PoolKey, Value>,
    /// Entries being resolved on the current path: a reference to one of
    /// them closes a cycle.
    active: HashSet<PoolKey>,
    /// References to undefined keys.
    unresolved: &'r mut UnresolvedLog,
}

impl Resolver<'_> {
    fn key(&mut self, key: PoolKey, depth: usize) -> Value {
        if let Some(v) = self.done.get(&key) {
            return v.clone();
        }
        let Some(raw) = self.raw.get(&key) else {
            return Value::Null;
        };
        if depth >= MAX_REF_DEPTH || self.active.contains(&key) {
            return Value::Ref {
                type_id: key.0,
                key: key.1,
            };
        }
        self.active.insert(key);
        let v = self.value(raw, depth + 1, key.0);
        self.active.remove(&key);
        self.done.insert(key, v.clone());
        v
    }

    /// Resolves `v`, part of a constant of type `owner`.
    fn value(&mut self, v: &Value, depth: usize, owner: TypeId) -> Value {
        match v {
            Value::Ref { type_id, key } => {
                let target = (*type_id, *key);
                if *key != 0 && !self.raw.contains_key(&target) && !self.done.contains_key(&target)
                {
                    self.unresolved.note(Unresolved {
                        type_id: *type_id,
                        key: *key,
                        used_by: owner,
                    });
                }
                self.key(target, depth)
            }
            Value::Object(o) => {
                let fields = o
                    .fields
                    .iter()
                    .map(|(name, v)| (name.clone(), self.value(v, depth, owner)))
                    .collect();
                Value::Object(Arc::new(Object {
                    type_id: o.type_id,
                    type_name: o.type_name.clone(),
                    fields,
                }))
            }
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.value(v, depth, owner)).collect())
            }
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::metadata::read_metadata;
    use crate::write::checkpoint::Checkpoint;
    use crate::write::constants::write_thread_group;
    use crate::write::encode::Sink;
    use crate::write::metadata::Metadata;
    use crate::write::record::{begin_record, end_record};

    fn meta() -> MetadataRecord {
        let mut buf = Vec::new();
        Metadata::builtin().encode(&mut buf, 1, 0);
        read_metadata(&buf, 0, buf.len()).unwrap()
    }

    /// 68 filler bytes (the header's place), then the checkpoints, chained.
    fn chunk(cps: &[Checkpoint]) -> (Vec<u8>, usize) {
        let mut buf = vec![0u8; HEADER_LEN];
        let mut last = 0;
        for (i, cp) in cps.iter().enumerate() {
            let at = buf.len();
            let delta = if i == 0 { 0 } else { last as i64 - at as i64 };
            cp.encode(&mut buf, 0, 0, delta);
            last = at;
        }
        (buf, last)
    }

    fn read(buf: &[u8], last: usize) -> Result<PoolSet, ReadError> {
        read_pools(buf, 0, buf.len(), last, &meta(), &mut Budget::new())
    }

    fn groups(cp: &mut Checkpoint, defs: &[(u64, u64, &str)]) {
        let mut p = cp.pool(TypeId::THREAD_GROUP);
        for &(key, parent, name) in defs {
            write_thread_group(p.entry(key), parent, name);
        }
    }

    #[test]
    fn cycles_stay_references_and_earliest_definitions_win() {
        let mut a = Checkpoint::new(0);
        groups(&mut a, &[(1, 2, "a")]);
        let mut b = Checkpoint::new(1);
        groups(
            &mut b,
            &[(2, 1, "b"), (3, 3, "c"), (4, 99, "d"), (1, 0, "late")],
        );
        let (buf, last) = chunk(&[a, b]);
        let pools = read(&buf, last).unwrap();
        assert_eq!(pools.len(), 4);
        assert_eq!(pools.checkpoints().len(), 2);
        assert_eq!(pools.checkpoints()[1].flags, 1);
        let g = |k| pools.get(TypeId::THREAD_GROUP, k).unwrap();
        let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
        let cut = |key| Value::Ref {
            type_id: TypeId::THREAD_GROUP,
            key,
        };
        assert_eq!(name(g(1)).as_deref(), Some("a"));
        assert_eq!(
            g(1).get_path("parent.name").and_then(Value::as_str),
            Some("b")
        );
        assert_eq!(g(1).get_path("parent.parent"), Some(&cut(1)));
        assert_eq!(g(2).get("parent"), Some(&cut(1)));
        assert_eq!(g(3).get("parent"), Some(&cut(3)));
        assert_eq!(g(4).get("parent"), Some(&Value::Null));
        let mut keys: Vec<u64> = pools.keys(TypeId::THREAD_GROUP).collect();
        keys.sort_unstable();
        assert_eq!(keys, [1, 2, 3, 4]);
    }

    #[test]
    fn long_chains_are_cut_at_the_depth_limit() {
        let mut cp = Checkpoint::new(0);
        let defs: Vec<(u64, u64, &str)> = (1..=100).map(|k| (k, k + 1, "g")).collect();
        groups(&mut cp, &defs);
        let (buf, last) = chunk(&[cp]);
        let pools = read(&buf, last).unwrap();
        let mut v = pools.get(TypeId::THREAD_GROUP, 1).unwrap();
        let mut depth = 0;
        while let Some(p) = v.get("parent") {
            v = p;
            depth += 1;
        }
        assert_eq!(depth, MAX_REF_DEPTH);
        assert!(v.as_pool_ref().is_some());
        // The last group's parent (101) is undefined.
        let tail = pools.get(TypeId::THREAD_GROUP, 100).unwrap();
        assert_eq!(tail.get("parent"), Some(&Value::Null));
    }

    #[test]
    fn bad_chains_and_sizes_are_errors() {
        let mut a = Checkpoint::new(0);
        groups(&mut a, &[(1, 0, "a")]);
        // A delta that points forward, or into the header.
        for delta in [5, -70, i64::MIN] {
            let mut buf = vec![0u8; HEADER_LEN];
            a.encode(&mut buf, 0, 0, delta);
            assert!(
                matches!(read(&buf, HEADER_LEN), Err(ReadError::BadCheckpoint { .. })),
                "{delta}"
            );
        }
        // A delta into the middle of the checkpoint itself.
        let (mut buf, _) = chunk(&[a.clone()]);
        let at = buf.len();
        a.encode(&mut buf, 0, 0, -3);
        assert!(read(&buf, at).is_err());
        // Pools that do not fill the record.
        let mut buf = vec![0u8; HEADER_LEN];
        let r = begin_record(&mut buf, TypeId::CHECKPOINT);
        buf.extend([0, 0, 0, 0, 0, 0xee]);
        end_record(&mut buf, r);
        assert!(matches!(
            read(&buf, HEADER_LEN),
            Err(ReadError::BadCheckpoint { .. })
        ));
        // A pool of an undeclared type.
        let mut cp = Checkpoint::new(0);
        cp.pool(TypeId(777)).entry(1).put_u8(0);
        let (buf, last) = chunk(&[cp]);
        assert!(matches!(
            read(&buf, last),
            Err(ReadError::UnknownType { id: 777, .. })
        ));
        // Not a checkpoint at all.
        let mut buf = vec![0u8; HEADER_LEN];
        let r = begin_record(&mut buf, TypeId(101));
        end_record(&mut buf, r);
        assert!(matches!(
            read(&buf, HEADER_LEN),
            Err(ReadError::UnexpectedRecord { found: 101, .. })
        ));
    }
}
