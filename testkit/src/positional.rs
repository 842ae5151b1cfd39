//! A positional reader: the events profilers convert, read field by field in
//! JDK 25's order, as async-profiler's converter (`one.jfr.JfrReader`) reads
//! them, and required to end exactly at their record's end.
//!
//! Such a reader does not look at a file's metadata for the types it knows:
//! it reads `jdk.ExecutionSample` as start time, thread, stack trace, state,
//! and goes on from there to the next record. A field appended to a JDK
//! type, or one missing, shifts every record after it. And it reads
//! thread, stack-trace and class references as Java `int`s, so a key at or
//! above 2^31 names nothing.
//!
//! [`check`] walks every chunk of a file on its own (header, metadata
//! element tree, checkpoint pools decoded by the metadata, no code shared
//! with flightrec's reader) and asserts, for every record of the types in
//! [`LAYOUTS`]: the JDK's fields, read in order, end at the record's end;
//! every reference is below 2^31 and defined in the chunk (or 0, null).
//! The one exception is [`CONTEXT_ID_TYPES`]' `contextId` in a recording
//! with labels in the samples, read as one more field and counted.
//! It also asserts that every key of the pools readers index by `int`
//! (classes, threads, stack traces, methods, symbols, strings) is below
//! 2^31, and that every checkpoint's pools fill their record exactly.

use std::collections::{BTreeMap, HashMap, HashSet};

/// What a reader that reads Java `int` keys can hold.
pub const KEY_LIMIT: u64 = 1 << 31;

/// One field of a JDK event as a positional reader decodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A varint `long` (times, sizes, addresses).
    Long,
    /// A `boolean`: one byte.
    Bool,
    /// A string, in any of the JFR string encodings.
    Str,
    /// A constant-pool reference into the pool of the named type.
    Ref(&'static str),
}

const THREAD: Kind = Kind::Ref("java.lang.Thread");
const STACK: Kind = Kind::Ref("jdk.types.StackTrace");
const CLASS: Kind = Kind::Ref("java.lang.Class");
const STATE: Kind = Kind::Ref("jdk.types.ThreadState");
const METHOD: Kind = Kind::Ref("jdk.types.Method");
const L: Kind = Kind::Long;

/// The events a profiler's converter reads, with JDK 25's fields (as
/// `jfr metadata` prints them, no file given).
pub const LAYOUTS: &[(&str, &[Kind])] = &[
    ("jdk.ExecutionSample", &[L, THREAD, STACK, STATE]),
    ("jdk.NativeMethodSample", &[L, THREAD, STACK, STATE]),
    (
        "jdk.CPUTimeSample",
        &[L, STACK, THREAD, Kind::Bool, L, Kind::Bool],
    ),
    ("jdk.ObjectAllocationSample", &[L, THREAD, STACK, CLASS, L]),
    (
        "jdk.ObjectAllocationInNewTLAB",
        &[L, THREAD, STACK, CLASS, L, L],
    ),
    (
        "jdk.ObjectAllocationOutsideTLAB",
        &[L, THREAD, STACK, CLASS, L],
    ),
    (
        "jdk.JavaMonitorEnter",
        &[L, L, THREAD, STACK, CLASS, THREAD, L],
    ),
    (
        "jdk.JavaMonitorWait",
        &[L, L, THREAD, STACK, CLASS, THREAD, L, Kind::Bool, L],
    ),
    ("jdk.ThreadPark", &[L, L, THREAD, STACK, CLASS, L, L, L]),
    ("jdk.MethodTrace", &[L, L, THREAD, STACK, METHOD]),
    ("jdk.ActiveSetting", &[L, L, Kind::Str, Kind::Str]),
];

/// The types to which flightrec appends `long contextId` while labels are
/// in the samples (Pyroscope's; docs/pyroscope-events.md): the one
/// documented exception. A file whose metadata declares it there is read
/// with it (and counted in [`Report::with_context_id`]); async-profiler's
/// converter cannot read such a file, which is the trade-off of turning
/// labels on.
pub const CONTEXT_ID_TYPES: [&str; 2] = ["jdk.ExecutionSample", "jdk.CPUTimeSample"];

