//! [`ReadError`]: why a recording could not be read, with the file offset at
//! which reading stopped and what was expected there.
//!
//! Every offset is absolute (from the start of the bytes given to
//! [`read_recording`](super::read_recording)), so a hex dump of the file
//! shows the culprit directly.

use std::fmt;

/// Why a recording could not be read.
///
/// The reader never panics on malformed input: every way the bytes can be
/// wrong ends in one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// A read needed more bytes than the file (or the enclosing record, or
    /// chunk) holds.
    Truncated {
        /// Offset of the read.
        at: u64,
        /// Bytes the read needed.
        needed: u64,
        /// Bytes that were left.
        available: u64,
    },
    /// The bytes at a chunk start are not `FLR\0`.
    BadMagic {
        /// Offset of the chunk start.
        at: u64,
    },
    /// The chunk's major version is not 2.
    UnsupportedVersion {
        /// Offset of the chunk start.
        at: u64,
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
    },
    /// The header's chunk size is below the header length or runs past the
    /// end of the file.
    BadChunkSize {
        /// Offset of the chunk start.
        at: u64,
        /// Size the header claims.
        size: i64,
        /// Bytes from the chunk start to the end of the file.
        available: u64,
    },
    /// A header offset (metadata or constant pool) points outside the chunk
    /// body.
    BadOffset {
        /// Offset of the chunk start.
        at: u64,
        /// Which header field.
        field: &'static str,
        /// The offset it holds, relative to the chunk start.
        offset: i64,
    },
    /// The chunk header has no metadata offset.
    NoMetadata {
        /// Offset of the chunk start.
        at: u64,
    },
    /// A record size is 0 or the record runs past the end of its chunk.
    BadSize {
        /// Offset of the record.
        at: u64,
        /// Size it claims.
        size: u64,
    },
    /// A header offset points at a record of the wrong type.
    UnexpectedRecord {
        /// Offset of the record.
        at: u64,
        /// The record type expected (0 metadata, 1 checkpoint).
        expected: u64,
        /// The record type found.
        found: u64,
    },
    /// A string starts with an encoding byte that is unknown, or not allowed
    /// where it is (constant-pool strings in the metadata).
    BadString {
        /// Offset of the encoding byte.
        at: u64,
        /// The encoding byte.
        encoding: u8,
    },
    /// The metadata event is malformed.
    BadMetadata {
        /// Offset of the offending element (or of the metadata record).
        at: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A type id is used (by a field, annotation, setting or pool) but not
    /// declared in the chunk's metadata.
    UnknownType {
        /// Offset where the id was found.
        at: u64,
        /// The undeclared id.
        id: u64,
    },
    /// A checkpoint is malformed: its delta does not point backwards into the
    /// chunk, or its content does not fill its record exactly.
    BadCheckpoint {
        /// Offset of the checkpoint record.
        at: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// An array holds more elements than its record has bytes for.
    BadCount {
        /// Offset of the count.
        at: u64,
        /// The count found.
        count: u64,
    },
    /// Values nest deeper than the reader's limit.
    TooDeep {
        /// Offset of the value that went too deep.
        at: u64,
        /// The limit.
        limit: usize,
    },
    /// Values that occupy no bytes (structs without fields) exceeded the
    /// reader's budget for them.
    BudgetExceeded {
        /// Offset where the budget ran out.
        at: u64,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                at,
                needed,
                available,
            } => write!(
                f,
                "at {at}: needed {needed} bytes but only {available} are left"
            ),
            Self::BadMagic { at } => write!(f, "at {at}: not a chunk (magic is not FLR\\0)"),
            Self::UnsupportedVersion { at, major, minor } => {
                write!(f, "at {at}: unsupported chunk version {major}.{minor}")
            }
            Self::BadChunkSize {
                at,
                size,
                available,
            } => write!(
                f,
                "at {at}: chunk size {size} is invalid ({available} bytes are left in the file)"
            ),
            Self::BadOffset { at, field, offset } => {
                write!(
                    f,
                    "chunk at {at}: {field} offset {offset} is outside the chunk"
                )
            }
            Self::NoMetadata { at } => write!(f, "chunk at {at}: no metadata event"),
            Self::BadSize { at, size } => write!(f, "at {at}: invalid record size {size}"),
            Self::UnexpectedRecord {
                at,
                expected,
                found,
            } => write!(
                f,
                "at {at}: expected a record of type {expected}, found type {found}"
            ),
            Self::BadString { at, encoding } => {
                write!(f, "at {at}: string encoding {encoding} is not allowed here")
            }
            Self::BadMetadata { at, reason } => write!(f, "at {at}: bad metadata: {reason}"),
            Self::UnknownType { at, id } => write!(f, "at {at}: type id {id} is not declared"),
            Self::BadCheckpoint { at, reason } => {
                write!(f, "checkpoint at {at}: {reason}")
            }
            Self::BadCount { at, count } => {
                write!(f, "at {at}: count {count} exceeds the bytes left")
            }
            Self::TooDeep { at, limit } => {
                write!(f, "at {at}: values nest deeper than {limit} levels")
            }
            Self::BudgetExceeded { at } => {
                write!(f, "at {at}: too many values that occupy no bytes")
            }
        }
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_the_offset() {
        let e = ReadError::Truncated {
            at: 70,
            needed: 4,
            available: 1,
        };
        assert_eq!(e.to_string(), "at 70: needed 4 bytes but only 1 are left");
        let e = ReadError::UnexpectedRecord {
            at: 68,
            expected: 1,
            found: 76,
        };
        assert!(e.to_string().contains("type 76"));
    }
}
