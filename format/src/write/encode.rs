//! Scalar encodings of the JFR chunk body: compressed integers, fixed-width
//! floats, booleans, chars and strings, written through one [`Sink`] trait.
//!
//! # Compressed integers
//!
//! JFR's varint is little-endian base-128 with one twist: when the first eight
//! bytes all carry the continuation bit, a ninth byte contributes all eight of
//! its bits (bits 56..63). Every `u64` therefore fits in at most nine bytes and
//! there is no zig-zag: a negative `long` is its two's-complement pattern and
//! takes nine bytes.
//!
//! # Sinks
//!
//! The same encoders serve the control path (a growable `Vec<u8>`) and the hot
//! path (a caller-provided `&mut [u8]`, see [`SliceSink`]). A [`SliceSink`]
//! never panics and never allocates: a write that does not fit sets a sticky
//! overflow flag and is dropped, and the caller checks the flag once at the end
//! of the record instead of once per field.
//!
//! Invariant: every encoder writes exactly [`varint_len`] / the documented
//! number of bytes, so a record's size can be computed or patched afterwards.

/// The most bytes a compressed integer takes.
pub const MAX_VARINT_LEN: usize = 9;

/// Where encoded bytes go.
///
/// Implementors provide [`put_slice`](Sink::put_slice) and
/// [`position`](Sink::position); every other method is defined in terms of
/// them.
pub trait Sink {
    /// Appends `bytes`.
    fn put_slice(&mut self, bytes: &[u8]);

    /// Bytes written so far (an overflowed [`SliceSink`] reports its capacity).
    fn position(&self) -> usize;

    /// Appends one raw byte. Advances by 1.
    ///
    /// ```
    /// use jfr_format::write::encode::Sink;
    /// let mut v = Vec::new();
    /// v.put_u8(0x2a);
    /// assert_eq!(v, [0x2a]);
    /// ```
    #[inline]
    fn put_u8(&mut self, v: u8) {
        self.put_slice(&[v]);
    }

    /// Appends a JFR `byte` (one raw byte). Advances by 1.
    #[inline]
    fn put_i8(&mut self, v: i8) {
        self.put_u8(v as u8);
    }

    /// Appends a JFR `boolean`: 1 for true, 0 for false. Advances by 1.
    #[inline]
    fn put_bool(&mut self, v: bool) {
        self.put_u8(v as u8);
    }

    /// Appends a compressed integer. Advances by [`varint_len(v)`](varint_len).
    ///
    /// ```
    /// use jfr_format::write::encode::Sink;
    /// let mut v = Vec::new();
    /// v.put_varint(300);
    /// v.put_varint(u64::MAX);
    /// assert_eq!(v, [0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    /// ```
    #[inline]
    fn put_varint(&mut self, v: u64) {
        let mut tmp = [0u8; MAX_VARINT_LEN];
        let n = encode_varint(v, &mut tmp);
        self.put_slice(&tmp[..n]);
    }

    /// Appends a compressed integer padded to nine bytes; see
    /// [`encode_varint_fixed9`].
    #[inline]
    fn put_varint_fixed9(&mut self, v: u64) {
        self.put_slice(&encode_varint_fixed9(v));
    }

    /// Appends a JFR `long` as a compressed integer (two's complement, no
    /// zig-zag). Advances by 1 to 9 bytes; negative values take 9.
    #[inline]
    fn put_i64(&mut self, v: i64) {
        self.put_varint(v as u64);
    }

    /// Appends a JFR `int`. Negative values are sign-extended to 64 bits
    /// (9 bytes), which every reader decodes back to the same `int`.
    #[inline]
    fn put_i32(&mut self, v: i32) {
        self.put_varint(v as i64 as u64);
    }

    /// Appends a JFR `short`, sign-extended like [`put_i32`](Sink::put_i32).
    #[inline]
    fn put_i16(&mut self, v: i16) {
        self.put_varint(v as i64 as u64);
    }

