//! What Grafana Pyroscope's JFR parser (`grafana/jfr-parser`, Go) demands
//! of a file, checked over the raw bytes of ours. No Go toolchain here, so
//! this walks every record the way that parser does and fails where it
//! would (see `docs/pyroscope-events.md` for each rule and its source):
//!
//! 1. the metadata declares `int`, `long`, `short`, `float`, `boolean`,
//!    `java.lang.String` and the constant types it binds;
//! 2. every constant-pool type and every event type it parses has only
//!    fields it can read: constant-pool references, strings, `int`, `long`,
//!    `short`, `boolean`, or structs of those (one level deep; it reads
//!    `float` as a varint and knows no `byte`, `char` or `double`);
//! 3. `int` values fit five varint bytes and `short` values three (it reads
//!    them as 32/16-bit varints and fails past that), as do array and
//!    string lengths;
//! 4. no string anywhere uses encoding 2 (a string-pool reference), which it
//!    rejects;
//! 5. in each chunk, the `jdk.ActiveSetting` named `event` comes before the
//!    first `jdk.ExecutionSample` (it keeps the last value read so far).
//!
//! Besides those checks it returns, per `jdk.ExecutionSample`, the thread
//! state name (resolved in the chunk's `jdk.types.ThreadState` pool) and the
//! `contextId`, as the parser would hand them to Pyroscope's ingest.

#![allow(unreachable_pub)]

use std::collections::HashMap;

use jfr_format::read::read_recording;
use jfr_format::read::{ClassRecord, MetadataRecord};

/// Events of the kinds Pyroscope's parser binds (it skips every other).
pub const PARSED_EVENTS: &[&str] = &[
    "jdk.ExecutionSample",
    "profiler.WallClockSample",
    "profiler.Malloc",
    "profiler.Free",
    "jdk.ObjectAllocationInNewTLAB",
    "jdk.ObjectAllocationOutsideTLAB",
    "jdk.ObjectAllocationSample",
    "profiler.LiveObject",
    "jdk.JavaMonitorEnter",
    "jdk.ThreadPark",
    "jdk.ActiveSetting",
];

/// Types the parser refuses to start without.
pub const REQUIRED_TYPES: &[&str] = &[
    "int",
    "long",
    "short",
    "float",
    "boolean",
    "java.lang.String",
    "jdk.types.FrameType",
    "jdk.types.ThreadState",
    "java.lang.Thread",
    "java.lang.Class",
    "jdk.types.Method",
    "jdk.types.Package",
    "jdk.types.Symbol",
    "jdk.types.StackTrace",
    "jdk.types.ClassLoader",
    "jdk.types.StackFrame",
];

/// One `jdk.ExecutionSample` as the parser reads it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub state: Option<String>,
    pub context_id: u64,
    /// `sampledThread`'s pool key.
    #[allow(dead_code)]
    pub thread: u64,
}

/// What a file gives Pyroscope's parser.
#[derive(Debug, Default)]
pub struct Parsed {
    pub samples: Vec<Sample>,
    /// Values of the `event` settings, in file order.
    pub event_settings: Vec<String>,
    /// Strings read in the whole file, by encoding byte.
    pub strings_by_encoding: HashMap<u8, u64>,
}

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
    md: &'a MetadataRecord,
    /// Strict: the value belongs to a type the Go parser reads.
    strict: bool,
    strings: &'a mut HashMap<u8, u64>,
}

#[derive(Debug)]
enum V {
    Int(u64),
    Str(Option<String>),
    Other,
}

