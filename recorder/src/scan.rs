//! Scanning committed event records for the constants they reference.
//!
//! Emitting threads write constant keys (threads, stack traces) into their
//! events and tag nothing else. The recorder thread, as it copies records
//! into a chunk, walks each record by its type's field layout and collects
//! the keys; the chunk's constant pools are then written from exactly that
//! set. This keeps the hot path free of tagging and makes the chunk hold
//! every constant its events reference, and none that they do not.
//!
//! Invariant: for every record handed to [`Scanner::scan`], every non-zero
//! thread and stack-trace key it contains is in the returned sets.

use std::collections::{BTreeSet, HashMap};

use chunk_writer::TypeId;

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

/// Record walker over the registered types' layouts.
///
/// Layouts are indexed by type id (ids are small and dense: built-ins below
/// 1000, run-time types from 1000) and cut after their last constant-pool
/// field: the walk of a record stops there and jumps to the next record by
/// its size.
#[derive(Debug, Default)]
pub(crate) struct Scanner {
    layouts: Vec<Option<Box<[FieldKind]>>>,
    /// Layouts of ids too large to index (none today).
    other: HashMap<TypeId, Box<[FieldKind]>>,
}

/// A record could not be walked (a bug: records come from our own encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub(crate) at: usize,
}

impl Scanner {
    /// Adds or replaces layouts.
    pub(crate) fn update(&mut self, layouts: Vec<(TypeId, Vec<FieldKind>)>) {
        for (id, mut kinds) in layouts {
            let keep = kinds
                .iter()
                .rposition(|k| k.is_pooled())
                .map_or(0, |i| i + 1);
            kinds.truncate(keep);
            let kinds = kinds.into_boxed_slice();
            match usize::try_from(id.0) {
                Ok(i) if i < 1 << 20 => {
                    if self.layouts.len() <= i {
                        self.layouts.resize(i + 1, None);
                    }
                    self.layouts[i] = Some(kinds);
                }
                _ => {
                    self.other.insert(id, kinds);
                }
            }
        }
    }

    #[inline]
    fn layout(&self, id: u64) -> Option<&[FieldKind]> {
        if id < 1 << 20 {
            self.layouts.get(id as usize).and_then(|l| l.as_deref())
        } else {
            self.other.get(&TypeId(id)).map(|l| &l[..])
        }
    }

    /// Walks the records in `bytes`, adding referenced keys to `refs`.
    pub(crate) fn scan(&self, bytes: &[u8], refs: &mut Referenced) -> Result<usize, Malformed> {
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
            if let Some(layout) = self.layout(ty) {
                let mut rec = Cursor {
                    b: &bytes[..end],
                    pos: c.pos,
                };
                for kind in layout {
                    rec.field(*kind, refs).ok_or(Malformed { at: pos })?;
                }
            }
            pos = end;
            records += 1;
        }
        Ok(records)
    }
}

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
