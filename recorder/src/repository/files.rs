//! Files flightrec writes and names: chunk file names
//! (`YYYY_MM_DD_HH_MM_SS_NNNNNNNNN_<pid>.jfr`, read back to find the
//! process that wrote them), directories held open by descriptor
//! ([`Dir`]), and files written outside the repository (a destination, a
//! dump, an assembled recording) without following, replacing or writing
//! into anything that is not ours. The repository, `assemble` and the
//! stale-repository check share them.
//!
//! # A destination is written only where it may be
//!
//! A destination, dump or assembled file is written only to an absent path,
//! a regular file the effective user owns, or a symbolic link the effective
//! user owns (the link is replaced, its target never touched). A character
//! or block device, a FIFO, a socket, a directory, or another user's file
//! or link is refused with a [`DestinationProblem`] naming what it is
//! (inside an [`io::Error`] of kind `InvalidInput`; the caller's error names
//! the path), and left exactly as it was.
//!
//! The directory is opened once (`O_DIRECTORY`) and everything after goes
//! through that descriptor (`openat`, `fstatat`, `renameat`), so a parent
//! directory swapped during the write cannot redirect it. The bytes go
//! into a new `0600` file beside the destination (`O_EXCL | O_NOFOLLOW`),
//! which is synced, given the mode of the file it replaces, and renamed
//! over it; onto an absent path with `RENAME_NOREPLACE`, so nothing planted
//! meanwhile is replaced.
//!
//! Invariant: every file opened here for writing is new (`O_EXCL`,
//! `O_NOFOLLOW`, mode `0600`) and reaches its path only by `rename(2)`,
//! over nothing or over a regular file or link of the effective user.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A path or name as a C string.
fn c_path(p: &OsStr) -> io::Result<CString> {
    CString::new(p.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"))
}

/// `-1` to the last OS error.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// What a path names, as `lstat(2)`/`fstat(2)` sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub(crate) mode: u32,
    pub(crate) uid: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
}

impl Stat {
    fn of_raw(st: &libc::stat) -> Self {
        Self {
            mode: st.st_mode,
            uid: st.st_uid,
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }

    pub(crate) fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }
}

/// A directory held open: every file in it is reached through the
/// descriptor, so renaming or replacing a parent of its path later does
/// not move where we write.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

impl Dir {
    /// Opens `path` as a directory (`O_DIRECTORY`); with `nofollow`, a
    /// symbolic link as its last component fails (`ELOOP`).
    pub(crate) fn open(path: &Path, nofollow: bool) -> io::Result<Self> {
        let c = c_path(path.as_os_str())?;
        let mut flags = libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC;
        if nofollow {
            flags |= libc::O_NOFOLLOW;
        }
        // SAFETY: `c` is NUL-terminated and outlives the call.
        let fd = check(unsafe { libc::open(c.as_ptr(), flags) })?;
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// The directory itself.
    pub(crate) fn stat_self(&self) -> io::Result<Stat> {
        // SAFETY: an all-zero `stat` is a valid value for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open; `st` is a valid, writable stat.
        check(unsafe { libc::fstat(self.fd.as_raw_fd(), &mut st) })?;
        Ok(Stat::of_raw(&st))
    }

    /// `name` in the directory, not following a link; `None` if absent.
    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<Option<Stat>> {
        let c = c_path(name)?;
        // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open, `c` is NUL-terminated, `st` is
        // writable; all outlive the call.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        match check(r) {
            Ok(_) => Ok(Some(Stat::of_raw(&st))),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens `name` with `flags` (plus `O_NOFOLLOW | O_CLOEXEC`) and `mode`.
    fn open_at(&self, name: &OsStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
        let c = c_path(name)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and `c` is NUL-terminated; both
        // outlive the call.
        let fd = check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, mode) })?;
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// A new `0600` file `name` (`O_EXCL`), opened for reading and writing.
    pub(crate) fn create_new(&self, name: &OsStr) -> io::Result<File> {
        self.open_at(name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, 0o600)
    }

    /// Opens `name` for reading.
    pub(crate) fn open_read(&self, name: &OsStr) -> io::Result<File> {
        self.open_at(name, libc::O_RDONLY, 0)
    }

    /// Opens the existing file `name` for writing (not created, not
    /// truncated).
    pub(crate) fn open_write(&self, name: &OsStr) -> io::Result<File> {
        self.open_at(name, libc::O_WRONLY, 0)
    }

