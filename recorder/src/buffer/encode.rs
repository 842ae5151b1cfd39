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
