//! What an encoder the recorder does not own wrote, checked against the
//! kinds its event type declares, before any of it reaches a thread's
//! buffer.
//!
//! A record is read field by field the way the JDK's parser reads it
//! (`jdk.jfr.internal.consumer`): a `boolean` or `byte` is one byte, a
//! `float` four, a `double` eight, every other number and every
//! constant-pool key one varint (at most nine bytes), a string one
//! encoding byte and what that encoding says follows. A string by
//! constant-pool reference (encoding 2) is refused: an event's record has
//! no string pool of its own to point into.
//!
//! Invariant: [`fields_match`] is true only if `bytes` is exactly one
//! well-formed value of each kind, in order, with nothing left over: a
//! reader that trusts the metadata then reads the record to its end and no
//! further, whatever the encoder did.

use jfr_format::write::encode::MAX_VARINT_LEN;

use super::field::FieldKind;

/// True if `bytes` is exactly one well-formed value of each of `kinds`, in
/// order (see the module docs).
pub(crate) fn fields_match(kinds: impl IntoIterator<Item = FieldKind>, bytes: &[u8]) -> bool {
    let mut at = 0;
    for kind in kinds {
        match value_len(kind, &bytes[at..]) {
            Some(n) => at += n,
            None => return false,
        }
    }
    at == bytes.len()
}

/// The length of the value of `kind` at the start of `bytes`, if one is
/// there whole.
fn value_len(kind: FieldKind, bytes: &[u8]) -> Option<usize> {
    use FieldKind as K;
    let fixed = |n: usize| (bytes.len() >= n).then_some(n);
    match kind {
        K::Bool | K::I8 | K::U8 => fixed(1),
        K::F32 => fixed(4),
        K::F64 => fixed(8),
        K::Char => {
            let (v, n) = varint(bytes)?;
            (v <= u64::from(u16::MAX)).then_some(n)
        }
        K::I16 | K::I32 | K::I64 | K::U16 | K::U32 | K::U64 | K::Thread | K::StackTrace => {
            varint(bytes).map(|(_, n)| n)
        }
        K::String => string_len(bytes),
    }
}

/// The JDK's string encodings (`StringParser.Encoding`).
const NULL: u8 = 0;
const EMPTY: u8 = 1;
const CHAR_ARRAY: u8 = 4;
const UTF8: u8 = 3;
const LATIN1: u8 = 5;

/// The length of the string at the start of `bytes`, if one is there whole.
fn string_len(bytes: &[u8]) -> Option<usize> {
    let (&encoding, rest) = bytes.split_first()?;
    match encoding {
        NULL | EMPTY => Some(1),
        UTF8 | LATIN1 => {
            let (len, n) = varint(rest)?;
            let len = usize::try_from(len).ok()?;
            (rest.len() - n >= len).then_some(1 + n + len)
        }
        CHAR_ARRAY => {
            let (count, mut at) = varint(rest)?;
            for _ in 0..count {
                let (unit, n) = varint(&rest[at..])?;
                if unit > u64::from(u16::MAX) {
                    return None;
                }
                at += n;
            }
            Some(1 + at)
        }
        _ => None,
    }
}

/// The varint at the start of `bytes` and its length: seven bits a byte,
/// high bit set while more follow, the ninth byte whole (the JDK's
/// `readLong`).
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        if i == MAX_VARINT_LEN - 1 {
            return Some((v | (u64::from(b) << 56), MAX_VARINT_LEN));
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use jfr_format::write::encode::Sink;

    fn one(kind: FieldKind, write: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        write(&mut v);
        assert!(fields_match([kind], &v), "{kind:?}: {v:?}");
        v
    }

    /// Every value the recorder's own writers produce passes, at the ends
    /// of each kind's range.
    #[test]
    fn the_recorders_own_encodings_pass() {
        use FieldKind as K;
        one(K::Bool, |v| v.put_bool(true));
        one(K::I8, |v| v.put_u8(0xff));
        one(K::Char, |v| v.put_char(u16::MAX));
        for x in [0, 1, -1, i64::MIN, i64::MAX] {
            one(K::I64, |v| v.put_i64(x));
            one(K::I16, |v| v.put_i64(x));
        }
        for x in [0, 127, 128, u64::MAX] {
            one(K::U64, |v| v.put_varint(x));
            one(K::Thread, |v| v.put_varint(x));
            one(K::StackTrace, |v| v.put_varint_fixed9(x));
        }
        one(K::F32, |v| v.put_f32(0.5));
        one(K::F64, |v| v.put_f64(0.5));
        for s in ["", "ascii", "Latin-1 é", "UTF-8 ☺", &"x".repeat(300)] {
            one(K::String, |v| v.put_str(s));
        }
        one(K::String, |v| v.put_opt_str(None));
        // A char array, which the JDK reads though the recorder never writes one.
        one(K::String, |v| {
            v.put_u8(CHAR_ARRAY);
            v.put_varint(2);
            v.put_char(0x263A);
            v.put_char(b'a'.into());
        });
        let mut all = Vec::new();
        all.put_varint(300);
        all.put_str("two");
        all.put_f64(3.0);
        assert!(fields_match([K::U32, K::String, K::F64], &all));
    }

    /// Too little, too much, another kind's bytes: refused.
    #[test]
    fn wrong_missing_and_extra_bytes_fail() {
        use FieldKind as K;
        // The two: a "string" of the byte 9, and nothing at all.
        assert!(!fields_match([K::String], &[9]));
        assert!(!fields_match([K::String], &[]));
        assert!(!fields_match([K::U64], &[]));
        // Too much: a second value, a stray byte.
        assert!(!fields_match([K::U64], &[1, 2]));
        assert!(!fields_match([K::Bool], &[1, 1]));
        // A varint that never ends, or is cut short.
        assert!(!fields_match([K::I64], &[0x80, 0x80]));
        assert!(!fields_match([K::I64], &[0x80; 8]));
        // A string that claims more bytes than there are; a pooled string.
        assert!(!fields_match([K::String], &[UTF8, 5, b'a']));
        assert!(!fields_match([K::String], &[2, 1]));
        assert!(!fields_match([K::String], &[CHAR_ARRAY, 2, 1]));
        // A char wider than one UTF-16 unit.
        let mut wide = Vec::new();
        wide.put_varint(0x1_0000);
        assert!(!fields_match([K::Char], &wide));
        // A float cut short; a double where two fields were declared.
        assert!(!fields_match([K::F32], &[0, 0, 0]));
        assert!(!fields_match([K::F32, K::F32], &[0; 8][..7]));
        // No fields, no bytes.
        assert!(fields_match([], &[]));
        assert!(!fields_match([], &[0]));
    }
}
