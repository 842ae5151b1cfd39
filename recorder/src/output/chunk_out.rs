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
//! # Gathered blocks: no copy
//!
//! Copying drained blocks into `buf` was about 40 % of the recorder
//! thread's time. A sealed block is instead written from its own memory:
//! the chunk first pads the file to the alignment with a filler record
//! (see `jfr_format::write::checkpoint::filler`), then [`DirectFile::gather`]
//! queues the block's whole aligned part as it is and copies only its last
//! partial unit (under `align` bytes) into `buf`. Queued pieces (the
//! staged bytes before the block, then the block) are written in order by
//! one `pwritev` when the drain batch ends ([`DirectFile::write_gathered`]),
//! when `buf` fills, or at `flush`. `align` is the file's direct-I/O
//! alignment as `statx` reports it (512 bytes on most disks: a filler costs
//! 256 bytes a block on average), else the page size.
//!
//! Invariant: the file holds the bytes written below `base`, exactly; after
//! `flush` it holds every byte written, and its length is the logical end.
//! The file is never longer than the bytes written to it. While pieces are
//! queued, the logical file from `base` is the pieces in order, then
//! `buf[open..len]`; only appends are taken then.

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
/// The most pieces one gathered write takes (well under `IOV_MAX`, 1024).
const MAX_PIECES: usize = 512;

/// A chunk's output: see the module docs.
#[derive(Debug)]
pub(crate) enum ChunkOut {
    /// A chunk file on disk, written with direct I/O.
    Direct(DirectFile),
    /// Anything else (in-memory files, file systems without direct I/O).
    Buffered(BufWriter<File>),
}

