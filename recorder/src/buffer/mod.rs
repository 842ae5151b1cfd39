//! Event buffers: thread-owned blocks, the bounded global pool, and the
//! per-thread write section.

pub(crate) mod block;
pub(crate) mod pool;
pub(crate) mod slot;