/// The pools whose keys readers hold in an `int`.
pub const INT_KEYED_POOLS: [&str; 6] = [
    "java.lang.Class",
    "java.lang.Thread",
    "jdk.types.StackTrace",
    "jdk.types.Method",
    "jdk.types.Symbol",
    "java.lang.String",
];

/// What [`check`] read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Chunks read.
    pub chunks: u64,
    /// Records read positionally, per type name.
    pub events: BTreeMap<String, u64>,
    /// Constants of the [`INT_KEYED_POOLS`], all chunks together.
    pub constants: u64,
    /// Samples read with a `contextId` after the JDK's fields (see
    /// [`CONTEXT_ID_TYPES`]).
    pub with_context_id: u64,
}

/// Reads `bytes` as described in the module docs; `Err` names the first
/// record (by file offset) a positional reader misreads.
pub fn check(bytes: &[u8]) -> Result<Report, String> {
    let mut report = Report::default();
    let mut at = 0;
    while at < bytes.len() {
        at = chunk(bytes, at, &mut report)?;
        report.chunks += 1;
    }
    Ok(report)
}

/// A class of the metadata, as far as decoding needs it.
#[derive(Debug, Default)]
struct Class {
    name: String,
    fields: Vec<Field>,
}

#[derive(Debug)]
struct Field {
    name: String,
    class: u64,
    pooled: bool,
    array: bool,
}

/// A cursor over one record (or the whole chunk).
struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
    end: usize,
}

