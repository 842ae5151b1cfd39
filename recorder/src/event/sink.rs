//! The commit path's byte cursor: encodes one event record into the free
//! space of the thread's block with one comparison per value.
//!
//! # Slack
//!
//! [`RecordSink`] keeps `fast_below`, the first position at which fewer
//! than [`SLACK`] bytes remain. A value of at most [`SLACK`] bytes written at
//! a position below it needs no other check, so each varint, float or
//! pre-encoded constant is one compare and one unaligned store of a whole
//! word (bytes past the value's length are scratch, overwritten by the next
//! value or outside the record). Near the end of the block, and for strings,
//! the checked path writes exactly the bytes that fit, or marks the sink
//! overflowed; the record is then dropped by [`RecordSink::finish`].
//!
//! # Pre-encoded constants
//!
//! A [`Packed`] holds up to seven varint bytes and their count in one word:
//! an event type's header (size slot and type id) and a thread's key are
//! encoded once, at registration, and written with one store per event.
//!
//! Invariant: after [`RecordSink::finish`] returns `Some(n)`, `buf[..n]` is
//! exactly one well-formed record (`size:varint typeId:varint payload`, with
//! `size` counting itself), and no byte at or past `buf.len()` was touched.

use std::num::NonZeroU64;

use jfr_format::write::encode::{
    MAX_VARINT_LEN, Sink, encode_varint, encode_varint_fixed9, varint_shape,
};
use jfr_format::write::record::frame_large;

/// Free bytes that let [`RecordSink::begin_event`] write an event's
/// implicit fields with one check: the longest header, start time,
/// duration and keys (7 + 9 + 9 + 7) and the eight-byte store of the last,
/// rounded up to a slack past them.
pub(crate) const IMPLICIT_ROOM: usize = 48;

/// Free bytes that make a fixed-size write unchecked. Covers the widest such
/// write (a nine-byte varint or start time, or an eight-byte word store).
pub(crate) const SLACK: usize = 16;

/// One to seven bytes of varints, pre-encoded: bytes in the low seven
/// bytes (little-endian), their count in the top byte.
///
/// Invariant: the count is 1 to 7 (so the word is never 0, and `Option<Packed>`
/// is one word). Only [`Packed::varints`] makes one, or
/// [`Packed::from_stored`] from the bits of one; the sink's unchecked
/// stores count on the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packed(NonZeroU64);

impl Packed {
    /// A record header: the one-byte size slot (0, patched by `finish`;
    /// the same byte as the varint of 0) and the varint of `type_id`, or
    /// `None` if that is more than seven bytes.
    pub(crate) fn header(type_id: u64) -> Option<Self> {
        Self::varints(&[0, type_id])
    }

    /// The varints of `values`, one after the other, or `None` if that is
    /// none or more than seven bytes. Allocates nothing: stack-traced
    /// events call it on every commit.
    pub(crate) fn varints(values: &[u64]) -> Option<Self> {
        let mut p = Bytes::default();
        for &v in values {
            p.push_varint(v);
        }
        p.packed()
    }

    /// The word as stored (see the type's docs): never 0.
    pub(crate) const fn to_bits(self) -> u64 {
        self.0.get()
    }

    /// The `Packed` whose [`to_bits`](Self::to_bits) the caller stored,
    /// with no test: a type's record header, made once at registration.
    ///
    /// # Safety
    ///
    /// `bits` is the `to_bits` of a `Packed` (the invariant's bound on its
    /// count is what the sink's unchecked stores rely on).
    #[inline(always)]
    pub(crate) const unsafe fn from_stored(bits: u64) -> Self {
        // SAFETY: the bits of a `Packed` are never 0, as the caller
        // guarantees they are.
        Self(unsafe { NonZeroU64::new_unchecked(bits) })
    }

    /// How many bytes it holds: 1 to 7 (the type's invariant), said to the
    /// compiler, which then knows how far a record's position can be after
    /// it (the position checks of a bounded record's fields fold away).
    #[inline(always)]
    const fn len(self) -> usize {
        let n = (self.0.get() >> 56) as usize;
        // SAFETY: the type's invariant (see its docs).
        unsafe { std::hint::assert_unchecked(n >= 1 && n <= 7) };
        n
    }
}

