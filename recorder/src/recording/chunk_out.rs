//! Where a chunk's bytes go: a chunk file on disk written with direct I/O
//! (`O_DIRECT`) through an aligned staging buffer, or, where the file does
//! not take direct I/O (an in-memory file, tmpfs), an ordinary `BufWriter`.
//!
//! # Why direct I/O
//!
//! The recorder copies drained blocks to the chunk as they are, so its cost
//! per event is the cost of moving ~25 bytes to the file. Through the page
//! cache that is a user copy plus the kernel's copy into freshly allocated
//! page-cache pages and the filesystem's per-page bookkeeping: measured on
//! a 2-core VM at 6 to over 40 ns per 26 bytes of CPU time, depending on
//! how the host backs freshly allocated memory. With direct I/O the kernel
//! pins the staging buffer and the device reads it: about 2 ns per 26 bytes,
//! and no page cache grows with the repository.
//!
//! # Mechanism
//!
//! `buf` (4 MiB, page-aligned) holds the file from `base` (a multiple of
//! the page size) to the logical end `base + len`. Appends fill it; a full
//! buffer is written whole at `base`, with `O_DIRECT`, and `base` moves
//! past it: that is where the bytes of the events go. `flush` writes the
//! buffer's whole pages the same way (and moves the rest, less than a
//! page, to the buffer's start), then the last partial page through the
//! page cache, `O_DIRECT` switched off for it: exact bytes, no padding, no
//! truncation. Through the page cache, a chunk's last up to 4 MiB cost
//! about a fifth of the recorder thread's time in the peers bench's
//! end-to-end run (a kernel copy into freshly allocated pages); directly,
//! the flush waits for the device instead, which a writer never does. The
//! kernel writes back and drops a cached partial page when the next direct
//! write covers it. A write below `base` (a header patch) goes through the
//! page cache the same way.
//!
//! If the kernel refuses a direct write (`EINVAL`: a file system or device
//! that needs another alignment), direct I/O is turned off for the file and
//! the same writes go through the page cache: slower, never wrong.
//!
//! Invariant: the file holds the bytes written below `base`, exactly; after
//! `flush` it holds every byte written, and its length is the logical end.
//! The file is never longer than the bytes written to it.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::ptr::NonNull;

/// Alignment of direct I/O offsets, lengths and buffers (the page size;
/// enough for 512-byte and 4 KiB logical blocks).
const ALIGN: usize = 4096;
/// The staging buffer: one drain batch of default-sized blocks.
const CAP: usize = 4 << 20;
/// The buffer of a chunk written through the page cache (in memory, or a
/// file system without direct I/O): one default block, so a drained block
/// goes to the file in about one write. Small enough to come from the
/// allocator's reused heap: at 1 MiB each chunk (each recording's first,
/// on a thread of its own) mapped and faulted in a fresh buffer, a tenth
/// of the recorder thread's time in an always-on recording.
const BUFFERED: usize = 64 << 10;
/// A transparent huge page (x86-64, aarch64 with 4 KiB pages).
const HUGE: usize = 2 << 20;

/// A chunk's output: see the module docs.
#[derive(Debug)]
pub(crate) enum ChunkOut {
    /// A chunk file on disk, written with direct I/O.
    Direct(DirectFile),
    /// Anything else (in-memory files, file systems without direct I/O).
    Buffered(BufWriter<File>),
}

/// A direct-I/O staging buffer, handed from one chunk to the next so the
/// recorder does not map, fault in and unmap 4 MiB per chunk.
#[derive(Debug)]
pub(crate) struct Staging(Aligned);

impl ChunkOut {
    /// The output for a fresh, empty chunk file: direct I/O if `on_disk`
    /// and the file takes it (staged in `spare`'s buffer if there is one),
    /// else buffered.
    pub(crate) fn new(file: File, on_disk: bool, spare: &mut Option<Staging>) -> Self {
        if on_disk && set_direct(&file, true).is_ok() {
            let buf = spare.take().map_or_else(|| Aligned::new(CAP), |s| s.0);
            Self::Direct(DirectFile::new(file, buf))
        } else {
            Self::Buffered(BufWriter::with_capacity(BUFFERED, file))
        }
    }

