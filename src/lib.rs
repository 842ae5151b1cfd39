//! flightrec: a flight recorder for native programs (Rust, and ahead-of-time
//! compiled code generally) that writes **JDK Flight Recorder** files. The
//! JDK's `jfr` tool, JDK Mission Control, Grafana Pyroscope and anything
//! built on `jdk.jfr.consumer` read them; so does the workspace's own
//! `flightrec` command, with no JVM.
//!
//! Committing an event costs the program tens of nanoseconds and never waits;
//! files, constants, symbols, sampling and periodic events are handled on
//! flightrec's own threads, within a memory bound
//! ([`RecordingConfig::max_memory`]). Nothing recorded is lost silently:
//! every dropped event is counted by cause ([`LossCause`]) and written into
//! the file.
//!
//! # Declaring and committing an event
//!
//! ```no_run
//! use flightrec::{Event, Recording, RecordingConfig};
//!
//! #[derive(Event)]
//! #[event(name = "com.example.Request", label = "Request", duration, threshold = "1 ms")]
//! struct Request<'a> {
//!     #[event(label = "Path")]
//!     path: &'a str,
//!     status: u16,
//! }
//!
//! let recording = Recording::start(RecordingConfig::new("app.jfr"))?;
//! let timer = Request::begin();
//! // ... handle the request ...
//! timer.commit(&Request { path: "/", status: 200 });
//! recording.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Settings (`enabled`, `threshold`, `stackTrace` per event type) are given
//! at the start ([`RecordingConfig::settings`]) and changed while recording
//! ([`Recording::set`]).
//!
//! # The ways in
//!
//! * **Events of your own**: [`derive(Event)`](macro@Event) for types known
//!   at compile time, [`EventTypeBuilder`] for types built at run time.
//! * **A recording without code changes**: the `FLIGHTREC` environment
//!   variable (`FLIGHTREC='filename=app.jfr,settings=profile' ./app`) starts
//!   one before `main` in any program linked with flightrec and writes it at
//!   exit, as `-XX:StartFlightRecording` does for `java`.
//! * **CPU and wall-clock sampling**: the settings
//!   `jdk.CPUTimeSample#enabled=true` and `jdk.ExecutionSample#enabled=true`
//!   (both in `settings=profile`); [`labels::scope`] tags samples per request.
//! * **Method timing and tracing**: [`timed`] marks functions, selected at run
//!   time by JEP 520's filters ([`timing`]).
//! * **Allocations and leaks**: [`alloc::SamplingAllocator`] wraps the global
//!   allocator. **Lock contention**: [`lock::Mutex`], [`lock::RwLock`] and
//!   [`lock::Condvar`].
//! * **`tracing`**: with the cargo feature `tracing`, `flightrec::tracing`
//!   is the `tracing-subscriber` layer that records spans and events:
//!   `tracing::subscriber::set_global_default(flightrec::tracing::subscriber())`.
//! * **From outside the process**: with `attach=true` the JDK's own `jcmd`
//!   starts, checks, dumps and stops recordings ([`attach`]).
//! * **Inside the process**: [`stream::EventStream`] follows a running
//!   recording with callbacks per event type; [`assemble`] recovers the
//!   repository a killed process left.
//! * **Grafana Pyroscope**: with the cargo feature `pyroscope`, each period's
//!   chunk is pushed to a Pyroscope server (`pyroscope=URL` in `FLIGHTREC`,
//!   or `RecordingConfig::pyroscope`).
//! * **C and C++**: the `flightrec-capi` package builds `libflightrec.so`
//!   and `libflightrec.a` with `flightrec.h` and `flightrec.hpp`; preloading
//!   the library profiles any dynamically linked program, which the
//!   `flightrec record` command does for you.
//!
//! # Cargo features
//!
//! * `tracing`: `flightrec::tracing`, the `tracing` layer.
//! * `pyroscope` (`pyroscope-tls` adds HTTPS): the Pyroscope uploader.
//! * `thread-hook`: threads created while sampling runs are sampled from
//!   their first instruction (flightrec defines `pthread_create`).
//!
//! # Where to read on
//!
//! The repository's `README.md` has the demo and the commands; `docs/`
//! holds one page per subject: `configuration.md` (every `FLIGHTREC`
//! option, the repository, rotation, several recordings, how the process
//! ends), `sampling.md`, `tracing.md`, `jcmd.md`, `c-and-cpp.md`,
//! `pyroscope.md`, `reliability.md` (what flightrec guarantees and the test
//! that shows each), `performance.md` (measured costs, the peer table) and
//! `architecture.md` (how the parts fit).
#![warn(missing_docs)]

pub use flightrec_derive::{Event, timed};
pub use jfr_format;
pub use recorder::*;

/// The `tracing-subscriber` layer that records `tracing` spans and events
/// as JFR events (the `flightrec-tracing` crate; cargo feature `tracing`).
#[cfg(feature = "tracing")]
#[doc(inline)]
pub use flightrec_tracing as tracing;
