//! The disk repository: one directory of chunk files, one file per chunk.
//!
//! ```text
//! <dir>/2026_11_30_06_48_08_123456789_<pid>.jfr   finished chunk
//! <dir>/2026_11_30_06_48_13_000004211_<pid>.jfr   finished chunk
//! <dir>/2026_11_30_06_48_18_500000000_<pid>.jfr   the chunk being written
//! ```
//!
//! Files are named by their chunk's start time (nanosecond resolution, so
//! names sort by time and never collide within a process). The directory is
//! created `0700` and files `0600`, both without following symbolic links
//! (`O_NOFOLLOW` on every open, `O_EXCL` on create), so another user cannot
//! redirect the recording. The default directory is per process under the
//! system temp directory.
//!
//! Retention drops the oldest finished chunks while the repository is older
//! than `max_age` or larger than `max_size`; the chunk being written is never
//! dropped. A dump concatenates finished chunks (optionally only those that
//! overlap a time window) into one `.jfr` file.
//!
//! Invariant: every file in `finished` holds one complete chunk (state 0) and
//! they are listed in start-time order.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chunk_writer::header::{ChunkHeader, HEADER_LEN, STATE_FINISHED};

/// One finished chunk file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkFile {
    /// The file.
    pub path: PathBuf,
    /// Wall-clock start, ns since the Unix epoch.
    pub start_nanos: i64,
    /// Wall-clock end, ns since the Unix epoch.
    pub end_nanos: i64,
    /// Bytes.
    pub size: u64,
}

/// A repository directory and the chunks in it.
#[derive(Debug)]
pub(crate) struct Repository {
    dir: PathBuf,
    finished: VecDeque<ChunkFile>,
    /// Remove the directory when the recording ends (it was our default).
    owned: bool,
}

/// The per-process default repository directory.
pub fn default_dir() -> PathBuf {
    std::env::temp_dir().join(format!("flightrec-{}", std::process::id()))
}

fn open_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    o
}