    /// Appends a JFR `char`: one UTF-16 code unit as a compressed integer.
    #[inline]
    fn put_char(&mut self, v: u16) {
        self.put_varint(u64::from(v));
    }

    /// Appends a JFR `float`: IEEE-754 big-endian. Advances by 4.
    ///
    /// ```
    /// use jfr_format::write::encode::Sink;
    /// let mut v = Vec::new();
    /// v.put_f32(0.4);
    /// assert_eq!(v, [0x3e, 0xcc, 0xcc, 0xcd]);
    /// ```
    #[inline]
    fn put_f32(&mut self, v: f32) {
        self.put_slice(&v.to_bits().to_be_bytes());
    }

    /// Appends a JFR `double`: IEEE-754 big-endian. Advances by 8.
    #[inline]
    fn put_f64(&mut self, v: f64) {
        self.put_slice(&v.to_bits().to_be_bytes());
    }

    /// Appends a fixed-width big-endian `u16`. Advances by 2.
    #[inline]
    fn put_u16_be(&mut self, v: u16) {
        self.put_slice(&v.to_be_bytes());
    }

    /// Appends a fixed-width big-endian `i64`. Advances by 8.
    #[inline]
    fn put_i64_be(&mut self, v: i64) {
        self.put_slice(&v.to_be_bytes());
    }

    /// Appends a string in the most compact encoding the format offers for
    /// it (see [`StringEncoding::choose`]). Advances by
    /// [`string_len(Some(s))`](string_len).
    ///
    /// ```
    /// use jfr_format::write::encode::Sink;
    /// let mut v = Vec::new();
    /// v.put_str("");
    /// v.put_str("hi");
    /// v.put_str("é");
    /// assert_eq!(v, [1, 3, 2, b'h', b'i', 5, 1, 0xe9]);
    /// ```
    #[inline]
    fn put_str(&mut self, s: &str) {
        match StringEncoding::choose(s) {
            StringEncoding::Empty => self.put_u8(StringEncoding::Empty as u8),
            StringEncoding::Utf8 => {
                self.put_u8(StringEncoding::Utf8 as u8);
                self.put_varint(s.len() as u64);
                self.put_slice(s.as_bytes());
            }
            StringEncoding::Latin1 => {
                self.put_u8(StringEncoding::Latin1 as u8);
                self.put_varint(s.chars().count() as u64);
                for c in s.chars() {
                    // `choose` picked Latin-1 only if every char is < 0x100.
                    self.put_u8(c as u32 as u8);
                }
            }
            StringEncoding::CharArray => {
                self.put_u8(StringEncoding::CharArray as u8);
                self.put_varint(s.encode_utf16().count() as u64);
                for unit in s.encode_utf16() {
                    self.put_char(unit);
                }
            }
            StringEncoding::Null | StringEncoding::ConstantPool => unreachable!(),
        }
    }

    /// Appends an optional string: `None` is the null encoding (one 0 byte).
    #[inline]
    fn put_opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.put_u8(StringEncoding::Null as u8),
            Some(s) => self.put_str(s),
        }
    }

    /// Appends a reference to key `key` of the chunk's `java.lang.String`
    /// pool (encoding 2).
    #[inline]
    fn put_str_ref(&mut self, key: u64) {
        self.put_u8(StringEncoding::ConstantPool as u8);
        self.put_varint(key);
    }
}

/// The string encodings of the format (the first byte of every string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum StringEncoding {
    /// `null`; nothing follows.
    Null = 0,
    /// `""`; nothing follows.
    Empty = 1,
    /// A key into the `java.lang.String` constant pool follows.
    ConstantPool = 2,
    /// A byte length and UTF-8 bytes follow.
    Utf8 = 3,
    /// A UTF-16 unit count and each unit as a compressed integer follow.
    CharArray = 4,
    /// A byte length and ISO-8859-1 bytes follow.
    Latin1 = 5,
}

