//! [`RecordedEvent`]: one event handed to a stream callback, with typed
//! accessors over the project's reader's resolved values.
//!
//! Invariant: a `RecordedEvent` borrows the decoded chunk it came from and
//! lives only for the duration of one callback.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jfr_format::read::{EventRecord, Value};
use jfr_format::write::header::ChunkHeader;

/// One event, as a stream callback sees it.
#[derive(Debug, Clone, Copy)]
pub struct RecordedEvent<'a> {
    pub(crate) record: &'a EventRecord,
    pub(crate) header: &'a ChunkHeader,
}

/// One resolved stack frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// `type.method`, as `jfr print` shows it (e.g. `my_crate.module.f`).
    pub name: String,
    /// The line number, if known.
    pub line: Option<i64>,
}

impl<'a> RecordedEvent<'a> {
    /// The event type's name, e.g. `jdk.ExecutionSample`.
    pub fn type_name(&self) -> &'a str {
        &self.record.type_name
    }

    /// The decoded event (every field as the reader resolved it).
    pub fn record(&self) -> &'a EventRecord {
        self.record
    }

    /// The value of field `name` (a dotted path follows structs, e.g.
    /// `eventThread.javaName`).
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.record.get_path(name)
    }

    /// An integer field (any width, unsigned ones as their bits).
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(Value::as_i64)
    }

    /// An unsigned integer field.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.i64(name).map(|v| v as u64)
    }

    /// A floating-point field (integers converted).
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(Value::as_f64)
    }

    /// A boolean field.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.get(name).and_then(Value::as_bool)
    }

    /// A string field.
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.get(name).and_then(Value::as_str)
    }

    fn ticks_to_time(&self, ticks: i64) -> SystemTime {
        let h = self.header;
        let tps = h.ticks_per_second.max(1) as i128;
        let nanos =
            h.start_nanos as i128 + (ticks as i128 - h.start_ticks as i128) * 1_000_000_000 / tps;
        UNIX_EPOCH + Duration::from_nanos(nanos.clamp(0, u64::MAX as i128) as u64)
    }

    /// When the event started (or happened, for an instant event).
    pub fn start_time(&self) -> SystemTime {
        self.ticks_to_time(self.record.start_ticks().unwrap_or(self.header.start_ticks))
    }

    /// The duration of a duration event.
    pub fn duration(&self) -> Option<Duration> {
        let d = self.record.duration_ticks()?;
        let tps = self.header.ticks_per_second.max(1) as i128;
        Some(Duration::from_nanos(
            (d.max(0) as i128 * 1_000_000_000 / tps).min(u64::MAX as i128) as u64,
        ))
    }

    /// The name of the thread the event is about (`eventThread`, or the
    /// sampled thread of a sample).
    pub fn thread_name(&self) -> Option<&'a str> {
        ["eventThread", "sampledThread"].iter().find_map(|f| {
            let t = self.get(f)?;
            t.get_path("javaName")
                .and_then(Value::as_str)
                .or_else(|| t.get_path("osName").and_then(Value::as_str))
        })
    }

    /// The stack trace, innermost frame first, resolved to named frames;
    /// `None` if the event has none.
    pub fn stack_trace(&self) -> Option<Vec<Frame>> {
        let frames = self.get("stackTrace.frames")?.as_array()?;
        Some(
            frames
                .iter()
                .map(|f| {
                    let ty = f
                        .get_path("method.type.name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let m = f
                        .get_path("method.name")
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    Frame {
                        name: if ty.is_empty() {
                            m.to_owned()
                        } else {
                            format!("{}.{m}", ty.replace('/', "."))
                        },
                        line: f.get_path("lineNumber").and_then(Value::as_i64),
                    }
                })
                .collect(),
        )
    }
}
