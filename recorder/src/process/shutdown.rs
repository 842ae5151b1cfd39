//! The end of the process for the automatic recordings (`FLIGHTREC`,
//! [`start_from_options`](crate::autostart::start_from_options), the C
//! ABI's `flightrec_start`, `jcmd`'s `JFR.start`): at `exit()`, and on
//! SIGTERM, SIGHUP and SIGINT, as the JDK's shutdown hook does for
//! `-XX:StartFlightRecording`.
//!
//! # The shutdown thread
//!
//! `flightrec-shutdown`, started with the first automatic recording, waits
//! in `read` on a pipe of its own. Two requests reach it as one byte each:
//!
//! * *exit* (`x`), from the `atexit` handler: it stops the automatic
//!   recordings (writing their files) and says it is done;
//! * *signal* (`s`), from the signal handler below: it stops them, removes
//!   the attach socket, puts back the signal's default action and raises
//!   the signal again, so the process ends as it would have without us
//!   (status 128 + the signal, as a shell sees it).
//!
//! # Exit never hangs
//!
//! `exit()` may be called from anywhere: a signal handler that interrupted
//! a commit (or any of our locks), a periodic closure, a user encoder. The
//! stop therefore never runs on the exiting thread: the handler posts *exit*
//! and waits for the shutdown thread at most [`EXIT_STALL`] without
//! progress (the CPU time of flightrec's threads not growing) and at most
//! [`EXIT_LIMIT`] in all. If the stop cannot finish (it needs a lock the
//! exiting thread holds), the process exits without the file instead of
//! hanging; the recording's chunks stay in the repository. (A thread that
//! leaves from inside its write section has it closed by its own
//! thread-local destructor, which `exit()` runs first: see
//! [`crate::buffer::local`].)
//!
//! # Signals
//!
//! A handler is installed for SIGTERM, SIGHUP and SIGINT only where the
//! action is `SIG_DFL` when the first automatic recording starts: a signal
//! the program ignores stays ignored (`nohup`, background jobs), and a
//! handler the program installed before keeps the signal. A handler the
//! program installs later replaces ours: the program's handler has
//! priority, and the file is then written only if the program goes on to
//! `exit()` (or returns from `main`). The handler is async-signal-safe: it
//! reads two atomics, `write`s one byte, and in a forked child (which has
//! no shutdown thread) puts back `SIG_DFL` and re-raises at once. A second
//! of these signals while the first is handled (a second Ctrl-C) ends the
//! process at once, with its default action, without the file.
//!
//! Invariant: the atexit handler and the signal path both stop the
//! recordings on the shutdown thread, each wait of the exiting thread is
//! bounded, and a terminating signal the program left at its default still
//! ends the process with that signal.

use std::io;
use std::time::{Duration, Instant};

use crate::base::sync::OnceLock;
use crate::base::sync::global::{AtomicU64, Condvar, Mutex, Ordering};

/// The longest the atexit handler waits for the stop while flightrec's
/// threads make no progress.
pub(crate) const EXIT_STALL: Duration = Duration::from_millis(1000);

/// The longest the atexit handler waits for the stop in all.
pub(crate) const EXIT_LIMIT: Duration = Duration::from_secs(20);

/// The signals whose default action ends the process, handled as the
/// JDK's shutdown hook handles them.
const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// The write end of the shutdown thread's pipe ([`NO_FD`]: no thread).
static WAKE: AtomicU64 = AtomicU64::new(NO_FD);
const NO_FD: u64 = u64::MAX;
/// The process the shutdown thread runs in (0: none).
static OWNER: AtomicU64 = AtomicU64::new(0);
/// The shutdown thread's kernel id.
static THREAD: AtomicU64 = AtomicU64::new(0);
/// The signal being handled (0: none).
static SIGNALLED: AtomicU64 = AtomicU64::new(0);
/// Exit requests completed, for the waiting atexit handler.
static DONE: Mutex<u64> = Mutex::new(0);
static DONE_CV: Condvar = Condvar::new();

/// What a terminating signal removes before the process ends (the
/// `jcmd` listener's socket and discovery file), set by whoever made them:
/// at `exit()` their own `atexit` handlers do it.
static CLEANUP: OnceLock<fn()> = OnceLock::new();

/// What stops the automatic recordings (set by [`start`]; none while
/// only the listener's socket needs the signals handled).
static STOP: Mutex<Option<fn()>> = Mutex::new(None);
/// Serialises the thread's start.
static STARTING: Mutex<()> = Mutex::new(());

/// Starts the shutdown thread (once per process) with `stop`, the function
/// that stops every automatic recording, and puts flightrec's action
/// behind the program's `SIG_DFL` of the three signals.
pub(crate) fn start(stop: fn()) -> io::Result<()> {
    *STOP.lock() = Some(stop);
    serve_signals()
}

/// Sets what a terminating signal removes from the file system before the
/// process ends (the first call wins), and makes sure the three signals
/// are handled (with no recording to stop if no automatic one started):
/// an API program's listener socket goes too when it dies of one.
pub(crate) fn on_terminate(cleanup: fn()) {
    let _ = CLEANUP.set(cleanup);
    if let Err(e) = serve_signals() {
        eprintln!(
            "flightrec: no shutdown thread ({e}): the attach socket stays if \
             SIGTERM, SIGHUP or SIGINT ends the process"
        );
    }
}