impl StringEncoding {
    /// Decodes an encoding byte.
    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0 => Self::Null,
            1 => Self::Empty,
            2 => Self::ConstantPool,
            3 => Self::Utf8,
            4 => Self::CharArray,
            5 => Self::Latin1,
            _ => return None,
        })
    }

    /// The most compact inline encoding for `s`. ASCII is written as UTF-8
    /// (the encoding every reader knows best); ties go to UTF-8.
    pub fn choose(s: &str) -> Self {
        if s.is_empty() {
            return Self::Empty;
        }
        if s.is_ascii() {
            return Self::Utf8;
        }
        let (utf8, latin1, chars) = encoded_lens(s);
        let best = utf8.min(chars).min(latin1.unwrap_or(usize::MAX));
        if best == utf8 {
            Self::Utf8
        } else if Some(best) == latin1 {
            Self::Latin1
        } else {
            Self::CharArray
        }
    }
}

/// Sizes (after the encoding byte) of `s` as UTF-8, Latin-1 (if every char
/// fits) and char array.
fn encoded_lens(s: &str) -> (usize, Option<usize>, usize) {
    let utf8 = varint_len(s.len() as u64) + s.len();
    let mut latin1_ok = true;
    let mut n_chars = 0usize;
    let mut units = 0usize;
    let mut unit_bytes = 0usize;
    for c in s.chars() {
        n_chars += 1;
        latin1_ok &= (c as u32) < 0x100;
        let mut buf = [0u16; 2];
        for u in c.encode_utf16(&mut buf) {
            units += 1;
            unit_bytes += varint_len(u64::from(*u));
        }
    }
    let latin1 = latin1_ok.then(|| varint_len(n_chars as u64) + n_chars);
    (utf8, latin1, varint_len(units as u64) + unit_bytes)
}

/// Encoded size of an optional string, encoding byte included.
pub fn string_len(s: Option<&str>) -> usize {
    let Some(s) = s else { return 1 };
    1 + match StringEncoding::choose(s) {
        StringEncoding::Empty => 0,
        _ if s.is_ascii() => varint_len(s.len() as u64) + s.len(),
        _ => {
            let (utf8, latin1, chars) = encoded_lens(s);
            utf8.min(chars).min(latin1.unwrap_or(usize::MAX))
        }
    }
}

/// Number of bytes [`Sink::put_varint`] writes for `v` (1..=9).
///
/// ```
/// use jfr_format::write::encode::varint_len;
/// assert_eq!(varint_len(0), 1);
/// assert_eq!(varint_len(127), 1);
/// assert_eq!(varint_len(128), 2);
/// assert_eq!(varint_len(1 << 56), 9);
/// assert_eq!(varint_len(u64::MAX), 9);
/// ```
#[inline]
pub const fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let n = bits.div_ceil(7);
    if n > MAX_VARINT_LEN {
        MAX_VARINT_LEN
    } else {
        n
    }
}

/// Encodes `v` into `out`, returning the number of bytes used.
///
/// Branch-free for values below 2^56: the seven-bit groups are spread into
/// the eight bytes of a `u64` with shifts and masks, the continuation bits
/// of all but the last used byte are set with one mask, and the eight bytes
/// are stored at once (bytes past the length are don't-care, and `out` always
/// has room for them).
#[inline(always)]
pub fn encode_varint(v: u64, out: &mut [u8; MAX_VARINT_LEN]) -> usize {
    if v >> 56 != 0 {
        return encode_varint_slow(v, out);
    }
    let (n, continuation) = varint_shape(v);
    out[..8].copy_from_slice(&(spread7(v) | continuation).to_le_bytes());
    n
}

/// The length of the varint of `v` (below 2^56) and the continuation bits
/// of its first eight bytes (0x80 in every byte but the last used): a
/// writer that spreads the seven-bit groups itself (see [`spread7`]) ors
/// them in and stores the word. Two table loads by leading zeros, not a
/// division by 7 on the critical path.
#[inline(always)]
pub fn varint_shape(v: u64) -> (usize, u64) {
    debug_assert!(v >> 56 == 0);
    let lz = (v | 1).leading_zeros() as usize;
    (
        usize::from(LEN_BY_LEADING_ZEROS[lz]),
        CONTINUATION_BY_LEADING_ZEROS[lz],
    )
}