impl Walker<'_> {
    fn varint(&mut self, max_bytes: usize, what: &str) -> u64 {
        let mut v = 0u64;
        for i in 0..9 {
            let b = self.buf[self.pos];
            self.pos += 1;
            if i == 8 {
                v |= u64::from(b) << 56;
                assert!(!self.strict || i < max_bytes, "{what}: 9-byte varint");
                return v;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                assert!(
                    !self.strict || i < max_bytes,
                    "{what}: {}-byte varint where Pyroscope reads at most {max_bytes}",
                    i + 1
                );
                return v;
            }
        }
        unreachable!()
    }

    fn string(&mut self, what: &str) -> Option<String> {
        let enc = self.buf[self.pos];
        self.pos += 1;
        *self.strings.entry(enc).or_default() += 1;
        match enc {
            0 => None,
            1 => Some(String::new()),
            3 | 5 => {
                let n = self.varint(5, what) as usize;
                let bytes = &self.buf[self.pos..self.pos + n];
                self.pos += n;
                Some(if enc == 3 {
                    String::from_utf8(bytes.to_vec()).expect("UTF-8")
                } else {
                    bytes.iter().map(|&b| b as char).collect()
                })
            }
            4 => {
                let n = self.varint(5, what) as usize;
                let units: Vec<u16> = (0..n).map(|_| self.varint(5, what) as u16).collect();
                Some(String::from_utf16_lossy(&units))
            }
            e => panic!("{what}: string encoding {e}, which Pyroscope's parser rejects"),
        }
    }

    /// Reads one value of class `c` (not a pool reference).
    fn value(&mut self, c: &ClassRecord, what: &str) -> V {
        match &*c.name {
            "boolean" | "byte" => {
                self.pos += 1;
                V::Other
            }
            "char" => V::Int(self.varint(9, what)),
            "short" => V::Int(self.varint(3, what)),
            "int" => V::Int(self.varint(5, what)),
            "long" => V::Int(self.varint(9, what)),
            "float" => {
                self.pos += 4;
                V::Other
            }
            "double" => {
                self.pos += 8;
                V::Other
            }
            "java.lang.String" => V::Str(self.string(what)),
            _ => {
                for f in &c.fields {
                    self.field(f, &format!("{what}.{}", f.name));
                }
                V::Other
            }
        }
    }

    fn field(&mut self, f: &jfr_format::read::FieldRecord, what: &str) -> V {
        let n = if f.array {
            self.varint(5, what) as usize
        } else {
            1
        };
        let mut last = V::Other;
        for _ in 0..n {
            last = if f.constant_pool {
                V::Int(self.varint(9, what))
            } else {
                let c = self.md.class(f.type_id).expect("declared field type");
                self.value(c, what)
            };
        }
        last
    }
}

/// Rule 2 for class `c`: the kinds of field the parser can read.
fn assert_readable(md: &MetadataRecord, c: &ClassRecord) {
    let simple = ["int", "long", "short", "boolean", "java.lang.String"];
    for f in &c.fields {
        if f.constant_pool {
            continue;
        }
        let t = md.class(f.type_id).expect("declared");
        if simple.contains(&&*t.name) {
            continue;
        }
        if &*c.name == "jdk.types.StackTrace" && &*f.name == "frames" {
            continue; // parsed by its own reader, frames checked below
        }
        assert!(
            !t.fields.is_empty(),
            "{}.{}: a `{}` field, which Pyroscope's parser cannot read",
            c.name,
            f.name,
            t.name
        );
        for g in &t.fields {
            let gt = md.class(g.type_id).expect("declared");
            assert!(
                g.constant_pool || simple.contains(&&*gt.name),
                "{}.{}.{}: `{}` nested in a struct, which Pyroscope's parser cannot read",
                c.name,
                f.name,
                g.name,
                gt.name
            );
        }
    }
}

