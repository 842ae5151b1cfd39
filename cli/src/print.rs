//! `flightrec print`: every event, as text or as JSON shaped like
//! `jfr print --json` (`{"recording": {"events": [{"type", "values"}]}}`).
//!
//! Values are converted as the JDK's printers convert them: a field
//! annotated `@Timestamp` becomes an ISO instant at the chunk's time zone,
//! `@Timespan` an ISO duration, `@Unsigned` integers read unsigned; ticks
//! convert with the JDK's own arithmetic ([`Ticks`]). Stack frames are cut
//! at `--stack-depth` (default 5, as `jfr print`).

use std::collections::HashSet;
use std::io::Write;

use jfr_format::read::{ClassRecord, EventRecord, MetadataRecord, Object, Value};
use jfr_format::types::TypeId;
use serde_json::{Map, Number, Value as Json};

use crate::error::CliError;
use crate::recording::Recording;
use crate::time::{Ticks, iso_duration, iso_duration_parts, iso_instant};

/// What to print.
#[derive(Debug)]
pub struct Options {
    /// JSON instead of text.
    pub json: bool,
    /// Only these event types (full names, or names without `jdk.`).
    pub events: Option<HashSet<String>>,
    /// Frames per stack trace.
    pub stack_depth: usize,
}

/// How a field's value is to be shown.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Unit {
    Plain,
    Unsigned,
    /// Ticks, nanos, micros, millis or seconds per unit of the value.
    Span(SpanUnit),
    Instant(InstantUnit),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SpanUnit {
    Ticks,
    Nanos(i64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum InstantUnit {
    Ticks,
    Millis,
}

/// Per chunk: what the converters need.
struct Ctx<'a> {
    meta: &'a MetadataRecord,
    ticks: Ticks,
    offset_seconds: i64,
    depth: usize,
}

impl Ctx<'_> {
    fn annotation_name(&self, id: TypeId) -> Option<&str> {
        self.meta.class(id).map(|c| &*c.name)
    }

    /// How the JDK's printers treat a field: `@Timespan` first, then
    /// `@Timestamp`, then `@Unsigned` (`EventPrintWriter.determineValueType`).
    fn unit_of(&self, class: &ClassRecord, field: &str) -> Unit {
        let Some(f) = class.field(field) else {
            return Unit::Plain;
        };
        let find = |name: &str| {
            f.annotations
                .iter()
                .find(|a| self.annotation_name(a.type_id) == Some(name))
        };
        if let Some(a) = find("jdk.jfr.Timespan") {
            return Unit::Span(match a.value("value").unwrap_or("NANOSECONDS") {
                "TICKS" => SpanUnit::Ticks,
                "MICROSECONDS" => SpanUnit::Nanos(1_000),
                "MILLISECONDS" => SpanUnit::Nanos(1_000_000),
                "SECONDS" => SpanUnit::Nanos(1_000_000_000),
                _ => SpanUnit::Nanos(1),
            });
        }
        if let Some(a) = find("jdk.jfr.Timestamp") {
            return Unit::Instant(
                match a.value("value").unwrap_or("MILLISECONDS_SINCE_EPOCH") {
                    "TICKS" => InstantUnit::Ticks,
                    _ => InstantUnit::Millis,
                },
            );
        }
        if find("jdk.jfr.Unsigned").is_some() {
            return Unit::Unsigned;
        }
        Unit::Plain
    }

    /// A timespan as `java.time.Duration::toString`, with the JDK's special
    /// values: 0 is zero in any unit, `Long.MIN_VALUE` the most negative
    /// duration and `Long.MAX_VALUE` "forever".
    fn duration_text(&self, raw: i64, u: SpanUnit) -> String {
        match raw {
            0 => "PT0S".into(),
            i64::MIN => iso_duration_parts(i64::MIN, 0),
            i64::MAX => iso_duration_parts(i64::MAX, 999_999_999),
            _ => iso_duration(self.span(raw, u)),
        }
    }

    /// A timestamp as `java.time.OffsetDateTime::toString` at the chunk's
    /// offset; `Long.MIN_VALUE` is `OffsetDateTime.MIN`, as in the JDK.
    fn instant_text(&self, raw: i64, u: InstantUnit) -> String {
        if raw == i64::MIN {
            return "-999999999-01-01T00:00+18:00".into();
        }
        iso_instant(self.instant(raw, u), self.offset_seconds)
    }

    fn json_fields(
        &self,
        class: Option<&ClassRecord>,
        fields: &[(std::sync::Arc<str>, Value)],
    ) -> Json {
        let mut m = Map::new();
        for (name, v) in fields {
            let unit = class.map_or(Unit::Plain, |c| self.unit_of(c, name));
            let depth = if &**name == "frames" {
                self.depth
            } else {
                usize::MAX
            };
            m.insert(name.to_string(), self.json_value(v, unit, depth));
        }
        Json::Object(m)
    }

    fn json_value(&self, v: &Value, unit: Unit, depth: usize) -> Json {
        match v {
            Value::Null | Value::Ref { .. } => Json::Null,
            Value::Boolean(b) => Json::Bool(*b),
            Value::Char(c) => Json::String(String::from_utf16_lossy(&[*c])),
            Value::Float(f) => float(java_decimal(&format!("{f:e}"), f64::from(*f))),
            Value::Double(d) => float(java_decimal(&format!("{d:e}"), *d)),
            Value::String(s) => Json::String(s.to_string()),
            Value::Object(o) => self.json_object(o),
            Value::Array(a) => Json::Array(
                a.iter()
                    .take(depth)
                    .map(|e| self.json_value(e, unit, usize::MAX))
                    .collect(),
            ),
            int => {
                let raw = int.as_i64().unwrap_or(0);
                match unit {
                    Unit::Span(u) => Json::String(self.duration_text(raw, u)),
                    Unit::Instant(u) => Json::String(self.instant_text(raw, u)),
                    Unit::Unsigned => Json::Number(unsigned(int).into()),
                    Unit::Plain => Json::Number(raw.into()),
                }
            }
        }
    }

    fn json_object(&self, o: &Object) -> Json {
        self.json_fields(self.meta.class(o.type_id), &o.fields)
    }

    fn span(&self, raw: i64, u: SpanUnit) -> i64 {
        match u {
            SpanUnit::Ticks => self.ticks.span(raw),
            SpanUnit::Nanos(k) => raw.saturating_mul(k),
        }
    }

    fn instant(&self, raw: i64, u: InstantUnit) -> i64 {
        match u {
            InstantUnit::Ticks => self.ticks.instant(raw),
            InstantUnit::Millis => raw.saturating_mul(1_000_000),
        }
    }

    /// One value as text, as `jfr print` writes simple values.
    fn text_value(&self, v: &Value, unit: Unit, indent: usize, depth: usize, out: &mut String) {
        match v {
            Value::Null | Value::Ref { .. } => out.push_str("N/A"),
            Value::Boolean(b) => out.push_str(&b.to_string()),
            Value::Char(c) => out.push_str(&String::from_utf16_lossy(&[*c])),
            Value::Float(f) => out.push_str(&f.to_string()),
            Value::Double(d) => out.push_str(&d.to_string()),
            Value::String(s) => out.push_str(&format!("{s:?}")),
            Value::Object(o) => self.text_object(o, indent, out),
            Value::Array(a) => {
                out.push_str("[\n");
                for e in a.iter().take(depth) {
                    out.push_str(&"  ".repeat(indent + 1));
                    self.text_value(e, unit, indent + 1, usize::MAX, out);
                    out.push('\n');
                }
                if a.len() > depth {
                    out.push_str(&"  ".repeat(indent + 1));
                    out.push_str("...\n");
                }
                out.push_str(&"  ".repeat(indent));
                out.push(']');
            }
            int => {
                let raw = int.as_i64().unwrap_or(0);
                match unit {
                    Unit::Span(u) => out.push_str(&self.duration_text(raw, u)),
                    Unit::Instant(u) => out.push_str(&self.instant_text(raw, u)),
                    Unit::Unsigned => out.push_str(&unsigned(int).to_string()),
                    Unit::Plain => out.push_str(&raw.to_string()),
                }
            }
        }
    }

    fn text_object(&self, o: &Object, indent: usize, out: &mut String) {
        if let Some(frame) = frame_line(o) {
            out.push_str(&frame);
            return;
        }
        out.push_str("{\n");
        self.text_fields(self.meta.class(o.type_id), &o.fields, indent + 1, out);
        out.push_str(&"  ".repeat(indent));
        out.push('}');
    }

    fn text_fields(
        &self,
        class: Option<&ClassRecord>,
        fields: &[(std::sync::Arc<str>, Value)],
        indent: usize,
        out: &mut String,
    ) {
        for (name, v) in fields {
            let unit = class.map_or(Unit::Plain, |c| self.unit_of(c, name));
            let depth = if &**name == "frames" {
                self.depth
            } else {
                usize::MAX
            };
            out.push_str(&"  ".repeat(indent));
            out.push_str(&format!("{name} = "));
            self.text_value(v, unit, indent, depth, out);
            out.push('\n');
        }
    }
}