/// Spreads the low 56 bits of `v` into the low seven bits of each of the
/// eight bytes of the result (group `i` in byte `i`), in three halving steps
/// of mask, shift and or: 28-bit halves into 32-bit lanes, 14-bit quarters
/// into 16-bit lanes, 7-bit groups into bytes: a varint's first eight bytes
/// without their continuation bits (bits 56 and up are dropped).
#[inline(always)]
pub const fn spread7(v: u64) -> u64 {
    let x = (v & 0x0FFF_FFFF) | ((v & 0x00FF_FFFF_F000_0000) << 4);
    let x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x0FFF_C000_0FFF_C000) << 2);
    (x & 0x007F_007F_007F_007F) | ((x & 0x3F80_3F80_3F80_3F80) << 1)
}

/// Encodes `v` as a varint of exactly nine bytes, the longest form: bytes
/// 0..8 carry seven bits each with the continuation bit set, and the ninth
/// the top eight bits (zero below 2^56). Readers decode padded varints like
/// any other (see `docs/jfr-format.md` §2), and a width that does not
/// depend on the value means a record can be rewritten in place without
/// moving bytes: the recorder's committing threads store start times raw in
/// a nine-byte slot, and its drain turns them into this form. Every `u64`
/// fits, so no clock value is ever clamped.
///
/// ```
/// use jfr_format::write::encode::encode_varint_fixed9;
/// assert_eq!(encode_varint_fixed9(300), [0xac, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
/// assert_eq!(encode_varint_fixed9(u64::MAX), [0xff; 9]);
/// ```
#[inline(always)]
pub fn encode_varint_fixed9(v: u64) -> [u8; MAX_VARINT_LEN] {
    let (low, top) = varint_fixed9_parts(v);
    let mut out = [0u8; MAX_VARINT_LEN];
    out[..8].copy_from_slice(&low.to_le_bytes());
    out[8] = top;
    out
}

/// [`encode_varint_fixed9`] as two values a writer stores directly: the
/// first eight bytes as a little-endian word, and the ninth byte. A
/// nine-byte array would go through memory before it is copied.
#[inline(always)]
pub const fn varint_fixed9_parts(v: u64) -> (u64, u8) {
    (spread7(v) | 0x8080_8080_8080_8080, (v >> 56) as u8)
}

/// `varint_len` of a value with `i` leading zeros (values below 2^56).
static LEN_BY_LEADING_ZEROS: [u8; 65] = {
    let mut t = [0u8; 65];
    let mut lz = 0;
    while lz < 65 {
        let bits: usize = if lz >= 64 { 1 } else { 64 - lz };
        t[lz] = bits.div_ceil(7) as u8;
        lz += 1;
    }
    t
};

/// 0x80 in bytes `0..n-1`, where `n` is the length for `i` leading zeros.
static CONTINUATION_BY_LEADING_ZEROS: [u64; 65] = {
    let mut t = [0u64; 65];
    let mut lz = 0;
    while lz < 65 {
        let bits: usize = if lz >= 64 { 1 } else { 64 - lz };
        let n = bits.div_ceil(7);
        t[lz] = if n >= 9 {
            0
        } else {
            0x8080_8080_8080_8080u64 & ((1u64 << (8 * (n - 1))) - 1)
        };
        lz += 1;
    }
    t
};

#[cold]
fn encode_varint_slow(mut v: u64, out: &mut [u8; MAX_VARINT_LEN]) -> usize {
    for (i, slot) in out.iter_mut().enumerate().take(MAX_VARINT_LEN - 1) {
        if v < 0x80 {
            *slot = v as u8;
            return i + 1;
        }
        *slot = (v as u8 & 0x7f) | 0x80;
        v >>= 7;
    }
    // Eight groups of seven bits are out; the ninth byte holds bits 56..63.
    out[MAX_VARINT_LEN - 1] = v as u8;
    MAX_VARINT_LEN
}

