//! `flightrec assemble REPOSITORY -o FILE`: the library's crash recovery
//! ([`recorder::assemble`]) as a command.
//!
//! A process that was killed (`kill -9`, a crash, the machine going down)
//! leaves its repository of chunk files behind; this puts the usable ones
//! into one recording, cutting a chunk left in progress to its last flush.
//! The report is the library's [`Assembled`], one fact a line on standard
//! output:
//!
//! ```text
//! wrote 2 chunks (81234 bytes) to app.jfr
//! skipped /tmp/repo/2026_03_07_09_05_01_000000000_4211.jfr: in progress with nothing flushed
//! ignored /tmp/repo/notes.txt
//! ```
//!
//! When no chunk can be used nothing is written and the command fails
//! (one line, exit status 2) naming each chunk left out and why.
//!
//! With no argument, `flightrec assemble` lists the repositories that this
//! user's killed processes left in the temp directory (`$TMPDIR`, else
//! `/tmp`), one a line (`DIR  process PID, exited`); `flightrec jcmd`
//! with no argument names them on stderr. This is where a process that
//! links flightrec leaves that news: it says nothing about them on its
//! own stderr unless asked (`warn-stale=true`).

use std::io::{self, Write};
use std::path::Path;

use recorder::repository::stale_repositories;
use recorder::{AssembleError, Assembled};

/// `flightrec assemble` with no argument: each leftover repository, one a
/// line, on `w`.
///
/// # Errors
///
/// `w` failed.
pub fn list_stale(w: &mut dyn Write) -> io::Result<()> {
    for s in stale_repositories() {
        writeln!(w, "{}  process {}, exited", s.dir.display(), s.pid)?;
    }
    w.flush()
}

/// The note `flightrec jcmd` (no argument) writes on stderr: one line per
/// leftover repository, naming the command that recovers it.
///
/// # Errors
///
/// `w` failed.
pub fn note_stale(w: &mut dyn Write) -> io::Result<()> {
    for s in stale_repositories() {
        writeln!(
            w,
            "flightrec: {} holds chunks of process {}, which has exited: \
             `flightrec assemble {} -o FILE` recovers them",
            s.dir.display(),
            s.pid,
            s.dir.display()
        )?;
    }
    w.flush()
}

/// Assembles `repository` into `out` and writes the report to `report`.
///
/// # Errors
///
/// The library's: the directory cannot be listed, the output cannot be
/// written, or no chunk is usable (then nothing is written).
pub fn run(repository: &Path, out: &Path, report: &mut dyn Write) -> Result<Assembled, Error> {
    let done = recorder::assemble(repository, out).map_err(Error::Assemble)?;
    write_report(&done, out, report).map_err(Error::Report)?;
    Ok(done)
}

/// The report of [`run`]: what was written, then each chunk skipped and
/// each file ignored, one a line.
pub fn write_report(done: &Assembled, out: &Path, w: &mut dyn Write) -> io::Result<()> {
    let plural = if done.chunks == 1 { "" } else { "s" };
    writeln!(
        w,
        "wrote {} chunk{plural} ({} bytes) to {}",
        done.chunks,
        done.bytes,
        out.display()
    )?;
    for s in &done.skipped {
        writeln!(w, "skipped {s}")?;
    }
    for path in &done.ignored {
        writeln!(w, "ignored {}", path.display())?;
    }
    w.flush()
}

/// Why `flightrec assemble` failed.
#[derive(Debug)]
pub enum Error {
    /// The library wrote no file.
    Assemble(AssembleError),
    /// The file was written but the report could not be.
    Report(io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Assemble(e) => write!(f, "assemble: {e}"),
            Self::Report(e) => write!(f, "assemble: cannot write the report: {e}"),
        }
    }
}

impl std::error::Error for Error {}
