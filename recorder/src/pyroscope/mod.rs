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

pub(crate) mod config;
mod plug;
mod queue;
mod upload;
mod uploaders;

pub use config::{DEFAULT_PERIOD, MIN_PERIOD, PyroscopeConfig, PyroscopeError, Uploaded};
pub use upload::UploadTotals;

pub(crate) use plug::Pyroscope;
pub use upload::UPLOAD_EVENT;
pub use uploaders::finished_totals;
