//! Record framing: `size:varint typeId:varint payload`, where `size` counts
//! every byte of the record including its own.
//!
//! # Reserve, then patch
//!
//! The size is unknown until the payload is written, and its own width
//! depends on it. A record starts with a one-byte slot; when it ends, the
//! smallest width `w` with `varint_len(body + w) == w` is found, and if `w > 1`
//! the body moves right by `w - 1` bytes (only records of 128 bytes or more
//! pay that copy). The size is then written unpadded, so records hold no
//! padding (a writer that aligns its file adds whole filler records, see
//! [`crate::write::checkpoint::filler`]).
//!
//! Invariant: after [`end_record`] / [`EventEncoder::finish`] the bytes from
//! the record start are exactly one well-formed record.

use crate::types::TypeId;
use crate::write::encode::{MAX_VARINT_LEN, Sink, SliceSink, encode_varint, varint_len};

/// The total size of a record whose body (everything after the size field)
/// is `body` bytes long, and the width of its size field.
#[inline]
pub fn framed_size(body: usize) -> (usize, usize) {
    let mut width = 1;
    while varint_len((body + width) as u64) != width {
        width += 1;
    }
    (body + width, width)
}

/// Where a record started in a `Vec<u8>`; returned by [`begin_record`].
#[derive(Debug, Clone, Copy)]
#[must_use = "a record must be closed with end_record"]
pub struct RecordStart(usize);

/// Starts a record of type `type_id` at the end of `out`.
pub fn begin_record(out: &mut Vec<u8>, type_id: TypeId) -> RecordStart {
    let start = out.len();
    out.push(0); // size slot, patched by end_record
    out.put_varint(type_id.0);
    RecordStart(start)
}

/// Closes the record started at `start`, writing its size. Returns the
/// record's total length.
pub fn end_record(out: &mut Vec<u8>, start: RecordStart) -> usize {
    let body = out.len() - start.0 - 1;
    let (total, width) = framed_size(body);
    if width > 1 {
        let at = start.0 + 1;
        out.splice(at..at, std::iter::repeat_n(0, width - 1));
    }
    let mut tmp = [0u8; MAX_VARINT_LEN];
    let n = encode_varint(total as u64, &mut tmp);
    debug_assert_eq!(n, width);
    out[start.0..start.0 + n].copy_from_slice(&tmp[..n]);
    total
}

/// Encodes one event record into a caller-provided buffer, without
/// allocating and without panicking: the recorder's hot path.
///
/// ```
/// use jfr_format::{write::encode::Sink, write::record::EventEncoder, types::TypeId};
/// let mut buf = [0u8; 16];
/// let mut e = EventEncoder::begin(&mut buf, TypeId(10));
/// e.put_varint(1005); // startTime
/// e.put_varint(42);
/// let n = e.finish().unwrap();
/// assert_eq!(&buf[..n], &[0x05, 0x0a, 0xed, 0x07, 0x2a]);
/// ```
#[derive(Debug)]
pub struct EventEncoder<'a> {
    sink: SliceSink<'a>,
}

impl<'a> EventEncoder<'a> {
    /// Starts an event of type `type_id` at the start of `buf`.
    #[inline]
    pub fn begin(buf: &'a mut [u8], type_id: TypeId) -> Self {
        let mut sink = SliceSink::new(buf);
        sink.put_u8(0); // size slot, patched by finish
        sink.put_varint(type_id.0);
        Self { sink }
    }

    /// Closes the record and returns its length, or `None` if it did not fit
    /// in the buffer (nothing usable was written then).
    #[inline]
    pub fn finish(mut self) -> Option<usize> {
        if self.sink.overflowed() {
            return None;
        }
        let body = self.sink.position() - 1;
        if body < 127 {
            // The common case: the one-byte slot holds the size.
            self.sink.buf_mut()[0] = (body + 1) as u8;
            return Some(body + 1);
        }
        frame_large(self.sink.buf_mut(), body)
    }
}

/// Frames a record written after a one-byte size slot whose body (the bytes
/// after the slot) is `body` long, when the size needs more than one byte:
/// moves the body right to make room and writes the size. Returns the
/// record's length, or `None` if the framed record exceeds `buf`.
///
/// For encoders that reserve one byte for the size, as [`EventEncoder`]
/// does; records under 128 bytes just store their length in the slot.
///
/// ```
/// use jfr_format::write::record::frame_large;
/// let mut buf = vec![0u8; 140];
/// buf[1..131].fill(7); // slot + 130 bytes of body
/// assert_eq!(frame_large(&mut buf, 130), Some(132));
/// assert_eq!(&buf[..3], &[0x84, 0x01, 7]); // size 132, body moved by one
/// ```
#[cold]
#[inline(never)]
pub fn frame_large(buf: &mut [u8], body: usize) -> Option<usize> {
    let (total, width) = framed_size(body);
    if total > buf.len() {
        return None;
    }
    buf.copy_within(1..1 + body, width);
    let mut tmp = [0u8; MAX_VARINT_LEN];
    let n = encode_varint(total as u64, &mut tmp);
    buf[..n].copy_from_slice(&tmp[..n]);
    Some(total)
}

impl Sink for EventEncoder<'_> {
    #[inline(always)]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.sink.put_slice(bytes);
    }

    #[inline(always)]
    fn put_u8(&mut self, v: u8) {
        self.sink.put_u8(v);
    }

    #[inline(always)]
    fn put_varint(&mut self, v: u64) {
        self.sink.put_varint(v);
    }

    #[inline(always)]
    fn put_varint_fixed9(&mut self, v: u64) {
        self.sink.put_varint_fixed9(v);
    }

    #[inline(always)]
    fn position(&self) -> usize {
        self.sink.position()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_sizes_are_fixed_points() {
        for body in [0, 1, 126, 127, 128, 16380, 16381, 16382, 1 << 21] {
            let (total, width) = framed_size(body);
            assert_eq!(total, body + width);
            assert_eq!(varint_len(total as u64), width, "body {body}");
        }
    }

    #[test]
    fn large_records_shift_identically_in_vec_and_slice() {
        for len in [125usize, 126, 127, 200, 20000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut v = Vec::new();
            let s = begin_record(&mut v, TypeId(1234));
            v.extend_from_slice(&payload);
            let total = end_record(&mut v, s);
            assert_eq!(total, v.len());

            let mut buf = vec![0u8; len + 16];
            let mut e = EventEncoder::begin(&mut buf, TypeId(1234));
            e.put_slice(&payload);
            let n = e.finish().unwrap();
            assert_eq!(&buf[..n], &v[..], "len {len}");
        }
    }

    #[test]
    fn encoder_reports_overflow() {
        let mut buf = [0u8; 4];
        let mut e = EventEncoder::begin(&mut buf, TypeId(1000));
        e.put_varint(u64::MAX);
        assert_eq!(e.finish(), None);
        // Fits before the shift, not after: still reported.
        let mut buf = vec![0u8; 130];
        let mut e = EventEncoder::begin(&mut buf, TypeId(5));
        e.put_slice(&[7u8; 128]);
        assert_eq!(e.finish(), None);
    }
}
