//! What `jfr print --json` (JDK 25) prints for each value the tour wrote,
//! and a field-by-field comparison with what it actually printed.
//!
//! The rules, found by experiment and in the JDK's `JSONWriter` /
//! `EventPrintWriter` / `RecordedObject`:
//!
//! * `boolean`, integers, `float`, `double`: JSON numbers/booleans from
//!   `String.valueOf` (so `1.4E-45`); NaN and ±Infinity print as `null`.
//! * `char`: a one-character string; `byte[]`, `long[]`: arrays of numbers.
//! * strings: JSON strings (every char above 0x7F escaped as `\uXXXX`, so
//!   emoji arrive as surrogate pairs); null strings print `null`.
//! * `@Unsigned` `byte`/`short`/`int`/`long`: the unsigned value (up to
//!   2^64 − 1 for `long`).
//! * `@Timespan`: `java.time.Duration.toString()`; 0 → `PT0S`,
//!   `Long.MIN_VALUE` → `Duration.ofSeconds(Long.MIN_VALUE)`,
//!   `Long.MAX_VALUE` → `ChronoUnit.FOREVER`; microseconds are multiplied by
//!   1000 in a `long` first; ticks are divided by `ticksPerSecond / 1e9`
//!   (integer division, then as a double).
//! * `@Timestamp`: `OffsetDateTime.toString()` in the recording's zone;
//!   ticks are converted with the first chunk's header.
//! * `@DataAmount`, `@Percentage`, `@Frequency`, `@MemoryAddress`: raw.
//! * constant-pool and struct values: nested objects with every field
//!   (`Class.name` in internal form, e.g. `java/util/ArrayList`); stack
//!   frames as `{method, lineNumber, bytecodeIndex, type}` with the frame
//!   type's name; a null reference (key 0) prints `null`.
//! * events are sorted per chunk by end time, so they are matched by type
//!   and start time, not by position.

use serde_json::Value as Json;

use flightrec::jfr_format::schema::{Annotation, TimespanUnit, TimestampUnit};
use flightrec::jfr_format::{FieldDesc, Metadata, TypeId};

use crate::java_fmt::{JavaDuration, OFFSET_DATE_TIME_MIN, offset_date_time_utc};
use crate::tour::constants::{Constants, FrameSpec};
use crate::tour::{ChunkPlan, Event, Tour, Value};

/// An expected JSON value. Floats keep their width so they can be compared
/// the way Java printed them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    Null,
    Bool(bool),
    Int(i128),
    F32(f32),
    F64(f64),
    Str(String),
    Array(Vec<Expect>),
    Object(Vec<(String, Expect)>),
}

impl Expect {
    fn str(s: impl Into<String>) -> Self {
        Expect::Str(s.into())
    }

    fn object(fields: Vec<(&str, Expect)>) -> Self {
        Expect::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }
}

/// Renders the tour's values as `jfr print --json` shows them.
pub(crate) struct Renderer<'a> {
    tour: &'a Tour,
    /// The first chunk: the JDK converts every chunk's ticks with its header.
    first: &'a ChunkPlan,
}

impl<'a> Renderer<'a> {
    pub(crate) fn new(tour: &'a Tour) -> Self {
        Self {
            tour,
            first: &tour.chunks[0],
        }
    }

    fn constants(&self) -> &Constants {
        &self.tour.constants
    }

    /// The event's type name, its printed `startTime`, and its `values`.
    pub(crate) fn event(&self, chunk: &ChunkPlan, e: &Event) -> (String, String, Expect) {
        let md = self.tour.metadata(chunk);
        let t = md.get(e.type_id).expect("declared");
        let values: Vec<(String, Expect)> = t
            .fields
            .iter()
            .zip(&e.values)
            .map(|(f, v)| (f.name.to_string(), self.field(md, v, f)))
            .collect();
        let start = match &values[0].1 {
            Expect::Str(s) => s.clone(),
            other => panic!("startTime renders as {other:?}"),
        };
        (t.name.to_string(), start, Expect::Object(values))
    }

