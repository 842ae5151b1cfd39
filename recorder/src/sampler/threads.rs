//! Finding every thread of the process: `/proc/self/task`.
//!
//! Listing that directory costs tens of microseconds (more on a VM, where
//! the sampler thread wakes with cold caches), too much to do on every
//! sampler pass. [`Watch`] keeps the directory open and asks for its link
//! count on each pass instead (one `fstat`, under a microsecond): procfs
//! reports a task directory's `st_nlink` as 2 + the number of threads, so a
//! thread starting or exiting changes it. The directory is listed when the
//! count changed, or when the pid namespace's most recently created task
//! (the last field of `/proc/loadavg`, read with `pread` from a kept fd)
//! is another than at the last listing: one thread exiting and another
//! starting between two passes leaves the count as it was, but a new
//! thread is a new task id. Where that file cannot be read, the directory
//! is listed at least every [`RELIST`] for that case.
//!
//! A caller that lists often ([`Watch::poll_into`], the periodic thread)
//! reads the open directory again from its start with `getdents64` into a
//! kept buffer and gets the ids sorted in a kept `Vec`: no open, no
//! allocation per entry or per listing ([`list_into`]). The kernel's own
//! work (a dentry per thread) stays: about 80 µs for 200 threads.
//!
//! Invariant: a thread is seen within one pass of starting or exiting (or,
//! without `/proc/loadavg`, when another exited or started within the same
//! pass, within [`RELIST`]). A thread that lives shorter than that may
//! never be seen; its CPU time is then not sampled.

use std::collections::HashSet;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::time::{Duration, Instant};

/// Longest time between two listings of `/proc/self/task`.
pub(crate) const RELIST: Duration = Duration::from_millis(200);

/// The kernel ids of the process's threads now.
pub(crate) fn list() -> HashSet<u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return HashSet::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Lists the thread ids in `dir` (an open `/proc/self/task`) into `out`,
/// sorted, reading the directory from its start with `getdents64` into
/// `buf` (grown if an entry does not fit): no allocation once `buf` and
/// `out` have grown. False if the directory could not be read (`out` then
/// holds what was read).
pub(crate) fn list_into(dir: &File, buf: &mut Vec<u8>, out: &mut Vec<u64>) -> bool {
    /// `struct linux_dirent64`: `d_ino` (8 bytes), `d_off` (8),
    /// `d_reclen` (2), `d_type` (1), then the NUL-terminated name.
    const NAME: usize = 19;
    out.clear();
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let fd = dir.as_raw_fd();
    // SAFETY: `fd` is open for as long as `dir` is borrowed; seeking a
    // directory to 0 restarts its listing.
    if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } != 0 {
        return false;
    }
    loop {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes, and the
        // kernel writes at most that many; `fd` is open (above).
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                // An entry larger than the buffer.
                Some(libc::EINVAL) if buf.len() < 1 << 20 => {
                    let grown = buf.len() * 2;
                    buf.resize(grown, 0);
                    continue;
                }
                _ => return false,
            }
        }
        if n == 0 {
            break;
        }
        let filled = &buf[..n as usize];
        let mut at = 0;
        while at + NAME <= filled.len() {
            let reclen = usize::from(u16::from_ne_bytes([filled[at + 16], filled[at + 17]]));
            if reclen < NAME || at + reclen > filled.len() {
                break;
            }
            let name = &filled[at + NAME..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            // "." and ".." are not numbers.
            if !name.is_empty() && name.iter().all(u8::is_ascii_digit) {
                let tid = name
                    .iter()
                    .fold(0u64, |t, &d| t.wrapping_mul(10) + u64::from(d - b'0'));
                out.push(tid);
            }
            at += reclen;
        }
    }
    out.sort_unstable();
    true
}

/// Tells when the set of threads may have changed (module docs).
#[derive(Debug)]
pub(crate) struct Watch {
    /// `/proc/self/task`, open; `None` if it could not be opened (then every
    /// call lists).
    dir: Option<File>,
    /// Its link count at the last listing.
    links: u64,
    /// `/proc/loadavg`, open; `None` if it could not be opened.
    loadavg: Option<File>,
    /// The namespace's last created task id at the last listing.
    last_pid: Option<u64>,
    /// When it was last listed.
    listed: Option<Instant>,
    /// Longest time between two listings.
    relist: Duration,
    /// `getdents64`'s buffer, for [`poll_into`](Self::poll_into).
    dents: Vec<u8>,
}

