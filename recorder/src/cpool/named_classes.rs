//! Synthetic classes known only by name: the panic locations, the lock
//! names and the allocation classes, each kept by the part that names
//! them. Each kind keeps one
//! [`NamedClasses`] with a key range of its own (`cpool::keys`, all below
//! 2^31): class `i` has key `base + 2i` and its name symbol `base + 2i + 1`,
//! apart from the frame tables' keys (counted from 1) and from each
//! other's ranges.
//!
//! Invariant: a name's index never changes once given (the list only
//! grows), so a key handed to an event stays valid; each chunk defines
//! every class from index 0 ([`NamedClasses::write_constants`] with
//! `from = 0` at the chunk's first checkpoint), so an event can reference
//! any key handed out before its chunk's last checkpoint.

use jfr_format::write::constants::{ClassValue, write_class, write_symbol};
use jfr_format::{Checkpoint, TypeId};

use crate::base::sync::global::{Mutex, MutexGuard};

/// The classes of one kind, in the order their names were first seen.
#[derive(Debug)]
pub(crate) struct NamedClasses {
    base: u64,
    names: Mutex<Vec<String>>,
}

impl NamedClasses {
    /// No classes yet; class `i` will have key `base + 2i`.
    pub(crate) const fn new(base: u64) -> Self {
        Self {
            base,
            names: Mutex::new(Vec::new()),
        }
    }

    fn key_at(&self, i: usize) -> u64 {
        self.base + 2 * i as u64
    }

    fn find_or_add(&self, names: &mut MutexGuard<'_, Vec<String>>, name: &str) -> u64 {
        let i = match names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                names.push(name.to_owned());
                names.len() - 1
            }
        };
        self.key_at(i)
    }

    /// The key of the class named `name`, registering it.
    pub(crate) fn key(&self, name: &str) -> u64 {
        let mut names = self.names.lock();
        self.find_or_add(&mut names, name)
    }

    /// As [`key`](Self::key), but never waits on the lock: `None` after
    /// `tries` failed attempts (yielding between them), as when the thread
    /// that holds it is the one asking (a panic while writing constants).
    pub(crate) fn key_without_waiting(&self, name: &str, tries: usize) -> Option<u64> {
        let mut names = (0..tries).find_map(|_| {
            self.names.try_lock().or_else(|| {
                crate::base::sync::yield_now();
                None
            })
        })?;
        Some(self.find_or_add(&mut names, name))
    }

    /// Registers `name` as a new class (the caller knows it is new) and
    /// returns its key.
    pub(crate) fn add(&self, name: String) -> u64 {
        let mut names = self.names.lock();
        names.push(name);
        self.key_at(names.len() - 1)
    }

    /// Defines, in `cp`, the classes registered since the `from`th (class
    /// and name symbol); returns how many are defined now. A chunk starts
    /// at 0, so each chunk defines every class its events can reference.
    pub(crate) fn write_constants(&self, cp: &mut Checkpoint, from: usize) -> usize {
        let names = self.names.lock();
        let n = names.len();
        if from >= n {
            return n;
        }
        {
            let mut pool = cp.pool(TypeId::CLASS);
            for i in from..n {
                let k = self.key_at(i);
                let value = ClassValue {
                    class_loader: 0,
                    name: k + 1,
                    package: 0,
                    modifiers: 1,
                    hidden: false,
                };
                write_class(pool.entry(k), &value);
            }
        }
        let mut pool = cp.pool(TypeId::SYMBOL);
        for (i, name) in names.iter().enumerate().skip(from) {
            write_symbol(pool.entry(self.key_at(i) + 1), name);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_spaced_by_two() {
        let c = NamedClasses::new(1 << 45);
        assert_eq!(c.key("a"), 1 << 45);
        assert_eq!(c.key("b"), (1 << 45) + 2);
        assert_eq!(c.key("a"), 1 << 45);
        assert_eq!(c.key_without_waiting("b", 1), Some((1 << 45) + 2));
        assert_eq!(c.add("c".to_owned()), (1 << 45) + 4);
    }

    #[test]
    fn a_held_lock_is_not_waited_on() {
        let c = NamedClasses::new(8);
        let _held = c.names.lock();
        assert_eq!(c.key_without_waiting("x", 3), None);
    }
}
