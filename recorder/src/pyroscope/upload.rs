//! The uploader thread: takes the queued chunks, sends them as one
//! Pyroscope ingest request, retries, and records each outcome as a
//! `flightrec.PyroscopeUpload` event.
//!
//! # One request
//!
//! ```text
//! POST <url>/ingest?name=<app>{k=v}&from=<s>&until=<s>&format=jfr&sampleRate=<hz>&spyName=flightrec
//! Content-Type: multipart/form-data; boundary=<b>
//! [Authorization: <value of the auth variable>]
//!
//! --<b>  name="jfr"     the chunks back to back, gzip (Pyroscope detects the magic)
//! --<b>  name="labels"  a LabelsSnapshot protobuf (contexts and strings of the labels)
//! --<b>--
//! ```
//!
//! `from` is the first chunk's start rounded down, `until` the last
//! chunk's end rounded up, so the span covers every sample. 2xx is
//! success; 5xx, 408, 429 and connection errors are retried after 0.5 s,
//! 1 s, 2 s, ... (the first delay and the number of tries are
//! configurable); any other answer, a redirect included (none is ever
//! followed, so none can lead to another host), drops the batch.
//!
//! # A server that does not answer
//!
//! Before the recording's last chunk is closed, [`Uploader::before_last_chunk`]
//! gives the uploader until the stop timeout to settle what was closed so
//! far. If it is still waiting on the server then, the stopping thread
//! counts everything queued, unreported or in flight as `dropped: stop
//! deadline` (with the reason), and also the last chunk, which is then
//! never sent; each is recorded as a `flightrec.PyroscopeUpload` event
//! while the last chunk is still open, so the file holds them. So with a
//! hung server, chunks uploaded + dropped = chunks closed, in
//! [`UploadTotals`] and in the file alike.
//!
//! Invariant: each batch ends in exactly one outcome (uploaded or
//! dropped), counted in [`UploadTotals`] and, while the recording runs,
//! written as one event; [`Queue::settle`] decides whose outcome counts
//! when the stop abandons a batch in flight.

use std::io::Write;
use std::time::{Duration, Instant};

use super::config::{PyroscopeConfig, Uploaded};
use super::queue::{Chunk, Queue};
use crate::base::sync::OnceLock;
use crate::base::sync::global::{Arc, AtomicU64, Condvar, Mutex, Ordering};
use crate::event::descriptor::EventType;
use crate::event::dynamic::{EventTypeBuilder, Value};
use crate::event::field::FieldKind;

/// The event each outcome is recorded as.
pub const UPLOAD_EVENT: &str = "flightrec.PyroscopeUpload";

/// What an uploader did over its recording.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UploadTotals {
    /// Requests Pyroscope accepted.
    pub uploads: u64,
    /// Chunks in them.
    pub chunks_uploaded: u64,
    /// Chunks dropped: by the queue's bounds, after the last try, refused
    /// by the server, or left at the stop's deadline.
    pub chunks_dropped: u64,
    /// Requests that failed and were retried or dropped.
    pub failed_requests: u64,
}

#[derive(Debug, Default)]
struct Totals {
    uploads: AtomicU64,
    chunks_uploaded: AtomicU64,
    chunks_dropped: AtomicU64,
    failed_requests: AtomicU64,
}

/// One recording's uploader: its queue and its thread.
#[derive(Debug)]
pub(crate) struct Uploader {
    config: PyroscopeConfig,
    queue: Queue,
    totals: Totals,
    /// Set by the thread as its last act.
    done: Mutex<bool>,
    done_cv: Condvar,
    /// The sample rate the last upload sent.
    last_rate: AtomicU64,
}

