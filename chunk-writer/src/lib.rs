//! The JFR (JDK Flight Recorder) chunk format, and nothing else: no threads,
//! no global state, no clocks.
//!
//! * [`encode`]: compressed integers, floats, strings, through one [`encode::Sink`].
//! * [`record`]: record framing, and [`record::EventEncoder`], the allocation-free
//!   event encoder the recorder's hot path uses.
//! * [`types`], [`schema`], [`builtin`], [`metadata`]: the type model, the
//!   built-in table and the metadata event generated from it.
//! * [`checkpoint`], [`constants`]: constant pools and the built-in pool values.
//! * [`header`], [`chunk`]: the chunk header and the chunk writer.
//! * [`reader`]: parses everything this crate writes, returning errors (never
//!   panicking) on malformed input.
//!
//! The rules these modules follow are in docs/jfr-format.md; the
//! traps of its §9–11 are each guarded by a test.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod builtin;
pub mod checkpoint;
pub mod chunk;
pub mod constants;
pub mod encode;
pub mod header;
pub mod metadata;
pub mod reader;
pub mod record;
pub mod schema;
pub mod types;

pub use checkpoint::Checkpoint;
pub use chunk::{ChunkEnd, ChunkStart, ChunkWriter};
pub use metadata::{EncodedMetadata, Metadata, SchemaError};
pub use reader::{ReadError, read_recording};
pub use record::EventEncoder;
pub use schema::{Annotation, FieldDesc, SettingDesc, TypeDesc};
pub use types::TypeId;
