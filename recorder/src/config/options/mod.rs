//! Start-up options from the `FLIGHTREC` environment variable, in the
//! grammar of the JDK's `-XX:StartFlightRecording`.
//!
//! ```text
//! FLIGHTREC='filename=app.jfr,duration=5m,settings=profile,com.example.Request#threshold=1ms'
//! ```
//!
//! [`parse`] turns such a string into [`StartOptions`] (reading any settings
//! file it names); [`from_env`] does so for `$FLIGHTREC`. Starting the
//! recording from them is the caller's job.
//!
//! # Settings
//!
//! The settings of the recording are built in two layers:
//!
//! 1. the sets named by `settings=`, in order, each laid over the previous
//!    one (later wins per event setting), or the built-in `default` when
//!    there is none. `default` and `profile` are data files,
//!    `recorder/settings/{default,profile}.settings`, which say what they
//!    set and why: `default` leaves `jdk.CPUTimeSample` disabled with a
//!    `20ms` throttle; `profile` enables it, with stack traces, at `10ms`.
//!    `none` is empty: every event type keeps its declared defaults.
//! 2. every `EVENT#SETTING=VALUE`, in the order written, wherever it is
//!    written relative to `settings=`; later wins.
//!
//! A settings file is read in flightrec's line format (one
//! `event#setting=value` per line, `#` comments; see `source.rs`) or, when
//! its first non-blank character is `<`, as a JDK `.jfc` file (see
//! `jfc.rs`: `<event>`/`<setting>` elements are read, `<control>` is not,
//! settings flightrec does not know are skipped).
//!
//! # Errors
//!
//! [`OptionError`] names the first bad option, as written, and says why;
//! its `Display` starts with `FLIGHTREC: `. Nothing here panics on any
//! input.

mod error;
mod jfc;
mod pyroscope;
mod source;
mod start;
mod value;

pub use error::OptionError;
pub use start::{ENV_VAR, StartOptions, from_env, parse};
