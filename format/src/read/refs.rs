//! Constant-pool references that do not resolve in their chunk.
//!
//! The JDK reads a reference to a key its chunk does not define as `null`
//! (`jfr print` shows `N/A`) without a word; other readers fail or drop the
//! event. The reader resolves the same way ([`Value::Null`]) but notes
//! every such reference, from an event or from another constant, in an
//! [`UnresolvedLog`]: [`check_references`] reports them per chunk.
//!
//! Key 0 is the null reference (no stack trace, no parent thread group),
//! never an unresolved one.
//!
//! Invariant: the log keeps at most [`UnresolvedLog::KEPT`] references and
//! counts all of them, so a file full of dangling keys costs bounded
//! memory.
//!
//! [`Value::Null`]: super::Value::Null
//! [`check_references`]: super::check_references

use crate::types::TypeId;

/// One reference to a key its chunk's pools do not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unresolved {
    /// The pool's type (e.g. `java.lang.Thread`).
    pub type_id: TypeId,
    /// The key referenced.
    pub key: u64,
    /// The type whose value holds the reference: an event type, or the
    /// type of the constant that references another.
    pub used_by: TypeId,
}

/// The unresolved references found, the first few kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnresolvedLog {
    first: Vec<Unresolved>,
    total: u64,
}

impl UnresolvedLog {
    /// How many references the log keeps.
    pub const KEPT: usize = 16;

    /// Notes `r`.
    pub(crate) fn note(&mut self, r: Unresolved) {
        self.total += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(r);
        }
    }

    /// Adds every reference of `other`.
    pub(crate) fn absorb(&mut self, other: &UnresolvedLog) {
        let room = Self::KEPT.saturating_sub(self.first.len());
        self.first.extend(other.first.iter().take(room).copied());
        self.total += other.total;
    }

    /// How many unresolved references there were.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The first [`KEPT`](Self::KEPT) of them, in the order found.
    pub fn first(&self) -> &[Unresolved] {
        &self.first
    }

    /// True if every reference resolved.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_and_counts_all() {
        let mut log = UnresolvedLog::default();
        for key in 1..=40 {
            log.note(Unresolved {
                type_id: TypeId::THREAD,
                key,
                used_by: TypeId::THREAD_END,
            });
        }
        assert_eq!(log.total(), 40);
        assert_eq!(log.first().len(), UnresolvedLog::KEPT);
        assert_eq!(log.first()[0].key, 1);
        let mut all = UnresolvedLog::default();
        all.absorb(&log);
        all.absorb(&log);
        assert_eq!(all.total(), 80);
        assert_eq!(all.first().len(), UnresolvedLog::KEPT);
        assert!(!all.is_empty() && UnresolvedLog::default().is_empty());
    }
}