impl Uploader {
    /// Checks the `Authorization` source and starts the thread.
    pub(crate) fn spawn(
        config: PyroscopeConfig,
    ) -> Result<Arc<Self>, super::config::PyroscopeError> {
        let auth = config.auth_value()?;
        // Samples in the shape Pyroscope's parser reads (process-wide).
        crate::sampler::set_pyroscope_events(true);
        let queue = Queue::new(config.max_queued_chunks, config.max_queued_bytes);
        let up = Arc::new(Self {
            config,
            queue,
            totals: Totals::default(),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
            last_rate: AtomicU64::new(0),
        });
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(up.config.timeout))
            .user_agent(concat!("flightrec/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let me = Arc::clone(&up);
        std::thread::Builder::new()
            .name("flightrec-pyroscope".into())
            .spawn(move || {
                me.run(&agent, auth.as_deref());
                *me.done.lock() = true;
                me.done_cv.notify_all();
            })
            .map_err(|e| super::config::PyroscopeError::Thread(e.to_string()))?;
        Ok(up)
    }

    /// Recorder thread: queues a finished chunk (never waits). After the
    /// stop gave up on the server, the chunk is counted dropped instead
    /// (its event was recorded by [`before_last_chunk`](Self::before_last_chunk)).
    pub(crate) fn offer(&self, chunk: Chunk) {
        if !self.queue.push(chunk) {
            self.totals.chunks_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The recording is about to close its last chunk: waits (up to the
    /// stop timeout) for the uploader to settle every chunk closed so far.
    /// If it does not, counts them all dropped, and the last chunk too,
    /// recording the events while the last chunk is still open.
    pub(crate) fn before_last_chunk(&self) {
        let deadline = Instant::now() + self.config.stop_timeout;
        if self.queue.wait_idle(deadline) {
            return;
        }
        let a = self.queue.abandon();
        let why = format!(
            "the server did not answer within the stop timeout ({:?})",
            self.config.stop_timeout
        );
        let parts = [
            ("dropped: queue full", a.unreported, None),
            ("dropped: stop deadline", a.in_flight, Some(why.as_str())),
            ("dropped: stop deadline", a.queued, Some(why.as_str())),
        ];
        for (outcome, d, error) in parts {
            if d.chunks > 0 {
                self.totals
                    .chunks_dropped
                    .fetch_add(d.chunks, Ordering::Relaxed);
                record(outcome, d.chunks, d.bytes, 0, 0, error);
            }
        }
        // The last chunk, closed next, is never sent: `offer` counts it.
        let last = format!("{why}; the last chunk is not sent");
        record("dropped: stop deadline", 1, 0, 0, 0, Some(&last));
    }

    /// Recorder thread: a finished chunk could not be read back.
    pub(crate) fn unreadable(&self, e: &std::io::Error) {
        eprintln!("flightrec: pyroscope: cannot read a finished chunk to upload: {e}");
        self.queue.count_dropped(0);
    }

    pub(crate) fn totals(&self) -> UploadTotals {
        let t = &self.totals;
        UploadTotals {
            uploads: t.uploads.load(Ordering::Relaxed),
            chunks_uploaded: t.chunks_uploaded.load(Ordering::Relaxed),
            chunks_dropped: t.chunks_dropped.load(Ordering::Relaxed),
            failed_requests: t.failed_requests.load(Ordering::Relaxed),
        }
    }

    /// The stop: lets the thread send what is queued until the stop
    /// timeout, waits for it (a little longer, for a request that was
    /// under way), and reports what was left on stderr.
    pub(crate) fn finish(&self) -> UploadTotals {
        let deadline = Instant::now() + self.config.stop_timeout;
        self.queue.stop(deadline);
        let grace = deadline + Duration::from_millis(500);
        let mut done = self.done.lock();
        // Given up already: everything is counted, the thread may still
        // wait on the server; it ends by itself.
        while !*done && !self.queue.given_up() {
            let now = Instant::now();
            if now >= grace {
                eprintln!(
                    "flightrec: pyroscope: the last upload did not finish within {:?}; \
                     it is abandoned",
                    self.config.stop_timeout
                );
                break;
            }
            done = self.done_cv.wait_for(done, grace - now);
        }
        drop(done);
        let t = self.totals();
        if t.chunks_dropped > 0 {
            eprintln!(
                "flightrec: pyroscope: {} chunk(s) of this recording were not uploaded \
                 ({} uploaded in {} request(s))",
                t.chunks_dropped, t.chunks_uploaded, t.uploads
            );
        }
        t
    }

    /// The thread's loop: one batch per wake-up until stopped and empty.
    fn run(&self, agent: &ureq::Agent, auth: Option<&str>) {
        loop {
            let (batch, dropped, stopping) = self.queue.take();
            if dropped.chunks > 0 {
                // Taken from the queue under its lock: ours to count.
                self.totals
                    .chunks_dropped
                    .fetch_add(dropped.chunks, Ordering::Relaxed);
                record(
                    "dropped: queue full",
                    dropped.chunks,
                    dropped.bytes,
                    0,
                    0,
                    None,
                );
            }
            if batch.is_empty() {
                if stopping.is_some() {
                    return;
                }
                continue;
            }
            if stopping.is_some_and(|d| Instant::now() >= d) {
                self.drop_batch(&batch, "dropped: stop deadline", 0, 0, None);
                continue;
            }
            self.send(agent, auth, &batch);
        }
    }

    /// Sends one batch with retries.
    fn send(&self, agent: &ureq::Agent, auth: Option<&str>, batch: &[Chunk]) {
        let mut jfr = Vec::with_capacity(batch.iter().map(|c| c.bytes.len()).sum());
        for c in batch {
            jfr.extend_from_slice(&c.bytes);
        }
        let from = batch[0].start.div_euclid(1_000_000_000);
        let until = (batch[batch.len() - 1].end + 999_999_999).div_euclid(1_000_000_000);
        let labels = crate::labels::snapshot().encode();
        let gz = match gzip(&jfr) {
            Ok(gz) => gz,
            Err(e) => {
                let msg = format!("gzip: {e}");
                return self.drop_batch(batch, "dropped: failed", 0, 0, Some(&msg));
            }
        };
        let (content_type, body) = multipart(&gz, &labels);
        let url = self
            .config
            .ingest_url(from, until, sample_rate_hz(&self.last_rate));
        let mut delay = self.config.backoff;
        let mut tries = 0;
        let (mut status, mut error) = (0u16, None::<String>);
        while tries < self.config.tries {
            // Past the stop's deadline a request gets only what is left.
            let mut timeout = self.config.timeout;
            if let Some(deadline) = self.queue.deadline() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                timeout = timeout.min(left);
            }
            tries += 1;
            let mut req = agent
                .post(&url)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Content-Type", &content_type);
            if let Some(a) = auth {
                req = req.header("Authorization", a);
            }
            match req.send(&body[..]) {
                Ok(resp) => {
                    status = resp.status().as_u16();
                    error = None;
                    if (200..300).contains(&status) {
                        if !self.queue.settle() {
                            return; // the stop counted it dropped
                        }
                        let t = &self.totals;
                        t.uploads.fetch_add(1, Ordering::Relaxed);
                        t.chunks_uploaded
                            .fetch_add(batch.len() as u64, Ordering::Relaxed);
                        if let Some(f) = &self.config.observer {
                            f(&Uploaded {
                                jfr: &jfr,
                                labels: &labels,
                                chunks: batch.len(),
                                from,
                                until,
                            });
                        }
                        record(
                            "uploaded",
                            batch.len() as u64,
                            jfr.len() as u64,
                            tries,
                            status,
                            None,
                        );
                        return;
                    }
                    self.totals.failed_requests.fetch_add(1, Ordering::Relaxed);
                    if !(status >= 500 || status == 408 || status == 429) {
                        let why = if (300..400).contains(&status) {
                            "a redirect (not followed)"
                        } else {
                            "refused by the server"
                        };
                        return self.drop_batch(
                            batch,
                            "dropped: refused",
                            tries,
                            status,
                            Some(why),
                        );
                    }
                }
                Err(e) => {
                    self.totals.failed_requests.fetch_add(1, Ordering::Relaxed);
                    status = 0;
                    error = Some(e.to_string());
                }
            }
            if tries < self.config.tries {
                let stop = self.queue.sleep(delay);
                delay = delay.saturating_mul(2);
                if stop.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
            }
        }
        self.drop_batch(batch, "dropped: failed", tries, status, error.as_deref());
    }

    fn drop_batch(
        &self,
        batch: &[Chunk],
        outcome: &str,
        tries: u32,
        status: u16,
        error: Option<&str>,
    ) {
        if !self.queue.settle() {
            return; // the stop counted it dropped
        }
        let bytes: usize = batch.iter().map(|c| c.bytes.len()).sum();
        self.totals
            .chunks_dropped
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        record(
            outcome,
            batch.len() as u64,
            bytes as u64,
            tries,
            status,
            error,
        );
    }
}

/// The `flightrec.PyroscopeUpload` type (built once; `None` if the
/// declaration were refused, which it is not).
fn upload_event() -> Option<&'static EventType> {
    static TYPE: OnceLock<Option<&'static EventType>> = OnceLock::new();
    *TYPE.get_or_init(|| {
        EventTypeBuilder::new(UPLOAD_EVENT)
            .label("Pyroscope Upload")
            .description(
                "One outcome of the Pyroscope uploader: chunks uploaded, or dropped and why",
            )
            .category(["Flight Recorder"])
            .stack_trace(false)
            .field_with("outcome", FieldKind::String, Some("Outcome"), None)
            .field_with("chunks", FieldKind::I64, Some("Chunks"), None)
            .field_with("bytes", FieldKind::I64, Some("Bytes"), None)
            .field_with("tries", FieldKind::I32, Some("Tries"), None)
            .field_with("httpStatus", FieldKind::I32, Some("HTTP Status"), None)
            .field_with("error", FieldKind::String, Some("Error"), None)
            .build()
            .ok()
    })
}

/// Records one outcome (dropped, with a count, if the buffers are full).
fn record(outcome: &str, chunks: u64, bytes: u64, tries: u32, status: u16, error: Option<&str>) {
    if let Some(ty) = upload_event() {
        ty.commit_values(&[
            Value::Str(Some(outcome)),
            Value::Int(chunks as i64),
            Value::Int(bytes as i64),
            Value::Int(i64::from(tries)),
            Value::Int(i64::from(status)),
            Value::Str(error),
        ]);
    }
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    e.write_all(bytes)?;
    e.finish()
}

/// The form: a `jfr` file part and a `labels` file part. Returns the
/// content type (with the boundary) and the body.
fn multipart(jfr: &[u8], labels: &[u8]) -> (String, Vec<u8>) {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let mut n = crate::base::clock::wall_nanos() as u64 ^ (std::process::id() as u64) << 32;
    let boundary = loop {
        n = n
            .wrapping_add(SEQ.fetch_add(1, Ordering::Relaxed))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let b = format!("flightrec-{n:016x}{:016x}", n.rotate_left(29));
        let found = |hay: &[u8]| hay.windows(b.len()).any(|w| w == b.as_bytes());
        if !found(jfr) && !found(labels) {
            break b;
        }
    };
    let mut body = Vec::with_capacity(jfr.len() + labels.len() + 512);
    for (name, data) in [("jfr", jfr), ("labels", labels)] {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; \
                 filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Samples per second per thread of the running sampler (wall-clock
/// interval, else CPU-time), as the last upload saw it if sampling has
/// stopped since (the batches sent at the stop); 100 if never known.
fn sample_rate_hz(last: &AtomicU64) -> u64 {
    match crate::sampler::pyroscope_sample_rate() {
        Some(hz) => {
            last.store(hz, Ordering::Relaxed);
            hz
        }
        None => match last.load(Ordering::Relaxed) {
            0 => 100,
            hz => hz,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_has_both_parts() {
        let (ct, body) = multipart(b"FLR\0abc", b"");
        let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"jfr\"; filename=\"jfr\"\r\nContent-Type: application/octet-stream\r\n\r\nFLR\0abc\r\n"));
        assert!(text.contains("name=\"labels\""));
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let data = b"FLR\0 some chunk bytes".repeat(100);
        let gz = gzip(&data).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }
}