impl Watch {
    pub(crate) fn new() -> Self {
        Self::with_relist(RELIST)
    }

    /// A watch that lists at least every `relist`.
    pub(crate) fn with_relist(relist: Duration) -> Self {
        Self {
            dir: File::open("/proc/self/task").ok(),
            links: 0,
            loadavg: File::open("/proc/loadavg").ok(),
            last_pid: None,
            listed: None,
            relist,
            dents: Vec::new(),
        }
    }

    /// The link count of the directory at the last listing (0 if unknown).
    pub(crate) fn links(&self) -> u64 {
        self.links
    }

    /// Makes the next [`poll`](Self::poll) list.
    pub(crate) fn relist(&mut self) {
        self.listed = None;
    }

    /// The threads now, if they may have changed since the last call that
    /// returned some; `None` when they have not (or only a listing would
    /// tell and [`RELIST`] has not passed).
    pub(crate) fn poll(&mut self, now: Instant) -> Option<HashSet<u64>> {
        self.may_have_changed(now).then(list)
    }

    /// True if the threads may have changed since the last listing (module
    /// docs), recording the count and task id the listing about to be made
    /// starts from: a thread starting during it changes them again, and the
    /// next poll lists again.
    fn may_have_changed(&mut self, now: Instant) -> bool {
        let links = self
            .dir
            .as_ref()
            .and_then(|d| d.metadata().ok())
            .map(|m| m.nlink());
        let last_pid = self.loadavg.as_ref().and_then(read_last_pid);
        let due = self.listed.is_none_or(|t| {
            // With the task id to go by, the time bound is only a backstop.
            let relist = if last_pid.is_some() {
                self.relist.max(BACKSTOP)
            } else {
                self.relist
            };
            now.duration_since(t) >= relist
        });
        if !due && links.is_some_and(|l| l == self.links) && last_pid == self.last_pid {
            return false;
        }
        self.links = links.unwrap_or(0);
        self.last_pid = last_pid;
        self.listed = Some(now);
        true
    }

    /// [`poll`](Self::poll) into `out` (sorted, reused: no allocation once
    /// it has grown): true if `out` now holds the threads, false if they
    /// have not changed (`out` is then left as it was).
    pub(crate) fn poll_into(&mut self, now: Instant, out: &mut Vec<u64>) -> bool {
        if !self.may_have_changed(now) {
            return false;
        }
        let listed = self
            .dir
            .as_ref()
            .is_some_and(|d| list_into(d, &mut self.dents, out));
        if !listed {
            out.clear();
            out.extend(list());
            out.sort_unstable();
        }
        true
    }
}

/// Longest time between two listings when `/proc/loadavg` tells of new
/// tasks: a safety net only (a file that stopped changing).
const BACKSTOP: Duration = Duration::from_secs(5);

/// The last field of `/proc/loadavg`: the id of the task most recently
/// created in this pid namespace. One `pread` into a stack buffer.
fn read_last_pid(f: &File) -> Option<u64> {
    let mut buf = [0u8; 128];
    let n = f.read_at(&mut buf, 0).ok()?;
    let text = buf.get(..n)?;
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let field = text.rsplit(|&b| b == b' ').next()?;
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        field
            .iter()
            .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0')),
    )
}

/// The signals thread `tid` of this process blocks now (`SigBlk` of its
/// `/proc/self/task/TID/status`; bit `s - 1` for signal `s`), `None` once
/// it exited.
pub(crate) fn blocked_signals(tid: u64) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("SigBlk:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// What a thread's blocked mask says of one signal ([`blocking`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocking {
    /// The signal is not blocked.
    Open,
    /// The program blocks it (`sigprocmask`, `pthread_sigmask`).
    ByProgram,
    /// The C library blocks every signal for a moment of its own: while the
    /// thread exits (after its destructors ran) or is created. Says nothing
    /// of the program's mask.
    ByLibrary,
    /// The thread exited.
    Gone,
}

/// Bit of signal 32, which the C library keeps for itself (glibc's
/// `SIGCANCEL`, musl's `SIGTIMER`): its `sigprocmask` and `pthread_sigmask`
/// never block it (`sigfillset` leaves it out, `sigaddset` refuses it), but
/// its own block of every signal, made with the raw system call, does.
const LIBRARY_SIGNAL_BIT: u64 = 1 << (32 - 1);