    /// A field value, formatted per the field's annotations.
    fn field(&self, md: &Metadata, v: &Value, f: &FieldDesc) -> Expect {
        if f.array {
            let Value::Array(items) = v else {
                panic!("{}: {v:?}", f.name)
            };
            // Array elements are printed raw, without annotation formatting.
            let element = FieldDesc {
                array: false,
                annotations: Default::default(),
                ..f.clone()
            };
            return Expect::Array(items.iter().map(|i| self.field(md, i, &element)).collect());
        }
        for a in f.annotations.iter() {
            match a {
                Annotation::Timespan(unit) => return Expect::Str(self.timespan(long(v), *unit)),
                Annotation::Timestamp(unit) => {
                    return Expect::Str(self.timestamp(long(v), *unit));
                }
                _ => {}
            }
        }
        let unsigned = f.annotations.contains(&Annotation::Unsigned);
        match v {
            Value::Byte(x) if unsigned => Expect::Int(i128::from(*x as u8)),
            Value::Short(x) if unsigned => Expect::Int(i128::from(*x as u16)),
            Value::Int(x) if unsigned => Expect::Int(i128::from(*x as u32)),
            Value::Long(x) if unsigned => Expect::Int(i128::from(*x as u64)),
            _ => self.plain(md, v, f.type_id),
        }
    }

    fn plain(&self, md: &Metadata, v: &Value, type_id: TypeId) -> Expect {
        match v {
            Value::Bool(b) => Expect::Bool(*b),
            Value::Char(c) => Expect::str(char::from_u32(u32::from(*c)).expect("not a surrogate")),
            Value::Byte(x) => Expect::Int(i128::from(*x)),
            Value::Short(x) => Expect::Int(i128::from(*x)),
            Value::Int(x) => Expect::Int(i128::from(*x)),
            Value::Long(x) => Expect::Int(i128::from(*x)),
            Value::Float(x) => Expect::F32(*x),
            Value::Double(x) => Expect::F64(*x),
            Value::Str(None) => Expect::Null,
            Value::Str(Some(s)) => Expect::str(s.as_str()),
            Value::PooledStr(k) => Expect::str(self.constants().strings[k].as_str()),
            Value::Thread(k) => self.thread(*k),
            Value::Class(k) => self.class(*k),
            Value::StackTrace(k) => self.trace(*k),
            Value::Frame(f) => self.frame(f),
            Value::Struct(values) => {
                let t = md.get(type_id).expect("declared value type");
                Expect::Object(
                    t.fields
                        .iter()
                        .zip(values)
                        .map(|(f, v)| (f.name.to_string(), self.field(md, v, f)))
                        .collect(),
                )
            }
            Value::Array(_) => panic!("array value in a non-array field"),
        }
    }

    fn timespan(&self, raw: i64, unit: TimespanUnit) -> String {
        let d = match raw {
            0 => JavaDuration::of_nanos(0),
            i64::MIN => JavaDuration::of_seconds(i64::MIN),
            i64::MAX => JavaDuration {
                seconds: i64::MAX,
                nanos: 999_999_999,
            },
            _ => match unit {
                TimespanUnit::Nanoseconds => JavaDuration::of_nanos(raw),
                TimespanUnit::Microseconds => JavaDuration::of_nanos(raw.wrapping_mul(1000)),
                TimespanUnit::Milliseconds => JavaDuration::of_millis(raw),
                TimespanUnit::Seconds => JavaDuration::of_seconds(raw),
                TimespanUnit::Ticks => JavaDuration::of_nanos((raw as f64 / self.divisor()) as i64),
            },
        };
        d.to_java_string()
    }

    fn timestamp(&self, raw: i64, unit: TimestampUnit) -> String {
        if raw == i64::MIN {
            return OFFSET_DATE_TIME_MIN.to_owned();
        }
        let nanos = match unit {
            TimestampUnit::MillisSinceEpoch => i128::from(raw) * 1_000_000,
            TimestampUnit::Ticks => {
                let start = &self.first.start;
                let delta = ((raw - start.start_ticks) as f64 / self.divisor()) as i64;
                i128::from(start.start_nanos + delta)
            }
        };
        offset_date_time_utc(nanos)
    }

    /// The JDK's tick divisor: `ticksPerSecond / 1_000_000_000L` (a long
    /// division), used as a double.
    fn divisor(&self) -> f64 {
        (self.first.start.ticks_per_second / 1_000_000_000) as f64
    }

    fn thread(&self, key: u64) -> Expect {
        let Some(t) = self.constants().threads.get(&key) else {
            return Expect::Null;
        };
        Expect::object(vec![
            ("osName", Expect::str(t.os_name)),
            ("osThreadId", Expect::Int(t.os_thread_id.into())),
            ("javaName", t.java_name.map_or(Expect::Null, Expect::str)),
            ("javaThreadId", Expect::Int(t.java_thread_id.into())),
            ("group", self.thread_group(t.group)),
            ("virtual", Expect::Bool(false)),
        ])
    }

    fn thread_group(&self, key: u64) -> Expect {
        let Some(&(parent, name)) = self.constants().thread_groups.get(&key) else {
            return Expect::Null;
        };
        Expect::object(vec![
            ("parent", self.thread_group(parent)),
            ("name", Expect::str(name)),
        ])
    }

