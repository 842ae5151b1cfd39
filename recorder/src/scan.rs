//! Scanning committed event records for the constants they reference.
//!
//! Emitting threads write constant keys (threads, stack traces) into their
//! events and tag nothing else. The recorder thread, as it copies records
//! into a chunk, walks each record by its type's field layout and collects
//! the keys; the chunk's constant pools are then written from exactly that
//! set. This keeps the hot path free of tagging and makes the chunk hold
//! every constant its events reference, and none that they do not.
//!
//! # Start times
//!
//! Events of registered types carry their start time raw in a slot of
//! [`RAW_START_LEN`] bytes (the clock value, little-endian, in the first
//! eight; the ninth is not written): encoding it as a varint on the emitting
//! thread was the largest single cost of a commit after the clock read. The
//! walk rewrites the slot in place as the nine-byte padded varint of the
//! same value (see `encode_varint_fixed9`), so what reaches the chunk is
//! plain JFR, no record changes size, and every clock value fits (a TSC
//! passes 2^56 after some 300 days of uptime, so eight bytes would not). Built-in
//! records (CPU samples and the like) are written whole by their encoders
//! and walked as they are.
//!
//! Invariant: for every record handed to [`Scanner::scan`], every non-zero
//! thread and stack-trace key it contains is in the returned sets, and after
//! the walk every record of a raw-start layout holds its start time as a
//! varint.

use std::collections::{BTreeSet, HashMap};

use chunk_writer::TypeId;
use chunk_writer::encode::{MAX_VARINT_LEN, encode_varint_fixed9};

use crate::event::field::FieldKind;

/// Keys referenced by the records scanned so far.
#[derive(Debug, Default)]
pub(crate) struct Referenced {
    pub(crate) threads: BTreeSet<u64>,
    pub(crate) stacks: BTreeSet<u64>,
    /// The last key inserted into each set: consecutive records of one
    /// block almost always repeat it, and a compare is cheaper than a set
    /// insert.
    last_thread: u64,
    last_stack: u64,
}

impl Referenced {
    #[inline]
    fn thread(&mut self, k: u64) {
        if k != 0 && k != self.last_thread {
            self.last_thread = k;
            self.threads.insert(k);
        }
    }

    #[inline]
    fn stack(&mut self, k: u64) {
        if k != 0 && k != self.last_stack {
            self.last_stack = k;
            self.stacks.insert(k);
        }
    }
}

/// How to walk the records of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// The type.
    pub(crate) id: TypeId,
    /// True if the payload starts with a raw eight-byte start time (see the
    /// module docs); `kinds` then describes the fields after it.
    pub(crate) raw_start: bool,
    /// The kinds of the payload's fields, in order.
    pub(crate) kinds: Vec<FieldKind>,
}

/// A stored layout: the kinds cut after the last pooled field.
#[derive(Debug, Clone)]
struct Walk {
    raw_start: bool,
    kinds: Box<[FieldKind]>,
}

/// Record walker over the registered types' layouts.
///
/// Layouts are indexed by type id (ids are small and dense: built-ins below
/// 1000, run-time types from 1000) and cut after their last constant-pool
/// field: the walk of a record stops there and jumps to the next record by
/// its size.
#[derive(Debug, Default)]
pub(crate) struct Scanner {
    layouts: Vec<Option<Walk>>,
    /// Layouts of ids too large to index (none today).
    other: HashMap<TypeId, Walk>,
}

/// A record could not be walked (a bug: records come from our own encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub(crate) at: usize,
}

impl Scanner {
    /// Adds or replaces layouts.
    pub(crate) fn update(&mut self, layouts: Vec<Layout>) {
        for Layout {
            id,
            raw_start,
            mut kinds,
        } in layouts
        {
            let keep = kinds
                .iter()
                .rposition(|k| k.is_pooled())
                .map_or(0, |i| i + 1);
            kinds.truncate(keep);
            let walk = Walk {
                raw_start,
                kinds: kinds.into_boxed_slice(),
            };
            match usize::try_from(id.0) {
                Ok(i) if i < 1 << 20 => {
                    if self.layouts.len() <= i {
                        self.layouts.resize(i + 1, None);
                    }
                    self.layouts[i] = Some(walk);
                }
                _ => {
                    self.other.insert(id, walk);
                }
            }
        }
    }

    #[inline]
    fn layout(&self, id: u64) -> Option<&Walk> {
        if id < 1 << 20 {
            self.layouts.get(id as usize).and_then(|l| l.as_ref())
        } else {
            self.other.get(&TypeId(id))
        }
    }

    /// Walks the records in `bytes`: collects their constant keys into
    /// `refs` and rewrites raw start times as varints (see the module docs).
    /// Returns the number of records, or where the first malformed one
    /// starts.
    pub(crate) fn scan(&self, bytes: &mut [u8], refs: &mut Referenced) -> Result<usize, Malformed> {
        let mut pos = 0;
        let mut records = 0;
        while pos < bytes.len() {
            let mut c = Cursor { b: bytes, pos };
            let size = c.varint().ok_or(Malformed { at: pos })? as usize;
            let end = pos
                .checked_add(size)
                .filter(|&e| e <= bytes.len() && size > 0)
                .ok_or(Malformed { at: pos })?;
            let ty = c.varint().ok_or(Malformed { at: pos })?;
            let mut at = c.pos;
            if let Some(walk) = self.layout(ty) {
                if walk.raw_start {
                    let raw = bytes
                        .get_mut(at..at + RAW_START_LEN)
                        .filter(|_| at + RAW_START_LEN <= end)
                        .ok_or(Malformed { at: pos })?;
                    rewrite_start(raw);
                    at += RAW_START_LEN;
                }
                let mut rec = Cursor {
                    b: &bytes[..end],
                    pos: at,
                };
                for kind in walk.kinds.iter() {
                    rec.field(*kind, refs).ok_or(Malformed { at: pos })?;
                }
            }
            pos = end;
            records += 1;
        }
        Ok(records)
    }
}

