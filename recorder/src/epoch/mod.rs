//! The epoch and its rotation: the safepoint that closes an epoch, the
//! drains that move its events out of the blocks, and the asymmetric fence
//! that lets writers open a section with only a compiler fence.

pub(crate) mod membarrier;
pub(crate) mod rotation;
