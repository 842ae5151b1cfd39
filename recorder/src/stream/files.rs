//! Opening what a stream reads without blocking, and reading it bounded:
//! a `.jfr` file or a chunk file must be a regular file. A FIFO would block
//! the open (and then the read) for ever, a device such as `/dev/zero`
//! would be read until memory runs out, a directory cannot be read.
//!
//! # Mechanism
//!
//! The path is opened `O_RDONLY | O_NONBLOCK` (a FIFO's open returns at
//! once instead of waiting for a writer; `O_NOFOLLOW` too for a chunk file
//! in a repository, which is never a link), then `fstat` on the descriptor
//! decides: anything but a regular file is refused with
//! [`StreamError::NotAFile`](super::StreamError::NotAFile) naming what it
//! is. A regular file is read up to the size `fstat` gave, never past it
//! (a file growing meanwhile is read as it was).
//!
//! Invariant: no open or read here waits on another process, and no read
//! allocates more than the file's size at the time it was opened.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a path a stream was given to read is, when it is not a regular
/// file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// A symbolic link (refused where links are not followed: chunk files).
    Symlink,
    /// Anything else.
    Other,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Directory => "a directory",
            Self::Fifo => "a FIFO",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Socket => "a socket",
            Self::Symlink => "a symbolic link",
            Self::Other => "not a regular file",
        })
    }
}

/// Why a file could not be opened for reading.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// It is not a regular file.
    NotAFile(FileKind),
    /// The OS refused.
    Io(io::Error),
}

/// Opens `path` for reading without blocking and checks that it is a
/// regular file; with `follow` false a symbolic link is refused. Returns
/// the file and its size.
pub(crate) fn open_regular(path: &Path, follow: bool) -> Result<(File, u64), OpenError> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match OpenOptions::new().read(true).custom_flags(flags).open(path) {
        Ok(f) => f,
        // O_NOFOLLOW on a link fails with ELOOP.
        Err(e) if !follow && e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(OpenError::NotAFile(FileKind::Symlink));
        }
        // A socket cannot be opened (ENXIO).
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
            return Err(OpenError::NotAFile(FileKind::Socket));
        }
        Err(e) => return Err(OpenError::Io(e)),
    };
    let meta = file.metadata().map_err(OpenError::Io)?;
    let t = meta.file_type();
    if t.is_file() {
        return Ok((file, meta.len()));
    }
    Err(OpenError::NotAFile(if t.is_dir() {
        FileKind::Directory
    } else if t.is_fifo() {
        FileKind::Fifo
    } else if t.is_char_device() {
        FileKind::CharDevice
    } else if t.is_block_device() {
        FileKind::BlockDevice
    } else if t.is_socket() {
        FileKind::Socket
    } else {
        FileKind::Other
    }))
}

/// The bytes of the regular file at `path` (following links), at most its
/// size when opened.
pub(crate) fn read_regular(path: &Path) -> Result<Vec<u8>, OpenError> {
    let (file, size) = open_regular(path, true)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(size)
        .read_to_end(&mut bytes)
        .map_err(OpenError::Io)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_opened() {
        let dir =
            std::env::temp_dir().join(format!("flightrec-stream-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a.jfr");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"abc");
        let link = dir.join("link.jfr");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link).unwrap(), b"abc");
        assert!(matches!(
            open_regular(&link, false),
            Err(OpenError::NotAFile(FileKind::Symlink))
        ));
        let fifo = dir.join("fifo.jfr");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, kind) in [
            (fifo.as_path(), FileKind::Fifo),
            (Path::new("/dev/zero"), FileKind::CharDevice),
            (dir.as_path(), FileKind::Directory),
        ] {
            match read_regular(p) {
                Err(OpenError::NotAFile(k)) => assert_eq!(k, kind, "{}", p.display()),
                other => panic!("{}: {other:?}", p.display()),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
