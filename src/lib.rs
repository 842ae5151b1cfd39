//! flightrec: a JDK-Flight-Recorder-compatible recorder for ahead-of-time
//! compiled programs. Declare events with `#[derive(Event)]`, start a
//! [`Recording`], commit events from any thread, and read the file with the
//! JDK's `jfr` tool or JDK Mission Control.
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
#![warn(missing_docs)]

pub use flightrec_derive::{Event, timed};
pub use jfr_format;
pub use recorder::*;
