//! Stack traces out of decoded events: frames as the JDK's tools name them,
//! and the event kinds a profile is made of, each with its weight.
//!
//! A frame is named `Class.method(Params)`, with the class's `/`s turned
//! into `.`s and the parameters from the descriptor by their simple names,
//! as `jfr view` prints them (`Burn.fib(int)`). flightrec's native frames
//! carry the symbol's path as class and name, so a Rust function reads as
//! `crate::module::function()`-like text.

use jfr_format::read::{EventRecord, Value};

/// One frame of a stack trace, top first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// `Class.method(Params)`.
    pub method: String,
    /// The line, where known (0 or less: unknown).
    pub line: i64,
    /// The frame type (`Interpreted`, `JIT compiled`, `Native`, …).
    pub kind: String,
}

/// The frames of `ev`'s `stackTrace`, top first (empty if it has none).
pub fn frames(ev: &EventRecord) -> Vec<Frame> {
    let Some(frames) = ev
        .get("stackTrace")
        .and_then(|st| st.get("frames"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    frames.iter().map(frame).collect()
}

/// One frame value.
pub fn frame(v: &Value) -> Frame {
    Frame {
        method: v
            .get("method")
            .map(method_name)
            .unwrap_or_else(|| "<unknown>".into()),
        line: v.get("lineNumber").and_then(Value::as_i64).unwrap_or(0),
        kind: v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    }
}

/// `Class.method(Params)` for a `jdk.types.Method` value, as the JDK's
/// `ValueFormatter.formatMethod` writes it.
pub fn method_name(m: &Value) -> String {
    let class = m
        .get("type")
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("<unknown>")
        .replace('/', ".");
    let name = m.get("name").and_then(Value::as_str).unwrap_or("<unknown>");
    let descriptor = m.get("descriptor").and_then(Value::as_str).unwrap_or("()");
    let params = descriptor
        .strip_prefix('(')
        .and_then(|d| d.rsplit_once(')'))
        .map(|(p, _)| p)
        .unwrap_or("");
    let params: Vec<String> = parameters(params)
        .into_iter()
        .map(|q| {
            let q = q.replace('/', ".");
            q.rsplit('.').next().unwrap_or_default().to_owned()
        })
        .collect();
    format!("{class}.{name}({})", params.join(", "))
}

/// The types of a descriptor's parameter list, e.g. `I[JLjava/lang/String;`
/// → `int`, `long[]`, `java/lang/String`.
fn parameters(d: &str) -> Vec<String> {
    let b = d.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let mut dims = 0;
        while i < b.len() && b[i] == b'[' {
            dims += 1;
            i += 1;
        }
        let Some(&c) = b.get(i) else { break };
        let ty = match c {
            b'L' => match d[i..].find(';') {
                Some(end) => {
                    let t = &d[i + 1..i + end];
                    i += end;
                    t.to_owned()
                }
                None => {
                    let t = &d[i + 1..];
                    i = b.len();
                    t.to_owned()
                }
            },
            b'I' => "int".into(),
            b'J' => "long".into(),
            b'Z' => "boolean".into(),
            b'D' => "double".into(),
            b'F' => "float".into(),
            b'S' => "short".into(),
            b'C' => "char".into(),
            b'B' => "byte".into(),
            _ => "<unknown-descriptor-type>".into(),
        };
        out.push(format!("{ty}{}", "[]".repeat(dims)));
        i += 1;
    }
    out
}

/// The kinds of profile a recording can give, by the events they count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `jdk.CPUTimeSample`: CPU time, one sample per period of CPU time.
    CpuTime,
    /// `jdk.ExecutionSample` (+ `jdk.NativeMethodSample`): wall clock.
    Wall,
    /// `jdk.ObjectAllocationSample` by `weight`, else the TLAB events by
    /// `allocationSize`: bytes.
    Alloc,
    /// `jdk.JavaMonitorEnter`, `jdk.ThreadPark`, flightrec's lock waits:
    /// time blocked.
    Lock,
    /// `jdk.MethodTrace`: time in traced methods.
    MethodTiming,
    /// Any one event type with a stack trace, counted.
    Type,
}

impl Kind {
    /// Parses `--event`: a kind's name, or an event type name.
    pub fn parse(s: &str) -> (Self, Option<String>) {
        match s {
            "cpu-time" | "cpu" => (Self::CpuTime, None),
            "wall" => (Self::Wall, None),
            "alloc" => (Self::Alloc, None),
            "lock" => (Self::Lock, None),
            "method-timing" => (Self::MethodTiming, None),
            other => (Self::Type, Some(other.to_owned())),
        }
    }

