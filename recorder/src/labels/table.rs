//! The process-wide, bounded table of interned label sets.
//!
//! # Mechanism
//!
//! Strings (keys and values alike) are interned to ids `1, 2, ...`; a label
//! set, as its (key id, value id) pairs sorted by key id, is interned to a
//! context id `1, 2, ...`. Both live as long as the process: an id, once
//! given, always names the same string or set, in every file and every
//! upload. One lock guards the table; only scope openings (control path)
//! and snapshots take it.
//!
//! # Bound
//!
//! At most [`MAX_CONTEXTS`] sets, [`MAX_STRINGS`] strings and
//! [`MAX_STRING_BYTES`] bytes of strings. A scope whose merged set would
//! need more gets context 0 (no labels) and is counted once as
//! [`LossCause::LabelsDropped`], so a label with unbounded cardinality (a
//! request id) shows up as losses in the file rather than as memory growth.
//!
//! Invariant: every context id in the table maps to a set whose string ids
//! are all in the table, and the table never exceeds its bounds.

use std::collections::HashMap;

/// A thread's label set: (key, value) string ids, sorted by key id.
pub(super) type Set = Vec<(i64, i64)>;

use crate::base::loss::LossCause;
use crate::base::sync::global::Mutex;

/// Most label sets the table holds.
pub const MAX_CONTEXTS: usize = 16_384;
/// Most distinct label strings (keys and values) the table holds.
pub const MAX_STRINGS: usize = 16_384;
/// Most bytes of label strings the table holds.
pub const MAX_STRING_BYTES: usize = 1 << 20;

#[derive(Debug, Default)]
pub(super) struct Table {
    string_ids: HashMap<Box<str>, i64>,
    /// String id `i` is `strings[i - 1]`.
    pub(super) strings: Vec<Box<str>>,
    string_bytes: usize,
    context_ids: HashMap<Box<[(i64, i64)]>, u64>,
    /// Context id `i` is `contexts[i - 1]`.
    pub(super) contexts: Vec<Box<[(i64, i64)]>>,
}

pub(super) static TABLE: Mutex<Option<Table>> = Mutex::new(None);

impl Table {
    /// The id of `s`, interning it if it fits.
    fn string(&mut self, s: &str) -> Option<i64> {
        if let Some(&id) = self.string_ids.get(s) {
            return Some(id);
        }
        if self.strings.len() >= MAX_STRINGS || self.string_bytes + s.len() > MAX_STRING_BYTES {
            return None;
        }
        self.string_bytes += s.len();
        self.strings.push(s.into());
        let id = self.strings.len() as i64;
        self.string_ids.insert(s.into(), id);
        Some(id)
    }

    /// The context id of `set`, interning it if it fits.
    fn context(&mut self, set: &[(i64, i64)]) -> Option<u64> {
        if let Some(&id) = self.context_ids.get(set) {
            return Some(id);
        }
        if self.contexts.len() >= MAX_CONTEXTS {
            return None;
        }
        self.contexts.push(set.into());
        let id = self.contexts.len() as u64;
        self.context_ids.insert(set.into(), id);
        Some(id)
    }

    /// `base` with `labels` merged over it, and its context id (0 when the
    /// result is empty or does not fit).
    fn merge(&mut self, base: &Set, labels: &[(&str, &str)]) -> (Set, Option<u64>) {
        let mut set = base.clone();
        let mut fits = true;
        for (k, v) in labels {
            let (Some(k), Some(v)) = (self.string(k), self.string(v)) else {
                fits = false;
                continue;
            };
            match set.binary_search_by_key(&k, |&(key, _)| key) {
                Ok(i) => set[i].1 = v,
                Err(i) => set.insert(i, (k, v)),
            }
        }
        if set.is_empty() {
            return (set, Some(0));
        }
        let context = if fits { self.context(&set) } else { None };
        (set, context)
    }
}

/// The set `base` ∪ `labels` (the latter winning on equal keys) and its
/// context id; counts a [`LossCause::LabelsDropped`] (and gives id 0) when
/// it does not fit.
pub(super) fn merge_and_intern(base: &Set, labels: &[(&str, &str)]) -> (Set, u64) {
    let (set, context) = {
        let mut t = TABLE.lock();
        t.get_or_insert_with(Table::default).merge(base, labels)
    };
    match context {
        Some(c) => (set, c),
        None => {
            if let Some(rt) = crate::runtime::get() {
                rt.losses.record(LossCause::LabelsDropped, 0);
            }
            (set, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_are_interned_once_and_merged_by_key() {
        let mut t = Table::default();
        let (a, ca) = t.merge(&Vec::new(), &[("endpoint", "/a"), ("tenant", "t1")]);
        let (b, cb) = t.merge(&Vec::new(), &[("tenant", "t1"), ("endpoint", "/a")]);
        assert_eq!((a.clone(), ca), (b, cb), "order of labels does not matter");
        let (c, cc) = t.merge(&a, &[("tenant", "t2")]);
        assert_ne!(cc, ca);
        assert_eq!(c.len(), 2, "tenant overridden, endpoint kept");
        assert_eq!(t.merge(&Vec::new(), &[]), (Vec::new(), Some(0)));
        assert_eq!(t.contexts.len(), 2);
        assert_eq!(t.strings.len(), 5);
    }

    #[test]
    fn the_table_stops_at_its_bounds() {
        let mut t = Table::default();
        for i in 0..MAX_CONTEXTS {
            let (_, c) = t.merge(
                &Vec::new(),
                &[("k", &(i % 100).to_string()), ("j", &(i / 100).to_string())],
            );
            assert_eq!(c, Some(i as u64 + 1));
        }
        let (_, c) = t.merge(&Vec::new(), &[("k", "new")]);
        assert_eq!(c, None, "no room for another set");
        assert_eq!(t.contexts.len(), MAX_CONTEXTS);
        let (_, c) = t.merge(&Vec::new(), &[("j", "0"), ("k", "1")]);
        assert_eq!(c, Some(2), "known sets still resolve");
        let big = "x".repeat(MAX_STRING_BYTES + 1);
        let mut t = Table::default();
        assert_eq!(t.string(&big), None, "too many bytes");
    }
}