/// Writes `v` as a varint padded to exactly `width` bytes (continuation bits
/// on every byte but the last), the form used for sizes patched after the
/// fact. Returns `None` if `v` does not fit in `width` groups of 7 bits or
/// `width` is not in `1..=8`.
///
/// ```
/// use jfr_format::write::encode::padded_varint;
/// assert_eq!(padded_varint(5, 4), Some([0x85, 0x80, 0x80, 0x00, 0, 0, 0, 0]));
/// ```
pub fn padded_varint(v: u64, width: usize) -> Option<[u8; 8]> {
    if width == 0 || width > 8 || (width < 8 && v >> (7 * width) != 0) || v >> 56 != 0 {
        return None;
    }
    let mut out = [0u8; 8];
    for (i, slot) in out.iter_mut().enumerate().take(width) {
        let group = ((v >> (7 * i)) & 0x7f) as u8;
        *slot = if i + 1 < width { group | 0x80 } else { group };
    }
    Some(out)
}

// === impl Sink for Vec<u8> ===

impl Sink for Vec<u8> {
    #[inline]
    fn put_slice(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn position(&self) -> usize {
        self.len()
    }
}

/// A [`Sink`] over a caller-provided byte slice that never allocates and never
/// panics: a write that does not fit marks the sink overflowed and is dropped.
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overflowed: bool,
}

impl<'a> SliceSink<'a> {
    /// A sink writing from the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            overflowed: false,
        }
    }

    /// True once any write did not fit; everything after it was dropped too.
    #[inline]
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// The bytes written so far, or `None` if the sink overflowed.
    #[inline]
    pub fn written(&self) -> Option<&[u8]> {
        (!self.overflowed).then(|| &self.buf[..self.pos])
    }

    /// The underlying buffer (for patching a reserved slot).
    #[inline]
    pub(crate) fn buf_mut(&mut self) -> &mut [u8] {
        self.buf
    }
}

/// Writes `v` at `pos` of `buf` when fewer than nine bytes are left; returns
/// the new position, or `None` if it does not fit. Takes the slice, not the
/// sink, so the sink's address never escapes the inlined fast paths (which
/// keeps its fields in registers).
#[cold]
#[inline(never)]
fn put_varint_near_end(buf: &mut [u8], pos: usize, v: u64) -> Option<usize> {
    let mut tmp = [0u8; MAX_VARINT_LEN];
    let n = encode_varint(v, &mut tmp);
    buf.get_mut(pos..pos + n)?.copy_from_slice(&tmp[..n]);
    Some(pos + n)
}

impl SliceSink<'_> {
    /// Marks the sink overflowed; moving `pos` to the end makes every later
    /// write fail its bounds check, so the fast paths need no flag test.
    #[inline(always)]
    fn overflow(&mut self) {
        self.overflowed = true;
        self.pos = self.buf.len();
    }
}