/// Bytes being packed: room for more than a `Packed` holds, so pushing
/// never fails; `packed` says whether they fit.
#[derive(Default)]
struct Bytes {
    buf: [u8; 24],
    len: usize,
}

impl Bytes {
    fn push_varint(&mut self, v: u64) {
        let mut tmp = [0u8; MAX_VARINT_LEN];
        let n = encode_varint(v, &mut tmp);
        let end = (self.len + n).min(self.buf.len());
        self.buf[self.len..end].copy_from_slice(&tmp[..end - self.len]);
        self.len += n;
    }

    fn packed(&self) -> Option<Packed> {
        // The type's invariant: 1 to 7 bytes.
        if self.len == 0 || self.len > 7 {
            return None;
        }
        let mut word = [0u8; 8];
        word[..self.len].copy_from_slice(&self.buf[..self.len]);
        word[7] = self.len as u8;
        // Not 0: the top byte is the count, 1 to 7.
        NonZeroU64::new(u64::from_le_bytes(word)).map(Packed)
    }
}

/// The cursor; see the module docs.
#[derive(Debug)]
pub(crate) struct RecordSink<'a> {
    buf: &'a mut [u8],
    /// Where the next byte goes, or [`OVERFLOWED`].
    pos: usize,
    /// `pos < fast_below` ⇒ at least [`SLACK`] bytes are free at `pos`.
    /// [`OVERFLOWED`] once a write did not fit: every later one fails too.
    fast_below: usize,
}

/// The position of a sink a write did not fit: above every buffer, so no
/// fast path is taken and every checked write fails.
const OVERFLOWED: usize = usize::MAX;

impl<'a> RecordSink<'a> {
    /// Starts a record at the start of `buf`: the one-byte size slot
    /// (patched by [`finish`](Self::finish)) and the type id: `Ok`, the two
    /// pre-encoded; `Err`, the id, for one too large to pre-encode.
    #[inline(always)]
    pub(crate) fn begin(buf: &'a mut [u8], header: Result<Packed, u64>) -> Self {
        let fast_below = (buf.len() + 1).saturating_sub(SLACK);
        let mut sink = Self {
            buf,
            pos: 0,
            fast_below,
        };
        match header {
            Ok(h) => sink.put_packed(h),
            Err(type_id) => {
                sink.pos = write_varints_checked(sink.buf, 0, &[0, type_id]).unwrap_or(OVERFLOWED);
            }
        }
        sink
    }

    /// Starts a run of bare field values at the start of `buf`, with no
    /// record header: an event's fields encoded into the thread's scratch,
    /// before its write section (see [`crate::event::scratch`]). Closed by
    /// [`fields_len`](Self::fields_len), never by `finish`.
    pub(crate) fn begin_fields(buf: &'a mut [u8]) -> Self {
        Self {
            fast_below: (buf.len() + 1).saturating_sub(SLACK),
            buf,
            pos: 0,
        }
    }

    /// The bytes written since [`begin_fields`](Self::begin_fields), or
    /// `None` if they did not fit.
    pub(crate) fn fields_len(&self) -> Option<usize> {
        (self.pos != OVERFLOWED).then_some(self.pos)
    }

    /// Rewrites the nine bytes at `at`, written by `put_varint_fixed9`
    /// before the position, as the padded varint of `v`; nothing if the
    /// sink overflowed (its record is dropped anyway).
    pub(crate) fn rewrite_fixed9(&mut self, at: usize, v: u64) {
        if self.pos != OVERFLOWED
            && let Some(dst) = self.buf.get_mut(at..at + MAX_VARINT_LEN)
        {
            dst.copy_from_slice(&encode_varint_fixed9(v));
        }
    }