/// Rewrites a raw start slot (a little-endian clock value in the first
/// eight of its nine bytes) as the nine-byte padded varint of that value.
#[inline]
fn rewrite_start(raw: &mut [u8]) {
    let mut word = [0u8; 8];
    word.copy_from_slice(&raw[..8]);
    raw.copy_from_slice(&encode_varint_fixed9(u64::from_le_bytes(word)));
}

/// The width of a raw start slot: room for the nine-byte varint the drain
/// writes there.
pub(crate) const RAW_START_LEN: usize = MAX_VARINT_LEN;

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn u8(&mut self) -> Option<u8> {
        let v = *self.b.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.pos.checked_add(n)?;
        (end <= self.b.len()).then(|| self.pos = end)
    }

    #[inline]
    fn varint(&mut self) -> Option<u64> {
        if let Some(&b) = self.b.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return Some(u64::from(b));
        }
        self.varint_long()
    }

    fn varint_long(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..8 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        Some(v | u64::from(self.u8()?) << 56)
    }

    fn field(&mut self, kind: FieldKind, refs: &mut Referenced) -> Option<()> {
        match kind {
            FieldKind::Bool | FieldKind::I8 | FieldKind::U8 => self.skip(1),
            FieldKind::F32 => self.skip(4),
            FieldKind::F64 => self.skip(8),
            FieldKind::Thread => {
                refs.thread(self.varint()?);
                Some(())
            }
            FieldKind::StackTrace => {
                refs.stack(self.varint()?);
                Some(())
            }
            FieldKind::String => match self.u8()? {
                0 | 1 => Some(()),
                2 => self.varint().map(drop),
                3 | 5 => {
                    let n = usize::try_from(self.varint()?).ok()?;
                    self.skip(n)
                }
                4 => {
                    let n = self.varint()?;
                    for _ in 0..n {
                        self.varint()?;
                    }
                    Some(())
                }
                _ => None,
            },
            _ => self.varint().map(drop),
        }
    }
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    /// A record as the commit path writes it: raw start, thread, stack, u64.
    fn raw_record(start: u64, thread: u8, stack: u8, value: u8) -> Vec<u8> {
        let mut r = vec![0, 0xe8, 0x07]; // size slot, type id 1000
        r.extend_from_slice(&start.to_le_bytes());
        r.push(0xEE); // the slot's unwritten ninth byte
        r.extend_from_slice(&[thread, stack, value]);
        r[0] = r.len() as u8;
        r
    }

    /// A scanner that knows one type, 1000, with a raw start and `kinds`.
    fn raw_start_scanner(kinds: Vec<FieldKind>) -> Scanner {
        let mut scanner = Scanner::default();
        scanner.update(vec![Layout {
            id: TypeId(1000),
            raw_start: true,
            kinds,
        }]);
        scanner
    }

    /// An independent decoder (not the scanner's `Cursor`): the oracle for
    /// what the scanner wrote.
    fn varint_at(b: &[u8]) -> (u64, usize) {
        let mut v = 0;
        for (i, &x) in b.iter().enumerate().take(8) {
            v |= u64::from(x & 0x7f) << (7 * i);
            if x & 0x80 == 0 {
                return (v, i + 1);
            }
        }
        (v | u64::from(b[8]) << 56, 9)
    }

    #[test]
    fn raw_start_times_become_varints_and_keys_are_found() {
        let scanner = raw_start_scanner(vec![
            FieldKind::Thread,
            FieldKind::StackTrace,
            FieldKind::U64,
        ]);
        let starts = [
            0u64,
            1,
            300,
            0x1234_5678_9abc,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ];
        let mut bytes = Vec::new();
        for (i, &s) in starts.iter().enumerate() {
            bytes.extend(raw_record(s, 5 + i as u8, (i % 2) as u8 * 9, 42));
        }
        let len = bytes.len();
        let mut refs = Referenced::default();
        assert_eq!(scanner.scan(&mut bytes, &mut refs), Ok(starts.len()));
        assert_eq!(bytes.len(), len, "no record changes size");
        let mut pos = 0;
        for (i, &s) in starts.iter().enumerate() {
            let size = bytes[pos] as usize;
            let (v, n) = varint_at(&bytes[pos + 3..]);
            assert_eq!((v, n), (s, 9), "record {i}");
            assert_eq!(
                &bytes[pos + 12..pos + 15],
                &[5 + i as u8, (i % 2) as u8 * 9, 42]
            );
            pos += size;
        }
        assert_eq!(refs.threads.len(), starts.len());
        assert_eq!(refs.stacks.iter().copied().collect::<Vec<_>>(), vec![9]);
    }

    #[test]
    fn a_raw_start_cut_short_is_malformed() {
        let scanner = raw_start_scanner(vec![FieldKind::Thread]);
        let mut bytes = vec![11, 0xe8, 0x07, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(
            scanner.scan(&mut bytes, &mut Referenced::default()),
            Err(Malformed { at: 0 })
        );
    }
}
