//! The bounds-checked cursor every part of the reader decodes through, and
//! record framing.
//!
//! # Cursor
//!
//! An [`Input`] is a window `pos..end` into the whole file. Positions are
//! absolute, so errors carry file offsets. Reads never look past `end`: a
//! record body is read through an `Input` whose `end` is the record end, so
//! a field that runs over its record fails as [`ReadError::Truncated`]
//! instead of reading the next record.
//!
//! # Scalars
//!
//! Compressed integers are the format's base-128 varints with the 9-byte
//! form (the ninth byte contributes 8 bits); padded (non-minimal) forms are
//! accepted. Floats are big-endian IEEE-754. Strings start with an encoding
//! byte 0..=5 (null, empty, constant-pool key, UTF-8, UTF-16 char array,
//! Latin-1); malformed UTF-8 and lone surrogates decode lossily to U+FFFD,
//! as Java's decoders do.
//!
//! Invariant: `pos <= end <= buf.len()` at all times, and every read checks
//! its length against `end` before it moves `pos`, so no read indexes out of
//! bounds and every successful read consumes at least one byte.

use std::borrow::Cow;

use super::error::ReadError;

/// A string as read, before constant-pool references are resolved;
/// borrowed from the input when its bytes are valid UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RawStr<'a> {
    /// Encoding 0.
    Null,
    /// Encodings 1, 3, 4, 5.
    Text(Cow<'a, str>),
    /// Encoding 2: a key into the `java.lang.String` pool.
    Pool(u64),
}

/// A bounds-checked read cursor over `buf[pos..end]`.
#[derive(Debug, Clone)]
pub(crate) struct Input<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Input<'a> {
    /// A cursor over `buf[start..end]`, both clamped to `buf`.
    pub(crate) fn new(buf: &'a [u8], start: usize, end: usize) -> Self {
        let end = end.min(buf.len());
        Self {
            buf,
            pos: start.min(end),
            end,
        }
    }

    /// The absolute position of the next read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// [`pos`](Self::pos) as a file offset for errors.
    pub(crate) fn at(&self) -> u64 {
        self.pos as u64
    }

    /// Bytes left before `end`.
    pub(crate) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    fn truncated(&self, needed: usize) -> ReadError {
        ReadError::Truncated {
            at: self.at(),
            needed: needed as u64,
            available: self.remaining() as u64,
        }
    }

    /// Reads `n` raw bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        if n > self.remaining() {
            return Err(self.truncated(n));
        }
        let out = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or(ReadError::Truncated {
                at: self.at(),
                needed: n as u64,
                available: 0,
            })?;
        self.pos += n;
        Ok(out)
    }

    /// Reads one raw byte.
    pub(crate) fn u8(&mut self) -> Result<u8, ReadError> {
        let b = *self
            .buf
            .get(self.pos)
            .filter(|_| self.pos < self.end)
            .ok_or(ReadError::Truncated {
                at: self.at(),
                needed: 1,
                available: 0,
            })?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads a compressed integer (1 to 9 bytes).
    pub(crate) fn varint(&mut self) -> Result<u64, ReadError> {
        let mut v = 0u64;
        for shift in (0..56).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        // Eight bytes with the continuation bit: the ninth holds bits 56..63.
        Ok(v | u64::from(self.u8()?) << 56)
    }

    /// Reads a count of items that each take at least one byte, so the
    /// count can be no larger than the bytes left.
    pub(crate) fn count(&mut self) -> Result<usize, ReadError> {
        let at = self.at();
        let n = self.varint()?;
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => Err(ReadError::BadCount { at, count: n }),
        }
    }

    /// Reads a big-endian `float`.
    pub(crate) fn f32(&mut self) -> Result<f32, ReadError> {
        let b = self.take(4)?;
        Ok(f32::from_bits(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
    }

    /// Reads a big-endian `double`.
    pub(crate) fn f64(&mut self) -> Result<f64, ReadError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(f64::from_bits(u64::from_be_bytes(a)))
    }

    /// Reads a string. With `allow_pool` false (the metadata string table),
    /// encoding 2 is an error.
    pub(crate) fn string(&mut self, allow_pool: bool) -> Result<RawStr<'a>, ReadError> {
        let at = self.at();
        let encoding = self.u8()?;
        Ok(match encoding {
            0 => RawStr::Null,
            1 => RawStr::Text(Cow::Borrowed("")),
            2 if allow_pool => RawStr::Pool(self.varint()?),
            3 => RawStr::Text(String::from_utf8_lossy(self.byte_string()?)),
            4 => {
                let n = self.count()?;
                let mut units = Vec::with_capacity(n);
                for _ in 0..n {
                    // A char is a 16-bit unit; wider values are cut, as the
                    // JDK's `(char) readLong()` does.
                    units.push(self.varint()? as u16);
                }
                RawStr::Text(Cow::Owned(String::from_utf16_lossy(&units)))
            }
            5 => {
                let bytes = self.byte_string()?;
                RawStr::Text(
                    bytes
                        .iter()
                        .map(|&b| char::from(b))
                        .collect::<String>()
                        .into(),
                )
            }
            _ => return Err(ReadError::BadString { at, encoding }),
        })
    }

    /// A varint length followed by that many bytes.
    fn byte_string(&mut self) -> Result<&'a [u8], ReadError> {
        let len = self.varint()?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.take(len)
    }
}

