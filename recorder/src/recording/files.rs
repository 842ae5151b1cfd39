//! Files flightrec writes and names: chunk file names
//! (`YYYY_MM_DD_HH_MM_SS_NNNNNNNNN_<pid>.jfr`, read back to find the
//! process that wrote them), and files written outside the repository (a
//! destination, a dump, an assembled recording) without following anything
//! planted at their path. The repository, `assemble` and the stale-repository
//! check share them.
//!
//! Invariant: every file opened here for writing is new (`O_EXCL`,
//! `O_NOFOLLOW`, mode `0600`) and reaches its path only by `rename(2)`.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The options every file of ours is opened with: no symbolic link
/// followed, closed on `exec`.
pub(crate) fn open_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Writes a file outside the repository (a destination, a dump, an
/// assembled recording) so that nothing planted at `path` is followed: `write`
/// fills a new `0600` file beside it (`O_EXCL | O_NOFOLLOW`), which is
/// synced and renamed over `path`. On error the temporary file is removed
/// and `path` is untouched.
pub(crate) fn write_private_file<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<T>,
) -> io::Result<T> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let (tmp, file) = create_beside(dir, name)?;
    let written = (|| {
        let mut out = BufWriter::new(file);
        let value = write(&mut out)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        // rename(2) replaces whatever `path` is (a symbolic link included)
        // without following it.
        fs::rename(&tmp, path)?;
        Ok(value)
    })();
    match written {
        Ok(value) => {
            // The rename itself reaches the disk with the directory.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(value)
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// A new `0600` file `.<name>.<pid>-<n>.tmp` in `dir`.
fn create_beside(dir: &Path, name: &OsStr) -> io::Result<(PathBuf, File)> {
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut last = None;
    for attempt in 0..16u32 {
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}-{}.tmp", std::process::id(), salt ^ attempt));
        let tmp = dir.join(tmp_name);
        match open_options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
        {
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
