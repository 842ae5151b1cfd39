//! Checkpoint (constant-pool) events.
//!
//! ```text
//! size varint | 1 | startTime | duration | delta | typeFlags:u8 | poolCount
//!   pool := typeId count (key value)*
//! ```
//!
//! A [`Checkpoint`] collects pools; the [`crate::write::chunk::ChunkWriter`] frames
//! it, because only the chunk knows `delta`, the (negative) distance to the
//! previous checkpoint in the same chunk.
//!
//! Invariant: a pool is never written with zero entries (the JDK rejects such
//! a file with "Pool … must contain at least one element"): a [`PoolWriter`]
//! that ends empty removes itself.
//!
//! # Fillers
//!
//! A writer that moves whole buffers to the file with direct I/O needs each
//! buffer to start at an aligned file offset: [`filler`] fills the gap before
//! it with one record of exactly the gap's length. It is a checkpoint with
//! no flush flag and no pools, followed by zeros, and it is in no checkpoint
//! chain (no header offset or `delta` leads to it). Readers skip it by its
//! size: the JDK's parser reads a checkpoint it meets among the events only
//! far enough to see whether it ends a flush (`ChunkParser.readEvent`), and
//! loads pools only along the chain; `jfr summary` counts it as one more
//! `jdk.Checkpoint` record.

use crate::types::TypeId;
use crate::write::encode::{Sink, padded_varint};

/// Flag bit: the checkpoint ends a flush segment.
pub const FLAG_FLUSH: u8 = 1;

/// Width of a filler's size field: a padded varint of three bytes (sizes up
/// to 2 MiB).
const FILLER_SIZE_WIDTH: usize = 3;

/// The shortest [`filler`]: the size field, the type id, start time,
/// duration, delta, flags and pool count (one byte each).
pub const FILLER_MIN: usize = FILLER_SIZE_WIDTH + 6;

/// The longest [`filler`].
pub const FILLER_MAX: usize = (1 << (7 * FILLER_SIZE_WIDTH)) - 1;

/// Fills `buf` with one record of exactly `buf.len()` bytes that every reader
/// skips (see the module's *Fillers*). Returns false, writing nothing, if the
/// length is not in `FILLER_MIN..=FILLER_MAX`.
///
/// ```
/// use jfr_format::write::checkpoint::{FILLER_MIN, filler};
/// let mut buf = [0xffu8; 300];
/// assert!(filler(&mut buf));
/// assert_eq!(&buf[..4], &[0xac, 0x82, 0x00, 1]); // size 300, type 1
/// assert!(buf[4..].iter().all(|&b| b == 0));
/// assert!(!filler(&mut [0u8; FILLER_MIN - 1]));
/// ```
pub fn filler(buf: &mut [u8]) -> bool {
    let len = buf.len();
    if !(FILLER_MIN..=FILLER_MAX).contains(&len) {
        return false;
    }
    let Some(size) = padded_varint(len as u64, FILLER_SIZE_WIDTH) else {
        return false;
    };
    buf[..FILLER_SIZE_WIDTH].copy_from_slice(&size[..FILLER_SIZE_WIDTH]);
    buf[FILLER_SIZE_WIDTH] = TypeId::CHECKPOINT.0 as u8;
    // Start time, duration, delta, flags (not a flush), pool count: all 0,
    // then zeros to the end.
    buf[FILLER_SIZE_WIDTH + 1..].fill(0);
    true
}

/// Width of the padded entry-count slot of a pool (up to 2^35 - 1 entries).
const COUNT_WIDTH: usize = 5;

/// The pools of one checkpoint event, before framing.
#[derive(Debug, Default, Clone)]
pub struct Checkpoint {
    body: Vec<u8>,
    pools: u64,
    flags: u8,
}

impl Checkpoint {
    /// An empty checkpoint with the given type flags (e.g. [`FLAG_FLUSH`]).
    pub fn new(flags: u8) -> Self {
        Self {
            body: Vec::new(),
            pools: 0,
            flags,
        }
    }

    /// Starts a pool of `type_id`. Entries are added through the returned
    /// writer; the pool is closed (or removed, if empty) when it drops.
    pub fn pool(&mut self, type_id: TypeId) -> PoolWriter<'_> {
        let start = self.body.len();
        self.body.put_varint(type_id.0);
        let count_at = self.body.len();
        self.body.extend_from_slice(&[0; COUNT_WIDTH]);
        PoolWriter {
            cp: self,
            start,
            count_at,
            count: 0,
        }
    }

    /// True if no pool has entries.
    pub fn is_empty(&self) -> bool {
        self.pools == 0
    }

    /// Number of non-empty pools.
    pub fn pool_count(&self) -> u64 {
        self.pools
    }

    /// Appends the framed checkpoint record to `out`.
    ///
    /// `delta` is the offset of the previous checkpoint minus the offset of
    /// this one (0 for the first checkpoint of a chunk).
    pub fn encode(&self, out: &mut Vec<u8>, start_ticks: i64, duration_ticks: i64, delta: i64) {
        let start = crate::write::record::begin_record(out, TypeId::CHECKPOINT);
        out.put_i64(start_ticks);
        out.put_i64(duration_ticks);
        out.put_i64(delta);
        out.put_u8(self.flags);
        out.put_varint(self.pools);
        out.extend_from_slice(&self.body);
        crate::write::record::end_record(out, start);
    }
}

/// Writes the entries of one pool; see [`Checkpoint::pool`].
#[derive(Debug)]
pub struct PoolWriter<'a> {
    cp: &'a mut Checkpoint,
    start: usize,
    count_at: usize,
    count: u64,
}

impl PoolWriter<'_> {
    /// Starts the entry with key `key`; the caller writes the value's fields
    /// into the returned sink right after.
    pub fn entry(&mut self, key: u64) -> &mut Vec<u8> {
        self.count += 1;
        self.cp.body.put_varint(key);
        &mut self.cp.body
    }

    /// Entries written so far.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True if no entry was written.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl Drop for PoolWriter<'_> {
    fn drop(&mut self) {
        if self.count == 0 {
            self.cp.body.truncate(self.start);
            return;
        }
        let slot = padded_varint(self.count, COUNT_WIDTH).expect("fewer than 2^35 pool entries");
        self.cp.body[self.count_at..self.count_at + COUNT_WIDTH]
            .copy_from_slice(&slot[..COUNT_WIDTH]);
        self.cp.pools += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_pools_vanish() {
        let mut cp = Checkpoint::new(FLAG_FLUSH);
        drop(cp.pool(TypeId::THREAD));
        assert!(cp.is_empty());
        {
            let mut p = cp.pool(TypeId::SYMBOL);
            p.entry(7).put_str("x");
        }
        assert_eq!(cp.pool_count(), 1);
        let mut out = Vec::new();
        cp.encode(&mut out, 5, 0, 0);
        // size, type 1, start 5, dur 0, delta 0, flags 1, 1 pool, type 26,
        // padded count 1, key 7, "x"
        assert_eq!(
            out,
            [
                17, 1, 5, 0, 0, 1, 1, 26, 0x81, 0x80, 0x80, 0x80, 0x00, 7, 3, 1, b'x'
            ]
        );
    }
}