/// Checks rules 1 to 5 on `file` (a whole recording) and returns what the
/// parser would read.
pub fn parse(file: &[u8]) -> Parsed {
    let rec = read_recording(file).expect("our own reader reads the file");
    let mut out = Parsed::default();
    for chunk in &rec.chunks {
        let md = &chunk.metadata;
        for name in REQUIRED_TYPES {
            assert!(md.class_by_name(name).is_some(), "metadata lacks {name}");
        }
        let ty = |name: &str| md.class_by_name(name).map(|c| c.id.0);
        let (exec, setting, checkpoint) =
            (ty("jdk.ExecutionSample"), ty("jdk.ActiveSetting"), 1u64);
        for name in PARSED_EVENTS {
            if let Some(c) = md.class_by_name(name) {
                assert_readable(md, c);
            }
        }
        assert_readable(md, md.class_by_name("jdk.types.StackFrame").unwrap());
        let start = chunk.offset as usize;
        let end = start + chunk.header.chunk_size as usize;
        // The parser loads pools along the checkpoint chain when it opens
        // a chunk (`readConstantPool`); a checkpoint it meets among the
        // events is skipped by its size (`ParseEvent`'s `default` case),
        // as are the fillers the recorder aligns its writes with.
        let mut chain = std::collections::HashSet::new();
        let mut at = chunk.header.constant_pool_offset;
        while at > 0 {
            let cp = start + at as usize;
            chain.insert(cp);
            let mut w = Walker {
                buf: file,
                pos: cp,
                md,
                strict: true,
                strings: &mut out.strings_by_encoding,
            };
            for _ in 0..4 {
                w.varint(9, "checkpoint size, type, start, duration");
            }
            let delta = w.varint(9, "checkpoint delta") as i64;
            at = if delta == 0 { 0 } else { at + delta };
        }
        let mut pos = start + 68;
        let mut states: HashMap<u64, String> = HashMap::new();
        let mut samples = Vec::new();
        let mut event_seen = false;
        while pos < end {
            let mut w = Walker {
                buf: file,
                pos,
                md,
                strict: true,
                strings: &mut out.strings_by_encoding,
            };
            let size = w.varint(9, "record size") as usize;
            let ty = w.varint(9, "record type");
            let body_end = pos + size;
            if ty == 0 {
                // Start, duration, id, then the string table (read with the
                // same string reader, encoding 2 rejected); the element tree
                // is our own reader's business.
                for _ in 0..3 {
                    w.varint(9, "metadata header");
                }
                let n = w.varint(5, "metadata string count");
                for _ in 0..n {
                    w.string("metadata string");
                }
                pos = body_end;
                continue;
            }
            if ty == checkpoint && !chain.contains(&pos) {
                pos = body_end;
                continue;
            }
            if ty == checkpoint {
                for _ in 0..3 {
                    w.varint(9, "checkpoint header");
                }
                let flags = w.varint(5, "checkpoint type mask");
                assert!(flags < 0x80, "checkpoint flags {flags:#x}");
                let pools = w.varint(5, "pool count");
                for _ in 0..pools {
                    let tid = w.varint(9, "pool type");
                    let c = md
                        .class(jfr_format::TypeId(tid))
                        .expect("pool of a declared type");
                    assert_readable(md, c);
                    let n = w.varint(5, "pool size");
                    for _ in 0..n {
                        let key = w.varint(9, "pool key");
                        let what = format!("{} #{key}", c.name);
                        if &*c.name == "jdk.types.ThreadState" {
                            if let V::Str(Some(s)) = w.field(&c.fields[0], &what) {
                                states.insert(key, s);
                            }
                        } else {
                            w.value(c, &what);
                        }
                    }
                }
                assert_eq!(w.pos, body_end, "checkpoint fully read");
                pos = body_end;
                continue;
            }
            let c = md
                .class(jfr_format::TypeId(ty))
                .expect("event of a declared type");
            // Every string in every event is walked (rule 4); only the
            // parser's own events are held to its integer limits.
            w.strict = PARSED_EVENTS.contains(&&*c.name);
            let mut values = HashMap::new();
            for f in &c.fields {
                let what = format!("{}.{}", c.name, f.name);
                let v = w.field(f, &what);
                values.insert(f.name.to_string(), v);
            }
            assert_eq!(w.pos, body_end, "{} fully read", c.name);
            if Some(ty) == setting
                && let Some(V::Str(Some(name))) = values.get("name")
                && name == "event"
                && let Some(V::Str(Some(v))) = values.get("value")
            {
                out.event_settings.push(v.clone());
                event_seen = true;
            }
            if Some(ty) == exec {
                assert!(
                    event_seen,
                    "a jdk.ExecutionSample before any `event` setting in the chunk at {start}"
                );
                let int = |n: &str| match values.get(n) {
                    Some(V::Int(v)) => *v,
                    _ => 0,
                };
                assert!(
                    matches!(
                        c.field("contextId").map(|f| (f.constant_pool, md.class(f.type_id).unwrap().name.to_string())),
                        Some((false, ref t)) if t == "long"
                    ),
                    "contextId must be a plain long"
                );
                samples.push((int("state"), int("contextId"), int("sampledThread")));
            }
            pos = body_end;
        }
        for (state, context_id, thread) in samples {
            out.samples.push(Sample {
                state: states.get(&state).cloned(),
                context_id,
                thread,
            });
        }
    }
    out
}