/// Where a chunk's gathered block is written from: see [`DirectFile::gather`].
#[derive(Debug, Clone, Copy)]
struct Piece {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a piece is only an address and a length, read by the thread that
// owns the `DirectFile` (see `DirectFile::gather`'s contract).
unsafe impl Send for Piece {}

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
            let align = dio_align(&file);
            Self::Direct(DirectFile::new(file, buf, align))
        } else {
            Self::Buffered(BufWriter::with_capacity(BUFFERED, file))
        }
    }

    /// The alignment a block must have, in memory and length, for
    /// [`DirectFile::gather`], and to which the file must be padded first;
    /// `None` if this output writes nothing directly.
    pub(crate) fn gather_align(&self) -> Option<usize> {
        match self {
            Self::Direct(d) if d.direct => Some(d.align),
            _ => None,
        }
    }

    /// [`DirectFile::gather`]; false (the caller copies) for a buffered
    /// output.
    ///
    /// # Safety
    ///
    /// As for [`DirectFile::gather`], with [`Self::write_gathered`].
    pub(crate) unsafe fn gather(&mut self, bytes: &[u8]) -> io::Result<bool> {
        match self {
            // SAFETY: the caller keeps `bytes` as they are until
            // `write_gathered` (this function's contract).
            Self::Direct(d) => unsafe { d.gather(bytes) },
            Self::Buffered(_) => Ok(false),
        }
    }

    /// [`DirectFile::write_gathered`]; nothing for a buffered output.
    pub(crate) fn write_gathered(&mut self) -> io::Result<()> {
        match self {
            Self::Direct(d) => d.write_gathered(),
            Self::Buffered(_) => Ok(()),
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

/// The direct-I/O alignment of `file`'s offsets, lengths and buffers, as
/// `statx` reports it (Linux 6.1 and later), if that is a power of two up
/// to the page size; else the page size, which every device takes.
fn dio_align(file: &File) -> usize {
    // SAFETY: `statx` is plain data; all zeros is a valid value.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: an empty, NUL-terminated path with `AT_EMPTY_PATH` names the
    // descriptor itself, which this `File` owns; `stx` is a valid
    // out-pointer.
    let r = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if r != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return ALIGN;
    }
    let a = stx.stx_dio_offset_align.max(stx.stx_dio_mem_align) as usize;
    if a.is_power_of_two() && a <= ALIGN {
        a
    } else {
        ALIGN
    }
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
    /// Alignment of direct writes: offsets, lengths, memory (see
    /// [`dio_align`]); a power of two, at most ALIGN.
    align: usize,
    /// File offset of `buf[0]` (or, while pieces are queued, of the first
    /// piece); a multiple of `align`.
    base: u64,
    /// Bytes of `buf` holding the file (the logical end is `base + len`
    /// when no piece is queued).
    len: usize,
    /// Pieces queued for the next gathered write, in file order.
    pieces: Vec<Piece>,
    /// Their total length.
    gathered: u64,
    /// Where the bytes of `buf` not queued yet start (0 when no piece is
    /// queued); a multiple of `align`.
    open: usize,
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
    /// `O_DIRECT` set; `buf` is CAP bytes; `align` a power of two up to
    /// ALIGN.
    fn new(file: File, buf: Aligned, align: usize) -> Self {
        debug_assert_eq!(buf.len, CAP);
        debug_assert!(align.is_power_of_two() && align <= ALIGN);
        Self {
            file,
            buf,
            align,
            base: 0,
            len: 0,
            pieces: Vec::new(),
            gathered: 0,
            open: 0,
            pos: 0,
            dirty: None,
            direct: true,
            direct_on: true,
        }
    }

    /// The logical end of the file.
    fn end(&self) -> u64 {
        self.base + self.gathered + (self.len - self.open) as u64
    }

    /// Queues `bytes` to be written from where they are, at the logical end
    /// (see the module's *Gathered blocks*): its whole `align` units as a
    /// piece of their own, the rest (under `align` bytes) copied into
    /// `buf`. The caller padded the file to `align` first; `bytes` starts
    /// at an `align`-aligned address and is at least `align` long (see
    /// [`ChunkOut::gather_align`]). False, with nothing written, if any of
    /// that does not hold or direct I/O is off: the caller copies instead.
    ///
    /// # Safety
    ///
    /// `bytes` must stay valid and unchanged until the next
    /// [`write_gathered`](Self::write_gathered) (which `flush` also calls,
    /// as does a write that finds `buf` full) returns, or `self` is
    /// dropped (a drop discards queued pieces unwritten).
    pub(crate) unsafe fn gather(&mut self, bytes: &[u8]) -> io::Result<bool> {
        let a = self.align;
        if !self.direct
            || bytes.len() < a
            || !(bytes.as_ptr() as usize).is_multiple_of(a)
            || !self.end().is_multiple_of(a as u64)
            || self.pos != self.end()
        {
            return Ok(false);
        }
        let whole = bytes.len() & !(a - 1);
        let tail = &bytes[whole..];
        if self.pieces.len() + 2 > MAX_PIECES || self.len + tail.len() > CAP {
            self.write_gathered()?;
        }
        if self.len > self.open {
            // The staged bytes before it: whole units, as the file is
            // aligned at its logical end.
            debug_assert!((self.len - self.open).is_multiple_of(a));
            let staged = &self.buf.as_slice()[self.open..self.len];
            self.queue(staged.as_ptr(), staged.len());
            self.open = self.len;
        }
        self.queue(bytes.as_ptr(), whole);
        let at = self.len;
        self.buf.as_mut_slice()[at..at + tail.len()].copy_from_slice(tail);
        self.len += tail.len();
        self.pos += bytes.len() as u64;
        Ok(true)
    }

    fn queue(&mut self, ptr: *const u8, len: usize) {
        self.pieces.push(Piece { ptr, len });
        self.gathered += len as u64;
    }

    /// Writes the queued pieces at `base`, in one `pwritev` where it can,
    /// and moves `base` past them; the bytes of `buf` after them move to
    /// its start. The pieces are dropped first, so after an error none is
    /// read again.
    pub(crate) fn write_gathered(&mut self) -> io::Result<()> {
        if self.pieces.is_empty() {
            return Ok(());
        }
        let pieces = std::mem::take(&mut self.pieces);
        let total = std::mem::take(&mut self.gathered);
        let open = std::mem::take(&mut self.open);
        let written = self.set_mode(true).and_then(|()| {
            match write_pieces(&self.file, &pieces, self.base) {
                Err(e) if self.direct_on && e.raw_os_error() == Some(libc::EINVAL) => {
                    // Refused: the page cache from now on, as in
                    // `write_direct`.
                    self.direct = false;
                    self.set_mode(false)?;
                    write_pieces(&self.file, &pieces, self.base)
                }
                r => r,
            }
        });
        // Written or not, the queued bytes leave `buf` (after the write:
        // staged pieces are parts of it).
        self.buf.as_mut_slice().copy_within(open..self.len, 0);
        self.len -= open;
        self.base += total;
        self.dirty = (self.len > 0).then_some((0, self.len));
        written
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

    /// Writes `buf[..whole]` (whole `align` units) at `base`, directly, and
    /// moves `base` past it; the bytes after it move to the buffer's start.
    fn write_direct(&mut self, whole: usize) -> io::Result<()> {
        debug_assert!(self.pieces.is_empty());
        debug_assert!(whole.is_multiple_of(self.align) && whole <= self.len);
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

/// Writes `pieces` back to back at `offset`: `pwritev` for as many as it
/// takes, on from where a short write stopped.
fn write_pieces(file: &File, pieces: &[Piece], mut offset: u64) -> io::Result<()> {
    let mut iov: Vec<libc::iovec> = pieces
        .iter()
        .map(|p| libc::iovec {
            iov_base: p.ptr as *mut libc::c_void,
            iov_len: p.len,
        })
        .collect();
    let mut at = 0;
    while at < iov.len() {
        let n = (iov.len() - at).min(MAX_PIECES) as libc::c_int;
        // SAFETY: `iov[at..at + n]` describe memory that is valid and
        // unchanged until the gathered write returns (`gather`'s contract;
        // staged pieces are parts of `buf` that are not written to while
        // queued); the kernel only reads it. The descriptor is `file`'s.
        let r = unsafe { libc::pwritev(file.as_raw_fd(), iov[at..].as_ptr(), n, offset as i64) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let mut done = r as usize;
        offset += done as u64;
        while done > 0 {
            let v = &mut iov[at];
            if done >= v.iov_len {
                done -= v.iov_len;
                at += 1;
            } else {
                // SAFETY: `done < iov_len`: still inside the same piece.
                v.iov_base = unsafe { v.iov_base.cast::<u8>().add(done) }.cast();
                v.iov_len -= done;
                done = 0;
            }
        }
        while at < iov.len() && iov[at].iov_len == 0 {
            at += 1;
        }
    }
    Ok(())
}

impl Write for DirectFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        if !self.pieces.is_empty() {
            if self.pos != self.end() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a chunk file is only appended to while blocks are gathered",
                ));
            }
            if self.len < CAP {
                let n = data.len().min(CAP - self.len);
                let at = self.len;
                self.buf.as_mut_slice()[at..at + n].copy_from_slice(&data[..n]);
                self.len += n;
                self.pos += n as u64;
                return Ok(n);
            }
            self.write_gathered()?;
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
        self.write_gathered()?;
        let Some((mut lo, mut hi)) = self.dirty else {
            return Ok(());
        };
        // The whole units go directly, as a spill does; only the last,
        // partial one (if any) goes through the page cache.
        let whole = self.len & !(self.align - 1);
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
        if to != SeekFrom::Current(0) && to != SeekFrom::End(0) {
            // Anywhere but the end: the queued pieces go first.
            self.write_gathered()?;
        }
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
        if !self.pieces.is_empty() {
            // Dropped in the middle of a drain (an error unwinding): the
            // queued memory may be gone, so nothing more is written.
            return;
        }
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
        let align = dio_align(&file);
        Some(DirectFile::new(file, Aligned::new(CAP), align))
    }

    /// Pseudo-random numbers below 2^31 from `seed` (an LCG): the same
    /// run each time.
    fn numbers(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        }
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
        let mut next = numbers(1);
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

    /// Blocks gathered from their own memory between ordinary appends,
    /// fillers before each, a buffer that fills while pieces are queued,
    /// header patches after each batch: the file equals the same bytes
    /// written into a Vec.
    #[test]
    fn gathered_blocks_land_in_order() {
        let dir = std::env::temp_dir().join(format!("flightrec-gather-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let Some(mut out) = direct_file(&dir, "g") else {
            eprintln!("no direct I/O in {}: skipped", dir.display());
            return;
        };
        let a = out.align;
        let mut model = Vec::new();
        let mut next = numbers(7);
        // Blocks as the pool has them: aligned memory of their own, kept
        // until the batch is written.
        let mut blocks: Vec<Aligned> = Vec::new();
        for round in 0..60u64 {
            // Now and then enough to fill the buffer while pieces wait.
            let n = (next() % 5000) as usize + 1 + if round % 7 == 3 { 3 << 20 } else { 0 };
            let data: Vec<u8> = (0..n).map(|i| (i as u64 ^ round) as u8).collect();
            out.write_all(&data).unwrap();
            model.extend_from_slice(&data);
            // Now and then more blocks than one gathered write takes.
            let count = if round % 11 == 5 { 300 } else { next() % 40 };
            for _ in 0..count {
                let mut gap = (a - model.len() % a) % a;
                if gap > 0 && gap < jfr_format::write::checkpoint::FILLER_MIN {
                    gap += a;
                }
                let mut fill = vec![0; gap];
                if gap > 0 {
                    assert!(jfr_format::write::checkpoint::filler(&mut fill));
                }
                out.write_all(&fill).unwrap();
                model.extend_from_slice(&fill);
                let len = a + (next() % (64 << 10)) as usize;
                let mut block = Aligned::new(len.next_multiple_of(ALIGN));
                for (i, b) in block.as_mut_slice()[..len].iter_mut().enumerate() {
                    *b = (i as u64 * 31 + round) as u8;
                }
                // SAFETY: `block` is kept in `blocks`, unchanged, until the
                // gathered write below.
                let took = unsafe { out.gather(&block.as_slice()[..len]) }.unwrap();
                assert!(took || !out.direct, "an aligned block is gathered");
                if !took {
                    out.write_all(&block.as_slice()[..len]).unwrap();
                }
                model.extend_from_slice(&block.as_slice()[..len]);
                blocks.push(block);
                assert_eq!(out.end(), model.len() as u64);
            }
            match round % 4 {
                0 => out.write_gathered().unwrap(),
                1 => out.flush().unwrap(),
                _ => {}
            }
            if round % 4 < 2 {
                blocks.clear();
                // A header patch, as the chunk writer makes it.
                let patch = [round as u8; 68];
                let end = out.stream_position().unwrap();
                out.seek(SeekFrom::Start(3)).unwrap();
                out.write_all(&patch).unwrap();
                out.seek(SeekFrom::Start(end)).unwrap();
                model[3..71].copy_from_slice(&patch);
            }
            if round % 4 == 1 {
                assert_eq!(contents(&dir, "g"), model, "round {round}");
            }
        }
        out.flush().unwrap();
        drop(blocks);
        assert_eq!(contents(&dir, "g"), model);
        drop(out);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    trait WriteSeek: Write + Seek {}
    impl<T: Write + Seek> WriteSeek for T {}
}
