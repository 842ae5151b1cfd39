//! Reading chunk files back: everything this crate writes, and files from
//! other writers that stay within the same format.
//!
//! [`read_recording`] parses a whole file into [`RecordingFile`] →
//! [`ChunkRecord`]s, each with its header, [`MetadataRecord`], resolved
//! [`PoolSet`] and [`EventRecord`]s whose fields are [`Value`] trees.
//! Malformed input never panics, never loops and never allocates beyond a
//! bound linear in its size; it returns a [`ReadError`].

mod chunk;
mod chunks;
pub(crate) mod decode;
mod error;
mod event;
mod follow;
pub(crate) mod input;
pub(crate) mod metadata;
mod pools;
mod refs;
mod scan;
mod tree;
mod value;

pub use chunk::{ChunkRecord, ChunkReferences, RecordingFile, check_references, read_recording};
pub use chunks::{ChunkContext, ChunkCounts, ChunkReader};
pub use decode::{MAX_NESTING, MAX_REF_DEPTH, ZERO_WIDTH_BUDGET};
pub use error::ReadError;
pub use event::EventRecord;
pub use follow::ChunkFollower;
pub use metadata::{
    AnnotationRecord, ClassRecord, FieldRecord, MetadataRecord, RegionRecord, SettingRecord,
};
pub use pools::{CheckpointRecord, PoolSet};
pub use refs::{Unresolved, UnresolvedLog};
pub use scan::{ChunkExtent, ChunkScan, RecordCount, chunk_extent, read_chunk, scan_chunk};
pub use value::{Object, Value};
