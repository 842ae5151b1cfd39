//! The running uploaders, one per recording that pushes to Pyroscope, and
//! the totals of the last stopped ones: started with their recording,
//! offered each finished chunk by the recorder thread (never waiting on the
//! network), settled before the last chunk closes, ended after the stop.

use super::config::{PyroscopeConfig, PyroscopeError};
use super::queue;
use super::upload::{UploadTotals, Uploader};
use crate::base::sync::global::{Arc, Mutex};

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