    fn class(&self, key: u64) -> Expect {
        let Some(c) = self.constants().classes.get(&key) else {
            return Expect::Null;
        };
        Expect::object(vec![
            ("classLoader", self.loader(c.loader)),
            ("name", Expect::str(c.name)),
            ("package", self.package(c.package)),
            ("modifiers", Expect::Int(c.modifiers.into())),
            ("hidden", Expect::Bool(false)),
        ])
    }

    fn loader(&self, key: u64) -> Expect {
        let Some(&(class, name)) = self.constants().loaders.get(&key) else {
            return Expect::Null;
        };
        Expect::object(vec![
            ("type", self.class(class)),
            ("name", Expect::str(name)),
        ])
    }

    fn package(&self, key: u64) -> Expect {
        let Some(name) = self.constants().packages.get(&key) else {
            return Expect::Null;
        };
        Expect::object(vec![
            ("name", Expect::str(*name)),
            ("module", Expect::Null),
            ("exported", Expect::Bool(true)),
        ])
    }

    fn method(&self, key: u64) -> Expect {
        let m = &self.constants().methods[&key];
        Expect::object(vec![
            ("type", self.class(m.class)),
            ("name", Expect::str(m.name)),
            ("descriptor", Expect::str(m.descriptor)),
            ("modifiers", Expect::Int(m.modifiers.into())),
            ("hidden", Expect::Bool(false)),
        ])
    }

    fn frame(&self, f: &FrameSpec) -> Expect {
        Expect::object(vec![
            ("method", self.method(f.method)),
            ("lineNumber", Expect::Int(f.line.into())),
            ("bytecodeIndex", Expect::Int(f.bytecode_index.into())),
            ("type", Expect::str(f.frame_type.1)),
        ])
    }

    fn trace(&self, key: u64) -> Expect {
        let Some(t) = self.constants().traces.get(&key) else {
            return Expect::Null;
        };
        let frames = t.frames.iter().map(|f| self.frame(f)).collect();
        Expect::object(vec![
            ("truncated", Expect::Bool(t.truncated)),
            ("frames", Expect::Array(frames)),
        ])
    }
}

fn long(v: &Value) -> i64 {
    match v {
        Value::Long(x) => *x,
        other => panic!("annotated time value is {other:?}, not a long"),
    }
}

/// Compares `actual` with `expected`, appending one line per difference.
pub(crate) fn check(path: &str, expected: &Expect, actual: &Json, errors: &mut Vec<String>) {
    let ok = match expected {
        Expect::Null => actual.is_null(),
        Expect::Bool(b) => actual.as_bool() == Some(*b),
        Expect::Int(i) => {
            actual.is_i64() && actual.as_i64().map(i128::from) == Some(*i)
                || actual.is_u64() && actual.as_u64().map(i128::from) == Some(*i)
        }
        // Java prints the shortest decimal that identifies the float; read
        // as a double and narrowed, it is the float again. NaN and
        // ±Infinity print as null.
        Expect::F32(x) if !x.is_finite() => actual.is_null(),
        Expect::F32(x) => actual.as_f64().map(|a| (a as f32).to_bits()) == Some(x.to_bits()),
        Expect::F64(x) if !x.is_finite() => actual.is_null(),
        Expect::F64(x) => actual.as_f64().map(f64::to_bits) == Some(x.to_bits()),
        Expect::Str(s) => actual.as_str() == Some(s.as_str()),
        Expect::Array(items) => match actual.as_array() {
            Some(a) if a.len() == items.len() => {
                for (i, (e, a)) in items.iter().zip(a).enumerate() {
                    check(&format!("{path}[{i}]"), e, a, errors);
                }
                true
            }
            _ => false,
        },
        Expect::Object(fields) => match actual.as_object() {
            Some(map) => {
                let mut want: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
                let mut got: Vec<&str> = map.keys().map(String::as_str).collect();
                want.sort_unstable();
                got.sort_unstable();
                if want != got {
                    errors.push(format!("{path}: fields {got:?}, expected {want:?}"));
                }
                for (k, e) in fields {
                    if let Some(a) = map.get(k) {
                        check(&format!("{path}.{k}"), e, a, errors);
                    }
                }
                true
            }
            None => false,
        },
    };
    if !ok {
        errors.push(format!(
            "{path}: expected {}, jfr printed {}",
            clip(&format!("{expected:?}")),
            clip(&actual.to_string())
        ));
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= 300 {
        s.to_owned()
    } else {
        let head: String = s.chars().take(300).collect();
        format!("{head}… ({} chars)", s.chars().count())
    }
}