    /// Removes the file `name`.
    pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
        let c = c_path(name)?;
        // SAFETY: the descriptor is open and `c` is NUL-terminated.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// Opens the directory `name` in this directory, not following a
    /// symbolic link (`O_NOFOLLOW`: a link fails with `ELOOP`, anything
    /// but a directory with `ENOTDIR`).
    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let c = c_path(name)?;
        let flags = libc::O_DIRECTORY | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: the descriptor is open and `c` is NUL-terminated; both
        // outlive the call.
        let fd = check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags) })?;
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd })
    }

    /// The names in this directory (not `.` and `..`), read through its
    /// descriptor: the directory held, whatever its path names now.
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        // A descriptor of its own (its own read position) for `fdopendir`,
        // which takes it.
        let own = self.open_dir(OsStr::new("."))?;
        let fd = std::os::fd::IntoRawFd::into_raw_fd(own.fd);
        // SAFETY: `fd` is an open directory descriptor that nothing else
        // owns; on success the stream owns it (closed by `closedir`).
        let stream = unsafe { libc::fdopendir(fd) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: `fdopendir` failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let mut names = Vec::new();
        let result = loop {
            // `readdir` tells the end from an error only by `errno`.
            // SAFETY: `__errno_location` returns this thread's errno.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `stream` is an open directory stream used by this
            // thread only.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                let e = io::Error::last_os_error();
                break if e.raw_os_error() == Some(0) {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            // SAFETY: a non-null entry is valid until the next `readdir`
            // on this stream; `d_name` is NUL-terminated.
            let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) };
            let name = OsStr::from_bytes(name.to_bytes());
            if name != "." && name != ".." {
                names.push(name.to_os_string());
            }
        };
        // SAFETY: `stream` is open and not used after this.
        unsafe { libc::closedir(stream) };
        result.map(|()| names)
    }

    /// Removes the empty directory `name`.
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        let c = c_path(name)?;
        // SAFETY: the descriptor is open and `c` is NUL-terminated.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
            .map(drop)
    }

    /// Renames `from` to `to`, both in this directory; with `noreplace`,
    /// fails with `EEXIST` if `to` exists.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr, noreplace: bool) -> io::Result<()> {
        let (f, t) = (c_path(from)?, c_path(to)?);
        let flags = if noreplace { libc::RENAME_NOREPLACE } else { 0 };
        let fd = self.fd.as_raw_fd();
        // SAFETY: the descriptor is open and both names are NUL-terminated.
        check(unsafe { libc::renameat2(fd, f.as_ptr(), fd, t.as_ptr(), flags) }).map(drop)
    }

    /// Brings renames and removals in the directory to the disk.
    fn sync(&self) {
        // SAFETY: the descriptor is open; fsync only flushes it.
        let _ = unsafe { libc::fsync(self.fd.as_raw_fd()) };
    }
}

/// Why an existing path is not written as a destination, dump or assembled
/// file (see the [module docs](self)). It is left as it was. Carried in an
/// [`io::Error`] of kind `InvalidInput`; `get_ref()` and `downcast_ref`
/// reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DestinationProblem {
    /// A character device (`/dev/null`, a terminal, ...).
    CharacterDevice,
    /// A block device.
    BlockDevice,
    /// A FIFO (named pipe).
    Fifo,
    /// A Unix socket.
    Socket,
    /// A directory.
    Directory,
    /// A regular file or symbolic link of another user.
    ForeignOwner {
        /// Its owner.
        owner: u32,
        /// This process's effective uid.
        euid: u32,
    },
}

impl std::fmt::Display for DestinationProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self {
            Self::CharacterDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::Fifo => "a FIFO",
            Self::Socket => "a socket",
            Self::Directory => "a directory",
            Self::ForeignOwner { owner, euid } => {
                return write!(
                    f,
                    "refusing to replace it: it is owned by uid {owner}, not by this \
                     process's effective uid {euid}"
                );
            }
        };
        write!(
            f,
            "refusing to write it: it is {what}, not a regular file (left as it was)"
        )
    }
}

impl std::error::Error for DestinationProblem {}

impl DestinationProblem {
    /// What is wrong with an existing `st` as a destination; `None` if it
    /// may be replaced.
    fn of(st: &Stat) -> Option<Self> {
        let kind = st.kind();
        let problem = match kind {
            libc::S_IFREG | libc::S_IFLNK if st.uid == euid() => return None,
            libc::S_IFREG | libc::S_IFLNK => Self::ForeignOwner {
                owner: st.uid,
                euid: euid(),
            },
            libc::S_IFCHR => Self::CharacterDevice,
            libc::S_IFBLK => Self::BlockDevice,
            libc::S_IFIFO => Self::Fifo,
            libc::S_IFSOCK => Self::Socket,
            _ => Self::Directory,
        };
        Some(problem)
    }
}

