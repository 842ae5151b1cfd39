//! `jdk.ActiveRecording`: what the recording was asked for, written at the
//! start of every chunk (one per live recording) so that `jfr view active-recordings` on any chunk
//! (or on a dump of some of them) shows its name, destination, retention,
//! flush interval, start and requested duration.
//!
//! Invariant: every chunk's first events are one `jdk.ActiveRecording`
//! per recording live when it started, each describing its recording as
//! configured at its start (fields in JDK 25's
//! order; see `jfr_format::builtin`).

use jfr_format::write::events::{ActiveRecording, BuiltinEvent};

use crate::base::sync::global::{AtomicU64, Ordering};
use crate::config::builder::RecordingConfig;

/// Recording ids, as the JDK numbers them: 1, 2, ... in the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The next recording id.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// The values of `jdk.ActiveRecording`, fixed at the start.
#[derive(Debug, Clone)]
pub(crate) struct RecordingInfo {
    id: u64,
    name: String,
    destination: Option<String>,
    disk: bool,
    max_age_ms: i64,
    flush_interval_ms: i64,
    max_size: i64,
    start_ms: i64,
    duration_ms: i64,
}

impl RecordingInfo {
    /// Recording `id` (from [`next_id`]), described by `config`, starting
    /// at `start_nanos` (wall clock). Limits not set are written as 0, as
    /// the JDK writes "no limit".
    pub(crate) fn new(id: u64, config: &RecordingConfig, start_nanos: i64) -> Self {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self {
            id,
            name: config.name.clone().unwrap_or_else(|| id.to_string()),
            destination: config.destination.as_ref().map(|p| p.display().to_string()),
            disk: config.disk,
            max_age_ms: config.max_age.map_or(0, ms),
            flush_interval_ms: ms(config.flush_interval),
            max_size: config
                .max_size
                .map_or(0, |n| i64::try_from(n).unwrap_or(i64::MAX)),
            start_ms: start_nanos / 1_000_000,
            duration_ms: config.duration.map_or(0, ms),
        }
    }
}

/// `jdk.ActiveRecording`: ts, id, name, destination, disk, maxAge,
/// flushInterval, maxSize, recordingStart, recordingDuration.
pub(crate) fn write_active_recording(out: &mut Vec<u8>, ticks: i64, r: &RecordingInfo) {
    ActiveRecording {
        start_time: ticks,
        id: r.id as i64,
        name: &r.name,
        destination: r.destination.as_deref(),
        disk: r.disk,
        max_age: r.max_age_ms,
        flush_interval: r.flush_interval_ms,
        max_size: r.max_size,
        recording_start: r.start_ms,
        recording_duration: r.duration_ms,
    }
    .append(out);
}