impl Cur<'_> {
    fn u8(&mut self) -> Result<u8, String> {
        if self.pos >= self.end {
            return Err(format!("read past the end at {}", self.pos));
        }
        self.pos += 1;
        Ok(self.b[self.pos - 1])
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..9 {
            let b = self.u8()?;
            if i == 8 {
                return Ok(v | (u64::from(b) << 56));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        unreachable!()
    }

    fn skip(&mut self, n: usize) -> Result<(), String> {
        if self.end - self.pos < n {
            return Err(format!("{n} bytes past the end at {}", self.pos));
        }
        self.pos += n;
        Ok(())
    }

    fn be_i64(&mut self) -> Result<i64, String> {
        let at = self.pos;
        self.skip(8)?;
        Ok(i64::from_be_bytes(self.b[at..at + 8].try_into().unwrap()))
    }

    /// A string; `Some(key)` for a reference to the string pool.
    fn string(&mut self) -> Result<(Option<String>, Option<u64>), String> {
        match self.u8()? {
            0 => Ok((None, None)),
            1 => Ok((Some(String::new()), None)),
            2 => Ok((None, Some(self.varint()?))),
            3 | 5 => {
                let n = self.varint()? as usize;
                let at = self.pos;
                self.skip(n)?;
                Ok((
                    Some(String::from_utf8_lossy(&self.b[at..at + n]).into_owned()),
                    None,
                ))
            }
            4 => {
                let n = self.varint()?;
                let mut s = String::new();
                for _ in 0..n {
                    s.push(char::from_u32(self.varint()? as u32).unwrap_or('?'));
                }
                Ok((Some(s), None))
            }
            e => Err(format!("string encoding {e} at {}", self.pos - 1)),
        }
    }
}

/// The metadata's element tree, flattened to the classes.
fn metadata(c: &mut Cur<'_>) -> Result<HashMap<u64, Class>, String> {
    c.varint()?; // start
    c.varint()?; // duration
    c.varint()?; // metadata id
    let n = c.varint()?;
    let mut strings = Vec::new();
    for _ in 0..n {
        strings.push(c.string()?.0.unwrap_or_default());
    }
    let mut classes = HashMap::new();
    element(c, &strings, &mut classes, None, 0)?;
    Ok(classes)
}

fn element(
    c: &mut Cur<'_>,
    strings: &[String],
    classes: &mut HashMap<u64, Class>,
    class: Option<u64>,
    depth: usize,
) -> Result<(), String> {
    if depth > 16 {
        return Err("metadata nests too deep".into());
    }
    let s = |i: u64| strings.get(i as usize).cloned().unwrap_or_default();
    let name = s(c.varint()?);
    let mut attrs = HashMap::new();
    for _ in 0..c.varint()? {
        let (k, v) = (s(c.varint()?), s(c.varint()?));
        attrs.insert(k, v);
    }
    let num = |k: &str| attrs.get(k).and_then(|v| v.parse::<u64>().ok());
    let mut here = class;
    match (name.as_str(), class) {
        ("class", _) => {
            let id = num("id").ok_or("class without id")?;
            classes.insert(
                id,
                Class {
                    name: attrs.get("name").cloned().unwrap_or_default(),
                    fields: Vec::new(),
                },
            );
            here = Some(id);
        }
        ("field", Some(owner)) => {
            let f = Field {
                name: attrs.get("name").cloned().unwrap_or_default(),
                class: num("class").ok_or("field without class")?,
                pooled: attrs.get("constantPool").is_some_and(|v| v == "true"),
                array: num("dimension").is_some_and(|d| d > 0),
            };
            if let Some(c) = classes.get_mut(&owner) {
                c.fields.push(f);
            }
            here = None;
        }
        _ => {}
    }
    for _ in 0..c.varint()? {
        element(c, strings, classes, here, depth + 1)?;
    }
    Ok(())
}

/// Skips one value of class `id` by the metadata (references are noted in
/// `refs` as (type, key)).
fn value(
    c: &mut Cur<'_>,
    classes: &HashMap<u64, Class>,
    id: u64,
    refs: &mut Vec<(u64, u64)>,
    depth: usize,
) -> Result<(), String> {
    let class = classes.get(&id).ok_or(format!("unknown type {id}"))?;
    match class.name.as_str() {
        "boolean" | "byte" => c.skip(1),
        "char" | "short" | "int" | "long" => c.varint().map(drop),
        "float" => c.skip(4),
        "double" => c.skip(8),
        "java.lang.String" => {
            if let (_, Some(k)) = c.string()? {
                refs.push((id, k));
            }
            Ok(())
        }
        _ => {
            if depth > 32 {
                return Err("values nest too deep".into());
            }
            for f in &class.fields {
                let n = if f.array { c.varint()? } else { 1 };
                for _ in 0..n {
                    if f.pooled {
                        let k = c.varint()?;
                        refs.push((f.class, k));
                    } else {
                        value(c, classes, f.class, refs, depth + 1)?;
                    }
                }
            }
            Ok(())
        }
    }
}

/// Reads the chunk at `start`; returns its end.
fn chunk(b: &[u8], start: usize, report: &mut Report) -> Result<usize, String> {
    let mut h = Cur {
        b,
        pos: start,
        end: b.len(),
    };
    if b.get(start..start + 4) != Some(b"FLR\0") {
        return Err(format!("no chunk magic at {start}"));
    }
    h.skip(8)?;
    let size = h.be_i64()? as usize;
    let cp = h.be_i64()? as usize;
    let meta = h.be_i64()? as usize;
    h.skip(8 * 4)?;
    let features = i32::from_be_bytes(b[h.pos..h.pos + 4].try_into().unwrap());
    if features & 1 == 0 {
        return Err(format!("chunk at {start}: integers not compressed"));
    }
    let end = start
        .checked_add(size)
        .filter(|&e| e <= b.len() && size >= 68)
        .ok_or(format!("chunk at {start}: bad size {size}"))?;
    let record = |at: usize| -> Result<(Cur<'_>, u64), String> {
        let mut c = Cur { b, pos: at, end };
        let n = c.varint()? as usize;
        let rec_end = at
            .checked_add(n)
            .filter(|&e| e <= end && n > 0)
            .ok_or(format!("record at {at}: bad size {n}"))?;
        c.end = rec_end;
        let ty = c.varint()?;
        Ok((c, ty))
    };

    let (mut m, _) = record(start + meta)?;
    let classes = metadata(&mut m)?;
    let by_name: HashMap<&str, u64> = classes
        .iter()
        .map(|(&id, c)| (c.name.as_str(), id))
        .collect();

    // The pools: keys defined, per type.
    let mut defined: HashSet<(u64, u64)> = HashSet::new();
    let mut at = start + cp;
    let mut hops = 0;
    // A chain longer than a million checkpoints is cut (no loop).
    while cp != 0 && hops < 1_000_000 {
        let (mut c, ty) = record(at)?;
        if ty != 1 {
            return Err(format!("checkpoint at {at} has type {ty}"));
        }
        c.varint()?;
        c.varint()?;
        let delta = c.varint()? as i64;
        c.u8()?;
        for _ in 0..c.varint()? {
            let pool = c.varint()?;
            let name = classes.get(&pool).map_or("?", |k| k.name.as_str());
            for _ in 0..c.varint()? {
                let key = c.varint()?;
                if INT_KEYED_POOLS.contains(&name) {
                    report.constants += 1;
                    if key >= KEY_LIMIT {
                        return Err(format!(
                            "checkpoint at {at}: {name} key {key} (0x{key:x}) is not an int"
                        ));
                    }
                }
                defined.insert((pool, key));
                value(&mut c, &classes, pool, &mut Vec::new(), 0)?;
            }
        }
        if c.pos != c.end {
            return Err(format!(
                "checkpoint at {at}: pools end at {}, the record at {}",
                c.pos, c.end
            ));
        }
        hops += 1;
        if delta == 0 {
            break;
        }
        at = (at as i64 + delta) as usize;
    }

    // Type → (name, the JDK's fields, whether the file appends `contextId`).
    let layouts: HashMap<u64, (&str, &[Kind], bool)> = LAYOUTS
        .iter()
        .filter_map(|&(n, l)| {
            let id = *by_name.get(n)?;
            let fields = &classes[&id].fields;
            let context = CONTEXT_ID_TYPES.contains(&n)
                && fields.len() == l.len() + 1
                && fields.last().is_some_and(|f| f.name == "contextId");
            Some((id, (n, l, context)))
        })
        .collect();
    let mut pos = start + 68;
    while pos < end {
        let (mut c, ty) = record(pos)?;
        if let Some(&(name, layout, context)) = layouts.get(&ty) {
            for (i, kind) in layout.iter().enumerate() {
                let at = c.pos;
                let bad = |e: String| format!("{name} at {pos}, field {i}: {e}");
                match kind {
                    Kind::Long => c.varint().map(drop).map_err(bad)?,
                    Kind::Bool => c.u8().map(drop).map_err(bad)?,
                    Kind::Str => c.string().map(drop).map_err(bad)?,
                    Kind::Ref(pool) => {
                        let key = c.varint().map_err(bad)?;
                        if key >= KEY_LIMIT {
                            return Err(format!(
                                "{name} at {pos}, field {i}: {pool} key {key} (0x{key:x}) is not an int"
                            ));
                        }
                        let defined_here = by_name
                            .get(pool)
                            .is_some_and(|&t| defined.contains(&(t, key)));
                        if key != 0 && !defined_here {
                            return Err(format!(
                                "{name} at {pos}, field {i}: {pool} key {key} is not defined in its chunk"
                            ));
                        }
                    }
                }
                debug_assert!(c.pos > at);
            }
            if context {
                c.varint()
                    .map_err(|e| format!("{name} at {pos}, contextId: {e}"))?;
                report.with_context_id += 1;
            }
            if c.pos != c.end {
                return Err(format!(
                    "{name} at {pos}: the JDK's fields end at {}, the record at {} \
                     (a reader that reads them in order reads the next record from the wrong place)",
                    c.pos, c.end
                ));
            }
            *report.events.entry(name.to_owned()).or_default() += 1;
        }
        pos = c.end;
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_strings() {
        let b = [0x81, 0x01, 3, 2, b'h', b'i', 2, 7, 0];
        let mut c = Cur {
            b: &b,
            pos: 0,
            end: b.len(),
        };
        assert_eq!(c.varint(), Ok(129));
        assert_eq!(c.string(), Ok((Some("hi".into()), None)));
        assert_eq!(c.string(), Ok((None, Some(7))));
        assert_eq!(c.string(), Ok((None, None)));
        assert!(c.u8().is_err());
    }

    #[test]
    fn not_a_chunk_is_an_error() {
        assert!(check(b"nope, not a recording at all; not even close to 68 bytes").is_err());
    }
}
