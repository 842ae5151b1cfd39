//! Event buffers: thread-owned blocks, the bounded global pool (and the
//! huge-page slabs it cuts blocks from), the per-thread write section, and
//! the thread-local handle that finds them.

pub(crate) mod block;
pub(crate) mod encode;
pub(crate) mod local;
pub(crate) mod pool;
pub(crate) mod slab;
pub(crate) mod slot;
