//! Writing chunk files: everything from a varint to a finished chunk.
//!
//! * [`encode`]: compressed integers, floats and strings, through one
//!   [`encode::Sink`].
//! * [`record`]: record framing, and [`record::EventEncoder`], the
//!   allocation-free event encoder the recorder's hot path uses.
//! * [`events`]: the writers of the built-in event types, one per type,
//!   each checked against the type table.
//! * [`metadata`]: the metadata event generated from the type table.
//! * [`checkpoint`], [`constants`]: constant pools and the built-in pools'
//!   values.
//! * [`header`], [`chunk`]: the chunk header and the chunk writer.

pub mod checkpoint;
pub mod chunk;
pub mod constants;
pub mod encode;
pub mod events;
pub mod header;
pub mod metadata;
pub mod record;