    /// Flushes, closes the file and returns its staging buffer, if any,
    /// for the next chunk.
    pub(crate) fn into_staging(self) -> Option<Staging> {
        match self {
            Self::Direct(mut d) => {
                let _ = d.flush();
                let buf = std::mem::replace(&mut d.buf, Aligned::empty());
                Some(Staging(buf))
            }
            Self::Buffered(_) => None,
        }
    }
}

impl Write for ChunkOut {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Self::Direct(d) => d.write(data),
            Self::Buffered(b) => b.write(data),
        }
    }

    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        match self {
            Self::Direct(d) => d.write_all(data),
            Self::Buffered(b) => b.write_all(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Direct(d) => d.flush(),
            Self::Buffered(b) => b.flush(),
        }
    }
}

impl Seek for ChunkOut {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Self::Direct(d) => d.seek(to),
            Self::Buffered(b) => b.seek(to),
        }
    }
}

/// Turns `O_DIRECT` on or off for `file`.
fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor this `File` owns; no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: F_SETFL with an int argument on a descriptor this `File` owns.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A page-aligned, zeroed buffer of its own mapping.
#[derive(Debug)]
struct Aligned {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Aligned` owns its allocation exclusively (like a `Box<[u8]>`).
unsafe impl Send for Aligned {}

impl Aligned {
    /// `len` zeroed bytes (a multiple of ALIGN); a buffer of whole huge
    /// pages is aligned to them and asks for them, so the kernel pins it
    /// for each direct write a huge page at a time. Mapped directly (see
    /// `buffer::slab::map`): through `alloc_zeroed` the zeros were written
    /// 4 KiB page by page before the advice could apply.
    fn new(len: usize) -> Self {
        let len = len.max(ALIGN);
        let ptr = crate::buffer::slab::map(len, len.is_multiple_of(HUGE));
        Self { ptr, len }
    }

    /// No buffer (what a `DirectFile` holds after `into_staging`).
    fn empty() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live, initialised (zeroed) allocation of `len`
        // bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        if self.len == 0 {
            return; // `empty`: nothing allocated
        }
        // SAFETY: mapped in `new` with this same length, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// A chunk file written with direct I/O: see the module docs.
#[derive(Debug)]
pub(crate) struct DirectFile {
    file: File,
    buf: Aligned,
    /// File offset of `buf[0]`; a multiple of ALIGN.
    base: u64,
    /// Bytes of `buf` holding the file (the logical end is `base + len`).
    len: usize,
    /// The cursor (`Seek`).
    pos: u64,
    /// Bytes of `buf` written since the last flush: `[lo, hi)`.
    dirty: Option<(usize, usize)>,
    /// False once the kernel refused a direct write (see the module docs).
    direct: bool,
    /// Whether `O_DIRECT` is set on the file now.
    direct_on: bool,
}

impl DirectFile {
    /// `file` must be empty, opened for reading and writing, with
    /// `O_DIRECT` set; `buf` is CAP bytes.
    fn new(file: File, buf: Aligned) -> Self {
        debug_assert_eq!(buf.len, CAP);
        Self {
            file,
            buf,
            base: 0,
            len: 0,
            pos: 0,
            dirty: None,
            direct: true,
            direct_on: true,
        }
    }

    /// The logical end of the file.
    fn end(&self) -> u64 {
        self.base + self.len as u64
    }

    /// Sets `O_DIRECT` on the file (if direct I/O is still allowed) or
    /// clears it.
    fn set_mode(&mut self, on: bool) -> io::Result<()> {
        let on = on && self.direct;
        if self.direct_on != on {
            set_direct(&self.file, on)?;
            self.direct_on = on;
        }
        Ok(())
    }

    /// Writes the full buffer, directly, and moves `base` past it.
    fn spill(&mut self) -> io::Result<()> {
        debug_assert_eq!(self.len, CAP);
        self.write_direct(CAP)?;
        self.dirty = None;
        Ok(())
    }

    /// Writes `buf[..whole]` (whole pages) at `base`, directly, and moves
    /// `base` past it; the bytes after it move to the buffer's start.
    fn write_direct(&mut self, whole: usize) -> io::Result<()> {
        debug_assert!(whole.is_multiple_of(ALIGN) && whole <= self.len);
        self.set_mode(true)?;
        let pages = &self.buf.as_slice()[..whole];
        match self.file.write_all_at(pages, self.base) {
            Err(e) if self.direct_on && e.raw_os_error() == Some(libc::EINVAL) => {
                // The direct write was refused: the page cache from now on.
                self.direct = false;
                self.set_mode(false)?;
                self.file
                    .write_all_at(&self.buf.as_slice()[..whole], self.base)?;
            }
            r => r?,
        }
        self.buf.as_mut_slice().copy_within(whole..self.len, 0);
        self.base += whole as u64;
        self.len -= whole;
        Ok(())
    }

    /// Writes `data` over bytes below `base`, through the page cache.
    fn patch_below_base(&mut self, data: &[u8]) -> io::Result<()> {
        self.set_mode(false)?;
        self.file.write_all_at(data, self.pos)
    }
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if self.pos < self.base {
            let n = data.len().min((self.base - self.pos) as usize);
            self.patch_below_base(&data[..n])?;
            self.pos += n as u64;
            return Ok(n);
        }
        if self.pos > self.end() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a chunk file is written without holes",
            ));
        }
        if self.pos == self.base + CAP as u64 {
            self.spill()?;
        }
        let off = (self.pos - self.base) as usize;
        let n = data.len().min(CAP - off);
        self.buf.as_mut_slice()[off..off + n].copy_from_slice(&data[..n]);
        self.len = self.len.max(off + n);
        self.dirty = Some(match self.dirty {
            Some((lo, hi)) => (lo.min(off), hi.max(off + n)),
            None => (off, off + n),
        });
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let Some((mut lo, mut hi)) = self.dirty else {
            return Ok(());
        };
        // The whole pages go directly, as a spill does; only the last,
        // partial page (if any) goes through the page cache.
        let whole = self.len & !(ALIGN - 1);
        if self.direct && whole > 0 {
            self.write_direct(whole)?;
            (lo, hi) = (0, self.len);
        }
        if hi > lo {
            self.set_mode(false)?;
            self.file
                .write_all_at(&self.buf.as_slice()[lo..hi], self.base + lo as u64)?;
        }
        self.dirty = None;
        Ok(())
    }
}

impl Seek for DirectFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.end().checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the file's start")
        })?;
        Ok(self.pos)
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        // As `BufWriter` does: what was written reaches the file.
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn direct_file(dir: &std::path::Path, name: &str) -> Option<DirectFile> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(dir.join(name))
            .unwrap();
        set_direct(&file, true).ok()?;
        Some(DirectFile::new(file, Aligned::new(CAP)))
    }

    fn contents(dir: &std::path::Path, name: &str) -> Vec<u8> {
        let mut v = Vec::new();
        File::open(dir.join(name))
            .unwrap()
            .read_to_end(&mut v)
            .unwrap();
        v
    }

    /// Appends across several buffer spills, header patches below and
    /// above `base`, flushes in between: the file equals the same writes
    /// into a Vec, at every flush.
    #[test]
    fn direct_file_matches_a_plain_write() {
        let dir = std::env::temp_dir().join(format!("flightrec-chunk-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let Some(mut out) = direct_file(&dir, "a") else {
            eprintln!("no direct I/O in {}: skipped", dir.display());
            return;
        };
        let mut model = std::io::Cursor::new(Vec::new());
        let mut seed = 1u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for round in 0..40 {
            let n = (next() % 700_000) as usize + 1;
            let data: Vec<u8> = (0..n).map(|i| (i as u64 ^ round) as u8).collect();
            out.write_all(&data).unwrap();
            model.write_all(&data).unwrap();
            // A header patch, as the chunk writer makes it.
            let patch = [round as u8; 68];
            for w in [&mut out as &mut dyn WriteSeek, &mut model] {
                let end = w.stream_position().unwrap();
                w.seek(SeekFrom::Start(3)).unwrap();
                w.write_all(&patch).unwrap();
                w.seek(SeekFrom::Start(end)).unwrap();
            }
            if round % 3 == 0 {
                out.flush().unwrap();
                assert_eq!(contents(&dir, "a"), *model.get_ref(), "round {round}");
            }
        }
        out.flush().unwrap();
        assert_eq!(contents(&dir, "a"), *model.get_ref());
        drop(out);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    trait WriteSeek: Write + Seek {}
    impl<T: Write + Seek> WriteSeek for T {}
}
