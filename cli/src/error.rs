//! [`CliError`]: everything that ends a command with exit status 2, each
//! said in one line that names the file or argument at fault.

use std::fmt;
use std::io;
use std::path::PathBuf;

use jfr_format::ReadError;

/// Why a command could not do what it was asked.
#[derive(Debug)]
pub enum CliError {
    /// The file could not be opened or read.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The path names something that is not a regular file (a directory, a
    /// FIFO, a device): reading it could block or never end.
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file is not JFR, or is damaged where reading stopped.
    Damaged {
        /// The file.
        path: PathBuf,
        /// The file offset of the chunk the error's offsets count from
        /// (`None`: they are file offsets).
        chunk_at: Option<u64>,
        /// The reader's error.
        source: ReadError,
    },
    /// An argument names something the file or the command does not have.
    Usage(String),
    /// The output could not be written.
    Output {
        /// The output file (or `-` for standard output).
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::NotAFile { path, kind } => {
                write!(f, "{} is a {kind}, not a recording file", path.display())
            }
            Self::Damaged {
                path,
                chunk_at: None,
                source,
            } => write!(f, "{} is not a readable JFR file: {source}", path.display()),
            Self::Damaged {
                path,
                chunk_at: Some(at),
                source,
            } => write!(
                f,
                "{} is damaged in the chunk at file offset {at} (offsets below count from it): {source}",
                path.display()
            ),
            Self::Usage(msg) => f.write_str(msg),
            Self::Output { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for CliError {}
