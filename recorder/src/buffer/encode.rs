//! The record a writer hands to its thread's block: [`Encode`] writes one
//! whole record in place, inside the write section, and tags the constants
//! it references with the section's epoch. Block and slot both name it,
//! so it sits below both.
//!
//! Invariant: an encoder writes only into the `buf` it is given and
//! reports exactly the bytes it wrote; `None` or `Some(0)` commits nothing.

/// A record that encodes itself into a thread's block: the whole record at
/// the start of `buf`, returning its length, or `None` if it does not fit.
/// `Some(0)` abandons it: nothing is committed.
///
/// A trait rather than a closure so the hot path's encoder can be forced
/// inline (`#[inline(always)]` cannot be put on a closure).
pub(crate) trait Encode {
    /// Encodes the record at the start of `buf`, in the write section of
    /// `epoch`: the constants it references other than the writer's own
    /// thread are tagged with `epoch` (see the module docs).
    fn encode(&self, buf: &mut [u8], epoch: u64) -> Option<usize>;

    /// [`encode`](Self::encode) into a `buf` the caller checked to hold at
    /// least `room` bytes (a bounded write checks its block for
    /// [`MAX_LEN`](Self::MAX_LEN) bytes first): an encoder that checks its
    /// positions against `room`, a constant there, rather than against
    /// `buf.len()` has those checks resolved at compile time. `room` is a
    /// promise about `buf`, never a limit on the record: an encoder must
    /// still not write past `buf.len()` if it is wrong.
    #[inline(always)]
    fn encode_in(&self, buf: &mut [u8], room: usize, epoch: u64) -> Option<usize> {
        let _ = room;
        self.encode(buf, epoch)
    }

    /// True if `encode` never abandons the record (never returns
    /// `Some(0)`): the block then counts the record without testing its
    /// length.
    const NEVER_EMPTY: bool = false;

    /// The longest record `encode` writes, if bounded: with a bound, the
    /// writer checks its block for room once, before encoding, and encodes
    /// the record exactly once (see [`crate::buffer::slot`]).
    const MAX_LEN: Option<usize> = None;

    /// The longest record `encode` writes, if bounded, known only at run
    /// time (a record of a type declared at run time): taken when
    /// [`MAX_LEN`](Self::MAX_LEN) is `None`, with the same contract.
    #[inline(always)]
    fn max_len(&self) -> Option<usize> {
        Self::MAX_LEN
    }
}

impl<F: Fn(&mut [u8]) -> Option<usize>> Encode for F {
    /// A record that references no constant but the writer's thread.
    #[inline(always)]
    fn encode(&self, buf: &mut [u8], _epoch: u64) -> Option<usize> {
        self(buf)
    }
}