    /// Starts an event record: the size slot and type id (`header`,
    /// pre-encoded at registration), the start time (see
    /// [`put_start`](Self::put_start)), the duration if any, and the thread
    /// and stack-trace keys.
    ///
    /// `room` is how many bytes the caller checked `buf` to hold (0: none):
    /// a bounded record's largest encoding, a constant. The sink's fast
    /// path then compares positions with that constant instead of
    /// `buf.len()`, and every compare the record's own bound already
    /// decides folds away (the implicit fields' check below, each field's,
    /// the one-byte size in [`finish`](Self::finish)). A `room` larger than
    /// `buf` is not trusted: the sink never writes past `buf.len()`.
    ///
    /// `start` is called for the start time once the other loads the
    /// record's stores need are issued, before the first store (see
    /// `commit::Start`).
    #[inline(always)]
    pub(crate) fn begin_event(
        buf: &'a mut [u8],
        room: usize,
        header: Packed,
        start: impl FnOnce() -> u64,
        duration: Option<i64>,
        keys: Result<Packed, [u64; 2]>,
    ) -> Self {
        // Every load the start's store needs before the clock is read: on
        // the Intel Xeon of docs/performance.md a load issued after
        // `rdtsc` waits for it, and one before it overlaps with it.
        let fast = super::spread::fast();
        let start = start();
        let limit = if room == 0 {
            buf.len()
        } else {
            room.min(buf.len())
        };
        if let Ok(keys) = keys
            && limit >= IMPLICIT_ROOM
        {
            let mut sink = Self {
                fast_below: limit + 1 - SLACK,
                buf,
                pos: 0,
            };
            // SAFETY: the writes below end before byte 7 + 9 + 9 + 8 = 33
            // (a `Packed` is at most seven bytes, its type's invariant; a
            // start time and a varint take at most nine each; each store
            // writes at most eight bytes from its position): inside `buf`,
            // which is at least `limit` ≥ IMPLICIT_ROOM long.
            unsafe {
                sink.store_packed(header);
                sink.store_start_with(start, fast);
                if let Some(d) = duration {
                    sink.store_varint(d as u64);
                }
                sink.store_packed(keys);
            }
            return sink;
        }
        let mut sink = Self::begin(buf, Ok(header));
        sink.put_start(start);
        if let Some(d) = duration {
            sink.put_i64(d);
        }
        match keys {
            Ok(both) => sink.put_packed(both),
            Err(values) => sink.put_varints_cold(values),
        }
        sink
    }

    /// Writes pre-encoded bytes without a bounds check.
    ///
    /// # Safety
    ///
    /// `pos + 8 <= buf.len()`.
    #[inline(always)]
    unsafe fn store_packed(&mut self, p: Packed) {
        // SAFETY: as the caller guarantees.
        unsafe { self.store_word(p.to_bits().to_le_bytes()) };
        // At most seven (`Packed`'s invariant): the callers' room counts
        // on it.
        self.pos += p.len();
    }

    /// Writes a start time (see [`put_start`](Self::put_start)) without a
    /// bounds check.
    ///
    /// # Safety
    ///
    /// `pos + MAX_VARINT_LEN <= buf.len()`.
    #[inline(always)]
    unsafe fn store_start(&mut self, v: u64) {
        // SAFETY: as the caller guarantees.
        unsafe { self.store_start_with(v, super::spread::fast()) }
    }

    /// [`store_start`](Self::store_start) with `spread::fast` read already.
    ///
    /// # Safety
    ///
    /// `pos + MAX_VARINT_LEN <= buf.len()`.
    #[inline(always)]
    unsafe fn store_start_with(&mut self, v: u64, fast: bool) {
        // The word and the ninth byte straight from registers: a `[u8; 9]`
        // would be built on the stack and copied.
        let (low, top) = (super::spread::fixed9_low_with(v, fast), (v >> 56) as u8);
        // SAFETY: nine bytes at `pos` are inside `buf` (the caller's room).
        unsafe {
            let at = self.buf.as_mut_ptr().add(self.pos);
            at.cast::<[u8; 8]>().write_unaligned(low.to_le_bytes());
            *at.add(8) = top;
        }
        self.pos += MAX_VARINT_LEN;
    }