    /// The unit pprof and the flame graph's tooltips give a weight.
    pub fn unit(self) -> (&'static str, &'static str) {
        match self {
            Self::CpuTime | Self::Wall | Self::Type => ("samples", "count"),
            Self::Alloc => ("alloc_space", "bytes"),
            Self::Lock | Self::MethodTiming => ("delay", "nanoseconds"),
        }
    }

    /// True if events of type `t` can be part of a profile of this kind
    /// (those [`weight`](Self::weight) gives a weight).
    pub fn accepts(self, t: &str, type_name: Option<&str>) -> bool {
        match self {
            Self::CpuTime => t == "jdk.CPUTimeSample",
            Self::Wall => matches!(t, "jdk.ExecutionSample" | "jdk.NativeMethodSample"),
            Self::Alloc => matches!(
                t,
                "jdk.ObjectAllocationSample"
                    | "jdk.ObjectAllocationInNewTLAB"
                    | "jdk.ObjectAllocationOutsideTLAB"
            ),
            Self::Lock => matches!(
                t,
                "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark"
            ),
            Self::MethodTiming => t == "jdk.MethodTrace",
            Self::Type => Some(t) == type_name,
        }
    }

    /// The weight `ev` adds to a profile of this kind, or `None` if it is
    /// not part of it.
    pub fn weight(
        self,
        ev: &EventRecord,
        type_name: Option<&str>,
        nanos: impl Fn(i64) -> i64,
    ) -> Option<i64> {
        let t = &*ev.type_name;
        match self {
            Self::CpuTime => (t == "jdk.CPUTimeSample").then_some(1),
            Self::Wall => {
                matches!(t, "jdk.ExecutionSample" | "jdk.NativeMethodSample").then_some(1)
            }
            Self::Alloc => match t {
                "jdk.ObjectAllocationSample" => ev.get("weight").and_then(Value::as_i64),
                "jdk.ObjectAllocationInNewTLAB" | "jdk.ObjectAllocationOutsideTLAB" => {
                    ev.get("allocationSize").and_then(Value::as_i64)
                }
                _ => None,
            },
            Self::Lock => matches!(
                t,
                "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark"
            )
            .then(|| ev.duration_ticks().map(nanos).unwrap_or(0)),
            Self::MethodTiming => {
                (t == "jdk.MethodTrace").then(|| ev.duration_ticks().map(nanos).unwrap_or(0))
            }
            Self::Type => (Some(t) == type_name).then_some(1),
        }
    }
}

/// The thread an event is about: `sampledThread` for samples, else
/// `eventThread`; named as `jfr view` names threads.
pub fn thread_name(ev: &EventRecord) -> Option<String> {
    let t = ev.get("sampledThread").or_else(|| ev.get("eventThread"))?;
    let java_id = t.get("javaThreadId").and_then(Value::as_i64).unwrap_or(0);
    let name = if java_id > 0 {
        t.get("javaName")
    } else {
        t.get("osName")
    };
    name.and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_accepts_every_type_it_weighs() {
        use std::sync::Arc;
        let types = [
            "jdk.CPUTimeSample",
            "jdk.ExecutionSample",
            "jdk.NativeMethodSample",
            "jdk.ObjectAllocationSample",
            "jdk.ObjectAllocationInNewTLAB",
            "jdk.ObjectAllocationOutsideTLAB",
            "jdk.JavaMonitorEnter",
            "jdk.JavaMonitorWait",
            "jdk.ThreadPark",
            "jdk.MethodTrace",
            "my.Event",
            "jdk.GarbageCollection",
        ];
        let kinds = [
            Kind::CpuTime,
            Kind::Wall,
            Kind::Alloc,
            Kind::Lock,
            Kind::MethodTiming,
            Kind::Type,
        ];
        for t in types {
            // Weights present, so a weighed type gives `Some`.
            let ev = EventRecord {
                offset: 0,
                type_id: jfr_format::TypeId(200),
                type_name: Arc::from(t),
                fields: vec![
                    ("weight".into(), Value::Long(8)),
                    ("allocationSize".into(), Value::Long(8)),
                    ("duration".into(), Value::Long(8)),
                ],
            };
            for k in kinds {
                let weighed = k.weight(&ev, Some("my.Event"), |t| t).is_some();
                assert_eq!(k.accepts(t, Some("my.Event")), weighed, "{k:?} {t}");
            }
        }
    }

    #[test]
    fn descriptors_decode_as_the_jdk_decodes_them() {
        assert_eq!(
            parameters("I[JLjava/lang/String;Z"),
            ["int", "long[]", "java/lang/String", "boolean"]
        );
        assert!(parameters("").is_empty());
        // A class name cut short is taken to the end, never past it.
        assert_eq!(parameters("Lfoo"), ["foo"]);
    }
}
