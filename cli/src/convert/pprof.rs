//! pprof's format: a gzipped `perftools.profiles.Profile` protobuf, read by
//! `go tool pprof`, Pyroscope and most profilers' UIs.
//!
//! The messages below are the parts of `profile.proto` this writer fills,
//! with that file's field numbers. Every string lives once in the string
//! table (index 0 is the empty string, as the format requires); each
//! distinct frame name is one `Function` and one `Location`; a sample lists
//! its locations leaf first, and carries its thread as a `thread` label.
//!
//! The messages' fields are `profile.proto`'s, under the same names; that
//! file documents them.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use crate::profile::Profile;

/// `perftools.profiles.Profile` (the fields written).
#[derive(Clone, PartialEq, Message)]
pub struct PProfile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
}

/// `ValueType`: indices of a type and a unit in the string table.
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`: a string label (`str`) or a numeric one (`num`).
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
}

/// `Location`.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `Line`.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
}

#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Self::default();
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Builds the pprof message for `profile`.
pub fn build(profile: &Profile, duration_nanos: i64, start_nanos: i64) -> PProfile {
    let mut strings = Strings::new();
    let (ty, unit) = profile.kind.map_or(("samples", "count"), |k| k.unit());
    let sample_type = ValueType {
        r#type: strings.id(ty),
        unit: strings.id(unit),
    };
    let thread_key = strings.id("thread");
    let mut functions: HashMap<Arc<str>, u64> = HashMap::new();
    let mut function = Vec::new();
    let mut location = Vec::new();
    let mut sample = Vec::new();
    let mut keys: Vec<_> = profile.stacks.iter().collect();
    keys.sort();
    for ((thread, frames), w) in keys {
        let ids = frames
            .iter()
            .rev()
            .map(|f| {
                *functions.entry(f.clone()).or_insert_with(|| {
                    let id = function.len() as u64 + 1;
                    let name = strings.id(f);
                    function.push(Function {
                        id,
                        name,
                        system_name: name,
                    });
                    location.push(Location {
                        id,
                        line: vec![Line {
                            function_id: id,
                            line: 0,
                        }],
                    });
                    id
                })
            })
            .collect();
        sample.push(Sample {
            location_id: ids,
            value: vec![*w],
            label: vec![Label {
                key: thread_key,
                str: strings.id(thread),
                num: 0,
            }],
        });
    }
    PProfile {
        sample_type: vec![sample_type.clone()],
        sample,
        location,
        function,
        string_table: strings.table,
        time_nanos: start_nanos,
        duration_nanos,
        period_type: Some(sample_type),
        period: 1,
    }
}

/// Writes `profile` as gzipped pprof.
pub fn write(
    profile: &Profile,
    duration_nanos: i64,
    start_nanos: i64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let bytes = build(profile, duration_nanos, start_nanos).encode_to_vec();
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

/// Reads back a gzipped pprof file (for checks and tests).
pub fn read(gz: &[u8]) -> std::io::Result<PProfile> {
    use std::io::Read;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut bytes)?;
    PProfile::decode(&bytes[..]).map_err(std::io::Error::other)
}