    /// Writes pre-encoded bytes.
    #[inline(always)]
    pub(crate) fn put_packed(&mut self, p: Packed) {
        self.put_word_prefix(p.to_bits().to_le_bytes(), p.len());
    }

    /// Writes a start time as the nine-byte padded varint of `v`
    /// (`encode_varint_fixed9`): a fixed spread of its bits (one `pdep`
    /// where that is fast, else three rounds of mask, shift and or; no loop,
    /// see `spread`), one word store and one byte store. What the commit writes is final JFR, so the recorder
    /// copies records without touching them; every `u64` fits (a TSC passes
    /// 2^56 after some 300 days of uptime, so eight bytes would not).
    #[inline(always)]
    pub(crate) fn put_start(&mut self, v: u64) {
        if self.pos < self.fast_below {
            // SAFETY: `pos < fast_below` leaves SLACK ≥ MAX_VARINT_LEN bytes
            // at `pos` (see `fast_below`).
            unsafe { self.store_start(v) };
        } else {
            self.pos = write_start_checked(self.buf, self.pos, v).unwrap_or(OVERFLOWED);
        }
    }

    /// Writes varints through the checked, out-of-line path: for values the
    /// hot path does not expect (keys too large to pre-encode), so their
    /// encoding is not inlined into, or speculated on, every commit.
    #[inline(always)]
    pub(crate) fn put_varints_cold(&mut self, values: [u64; 2]) {
        // By value, one register each: a reference would make the caller
        // keep the values in memory on its hot path too.
        self.pos = write_varints_checked(self.buf, self.pos, &values).unwrap_or(OVERFLOWED);
    }

    /// Writes the first `len` (at most eight) of `bytes`: one word store on
    /// the fast path, with no copy of the bytes through memory.
    #[inline(always)]
    fn put_word_prefix(&mut self, bytes: [u8; 8], len: usize) {
        if self.pos < self.fast_below {
            // SAFETY: `pos < fast_below` leaves SLACK (≥ 8) bytes at `pos`.
            unsafe { self.store_word(bytes) };
            self.pos += len;
        } else {
            // The word by value: a slice would make the fast path store the
            // bytes to memory first, for this call's sake.
            self.pos = write_word_checked(self.buf, self.pos, u64::from_le_bytes(bytes), len)
                .unwrap_or(OVERFLOWED);
        }
    }

    /// Stores eight bytes at `pos` without a bounds check.
    ///
    /// # Safety
    ///
    /// `pos + 8 <= buf.len()`.
    #[inline(always)]
    unsafe fn store_word(&mut self, bytes: [u8; 8]) {
        // SAFETY: the caller guarantees the eight bytes lie inside `buf`;
        // the store is unaligned-safe.
        unsafe {
            self.buf
                .as_mut_ptr()
                .add(self.pos)
                .cast::<[u8; 8]>()
                .write_unaligned(bytes)
        };
    }

    /// Writes the varint of `v` at `pos` without a bounds check if it takes
    /// one or two bytes (below 2^14): true, written; false, nothing written.
    ///
    /// # Safety
    ///
    /// `pos + 2 <= buf.len()`.
    #[inline(always)]
    unsafe fn store_short_varint(&mut self, v: u64) -> bool {
        if v < 0x80 {
            // SAFETY: `pos < buf.len()` (the caller's room).
            unsafe { *self.buf.get_unchecked_mut(self.pos) = v as u8 };
            self.pos += 1;
        } else if v < 0x4000 {
            // Two bytes (counts, sizes, small ids): one shift and two
            // ors, where the general form spreads all eight groups.
            let two = (v & 0x7f | 0x80 | (v >> 7) << 8) as u16;
            // SAFETY: the caller's room covers two bytes at `pos`.
            unsafe {
                self.buf
                    .as_mut_ptr()
                    .add(self.pos)
                    .cast::<[u8; 2]>()
                    .write_unaligned(two.to_le_bytes())
            };
            self.pos += 2;
        } else {
            return false;
        }
        true
    }