/// The shutdown thread and the three signals' default action, once per
/// process.
fn serve_signals() -> io::Result<()> {
    let _starting = STARTING.lock();
    if served() {
        return Ok(());
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read, write] = fds;
    let spawned = std::thread::Builder::new()
        .name("flightrec-shutdown".into())
        .spawn(move || serve(read));
    if let Err(e) = spawned {
        // SAFETY: both descriptors are ours and used nowhere else.
        unsafe {
            libc::close(read);
            libc::close(write);
        }
        return Err(e);
    }
    // Published before the handlers can read them.
    WAKE.store(write as u64, Ordering::Release);
    OWNER.store(u64::from(std::process::id()), Ordering::Release);
    for sig in SIGNALS {
        crate::process::relay::adopt(sig, None, Some(on_default))?;
    }
    Ok(())
}

/// True in the process whose shutdown thread exists.
fn served() -> bool {
    OWNER.load(Ordering::Acquire) == u64::from(std::process::id())
        && WAKE.load(Ordering::Acquire) != NO_FD
}

/// Writes request `byte` to the shutdown thread; false if it could not.
fn post(byte: u8) -> bool {
    let fd = WAKE.load(Ordering::Acquire) as libc::c_int;
    loop {
        // SAFETY: `fd` is the pipe's write end (kept open for the process's
        // life); one byte from a valid buffer.
        let n = unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
        if n == 1 {
            return true;
        }
        // SAFETY: reads the calling thread's errno.
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        return false;
    }
}

/// The atexit handler's work: the automatic recordings stopped on the
/// shutdown thread, waited for within the bounds of the module docs. Runs
/// `stop` here if there is no shutdown thread in this process, or this is
/// it.
pub(crate) fn at_exit(stop: fn()) {
    let me = crate::base::sync::os_thread_id() as u64;
    if !served() || THREAD.load(Ordering::Acquire) == me {
        stop();
        return;
    }
    let before = *DONE.lock();
    if !post(b'x') {
        stop();
        return;
    }
    let start = Instant::now();
    let mut progress = (own_cpu(), start);
    let mut done = DONE.lock();
    while *done == before {
        let now = Instant::now();
        let cpu = own_cpu();
        if cpu != progress.0 {
            progress = (cpu, now);
        }
        if now.duration_since(progress.1) >= EXIT_STALL || now.duration_since(start) >= EXIT_LIMIT {
            drop(done);
            // Not `eprintln!`: the exiting thread may hold stderr's lock.
            let text = b"flightrec: the recording could not be finished at exit \
                (stalled); its chunks stay in the repository\n";
            // SAFETY: writes a valid buffer to fd 2.
            unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
            return;
        }
        done = DONE_CV.wait_for(done, Duration::from_millis(50));
    }
}

/// CPU time of flightrec's own threads (the progress the exit waits on).
fn own_cpu() -> Duration {
    crate::lifecycle::statistics::snapshot(0.0).own_cpu()
}

/// The shutdown thread: serves requests until the process ends.
fn serve(read: libc::c_int) {
    THREAD.store(crate::base::sync::os_thread_id() as u64, Ordering::Release);
    loop {
        let mut byte = 0u8;
        // SAFETY: `read` is the pipe's read end, owned by this thread; one
        // byte into a valid buffer.
        let n = unsafe { libc::read(read, (&raw mut byte).cast(), 1) };
        if n != 1 {
            // SAFETY: reads the calling thread's errno.
            if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return;
        }
        let stop = *STOP.lock();
        match byte {
            b'x' => {
                if let Some(stop) = stop {
                    let _ = crate::process::panic_guard::catch(
                        crate::process::panic_guard::Place::RecorderThread,
                        stop,
                    );
                }
                *DONE.lock() += 1;
                DONE_CV.notify_all();
            }
            b's' => terminate(SIGNALLED.load(Ordering::Acquire) as libc::c_int, stop),
            _ => {}
        }
    }
}

/// A terminating signal: the files written, the socket removed, then the
/// signal's default action.
fn terminate(sig: libc::c_int, stop: Option<fn()>) {
    if let Some(stop) = stop {
        let _ = crate::process::panic_guard::catch(
            crate::process::panic_guard::Place::RecorderThread,
            stop,
        );
    }
    if let Some(cleanup) = CLEANUP.get() {
        cleanup();
    }
    crate::process::relay::kernel_default(sig);
    // The default action was not to end the process after all (someone
    // changed it meanwhile): end it as it would have ended.
    // SAFETY: _exit ends the process at once; nothing is left to run.
    unsafe { libc::_exit(128 + sig) }
}

/// flightrec's action for SIGTERM, SIGHUP and SIGINT where the program's
/// disposition is `SIG_DFL`, called by the relay's handler (module docs).
fn on_default(sig: libc::c_int) {
    if !served() {
        // A forked child: no shutdown thread here. The signal is blocked
        // while the handler runs, so it ends the process once it returns.
        crate::process::relay::kernel_default(sig);
    } else if SIGNALLED
        .compare_exchange(0, sig as u64, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
        || !post(b's')
    {
        // A second signal while the first is handled (a second Ctrl-C), or
        // no way to reach the thread: the default action, at once.
        crate::process::relay::kernel_default(sig);
    }
}