/// A stack frame on one line: `Class.method(Params) line: N`.
fn frame_line(o: &Object) -> Option<String> {
    if &*o.type_name != "jdk.types.StackFrame" {
        return None;
    }
    let v = Value::Object(std::sync::Arc::new(o.clone()));
    let f = crate::stacks::frame(&v);
    Some(if f.line > 0 {
        format!("{} line: {}", f.method, f.line)
    } else {
        f.method
    })
}

/// The value the JDK prints for a float or double whose shortest decimal
/// (in Rust's `{:e}` form) is `shortest` and whose exact value is `exact`:
/// Java's `toString` writes at least two digits, and when the shortest
/// decimal has one it takes the two-digit decimal closest to the exact
/// value (`Float.MIN_VALUE` is `1.4E-45`, not `1E-45`).
fn java_decimal(shortest: &str, exact: f64) -> f64 {
    let one_digit = shortest.split('e').next().is_some_and(|m| !m.contains('.'));
    let text = if one_digit && exact.is_finite() {
        format!("{exact:.1e}")
    } else {
        shortest.to_owned()
    };
    text.parse().unwrap_or(exact)
}

fn float(d: f64) -> Json {
    Number::from_f64(d).map_or(Json::Null, Json::Number)
}

/// An integer read as unsigned of its own width, as the JDK does for
/// `@Unsigned` fields.
fn unsigned(v: &Value) -> u64 {
    match *v {
        Value::Byte(b) => u64::from(b as u8),
        Value::Short(s) => u64::from(s as u16),
        Value::Int(i) => u64::from(i as u32),
        Value::Long(l) => l as u64,
        Value::Char(c) => u64::from(c),
        _ => 0,
    }
}

