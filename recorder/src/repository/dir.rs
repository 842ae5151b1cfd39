//! The repository's directory: made or checked so that another user
//! cannot plant it, redirect it or read it.
//!
//! * The default directory is made by `mkdtemp(3)` from the template
//!   `$TMPDIR/flightrec-<pid>-XXXXXX`: an unpredictable name, created `0700`
//!   by this process, so nobody can plant it (or a symbolic link in its
//!   place) beforehand.
//! * A directory the user names is created `0700` when missing. Whether
//!   created or found, it is used only if it is a real directory (not a
//!   symbolic link), owned by the effective uid, with no group or other
//!   write bit; otherwise
//!   [`Repository::create`](crate::repository::store::Repository::create) fails with
//!   [`StartError::UnsafeRepository`] naming the path and the
//!   [`RepositoryProblem`].
//! * The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`), checked
//!   through that descriptor (`fstat`), and every chunk is created, read
//!   and removed through it (`openat`, `unlinkat`): if its path or a parent
//!   of it is renamed or replaced during the recording, chunks still go
//!   into the directory that was checked, never into the swapped-in one.
//! * Chunk files are opened `O_CREAT | O_EXCL | O_NOFOLLOW`, mode `0600`.
//! * Files written outside the repository (the destination at stop, dumps,
//!   [`assemble`](mod@super::assemble)'s output) are written by
//!   [`write_private_file`](crate::repository::files::write_private_file):
//!   only over nothing or a regular file or link of the effective user (a
//!   device, FIFO, socket, directory or another user's file is refused
//!   with a [`DestinationProblem`](super::files::DestinationProblem) and left as it was), into a new `0600`
//!   file beside the destination (`O_EXCL | O_NOFOLLOW`), synced, then
//!   renamed over the destination. A symbolic link planted at the
//!   destination is replaced, never followed.
//!
//! Invariant: a repository directory is used only once checked through
//! the descriptor every chunk then goes through: a real directory of the
//! effective uid, with no group or other write bit.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::builder::{RepositoryProblem, StartError};
use crate::repository::files::{Dir, euid};

/// The template `mkdtemp(3)` completes for the default repository.
pub(super) fn default_template(temp: &Path) -> PathBuf {
    temp.join(format!("flightrec-{}-XXXXXX", std::process::id()))
}

/// Makes a new `0700` directory from `template` (ending in `XXXXXX`) with
/// `mkdtemp(3)`.
pub(super) fn make_temp_dir(template: &Path) -> io::Result<PathBuf> {
    let c = CString::new(template.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut bytes = c.into_bytes_with_nul();
    // SAFETY: `bytes` is a NUL-terminated, writable buffer that outlives the
    // call; mkdtemp only overwrites the trailing `XXXXXX` in place.
    let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast::<libc::c_char>()) };
    if made.is_null() {
        return Err(io::Error::last_os_error());
    }
    bytes.pop(); // the NUL
    Ok(PathBuf::from(OsStr::from_bytes(&bytes)))
}

/// Opens `dir` as a repository if it may be one: a real directory (not a
/// symbolic link: opened `O_NOFOLLOW`), owned by the effective uid, not
/// writable by group or others, checked on the descriptor that is then
/// used for every chunk.
pub(crate) fn open_private_dir(dir: &Path) -> Result<Dir, StartError> {
    let unsafe_dir = |problem| StartError::UnsafeRepository {
        path: dir.to_path_buf(),
        problem,
    };
    let handle = match Dir::open(dir, true) {
        Ok(h) => h,
        Err(source) => {
            // Name what is there, if it is a link or not a directory.
            return Err(match fs::symlink_metadata(dir) {
                Ok(m) if m.file_type().is_symlink() => unsafe_dir(RepositoryProblem::SymbolicLink),
                Ok(m) if !m.is_dir() => unsafe_dir(RepositoryProblem::NotADirectory),
                _ => StartError::Io {
                    path: dir.to_path_buf(),
                    source,
                },
            });
        }
    };
    let st = handle.stat_self().map_err(|source| StartError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    if st.uid != euid() {
        return Err(unsafe_dir(RepositoryProblem::ForeignOwner {
            owner: st.uid,
            euid: euid(),
        }));
    }
    if st.mode & 0o022 != 0 {
        return Err(unsafe_dir(RepositoryProblem::Writable {
            mode: st.mode & 0o7777,
        }));
    }
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::files::write_private_file;
    use std::fs;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    /// A fresh directory for one test.
    fn scratch(test: &str) -> PathBuf {
        let base =
            std::env::temp_dir().join(format!("flightrec-repo-test-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        base
    }

    #[test]
    fn a_private_file_replaces_a_planted_symlink_without_following_it() {
        let base = scratch("private_file");
        let target = base.join("precious");
        fs::write(&target, b"keep me").unwrap();
        let dest = base.join("out.jfr");
        std::os::unix::fs::symlink(&target, &dest).unwrap();
        let n = write_private_file(&dest, |w| w.write_all(b"new").map(|()| 3)).unwrap();
        assert_eq!(n, 3);
        assert_eq!(fs::read(&target).unwrap(), b"keep me");
        assert!(fs::symlink_metadata(&dest).unwrap().file_type().is_file());
        assert_eq!(mode(&dest), 0o600);
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        // A failed write leaves the destination and no temporary file.
        let err = write_private_file(&dest, |_| Err::<(), _>(io::Error::other("boom")));
        assert!(err.is_err());
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        fs::remove_dir_all(&base).unwrap();
    }
}