impl Repository {
    /// Creates (or reuses, if it is a real directory we may write) `dir`.
    pub(crate) fn create(dir: Option<&Path>) -> io::Result<Self> {
        let owned = dir.is_none();
        let dir = dir.map_or_else(default_dir, Path::to_path_buf);
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let meta = fs::symlink_metadata(&dir)?;
                if !meta.is_dir() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!(
                            "{} exists and is not a directory (symbolic links are not followed)",
                            dir.display()
                        ),
                    ));
                }
            }
            Err(e) => return Err(e),
        }
        Ok(Self {
            dir,
            finished: VecDeque::new(),
            owned,
        })
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the file for a chunk starting at `start_nanos`.
    pub(crate) fn create_chunk(&self, start_nanos: i64) -> io::Result<(PathBuf, File)> {
        let path = self.dir.join(chunk_file_name(start_nanos));
        let file = open_options()
            .write(true)
            .read(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        Ok((path, file))
    }

    /// Records a finished chunk file.
    pub(crate) fn add_finished(&mut self, chunk: ChunkFile) {
        self.finished.push_back(chunk);
    }

    /// Drops the oldest finished chunks while they are older than `max_age`
    /// (measured from `now_nanos`) or their total exceeds `max_size`.
    /// Returns the chunks removed.
    pub(crate) fn apply_retention(
        &mut self,
        now_nanos: i64,
        max_age: Option<Duration>,
        max_size: Option<u64>,
    ) -> Vec<ChunkFile> {
        let mut removed = Vec::new();
        let mut total: u64 = self.finished.iter().map(|c| c.size).sum();
        while let Some(oldest) = self.finished.front() {
            let too_old =
                max_age.is_some_and(|a| now_nanos - oldest.end_nanos > a.as_nanos() as i64);
            let too_big = max_size.is_some_and(|m| total > m);
            if !too_old && !too_big {
                break;
            }
            let c = self.finished.pop_front().expect("front exists");
            total -= c.size;
            let _ = fs::remove_file(&c.path);
            removed.push(c);
        }
        removed
    }

    /// Writes the finished chunks overlapping `[from, to]` (ns since the
    /// epoch; `None` is open) into `out`, back to back. Returns the number of
    /// chunks written.
    pub(crate) fn concat_into(
        &self,
        out: &mut impl Write,
        from: Option<i64>,
        to: Option<i64>,
    ) -> io::Result<usize> {
        let mut n = 0;
        for c in &self.finished {
            if from.is_some_and(|f| c.end_nanos < f) || to.is_some_and(|t| c.start_nanos > t) {
                continue;
            }
            let mut f = open_options().read(true).open(&c.path)?;
            io::copy(&mut (&mut f).take(c.size), out)?;
            n += 1;
        }
        Ok(n)
    }

    /// Removes the default (per-process) repository once the recording has
    /// been written to its destination; a repository the user named, or one
    /// whose recording was not written elsewhere, is kept.
    pub(crate) fn clean_up_if_default(&mut self, written_elsewhere: bool) {
        if !self.owned || !written_elsewhere {
            return;
        }
        for c in self.finished.drain(..) {
            let _ = fs::remove_file(&c.path);
        }
        let _ = fs::remove_dir(&self.dir);
    }
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

/// Makes a readable copy of a chunk file that may have been left in progress
/// (for example by a process killed mid-recording): the bytes up to the last
/// flush the header records, with the state byte set to finished. Returns
/// `None` if the file holds no flushed metadata (nothing is recoverable).
pub fn recover_chunk(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let mut f = open_options().read(true).open(path)?;
    let mut head = [0u8; HEADER_LEN];
    if f.read_exact(&mut head).is_err() {
        return Ok(None);
    }
    let Some(mut h) = ChunkHeader::parse(&head) else {
        return Ok(None);
    };
    let len = f.seek(SeekFrom::End(0))?;
    if h.metadata_offset == 0
        || h.constant_pool_offset == 0
        || h.chunk_size as u64 > len
        || h.chunk_size < HEADER_LEN as i64
    {
        return Ok(None);
    }
    let mut bytes = vec![0u8; h.chunk_size as usize];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut bytes)?;
    if h.state != STATE_FINISHED {
        h.state = STATE_FINISHED;
        bytes[..HEADER_LEN].copy_from_slice(&h.to_bytes());
    }
    Ok(Some(bytes))
}

/// Assembles every chunk file of a repository directory, in name (start
/// time) order, into one `.jfr` file, recovering chunks left in progress.
/// Returns the number of chunks written.
pub fn assemble(dir: &Path, out: &Path) -> io::Result<usize> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jfr"))
        .collect();
    names.sort();
    let mut file = open_options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(out)?;
    let mut n = 0;
    for p in names {
        if let Some(bytes) = recover_chunk(&p)? {
            file.write_all(&bytes)?;
            n += 1;
        }
    }
    file.sync_all()?;
    Ok(n)
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time() {
        let a = chunk_file_name(1_764_484_088_123_456_789);
        assert!(a.starts_with("2025_11_30_06_28_08_123456789_"), "{a}");
        assert_eq!(&chunk_file_name(0)[..30], "1970_01_01_00_00_00_000000000_");
        assert!(chunk_file_name(5) < chunk_file_name(1_000_000_000));
        assert_eq!(
            &chunk_file_name(951_782_400_000_000_000)[..10],
            "2000_02_29"
        );
    }

    #[test]
    fn directory_is_private_and_symlinks_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = std::env::temp_dir().join(format!("flightrec-repo-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        let dir = base.join("repo");
        let repo = Repository::create(Some(&dir)).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let (path, _f) = repo.create_chunk(42).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // A second chunk with the same name is refused, not overwritten.
        assert!(repo.create_chunk(42).is_err());
        // A symlink where the repository should be is refused.
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(Repository::create(Some(&link)).is_err());
        fs::remove_dir_all(&base).unwrap();
    }
}