    /// Writes the varint of `v` at `pos` without a bounds check: the
    /// shortest forms by value, up to eight bytes with one word store.
    ///
    /// # Safety
    ///
    /// `pos + MAX_VARINT_LEN <= buf.len()`.
    #[inline(always)]
    unsafe fn store_varint(&mut self, v: u64) {
        // SAFETY: the caller's room covers nine bytes at `pos`.
        if unsafe { self.store_short_varint(v) } {
            return;
        }
        if v >> 56 == 0 {
            // Up to eight bytes: the groups spread at once (one `pdep`
            // where that is fast, see `spread`), one word store.
            let (n, continuation) = varint_shape(v);
            // SAFETY: the caller's room covers eight bytes at `pos`.
            unsafe { self.store_word((super::spread::spread7(v) | continuation).to_le_bytes()) };
            // At most eight (a no-op mask), said so the compiler knows how
            // far the position can be, and the compares of a bounded
            // record's later fields with its room fold away.
            self.pos += n & 0xf;
        } else {
            // SAFETY: the caller's room covers nine bytes at `pos`.
            let dst = unsafe { self.nine_at_pos() };
            self.pos += encode_varint(v, dst) & 0xf;
        }
    }

    /// The nine bytes at `pos`, unchecked.
    ///
    /// # Safety
    ///
    /// `pos + MAX_VARINT_LEN <= buf.len()`.
    #[inline(always)]
    unsafe fn nine_at_pos(&mut self) -> &mut [u8; MAX_VARINT_LEN] {
        // SAFETY: in bounds per the caller; `[u8; 9]` has alignment 1 and
        // the borrow of `self.buf` is exclusive for the returned lifetime.
        unsafe {
            &mut *self
                .buf
                .as_mut_ptr()
                .add(self.pos)
                .cast::<[u8; MAX_VARINT_LEN]>()
        }
    }

    /// The checked path. The cold half takes the buffer and position, not
    /// the sink, so the sink's address never escapes the inlined fast paths
    /// and its fields stay in registers.
    #[inline(always)]
    fn put_slice_checked(&mut self, bytes: &[u8]) {
        self.pos = write_checked(self.buf, self.pos, bytes).unwrap_or(OVERFLOWED);
    }

    /// [`put_varint`](Sink::put_varint) of a `v` of one or two bytes (below
    /// 2^14) while the fast path has room: true, written; else false,
    /// nothing written. No call is left in it and it needs few registers,
    /// so a caller whose whole fast path this is (a writer called through
    /// `dyn`, whose sink lives in memory anyway) saves none for it and
    /// reaches its own out-of-line path by a jump.
    #[inline(always)]
    pub(crate) fn try_put_varint(&mut self, v: u64) -> bool {
        if self.pos >= self.fast_below {
            return false;
        }
        // SAFETY: `pos < fast_below` leaves SLACK ≥ 2 bytes at `pos`.
        unsafe { self.store_short_varint(v) }
    }

    /// [`put_f64`](Sink::put_f64) while the fast path has room: true,
    /// written; else false, nothing written (see
    /// [`try_put_varint`](Self::try_put_varint)).
    #[inline(always)]
    pub(crate) fn try_put_f64(&mut self, v: f64) -> bool {
        if self.pos >= self.fast_below {
            return false;
        }
        self.put_f64(v);
        true
    }

    /// Closes the record and returns its length, or `None` if it did not fit
    /// in the buffer.
    #[inline(always)]
    pub(crate) fn finish(self) -> Option<usize> {
        if self.pos < 128 {
            // The common case: the one-byte slot holds the size (`pos` ≥ 1:
            // `begin` wrote the slot, so `buf` is not empty).
            // SAFETY: `pos` ≥ 1 and `pos` ≤ `buf.len()` (positions only
            // advance over written bytes), so index 0 is in bounds.
            unsafe { *self.buf.get_unchecked_mut(0) = self.pos as u8 };
            // SAFETY: as above, `pos` ≥ 1. Said to the compiler, so the
            // block's record count needs no test of the length.
            unsafe { std::hint::assert_unchecked(self.pos >= 1) };
            return Some(self.pos);
        }
        if self.pos == OVERFLOWED {
            return None;
        }
        frame_large(self.buf, self.pos - 1)
    }
}

