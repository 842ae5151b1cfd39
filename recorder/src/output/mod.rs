//! The recorder thread and what it writes: the thread that drains the
//! buffers, rotates and retains chunks and writes dumps; the assembly of one
//! chunk (events, then constants, metadata and the header patch); and the
//! chunk file the bytes go to.
//!
//! Invariant: only the recorder thread writes a chunk, so everything here
//! runs on one thread at a time; a chunk is readable alone once its header
//! is patched (see `docs/rotation-protocol.md`).

pub(crate) mod chunk;
pub(crate) mod chunk_out;
pub(crate) mod recorder_thread;