impl From<DestinationProblem> for io::Error {
    fn from(p: DestinationProblem) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, p)
    }
}

/// The directory and file name of a destination path.
fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
    let name = path
        .file_name()
        .filter(|_| !path.as_os_str().as_bytes().ends_with(b"/"))
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Ok((dir, name))
}

/// Whether `path` may be written as a destination now: its directory can
/// be opened and what is at `path` (if anything) may be replaced. Checked
/// at the start so a bad destination fails there; [`write_private_file`]
/// checks again when it writes.
pub(crate) fn check_destination(path: &Path) -> io::Result<()> {
    let (dir, name) = split(path)?;
    let dir = Dir::open(dir, false)?;
    match dir.stat(name)? {
        Some(st) => DestinationProblem::of(&st).map_or(Ok(()), |p| Err(p.into())),
        None => Ok(()),
    }
}

/// Writes a file outside the repository (a destination, a dump, an
/// assembled recording) as the [module docs](self) say: refused with a
/// [`DestinationProblem`] unless `path` is absent or a regular file or link
/// of the effective user; `write` fills a new `0600` file beside it, which
/// is synced, given the replaced file's mode and renamed over `path`
/// through the directory's descriptor. On error the temporary file is
/// removed and `path` is untouched.
pub(crate) fn write_private_file<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<T>,
) -> io::Result<T> {
    let (dir, name) = split(path)?;
    let dir = Dir::open(dir, false)?;
    let allowed = |dir: &Dir| -> io::Result<Option<Stat>> {
        let st = dir.stat(name)?;
        match st.as_ref().and_then(DestinationProblem::of) {
            Some(p) => Err(p.into()),
            None => Ok(st),
        }
    };
    let before = allowed(&dir)?;
    let (tmp, file) = create_beside(&dir, name)?;
    let written = (|| {
        let mut out = BufWriter::new(file);
        let value = write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        if let Some(st) = before.filter(|st| st.kind() == libc::S_IFREG) {
            // The replaced file's permissions, not ours (its owner is us).
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(
                st.mode & 0o777,
            ))?;
        }
        file.sync_all()?;
        // Again just before the rename: whatever is there now must be
        // replaceable; an absent path must still be absent.
        match allowed(&dir)? {
            None => dir.rename(&tmp, name, true)?,
            Some(_) => dir.rename(&tmp, name, false)?,
        }
        Ok(value)
    })();
    match written {
        Ok(value) => {
            // The rename itself reaches the disk with the directory.
            dir.sync();
            Ok(value)
        }
        Err(e) => {
            let _ = dir.unlink(&tmp);
            Err(e)
        }
    }
}

/// A new `0600` file `.<name>.<pid>-<n>.tmp` in `dir`.
fn create_beside(dir: &Dir, name: &OsStr) -> io::Result<(std::ffi::OsString, File)> {
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for attempt in 0..16u32 {
        let mut tmp = std::ffi::OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".{}-{}.tmp", std::process::id(), salt ^ attempt));
        match dir.create_new(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no temporary file name was free")))
}

/// `YYYY_MM_DD_HH_MM_SS_NNNNNNNNN_<pid>.jfr` for a UTC start time.
pub(crate) fn chunk_file_name(start_nanos: i64) -> String {
    let secs = start_nanos.div_euclid(1_000_000_000);
    let nanos = start_nanos.rem_euclid(1_000_000_000);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}_{mo:02}_{d:02}_{:02}_{:02}_{:02}_{nanos:09}_{}.jfr",
        sod / 3600,
        sod / 60 % 60,
        sod % 60,
        std::process::id()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The pid in a chunk file name `YYYY_MM_DD_HH_MM_SS_NNNNNNNNN_<pid>.jfr`;
