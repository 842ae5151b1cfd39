//! flightrec: a JDK-Flight-Recorder-compatible recorder for ahead-of-time
//! compiled programs. This facade re-exports the public API.
#![warn(missing_docs)]

pub use chunk_writer;
