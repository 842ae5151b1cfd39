//! The format tour: writes a multi-chunk JFR file that exercises every
//! field kind and annotation, for JDK 25's `jfr` to read; every `jfr`
//! printer shows it (its array field is a `StackFrame[]`, see
//! docs/jfr-format.md §8).
//!
//! ```text
//! cargo run --release --example format_tour -- /tmp/tour.jfr
//! jfr summary /tmp/tour.jfr
//! jfr print /tmp/tour.jfr
//! ```
//!
//! Prints one line of JSON: `{"counts": {"<event name>": N, ...}}`, the
//! number of events written per type. The logic lives in `tour.rs`, which
//! `tests/format_tour.rs` reuses to check every value `jfr` reads back.

#[allow(dead_code)] // The test uses the parts the example does not.
mod tour;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(path), None) = (args.next(), args.next()) else {
        eprintln!("usage: format_tour OUT.jfr");
        return ExitCode::from(2);
    };
    let path = PathBuf::from(path);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    let start_nanos = i64::try_from(now.as_nanos()).expect("before the year 2262");
    let tour = tour::Tour::new(start_nanos);
    if let Err(e) = tour.write(&path) {
        eprintln!("format_tour: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("{}", tour.counts_json());
    ExitCode::SUCCESS
}