/// One framed record: `size:varint typeId:varint payload`, where `size`
/// counts every byte of the record.
#[derive(Debug, Clone)]
pub(crate) struct Record<'a> {
    /// Offset of the record's first byte.
    pub(crate) start: usize,
    /// Offset one past its last byte.
    pub(crate) end: usize,
    /// Its type id (0 metadata, 1 checkpoint, else an event type).
    pub(crate) type_id: u64,
    /// The payload after the type id, bounded by `end`.
    pub(crate) body: Input<'a>,
}

impl<'a> Record<'a> {
    /// Frames the record starting at `at`, which must end by `limit`.
    pub(crate) fn read(buf: &'a [u8], at: usize, limit: usize) -> Result<Self, ReadError> {
        let mut head = Input::new(buf, at, limit);
        let size = head.varint()?;
        let bad = ReadError::BadSize {
            at: at as u64,
            size,
        };
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| at.checked_add(s))
            .ok_or(bad.clone())?;
        // The size counts itself, so the record must extend past it.
        if end > limit || end <= head.pos() {
            return Err(bad);
        }
        let mut body = Input::new(buf, head.pos(), end);
        let type_id = body.varint()?;
        Ok(Self {
            start: at,
            end,
            type_id,
            body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::encode::{Sink, padded_varint};

    fn input(b: &[u8]) -> Input<'_> {
        Input::new(b, 0, b.len())
    }

    #[test]
    fn varints_round_trip_including_the_nine_byte_form() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
            i64::MIN as u64,
        ] {
            let mut b = Vec::new();
            b.put_varint(v);
            let mut i = input(&b);
            assert_eq!(i.varint(), Ok(v));
            assert_eq!(i.remaining(), 0);
        }
        // Padded forms decode to their value.
        let p = padded_varint(19, 4).unwrap();
        assert_eq!(input(&p[..4]).varint(), Ok(19));
        // A varint cut short is truncated, not garbage.
        assert!(matches!(
            input(&[0x80, 0x80]).varint(),
            Err(ReadError::Truncated { at: 2, .. })
        ));
    }

    #[test]
    fn reads_stop_at_the_window_end() {
        let b = [1, 2, 3, 4, 5];
        let mut i = Input::new(&b, 1, 3);
        assert_eq!(i.u8(), Ok(2));
        assert!(i.take(2).is_err());
        assert_eq!(i.take(1), Ok(&[3][..]));
        assert!(i.u8().is_err());
        assert!(Input::new(&b, 9, 99).u8().is_err());
        assert!(i.f32().is_err() && i.f64().is_err());
    }

    #[test]
    fn all_six_string_encodings() {
        let mut b = vec![0, 1, 2, 0xac, 0x02, 3, 3];
        b.extend_from_slice("日".as_bytes());
        b.extend_from_slice(&[4, 2, 0xbd, 0xb0, 0x03, 0x80, 0xb8, 0x03]); // U+D83D U+DC00
        b.extend_from_slice(&[5, 2, b'a', 0xe9]);
        let mut i = input(&b);
        let text = |s: &'static str| RawStr::Text(Cow::Borrowed(s));
        assert_eq!(i.string(true), Ok(RawStr::Null));
        assert_eq!(i.string(true), Ok(text("")));
        assert_eq!(i.string(true), Ok(RawStr::Pool(300)));
        assert_eq!(i.string(true), Ok(text("日")));
        assert_eq!(i.string(true), Ok(text("\u{1f400}")));
        assert_eq!(i.string(true), Ok(text("aé")));
        assert_eq!(i.remaining(), 0);
        assert_eq!(
            input(&[2, 1]).string(false),
            Err(ReadError::BadString { at: 0, encoding: 2 })
        );
        assert!(matches!(
            input(&[6]).string(true),
            Err(ReadError::BadString { encoding: 6, .. })
        ));
        // Lengths beyond the input fail before allocating.
        assert!(
            input(&[3, 0xff, 0xff, 0xff, 0xff, 0x0f])
                .string(true)
                .is_err()
        );
        assert!(
            input(&[4, 0xff, 0xff, 0xff, 0xff, 0x0f])
                .string(true)
                .is_err()
        );
        // A lone surrogate and bad UTF-8 decode lossily.
        assert_eq!(
            input(&[4, 1, 0xbd, 0xb0, 0x03]).string(true),
            Ok(text("\u{fffd}"))
        );
        assert_eq!(input(&[3, 1, 0xff]).string(true), Ok(text("\u{fffd}")));
    }

    #[test]
    fn records_are_framed_by_their_size() {
        // size 5, type 10, payload ed 07 2a; then garbage.
        let b = [0x05, 0x0a, 0xed, 0x07, 0x2a, 0xff];
        let r = Record::read(&b, 0, b.len()).unwrap();
        assert_eq!((r.start, r.end, r.type_id), (0, 5, 10));
        assert_eq!(r.body.remaining(), 3);
        for bad in [&[0x00, 0x0a][..], &[0x01, 0x0a], &[0x09, 0x0a]] {
            assert!(matches!(
                Record::read(bad, 0, bad.len()),
                Err(ReadError::BadSize { at: 0, .. })
            ));
        }
        let huge = [0xff; 9];
        assert!(Record::read(&huge, 0, 9).is_err());
        // A record of size 1 holds no type id.
        assert!(matches!(
            Record::read(&[0x01, 0x00], 0, 2),
            Err(ReadError::BadSize { .. })
        ));
    }
}