impl Sink for SliceSink<'_> {
    #[inline(always)]
    fn put_slice(&mut self, bytes: &[u8]) {
        let end = self.pos + bytes.len();
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.pos = end;
            }
            None => self.overflow(),
        }
    }

    #[inline(always)]
    fn put_u8(&mut self, v: u8) {
        match self.buf.get_mut(self.pos) {
            Some(slot) => {
                *slot = v;
                self.pos += 1;
            }
            None => self.overflow(),
        }
    }

    #[inline(always)]
    fn put_varint(&mut self, v: u64) {
        if v < 0x80 {
            return self.put_u8(v as u8);
        }
        // Encode in place when nine bytes are free (the common case), so no
        // temporary and no variable-length copy.
        let at = self.pos;
        match self.buf.get_mut(at..at + MAX_VARINT_LEN) {
            Some(dst) => {
                let dst: &mut [u8; MAX_VARINT_LEN] = dst.try_into().expect("nine bytes");
                self.pos = at + encode_varint(v, dst);
            }
            None => match put_varint_near_end(self.buf, at, v) {
                Some(end) => self.pos = end,
                None => self.overflow(),
            },
        }
    }

    #[inline]
    fn position(&self) -> usize {
        self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_examples_from_the_format_notes() {
        let enc = |v: u64| {
            let mut out = Vec::new();
            out.put_varint(v);
            out
        };
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(-1i64 as u64), [0xff; 9]);
        assert_eq!(
            enc(i64::MIN as u64),
            [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]
        );
        assert_eq!(
            enc(1 << 56),
            [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        );
        for v in [0, 1, 127, 128, (1 << 56) - 1, 1 << 56, u64::MAX] {
            assert_eq!(enc(v).len(), varint_len(v), "len of {v}");
        }
    }

    #[test]
    fn fast_varints_match_the_byte_loop() {
        let mut values: Vec<u64> = (0..64)
            .flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) + 1])
            .collect();
        values.extend((0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64)));
        for v in values {
            let (mut fast, mut slow) = ([0u8; 9], [0u8; 9]);
            let n = encode_varint(v, &mut fast);
            let m = encode_varint_slow(v, &mut slow);
            assert_eq!((n, &fast[..n]), (m, &slow[..m]), "{v:#x}");
            assert_eq!(n, varint_len(v));
        }
    }

    #[test]
    fn fixed9_varints_decode_to_the_value() {
        let mut values: Vec<u64> = (0..64)
            .flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) + 1])
            .collect();
        values.extend((0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64)));
        for v in values {
            let out = encode_varint_fixed9(v);
            // The byte loop of the format: 7 bits a byte, continuation bit
            // 0x80 on the first eight, and a ninth byte that contributes all
            // eight bits.
            let mut decoded = 0u64;
            for (i, &b) in out.iter().enumerate() {
                if i < 8 {
                    assert_eq!(b & 0x80, 0x80, "{v:#x}: byte {i}");
                }
                decoded |= if i == 8 {
                    u64::from(b) << 56
                } else {
                    u64::from(b & 0x7f) << (7 * i)
                };
            }
            assert_eq!(decoded, v);
        }
        let mut buf = [0u8; 13];
        let mut sink = SliceSink::new(&mut buf);
        sink.put_u8(1);
        sink.put_varint_fixed9(5);
        assert_eq!(
            sink.written(),
            Some(&[1, 0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0][..])
        );
        sink.put_varint_fixed9(5); // 3 bytes left: overflows, no panic
        assert!(sink.overflowed());
    }

    #[test]
    fn string_choice_is_most_compact() {
        for s in ["a", "é", "日本語", "🦀", "ठ", "a\0b", "ÿÿ"] {
            let mut out = Vec::new();
            out.put_str(s);
            assert_eq!(out.len(), string_len(Some(s)), "{s}");
            let utf8 = 1 + varint_len(s.len() as u64) + s.len();
            assert!(out.len() <= utf8, "{s}: {} > {utf8}", out.len());
        }
        // Devanagari: 3 bytes in UTF-8, 2 as a char-array varint.
        assert_eq!(StringEncoding::choose("ठठठ"), StringEncoding::CharArray);
        assert_eq!(StringEncoding::choose("ÿÿ"), StringEncoding::Latin1);
        assert_eq!(StringEncoding::choose("🦀"), StringEncoding::Utf8);
    }

    #[test]
    fn slice_sink_overflows_without_panicking() {
        let mut buf = [0u8; 3];
        let mut s = SliceSink::new(&mut buf);
        s.put_u8(1);
        s.put_varint(300);
        assert_eq!(s.written(), Some(&[1, 0xac, 0x02][..]));
        s.put_u8(9);
        assert!(s.overflowed());
        assert_eq!(s.written(), None);
    }

    #[test]
    fn padded_varints_decode_to_their_value() {
        assert_eq!(padded_varint(1 << 28, 4), None);
        let p = padded_varint(300, 5).unwrap();
        assert_eq!(&p[..5], &[0xac, 0x82, 0x80, 0x80, 0x00]);
    }
}