/// `None` if `name` is not a chunk file name.
pub(crate) fn chunk_name_pid(name: &str) -> Option<u32> {
    let mut parts = name.strip_suffix(".jfr")?.split('_');
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    for width in [4, 2, 2, 2, 2, 2, 9] {
        let p = parts.next()?;
        if p.len() != width || !digits(p) {
            return None;
        }
    }
    let pid = parts.next().filter(|p| digits(p))?;
    if parts.next().is_some() {
        return None;
    }
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::PathBuf;

    /// A fresh directory for one test.
    fn scratch(test: &str) -> PathBuf {
        let base = std::env::temp_dir().join(format!(
            "flightrec-files-test-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        base
    }

    /// Type, mode, owner and device number of `p` (not following links).
    fn identity(p: &Path) -> (u32, u32, u64) {
        let m = std::fs::symlink_metadata(p).unwrap();
        (m.mode(), m.uid(), m.rdev())
    }

    fn write(p: &Path) -> io::Result<usize> {
        write_private_file(p, |w| w.write_all(b"new").map(|()| 3))
    }

    fn refused(p: &Path) -> DestinationProblem {
        let e = write(p).expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        *e.get_ref()
            .and_then(|e| e.downcast_ref::<DestinationProblem>())
            .unwrap_or_else(|| panic!("{e:?}"))
    }

    fn mknod(p: &Path, mode: u32, dev: u64) -> io::Result<()> {
        let c = c_path(p.as_os_str())?;
        // SAFETY: `c` is NUL-terminated and outlives the call.
        check(unsafe { libc::mknod(c.as_ptr(), mode, dev) }).map(drop)
    }

    #[test]
    fn devices_fifos_sockets_directories_and_foreign_files_are_left_as_they_were() {
        let base = scratch("refused");
        let fifo = base.join("fifo");
        mknod(&fifo, libc::S_IFIFO | 0o644, 0).unwrap();
        let dir = base.join("dir");
        std::fs::create_dir(&dir).unwrap();
        let sock = base.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut cases = vec![
            (fifo, DestinationProblem::Fifo),
            (dir, DestinationProblem::Directory),
            (sock, DestinationProblem::Socket),
        ];
        if euid() == 0 {
            // A character device with /dev/null's numbers, in a temporary
            // directory; and a file of another user (`nobody`).
            let dev = base.join("null");
            mknod(&dev, libc::S_IFCHR | 0o666, libc::makedev(1, 3)).unwrap();
            cases.push((dev, DestinationProblem::CharacterDevice));
            let foreign = base.join("foreign.jfr");
            std::fs::write(&foreign, b"theirs").unwrap();
            std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
            cases.push((
                foreign.clone(),
                DestinationProblem::ForeignOwner {
                    owner: 65534,
                    euid: 0,
                },
            ));
            let link = base.join("foreign-link");
            std::os::unix::fs::symlink(&foreign, &link).unwrap();
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            cases.push((
                link,
                DestinationProblem::ForeignOwner {
                    owner: 65534,
                    euid: 0,
                },
            ));
        } else {
            println!("not root: the device and foreign-owner cases are skipped");
        }
        for (path, problem) in cases {
            let before = identity(&path);
            assert_eq!(refused(&path), problem, "{}", path.display());
            assert!(check_destination(&path).is_err());
            assert_eq!(identity(&path), before, "{} changed", path.display());
            let msg = io::Error::from(problem).to_string();
            assert!(msg.contains("refusing"), "{msg}");
        }
        if euid() == 0 {
            assert_eq!(std::fs::read(base.join("foreign.jfr")).unwrap(), b"theirs");
        }
        // Nothing was left beside them.
        let mut names: Vec<_> = std::fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn an_own_file_is_replaced_keeping_its_mode_and_an_absent_one_is_made_0600() {
        let base = scratch("own");
        let own = base.join("own.jfr");
        std::fs::write(&own, b"old").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(write(&own).unwrap(), 3);
        assert_eq!(std::fs::read(&own).unwrap(), b"new");
        assert_eq!(identity(&own).0 & 0o7777, 0o644);
        let fresh = base.join("fresh.jfr");
        write(&fresh).unwrap();
        assert_eq!(identity(&fresh).0, libc::S_IFREG | 0o600);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_swapped_parent_does_not_move_a_held_directory() {
        let base = scratch("swap");
        let parent = base.join("parent");
        std::fs::create_dir_all(parent.join("repo")).unwrap();
        let held = Dir::open(&parent.join("repo"), true).unwrap();
        // Another user moves the parent away and puts their own in place.
        std::fs::rename(&parent, base.join("moved")).unwrap();
        std::fs::create_dir_all(parent.join("repo")).unwrap();
        drop(held.create_new(OsStr::new("chunk.jfr")).unwrap());
        assert!(base.join("moved/repo/chunk.jfr").exists());
        assert_eq!(std::fs::read_dir(parent.join("repo")).unwrap().count(), 0);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
