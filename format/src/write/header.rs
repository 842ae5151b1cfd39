//! The 68-byte chunk header, all fixed-width big-endian.
//!
//! ```text
//! off size field
//!   0    4 magic "FLR\0"
//!   4    2 major version (2)
//!   6    2 minor version (1)
//!   8    8 chunk size, header included
//!  16    8 offset of the last checkpoint event (relative to chunk start)
//!  24    8 offset of the metadata event
//!  32    8 start, wall clock, ns since the Unix epoch
//!  40    8 duration, ns
//!  48    8 start, ticks
//!  56    8 ticks per second
//!  64    1 state: 0 finished, 1..=254 in-progress generation, 255 being updated
//!  65    1 padding
//!  66    2 flags: bit 0 compressed integers, bit 1 final chunk
//! ```
//!
//! Invariant: a writer sets the state byte last, so a reader that sees state 0
//! sees every other field final (see [`crate::write::chunk`]).

/// Header length in bytes.
pub const HEADER_LEN: usize = 68;
/// `FLR\0`.
pub const MAGIC: [u8; 4] = *b"FLR\0";
/// Major version written.
pub const MAJOR: u16 = 2;
/// Minor version written.
pub const MINOR: u16 = 1;
/// Offset of the state byte.
pub const STATE_OFFSET: usize = 64;
/// Flag: varints are used for integers.
pub const FLAG_COMPRESSED_INTS: u16 = 0x1;
/// Flag: no chunk follows in this recording.
pub const FLAG_FINAL_CHUNK: u16 = 0x2;
/// State byte of a finished chunk.
pub const STATE_FINISHED: u8 = 0;
/// State byte while the header is being rewritten.
pub const STATE_UPDATING: u8 = 255;

/// The fields of a chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Chunk size in bytes, header included.
    pub chunk_size: i64,
    /// Offset of the last checkpoint event, 0 if none.
    pub constant_pool_offset: i64,
    /// Offset of the metadata event, 0 if none yet.
    pub metadata_offset: i64,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_nanos: i64,
    /// Duration in ns.
    pub duration_nanos: i64,
    /// Tick clock at the start.
    pub start_ticks: i64,
    /// Tick frequency.
    pub ticks_per_second: i64,
    /// 0 finished, 1..=254 in progress, 255 being updated.
    pub state: u8,
    /// Flag bits.
    pub flags: u16,
}

impl ChunkHeader {
    /// The header of a chunk that was just opened: size 68, no offsets,
    /// generation 1.
    pub fn open(start_nanos: i64, start_ticks: i64, ticks_per_second: i64) -> Self {
        Self {
            major: MAJOR,
            minor: MINOR,
            chunk_size: HEADER_LEN as i64,
            constant_pool_offset: 0,
            metadata_offset: 0,
            start_nanos,
            duration_nanos: 0,
            start_ticks,
            ticks_per_second,
            state: 1,
            flags: FLAG_COMPRESSED_INTS,
        }
    }

    /// True if the state byte says the chunk is finished.
    pub fn is_finished(&self) -> bool {
        self.state == STATE_FINISHED
    }

    /// The 68 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&self.major.to_be_bytes());
        b[6..8].copy_from_slice(&self.minor.to_be_bytes());
        b[8..64].copy_from_slice(&self.mutable_bytes()[..56]);
        b[64] = self.state;
        b[65] = 0;
        b[66..68].copy_from_slice(&self.flags.to_be_bytes());
        b
    }

    /// Bytes 8..64 (everything between the version and the state byte).
    pub fn mutable_bytes(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        let fields = [
            self.chunk_size,
            self.constant_pool_offset,
            self.metadata_offset,
            self.start_nanos,
            self.duration_nanos,
            self.start_ticks,
            self.ticks_per_second,
        ];
        for (slot, v) in b.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    /// Parses a header. Checks the magic only; the caller judges versions
    /// and sizes.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        if b[0..4] != MAGIC {
            return None;
        }
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let i64_at = |i: usize| i64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(Self {
            major: u16_at(4),
            minor: u16_at(6),
            chunk_size: i64_at(8),
            constant_pool_offset: i64_at(16),
            metadata_offset: i64_at(24),
            start_nanos: i64_at(32),
            duration_nanos: i64_at(40),
            start_ticks: i64_at(48),
            ticks_per_second: i64_at(56),
            state: b[64],
            flags: u16_at(66),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_documented_jdk_header() {
        let h = ChunkHeader {
            major: 2,
            minor: 1,
            chunk_size: 628630,
            constant_pool_offset: 628535,
            metadata_offset: 9526,
            start_nanos: 0x18ecba78b8303b31,
            duration_nanos: 0xb95898ff,
            start_ticks: 0x171a14c6,
            ticks_per_second: 1_000_000_000,
            state: 0,
            flags: 3,
        };
        let b = h.to_bytes();
        assert_eq!(&b[..8], &[0x46, 0x4c, 0x52, 0x00, 0, 2, 0, 1]);
        assert_eq!(&b[8..16], &[0, 0, 0, 0, 0, 0x09, 0x97, 0x96]);
        assert_eq!(&b[64..], &[0, 0, 0, 3]);
        assert_eq!(ChunkHeader::parse(&b), Some(h));
        assert_eq!(ChunkHeader::parse(&b[..67]), None);
    }
}