/// Writes `bytes` at `pos` if they fit; the position after them.
#[cold]
#[inline(never)]
fn write_checked(buf: &mut [u8], pos: usize, bytes: &[u8]) -> Option<usize> {
    let end = pos.checked_add(bytes.len())?;
    buf.get_mut(pos..end)?.copy_from_slice(bytes);
    Some(end)
}

/// Writes the first `len` bytes of `word` (little-endian) at `pos` if they
/// fit; the position after them.
#[cold]
#[inline(never)]
fn write_word_checked(buf: &mut [u8], pos: usize, word: u64, len: usize) -> Option<usize> {
    write_checked(buf, pos, word.to_le_bytes().get(..len)?)
}

/// Writes the start time `v` (nine bytes, see `put_start`) at `pos` if it
/// fits; the position after it.
#[cold]
#[inline(never)]
fn write_start_checked(buf: &mut [u8], pos: usize, v: u64) -> Option<usize> {
    write_checked(buf, pos, &encode_varint_fixed9(v))
}

/// Writes `values` as varints at `pos` if all fit; the position after
/// them. Takes a slice: the callers' arrays are built on their cold paths.
#[cold]
#[inline(never)]
fn write_varints_checked(buf: &mut [u8], mut pos: usize, values: &[u64]) -> Option<usize> {
    for &v in values {
        let mut tmp = [0u8; MAX_VARINT_LEN];
        let n = encode_varint(v, &mut tmp);
        pos = write_checked(buf, pos, &tmp[..n])?;
    }
    Some(pos)
}

