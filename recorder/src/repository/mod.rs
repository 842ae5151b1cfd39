//! The disk repository and the files flightrec names: one private directory
//! of chunk files, their names and the directories held open by descriptor,
//! the repositories earlier processes left behind, and turning a repository
//! into one `.jfr` file.
//!
//! Invariant: flightrec writes only files it created itself, in a directory
//! it opened and checked (its owner, its mode); a path a user gives is never
//! followed into something else (a device, another user's file).

pub(crate) mod assemble;
pub(crate) mod dir;
pub(crate) mod files;
pub(crate) mod reap;
pub(crate) mod retention;
pub(crate) mod stale;
pub(crate) mod store;

pub use crate::config::builder::RepositoryProblem;
pub use assemble::{AssembleError, Assembled, SkipReason, SkippedChunk, assemble, recover_chunk};
pub use files::DestinationProblem;
pub use stale::{StaleRepository, set_warn as set_warn_stale, stale_repositories};
pub use store::ChunkFile;
