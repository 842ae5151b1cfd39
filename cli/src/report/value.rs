//! A field's value as one short line of text, for the lanes' tooltips and
//! the event browser: numbers and strings as they are, a thread or class
//! by its name, a stack trace by its top frames, other structs by their
//! fields; at most [`MAX`] characters.

use jfr_format::read::Value;

use crate::stacks;

/// Characters of one value's text, at most.
const MAX: usize = 160;

/// `v` as one short line.
pub(super) fn text(v: &Value) -> String {
    let mut s = full(v, 0);
    if s.chars().count() > MAX {
        s = s.chars().take(MAX - 1).collect::<String>() + "…";
    }
    s
}

/// A duration in nanoseconds, in the unit that reads best.
pub(super) fn nanos(ns: i64) -> String {
    let a = ns.unsigned_abs();
    if a >= 1_000_000_000 {
        format!("{:.3} s", ns as f64 / 1e9)
    } else if a >= 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else if a >= 1_000 {
        format!("{:.3} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

fn full(v: &Value, depth: usize) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Byte(x) => x.to_string(),
        Value::Short(x) => x.to_string(),
        Value::Char(c) => char::from_u32(u32::from(*c)).unwrap_or('?').to_string(),
        Value::Int(x) => x.to_string(),
        Value::Long(x) => x.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Double(x) => x.to_string(),
        Value::String(s) => s.to_string(),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().take(8).map(|x| full(x, depth + 1)).collect();
            let more = if a.len() > 8 { ", …" } else { "" };
            format!("[{}{more}]", items.join(", "))
        }
        Value::Object(_) if depth > 2 => "{…}".into(),
        Value::Object(o) => {
            if let Some(frames) = o.get("frames").and_then(Value::as_array) {
                let top: Vec<String> = frames
                    .iter()
                    .take(3)
                    .map(|f| stacks::frame(f).method)
                    .collect();
                return top.join(" ← ");
            }
            for name in ["javaName", "osName", "name"] {
                if let Some(s) = o.get(name).and_then(Value::as_str) {
                    return s.replace('/', ".");
                }
            }
            if o.get("descriptor").is_some() {
                return stacks::method_name(v);
            }
            "{…}".into()
        }
        Value::Ref { .. } => "(ref)".into(),
    }
}