/// What `mask` (a `SigBlk`: bit `s - 1` for signal `s`) says of `signal`.
fn classify(mask: u64, signal: i32) -> Blocking {
    if mask & LIBRARY_SIGNAL_BIT != 0 {
        Blocking::ByLibrary
    } else if mask & 1u64 << (signal - 1) != 0 {
        Blocking::ByProgram
    } else {
        Blocking::Open
    }
}

/// Whether thread `tid` of this process blocks `signal` now, and whose
/// block it is.
pub(crate) fn blocking(tid: u64, signal: i32) -> Blocking {
    blocked_signals(tid).map_or(Blocking::Gone, |mask| classify(mask, signal))
}

/// The signals some thread of the process blocks now (module docs of
/// [`super::claim`]: a signal a thread blocks may be one it waits for with
/// `sigwait` or a `signalfd`). A thread that blocks every real-time signal
/// says nothing of any one of them: the C library's `pthread_create` blocks
/// all signals while a thread starts, and helper threads block all
/// signals to be left alone.
pub(crate) fn blocked_by_any() -> u64 {
    let realtime = (libc::SIGRTMIN()..=libc::SIGRTMAX()).fold(0u64, |m, s| m | 1 << (s - 1));
    list()
        .into_iter()
        .filter_map(blocked_signals)
        .filter(|b| b & realtime != realtime)
        .fold(0, |all, b| all | b)
}

/// The kernel's name for thread `tid` (what `pthread_setname_np` and Rust's
/// `Builder::name` set, up to 15 bytes).
pub(crate) fn name(tid: u64) -> String {
    comm(tid).unwrap_or_else(|| format!("thread-{tid}"))
}