/// Where an event ends, in ticks: its start plus its duration, if it has
/// one (the JDK's `endTimeTicks`).
fn end_ticks(ev: &EventRecord) -> i64 {
    let start = ev.start_ticks().unwrap_or(0);
    start.wrapping_add(ev.duration_ticks().unwrap_or(0))
}

fn wanted(ev: &EventRecord, o: &Options) -> bool {
    o.events.as_ref().is_none_or(|set| {
        set.contains(&*ev.type_name)
            || ev
                .type_name
                .rsplit('.')
                .next()
                .is_some_and(|short| set.contains(short))
    })
}

/// Prints the events of `rec` that `opts` selects.
pub fn run(rec: &mut Recording, opts: &Options, out: &mut dyn Write) -> Result<(), CliError> {
    let io = |source| CliError::Output {
        path: "-".into(),
        source,
    };
    let mut first = true;
    if opts.json {
        out.write_all(b"{\n  \"recording\": {\n    \"events\": [")
            .map_err(io)?;
    }
    // The JDK converts the ticks of every chunk with the first chunk's
    // header, in the first chunk's zone (its `ChunkParser` hands its
    // `TimeConverter` on), so its times of later chunks are off by the
    // chunks' clock drift; ours are the same numbers.
    let mut first_chunk: Option<(Ticks, i64)> = None;
    rec.for_each_decoded(|chunk, _| {
        let (ticks, offset_seconds) = *first_chunk.get_or_insert_with(|| {
            (
                Ticks::new(&chunk.header),
                // The JDK's zone: the metadata's GMT offset plus its DST saving.
                chunk
                    .metadata
                    .region
                    .as_ref()
                    .map_or(0, |r| (r.gmt_offset_ms + r.dst_ms) / 1000),
            )
        });
        let ctx = Ctx {
            meta: &chunk.metadata,
            ticks,
            offset_seconds,
            depth: opts.stack_depth,
        };
        let mut text = String::new();
        // As `jfr print`: each chunk's events in order of their end time
        // (a stable sort, so file order among equals).
        let mut events: Vec<&EventRecord> =
            chunk.events.iter().filter(|e| wanted(e, opts)).collect();
        events.sort_by_key(|e| end_ticks(e));
        for ev in events {
            let class = chunk.metadata.class(ev.type_id);
            if opts.json {
                let mut m = Map::new();
                m.insert("type".into(), Json::String(ev.type_name.to_string()));
                m.insert("values".into(), ctx.json_fields(class, &ev.fields));
                if !first {
                    text.push(',');
                }
                text.push_str("\n      ");
                let pretty = serde_json::to_string_pretty(&Json::Object(m)).unwrap_or_default();
                text.push_str(&pretty.replace('\n', "\n      "));
            } else {
                text.push_str(&format!("{} {{\n", ev.type_name));
                ctx.text_fields(class, &ev.fields, 1, &mut text);
                text.push_str("}\n\n");
            }
            first = false;
        }
        out.write_all(text.as_bytes()).map_err(io)
    })?;
    if opts.json {
        out.write_all(b"\n    ]\n  }\n}\n").map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::java_decimal;

    fn java_float(f: f32) -> f64 {
        java_decimal(&format!("{f:e}"), f64::from(f))
    }

    fn java_double(d: f64) -> f64 {
        java_decimal(&format!("{d:e}"), d)
    }

    #[test]
    fn floats_print_as_java_writes_them() {
        assert_eq!(java_float(f32::from_bits(1)), 1.4e-45);
        assert_eq!(java_float(0.1), 0.1);
        assert_eq!(java_float(1.5), 1.5);
        assert_eq!(java_float(3.0e38), 3.0e38);
        assert_eq!(java_float(0.33333334), 0.33333334);
        assert_eq!(java_double(f64::from_bits(1)), 4.9e-324);
        assert_eq!(java_double(0.1), 0.1);
        assert_eq!(java_double(1e23), 1e23);
        assert_eq!(java_double(2.5), 2.5);
    }
}