impl Sink for RecordSink<'_> {
    #[inline(always)]
    fn put_slice(&mut self, bytes: &[u8]) {
        if bytes.len() <= SLACK && self.pos < self.fast_below {
            // SAFETY: `pos < fast_below` leaves SLACK bytes at `pos`, and
            // `bytes` is no longer; source and destination are distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    self.buf.as_mut_ptr().add(self.pos),
                    bytes.len(),
                )
            };
            self.pos += bytes.len();
        } else {
            self.put_slice_checked(bytes);
        }
    }

    #[inline(always)]
    fn put_u8(&mut self, v: u8) {
        if self.pos < self.fast_below {
            // SAFETY: `pos < fast_below` ⇒ `pos < buf.len()`.
            unsafe { *self.buf.get_unchecked_mut(self.pos) = v };
            self.pos += 1;
        } else {
            self.pos =
                write_word_checked(self.buf, self.pos, u64::from(v), 1).unwrap_or(OVERFLOWED);
        }
    }

    #[inline(always)]
    fn put_varint(&mut self, v: u64) {
        if self.pos < self.fast_below {
            // SAFETY: `pos < fast_below` leaves SLACK ≥ 9 bytes at `pos`.
            unsafe { self.store_varint(v) };
        } else {
            // The value's encoding too is on the cold side: one call here.
            self.pos = write_varints_checked(self.buf, self.pos, &[v]).unwrap_or(OVERFLOWED);
        }
    }

    #[inline(always)]
    fn put_f64(&mut self, v: f64) {
        self.put_word_prefix(v.to_bits().to_be_bytes(), 8);
    }

    #[inline(always)]
    fn put_f32(&mut self, v: f32) {
        let b = v.to_bits().to_be_bytes();
        self.put_word_prefix([b[0], b[1], b[2], b[3], 0, 0, 0, 0], 4);
    }

    #[inline(always)]
    fn position(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jfr_format::types::TypeId;
    use jfr_format::write::record::EventEncoder;

    /// The same record through `RecordSink` and through the format crate's
    /// checked `EventEncoder`, each in `cap` bytes of a larger buffer; also
    /// checks that nothing past `cap` was written.
    fn both(
        cap: usize,
        id: u64,
        write: &dyn Fn(&mut dyn Sink),
    ) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let mut a = vec![0xEEu8; cap + 32];
        let mut s = RecordSink::begin(&mut a[..cap], Packed::header(id).ok_or(id));
        write(&mut s);
        let ours = s.finish().map(|n| a[..n].to_vec());
        assert!(a[cap..].iter().all(|&b| b == 0xEE), "wrote past {cap}");
        let mut b = vec![0xEEu8; cap];
        let mut e = EventEncoder::begin(&mut b, TypeId(id));
        write(&mut e);
        let theirs = e.finish().map(|n| b[..n].to_vec());
        (ours, theirs)
    }

    #[test]
    fn records_match_the_checked_encoder_at_every_capacity() {
        // The fast spread where this CPU has it (the portable one is
        // compared in `spread`'s own test).
        crate::event::spread::init();
        let long = "x".repeat(300);
        type Writer = Box<dyn Fn(&mut dyn Sink)>;
        let writers: Vec<Writer> = vec![
            Box::new(|s| {
                s.put_varint_fixed9(0x1_2345_6789);
                s.put_varint(7);
                s.put_varint(0);
                s.put_varint(u64::MAX);
                s.put_f64(0.5);
                s.put_str("héllo");
            }),
            Box::new(|s| {
                s.put_i64(-1);
                s.put_u8(3);
                s.put_char(0x263A);
            }),
            Box::new(move |s| {
                s.put_varint_fixed9(1 << 60);
                s.put_str(&long);
                s.put_varint(300);
            }),
            // Every length of varint, at both ends of its range.
            Box::new(|s| (0..64).for_each(|bits| s.put_varint(1u64 << bits))),
            Box::new(|s| (1..=64).for_each(|bits| s.put_varint(u64::MAX >> (64 - bits)))),
        ];
        for (k, w) in writers.iter().enumerate() {
            let mut fitted = false;
            for cap in 0..400 {
                let (ours, theirs) = both(cap, 301, w.as_ref());
                assert_eq!(ours, theirs, "writer {k}, capacity {cap}");
                fitted |= ours.is_some();
            }
            assert!(fitted, "writer {k} never fitted");
        }
    }

    /// The sink's own writes (start time, out-of-line varints) at every
    /// capacity: the whole record or nothing, never a byte past `cap`.
    #[test]
    fn start_and_cold_varints_fit_or_drop_whole() {
        let expected: Vec<u8> = [3u8, 0xe8, 0x07]
            .into_iter()
            // 0x0102_0304_0506_0708 in 7-bit groups, low first, padded.
            .chain([0x88, 0x8e, 0x98, 0xa8, 0xc0, 0xe0, 0x80, 0x81, 0x01])
            .chain([0xac, 0x02, 0x80, 0x80, 0x01, 5])
            .collect();
        for cap in 0..40 {
            let mut a = vec![0xEEu8; cap + 32];
            let header = Packed::header(1000).ok_or(1000);
            let mut s = RecordSink::begin(&mut a[..cap], header);
            s.put_start(0x0102_0304_0506_0708);
            s.put_varints_cold([300, 1 << 14]);
            s.put_u8(5);
            let n = s.finish();
            assert!(a[cap..].iter().all(|&b| b == 0xEE), "wrote past {cap}");
            if cap >= expected.len() {
                let mut want = expected.clone();
                want[0] = want.len() as u8;
                assert_eq!(
                    (n, &a[..want.len()]),
                    (Some(want.len()), &want[..]),
                    "{cap}"
                );
            } else {
                assert_eq!(n, None, "capacity {cap}");
            }
        }
    }

    /// The `try_` writes: the bytes `put_varint` / `put_f64` write, or
    /// nothing, at every capacity and across the one- to three-byte
    /// varint boundaries; never a byte past `cap`.
    #[test]
    fn try_writes_match_or_write_nothing() {
        for v in [0u64, 1, 0x7f, 0x80, 300, 0x3fff, 0x4000, 1 << 20, u64::MAX] {
            for cap in 0..48 {
                let header = Packed::header(7).ok_or(7);
                let mut a = vec![0xEEu8; cap + 32];
                let mut s = RecordSink::begin(&mut a[..cap], header);
                let at = s.position();
                let took = s.try_put_varint(v);
                let (pos, f64_took) = (s.position(), s.try_put_f64(0.5));
                let after = s.position();
                assert!(a[cap..].iter().all(|&b| b == 0xEE), "wrote past {cap}");
                let mut want = Vec::new();
                if took {
                    want.put_varint(v);
                } else {
                    assert_eq!(pos, at, "{v} at {cap}: nothing written");
                    // Refused only for a long value or a short buffer.
                    let fast = at < (cap + 1).saturating_sub(SLACK);
                    assert!(v >= 0x4000 || !fast, "{v} at {cap}: fast path refused");
                }
                if f64_took {
                    want.put_f64(0.5);
                } else {
                    assert_eq!(after, pos, "f64 at {cap}: nothing written");
                }
                if at <= cap {
                    assert_eq!(&a[at..after], &want[..], "{v} at capacity {cap}");
                } else {
                    assert!(!took && !f64_took, "header did not fit at {cap}");
                }
            }
        }
    }

    #[test]
    fn event_starts_match_the_checked_encoder_at_every_capacity() {
        crate::event::spread::init();
        let starts = [0u64, 300, 1 << 47, u64::MAX];
        let durations = [None, Some(0i64), Some(5000), Some(-1)];
        let keys: [Result<Packed, [u64; 2]>; 2] = [
            Ok(Packed::varints(&[3, 1 << 20]).unwrap()),
            Err([1 << 50, 9]),
        ];
        let header = Packed::header(301).unwrap();
        for &start in &starts {
            for &duration in &durations {
                for &key in &keys {
                    // No room promised, the room the caller checked, less,
                    // and more than the buffer has (never trusted).
                    for cap in 0..80 {
                        for room in [0, cap, cap / 2, cap + 40] {
                            let mut a = vec![0xEEu8; cap + 32];
                            let mut s = RecordSink::begin_event(
                                &mut a[..cap],
                                room,
                                header,
                                || start,
                                duration,
                                key,
                            );
                            s.put_varint(7);
                            let ours = s.finish().map(|n| a[..n].to_vec());
                            assert!(a[cap..].iter().all(|&b| b == 0xEE), "wrote past {cap}");
                            let mut b = vec![0xEEu8; cap];
                            let mut e = EventEncoder::begin(&mut b, TypeId(301));
                            e.put_varint_fixed9(start);
                            if let Some(d) = duration {
                                e.put_i64(d);
                            }
                            match key {
                                Ok(_) => {
                                    e.put_varint(3);
                                    e.put_varint(1 << 20);
                                }
                                Err([t, st]) => {
                                    e.put_varint(t);
                                    e.put_varint(st);
                                }
                            }
                            e.put_varint(7);
                            let theirs = e.finish().map(|n| b[..n].to_vec());
                            assert_eq!(ours, theirs, "{start} {duration:?} {key:?} {cap} {room}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn packed_varints() {
        assert_eq!(Packed::header(300).map(|p| p.len()), Some(3));
        assert_eq!(Packed::varints(&[5]).map(|p| p.len()), Some(1));
        assert_eq!(Packed::varints(&[1 << 49]), None);
        assert_eq!(Packed::header(1 << 42), None);
        let p = Packed::header(300).unwrap();
        // SAFETY: the bits of a `Packed`.
        assert_eq!(unsafe { Packed::from_stored(p.to_bits()) }, p);
        assert_eq!(Packed::varints(&[]), None);
        assert_eq!(&p.to_bits().to_le_bytes()[..3], &[0, 0xac, 0x02]);
        let q = Packed::varints(&[300, 0]).unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(&q.to_bits().to_le_bytes()[..3], &[0xac, 0x02, 0]);
        let q = Packed::varints(&[300, 1 << 20]).unwrap();
        assert_eq!(q.len(), 5);
        assert_eq!(Packed::varints(&[1 << 42, 0]), None);
    }
}