/// The kernel's name of thread `tid` of this process, if it still runs.
pub(crate) fn comm(tid: u64) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One thread ending and another starting between two polls leaves the
    /// count as it was; the new task id still makes the next poll list.
    #[test]
    fn a_swap_of_threads_between_polls_is_seen() {
        let mut w = Watch::with_relist(Duration::from_secs(3600));
        let mut out = Vec::new();
        let (tx, rx) = crate::base::sync::mpsc::channel::<()>();
        let first = std::thread::spawn(move || rx.recv().unwrap_or(()));
        let now = Instant::now();
        assert!(w.poll_into(now, &mut out));
        // Quiet once (other processes' and tests' tasks may be created
        // meanwhile, and make it list).
        assert!(
            (0..2000).any(|_| {
                std::thread::sleep(Duration::from_millis(1));
                !w.poll_into(now, &mut out)
            }),
            "nothing changed, yet the watch keeps listing"
        );
        tx.send(()).unwrap();
        first.join().unwrap();
        let (tx, rx) = crate::base::sync::mpsc::channel::<()>();
        let second = std::thread::spawn(move || rx.recv().unwrap_or(()));
        assert!(
            w.poll_into(now, &mut out),
            "a new thread in place of an exited one is a change"
        );
        tx.send(()).unwrap();
        second.join().unwrap();
    }

    /// The masks this C library makes: a program's block of one signal,
    /// and of every signal it may block, are the program's; the library's
    /// own block while a thread exits is the library's (glibc 2.36 blocks
    /// every signal but `SIGSETXID`: `fffffffefffbfeff`).
    #[test]
    fn the_librarys_block_at_thread_exit_is_not_the_programs() {
        let sigprof = libc::SIGPROF;
        let rt = libc::SIGRTMIN() + 3;
        assert_eq!(classify(0, sigprof), Blocking::Open);
        assert_eq!(classify(1 << (sigprof - 1), sigprof), Blocking::ByProgram);
        assert_eq!(classify(1 << (sigprof - 1), rt), Blocking::Open);
        assert_eq!(classify(0xffff_fffe_fffb_feff, rt), Blocking::ByLibrary);

        // Every signal a program can block, blocked the program's way.
        let (tx, rx) = crate::base::sync::mpsc::channel();
        let (done_tx, done_rx) = crate::base::sync::mpsc::channel::<()>();
        let blocker = std::thread::spawn(move || {
            // SAFETY: `set` is a local sigset_t that sigfillset initializes
            // before pthread_sigmask reads it; no old mask is asked for.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut set);
                assert_eq!(
                    libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()),
                    0
                );
            }
            tx.send(crate::base::sync::os_thread_id() as u64).unwrap();
            done_rx.recv().unwrap_or(());
        });
        let tid = rx.recv().unwrap();
        assert_eq!(blocking(tid, sigprof), Blocking::ByProgram);
        assert_eq!(blocking(tid, rt), Blocking::ByProgram);
        done_tx.send(()).unwrap();
        blocker.join().unwrap();
        assert_eq!(blocking(tid, sigprof), Blocking::Gone);

        // A thread caught in its exit: read its mask until it is gone, over
        // as many threads as it takes (the window is tens of microseconds).
        let caught = (0..2000).any(|_| {
            let (tx, rx) = crate::base::sync::mpsc::channel();
            let t = std::thread::spawn(move || {
                tx.send(crate::base::sync::os_thread_id() as u64).unwrap();
            });
            let tid = rx.recv().unwrap();
            let mut seen = Vec::new();
            loop {
                match blocking(tid, sigprof) {
                    Blocking::Gone => break,
                    b => seen.push(b),
                }
            }
            t.join().unwrap();
            assert!(
                !seen.contains(&Blocking::ByProgram),
                "an exiting thread that never blocked a signal read as blocking: {seen:?}"
            );
            seen.contains(&Blocking::ByLibrary)
        });
        assert!(caught, "no thread was ever seen in its exit");
    }

    #[test]
    fn sees_a_named_thread_come_and_go() {
        let (tx, rx) = crate::base::sync::mpsc::channel();
        let (done_tx, done_rx) = crate::base::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("threads-test".into())
            .spawn(move || {
                tx.send(crate::base::sync::os_thread_id() as u64).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        assert!(list().contains(&tid));
        assert_eq!(name(tid), "threads-test");
        let mut watch = Watch::new();
        let t0 = Instant::now();
        assert!(watch.poll(t0).expect("first poll lists").contains(&tid));
        // Other tests' threads (and other processes: a new task id anywhere
        // in the namespace makes it list) may come and go meanwhile: quiet
        // at least once.
        assert!(
            (0..2000).any(|_| {
                std::thread::sleep(Duration::from_millis(1));
                watch.poll(t0).is_none()
            }),
            "no thread came or went, yet the watch keeps listing"
        );
        done_tx.send(()).unwrap();
        h.join().unwrap();
        // `join` returns when the kernel clears the thread's tid, which it
        // does before it unlinks the task from /proc/self/task: wait for
        // that (bounded).
        assert!(
            (0..1000).any(|_| {
                let gone = !list().contains(&tid);
                if !gone {
                    std::thread::sleep(Duration::from_millis(1));
                }
                gone
            }),
            "the joined thread is still listed after a second"
        );
        // The exit changed the link count (unless another test's thread
        // started meanwhile: then the relisting finds it).
        let later = watch
            .poll(t0)
            .or_else(|| watch.poll(t0 + BACKSTOP))
            .expect("listed");
        assert!(!later.contains(&tid));
        assert!(watch.poll(t0 + BACKSTOP).is_some(), "relisted when due");
    }

    #[test]
    fn a_blocked_signal_shows_in_the_threads_mask() {
        let tid = crate::base::sync::os_thread_id() as u64;
        // SAFETY: valid sigsets for pthread_sigmask on this thread.
        let old = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGURG);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            old
        };
        let blocked = blocked_signals(tid).expect("own status");
        // SAFETY: restores the mask saved above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
        assert_ne!(blocked & 1 << (libc::SIGURG - 1), 0, "{blocked:x}");
        assert_eq!(
            blocked_signals(tid).expect("own status") & 1 << (libc::SIGURG - 1),
            0
        );
        assert_eq!(blocked_signals(u64::MAX >> 1), None);
    }

    #[test]
    fn getdents_listing_matches_read_dir() {
        // Enough threads that the listing takes more than one getdents64;
        // each waits until its sender is dropped.
        let (senders, threads): (Vec<_>, Vec<_>) = (0..150)
            .map(|_| {
                let (tx, rx) = crate::base::sync::mpsc::channel::<()>();
                (tx, std::thread::spawn(move || rx.recv().is_err()))
            })
            .unzip();
        let dir = File::open("/proc/self/task").unwrap();
        let (mut buf, mut out) = (Vec::new(), Vec::new());
        // Other tests' threads may come and go: equal at least once.
        let same = (0..50).any(|_| {
            assert!(list_into(&dir, &mut buf, &mut out));
            let mut want: Vec<u64> = list().into_iter().collect();
            want.sort_unstable();
            out == want
        });
        drop(senders);
        for t in threads {
            assert!(t.join().unwrap());
        }
        assert!(same, "getdents64 listing differs from read_dir's");
        assert!(out.len() > 150, "{} threads listed", out.len());
        assert!(out.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
    }
}
