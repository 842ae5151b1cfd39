//! The recorder's report (`report=PATH`): one line appended to an existing
//! file at each start of the `FLIGHTREC` recording, each file it finished
//! writing and each failure, so the process that ran the program (as
//! `flightrec record` does) learns what this run's recorder did instead of
//! guessing from what lies at the destination (a file left by an earlier
//! run, or another user's link the recorder refused).
//!
//! # Lines
//!
//! Tab-separated, one `write(2)` each (an `O_APPEND` write of a line this
//! short is not interleaved with another process's), a path last so that
//! only a newline inside it could break a line:
//!
//! ```text
//! started <TAB> PID <TAB> REPOSITORY <TAB> FILE     the recording runs; FILE may be empty (none)
//! written <TAB> PID <TAB> FILE                      FILE is complete: renamed into place
//! failed  <TAB> PID <TAB> WHAT <TAB> MESSAGE        WHAT: `destination` (refused at start),
//!                                                   `start` (another start error), `write` (at the stop)
//! ```
//!
//! # The file
//!
//! The report is only ever appended to: it is opened `O_WRONLY | O_APPEND
//! | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` for each line (no descriptor is
//! kept open in the program), never created, and written only if it is a
//! regular file. Whoever asks for a report makes the
//! file first (`flightrec record` makes it `0600` in a `0700` directory of
//! its own). Nothing about the report is ever printed: a report that
//! cannot be written changes nothing else.
//!
//! Invariant: `written` is appended only after the recording's file was
//! renamed into place by this process, and only for the recording started
//! from `FLIGHTREC` (the one whose `started` line came first).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::base::sync::global::AtomicU64;
use crate::base::sync::{OnceLock, Ordering};
use crate::lifecycle::outcome::{RecordingError, RecordingSummary};

/// Where this process reports, set once by the `FLIGHTREC` start.
static REPORT: OnceLock<PathBuf> = OnceLock::new();
/// The id of the recording whose stop is reported (0: none).
static REPORTED: AtomicU64 = AtomicU64::new(0);

/// Reports to `path` from now on (the first call wins).
pub(crate) fn set_path(path: &Path) {
    let _ = REPORT.set(path.to_owned());
}

/// `started`: automatic recording `id` runs, its chunks in `repository`,
/// writing `file` at its stop. Only the first automatic recording of the
/// process (the `FLIGHTREC` one, also after a `delay`) is reported.
pub(crate) fn started(id: u64, repository: &Path, file: Option<&Path>) {
    if REPORT.get().is_none()
        || REPORTED
            .compare_exchange(0, id, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let file = file.map(Path::display);
    line(&format!(
        "started\t{}\t{}\t{}",
        std::process::id(),
        repository.display(),
        file.map(|f| f.to_string()).unwrap_or_default()
    ));
}

/// Why a `failed` line was written.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failure {
    /// The start refused the destination (`StartError::Destination`).
    Destination,
    /// The start failed otherwise.
    Start,
    /// The stop did not write the file.
    Write,
}

/// `failed`: the recording did not start, or did not write its file.
pub(crate) fn failed(what: Failure, message: &str) {
    let what = match what {
        Failure::Destination => "destination",
        Failure::Start => "start",
        Failure::Write => "write",
    };
    let one_line = message.replace('\n', " ");
    line(&format!(
        "failed\t{}\t{what}\t{one_line}",
        std::process::id()
    ));
}

/// The stop of recording `id`: `written` or `failed`, if it is the
/// reported one.
pub(crate) fn stopped(id: u64, result: &Result<RecordingSummary, RecordingError>) {
    if id == 0 || REPORTED.load(Ordering::Relaxed) != id {
        return;
    }
    match result {
        Ok(RecordingSummary {
            destination: Some(file),
            ..
        }) => line(&format!(
            "written\t{}\t{}",
            std::process::id(),
            file.display()
        )),
        Ok(_) => {}
        Err(e) => failed(Failure::Write, &e.to_string()),
    }
}

/// Appends `text` and a newline to the report, if there is one and it is
/// a regular file (`O_NONBLOCK`: a FIFO there cannot stall the program).
fn line(text: &str) {
    let Some(path) = REPORT.get() else {
        return;
    };
    let Ok(mut file) = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    else {
        return;
    };
    if file.metadata().is_ok_and(|m| m.is_file()) {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(b'\n');
        let _ = file.write_all(&bytes);
    }
}
