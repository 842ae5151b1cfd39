//! The constants a record encoded into the thread's scratch references,
//! noted while it is encoded and tagged once its write section is open.
//!
//! Tags carry the epoch of the section that commits the record (see
//! docs/rotation-protocol.md, "Constants"), and a record encoded before its
//! section has no epoch yet: its [`FieldWriter`](super::field::FieldWriter)
//! notes each thread key other than the writer's own, and each stack key
//! with the epoch it was last tagged in and where it sits in the fields.
//! The section tags them all with its epoch before the record is
//! committed; a stack released since is replaced in the copied record by
//! key 0, counted as a dropped stack, as an in-place writer does. A stack
//! key is written padded to nine bytes in the scratch, so that replacement
//! keeps the record's length.
//!
//! Invariant: after [`Refs::tag`] in a section of epoch `e`, every constant
//! the copied record references is tagged `e`, or the reference is 0.

use super::sink::RecordSink;
use crate::runtime::Runtime;

/// The most references one record encoded in the scratch may note; a
/// record with more is dropped as invalid.
const MAX_REFS: usize = 16;

/// One noted reference.
#[derive(Debug, Clone, Copy)]
enum Ref {
    /// A thread key, not the writer's own.
    Thread(u64),
    /// A stack key last tagged in `tagged_in`, its padded varint at `at`
    /// in the fields.
    Stack { key: u64, tagged_in: u64, at: usize },
}

/// The references of the record being encoded (see the module docs).
#[derive(Debug)]
pub(crate) struct Refs {
    items: [Ref; MAX_REFS],
    len: usize,
    overflowed: bool,
}

impl Default for Refs {
    fn default() -> Self {
        Self {
            items: [Ref::Thread(0); MAX_REFS],
            len: 0,
            overflowed: false,
        }
    }
}

impl Refs {
    /// Forgets the previous record's references.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.overflowed = false;
    }

    /// True if the record referenced more constants than can be noted.
    pub(crate) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Notes a thread key.
    pub(crate) fn thread(&mut self, key: u64) {
        self.push(Ref::Thread(key));
    }

    /// Notes a stack key last tagged in `tagged_in`, written padded at `at`.
    pub(crate) fn stack(&mut self, key: u64, tagged_in: u64, at: usize) {
        self.push(Ref::Stack { key, tagged_in, at });
    }

    fn push(&mut self, r: Ref) {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = r;
                self.len += 1;
            }
            None => self.overflowed = true,
        }
    }

    /// In the write section of `epoch`, with the record's fields copied to
    /// `sink` from position `at`: tags every noted constant with `epoch`,
    /// and writes key 0 over a stack released since it was noted.
    pub(crate) fn tag(&self, rt: &Runtime, epoch: u64, sink: &mut RecordSink<'_>, at: usize) {
        for r in &self.items[..self.len] {
            match *r {
                Ref::Thread(key) => rt.threads.tag_key(key, epoch),
                Ref::Stack {
                    key,
                    tagged_in,
                    at: offset,
                } => {
                    if tagged_in != epoch && crate::buffer::slot::tag_stack(rt, key, epoch) == 0 {
                        sink.rewrite_fixed9(at + offset, 0);
                    }
                }
            }
        }
    }
}
