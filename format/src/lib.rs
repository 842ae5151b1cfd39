//! The JFR (JDK Flight Recorder) chunk format, read and written, and nothing
//! else: no threads, no global state, no clocks.
//!
//! * [`types`], [`schema`], [`builtin`]: the type model and the table of
//!   built-in types, shared by both directions.
//! * [`write`](mod@write): varints and strings, record framing and the hot path's
//!   allocation-free [`EventEncoder`], the metadata event generated from the
//!   type table, constant pools, the chunk header and the chunk writer.
//! * [`read`]: parses everything this crate writes, returning errors (never
//!   panicking) on malformed input.
//!
//! The rules these modules follow are in docs/jfr-format.md; the
//! traps of its §9–11 are each guarded by a test.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod builtin;
pub mod read;
pub mod schema;
pub mod types;
pub mod write;

pub use read::{ReadError, read_recording};
pub use schema::{Annotation, FieldDesc, SettingDesc, TypeDesc};
pub use types::TypeId;
pub use write::checkpoint::Checkpoint;
pub use write::chunk::{ChunkEnd, ChunkStart, ChunkWriter};
pub use write::metadata::{EncodedMetadata, Metadata, SchemaError};
pub use write::record::EventEncoder;
