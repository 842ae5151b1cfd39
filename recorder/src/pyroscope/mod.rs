//! Pushing the recording to Grafana Pyroscope (cargo feature `pyroscope`).
//!
//! ```text
//! FLIGHTREC='pyroscope=http://pyroscope:4040,pyroscope.app=checkout{env=prod,region=eu},pyroscope.period=10s'
//! ```
//!
//! # Mechanism
//!
//! * **One chunk per period.** A recording with an uploader rotates at
//!   least every `period` (its `max_chunk_age` is lowered to it), so each
//!   chunk holds one period's events, and the file written at the stop is
//!   made of the same chunks.
//! * **Hand-off.** When the recorder thread finishes a chunk it reads the
//!   chunk's bytes (so retention cannot delete them first) and offers them
//!   to the recording's bounded queue ([`queue`]): a push under a lock
//!   held only for a `VecDeque` push or pop, never for I/O. A queue over
//!   its limit (chunks or bytes) drops its oldest chunks and counts them.
//!   No program thread ever touches the queue: the commit path is
//!   unchanged.
//! * **Upload.** The uploader thread ([`upload`]) takes every chunk queued
//!   (the chunks closed since the last upload), gzips them as one `jfr`
//!   part beside a `labels` part (a `LabelsSnapshot` protobuf) and POSTs
//!   them as `multipart/form-data` to
//!   `/ingest?name=<app>{labels}&from=<unix s>&until=<unix s>&format=jfr&sampleRate=<hz>&spyName=flightrec`.
//!   5xx answers and connection errors are retried with exponential
//!   backoff; a batch still failing after the last try, or answered 4xx or
//!   3xx (redirects are never followed), is dropped and counted.
//! * **Losses in the file.** Every outcome of a batch (uploaded, dropped
//!   by the queue, dropped after its tries) is recorded as a
//!   `flightrec.PyroscopeUpload` event, so the chunks that did not reach
//!   Pyroscope are counted in the recording itself.
//! * **Stop.** Before the last chunk is closed, the uploader gets until
//!   [`PyroscopeConfig::stop_timeout`] to settle every chunk closed so
//!   far; a server that has not answered by then has everything left (and
//!   the last chunk, never sent) counted and recorded dropped, in the
//!   totals and in the still-open last chunk. Otherwise, after the
//!   recorder thread has finished the last chunk (and queued it), the stop
//!   gives the uploader until the stop timeout again to send it; what is
//!   left then is dropped, counted in the totals and reported on stderr
//!   (the file is complete by then, so it cannot hold that count).
//!
//! Invariant: every chunk the recorder finishes while an uploader runs is
//! either in one successful upload or counted as dropped exactly once.

mod config;
mod queue;
mod upload;

pub use config::{DEFAULT_PERIOD, MIN_PERIOD, PyroscopeConfig, PyroscopeError, Uploaded};
pub use upload::UploadTotals;

pub use upload::UPLOAD_EVENT;
pub(crate) use upload::Uploader;

use crate::base::sync::{Arc, Mutex};

/// The running uploaders, by recording id.
static UPLOADERS: Mutex<Vec<(u64, Arc<Uploader>)>> = Mutex::new(Vec::new());

/// Starts recording `id`'s uploader (its thread and queue), if it has one.
pub(crate) fn start(id: u64, config: Option<&PyroscopeConfig>) -> Result<(), PyroscopeError> {
    let Some(config) = config else {
        return Ok(());
    };
    let up = Uploader::spawn(config.clone())?;
    UPLOADERS.lock().push((id, up));
    Ok(())
}

/// Recorder thread: a chunk spanning `start..end` (ns since the epoch)
/// was finished while the recordings `ids` lived; `read` gives its bytes
/// (called only if one of them uploads). Never waits on the network.
pub(crate) fn chunk_finished(
    ids: &[u64],
    start: i64,
    end: i64,
    read: impl FnOnce() -> std::io::Result<Vec<u8>>,
) {
    let targets: Vec<Arc<Uploader>> = {
        let ups = UPLOADERS.lock();
        if ups.is_empty() {
            return;
        }
        ups.iter()
            .filter(|(i, _)| ids.contains(i))
            .map(|(_, u)| Arc::clone(u))
            .collect()
    };
    if targets.is_empty() {
        return;
    }
    match read() {
        Ok(bytes) => {
            let chunk = queue::Chunk {
                bytes: bytes.into(),
                start,
                end,
            };
            for u in targets {
                u.offer(chunk.clone());
            }
        }
        Err(e) => {
            for u in targets {
                u.unreadable(&e);
            }
        }
    }
}

/// Recording `id` is about to close its last chunk: its uploader settles
/// what was closed so far, or (a server that does not answer by the stop
/// timeout) everything left is counted and recorded dropped while the
/// last chunk is open (see [`upload`]).
pub(crate) fn before_last_chunk(id: u64) {
    let up = UPLOADERS
        .lock()
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, u)| Arc::clone(u));
    if let Some(up) = up {
        up.before_last_chunk();
    }
}

/// Recording `id` stopped (its last chunk queued): lets its uploader send
/// what is queued within its stop timeout, then ends it. Returns what it
/// did over the recording, if it had one.
pub(crate) fn finish(id: u64) -> Option<UploadTotals> {
    let up = {
        let mut ups = UPLOADERS.lock();
        let at = ups.iter().position(|(i, _)| *i == id)?;
        ups.remove(at).1
    };
    let totals = up.finish();
    let mut done = FINISHED.lock();
    if done.len() >= KEPT_FINISHED {
        done.remove(0);
    }
    done.push((id, totals));
    Some(totals)
}

/// The totals of the last stopped uploaders, by recording id.
static FINISHED: Mutex<Vec<(u64, UploadTotals)>> = Mutex::new(Vec::new());
/// How many stopped recordings' totals [`finished_totals`] keeps.
const KEPT_FINISHED: usize = 16;

/// What the uploader of a stopped recording (`Recording::id`) did in all,
/// once its stop returned: chunks uploaded, dropped (each for a reason
/// recorded in a `flightrec.PyroscopeUpload` event) and failed requests.
/// `None` if it had no uploader or is not among the last 16 stopped.
pub fn finished_totals(recording_id: u64) -> Option<UploadTotals> {
    FINISHED
        .lock()
        .iter()
        .find(|(i, _)| *i == recording_id)
        .map(|(_, t)| *t)
}

/// What recording `id`'s uploader has done so far.
pub(crate) fn totals(id: u64) -> Option<UploadTotals> {
    UPLOADERS
        .lock()
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, u)| u.totals())
}
