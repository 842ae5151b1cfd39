//! Sampling from birth: a thread created while sampling runs gets its timer
//! before its first instruction of user code, instead of at the sampler's
//! next look at `/proc/self/task` (up to a pass later, so a thread that
//! lives a few milliseconds was never sampled).
//!
//! # Mechanism
//!
//! With the cargo feature `thread-hook`, flightrec defines `pthread_create`
//! (the program's own calls, `std::thread` included, bind to it at link
//! time, as they would to an allocator's `malloc`); it calls the C
//! library's (found with `dlsym(RTLD_NEXT)`) with a start routine of its
//! own. That routine, on the new thread, [`announce`]s the thread's id and
//! waits until the sampler thread has attached it (its slot and its timers,
//! exactly as a thread found by listing: [`super::consumer`]); then it runs
//! the program's routine. The announcement rings the sampler thread's bell
//! ([`super::wake`]) and the sampler [`serve`]s it before it sleeps again,
//! so one wake of it is the whole cost. A thread
//! that exits is found gone by the sampler's next listing, which deletes
//! its timers and writes its last samples, as for any thread. While it
//! waits the thread still has its creator's name (`std` names it after):
//! the thread-start poll is told ([`inherited_name`]) and waits for the
//! thread's own name, as for a thread showing the process's name.
//!
//! # Short threads and the tick
//!
//! The kernel checks CPU timers at its tick (4 ms at `CONFIG_HZ=250`), on
//! the thread running then: one signal stands for every expiry since the
//! previous one. A long-running thread gets one signal per tick of its CPU
//! time, `T` (measured by the sampler every 500 ms on the threads that run
//! steadily, their CPU time over their signals; the tick until then). A
//! short thread should get `c / T` for its CPU time `c`, and does
//! on average when its run starts at a random point between ticks; but on a
//! busy machine threads run in slices that start at a tick, and a thread
//! that needs less than one tick of CPU then gets none. So each announced
//! thread, when its routine returns, adds its deficit `c - k·T` (`k`: the
//! signals it got; negative when it got more than its share) to a
//! process-wide credit, and while the credit is one `T` or more the exiting
//! thread takes a sample standing for `T` and the credit drops by `T`. Over
//! many short threads their samples are then `Σc / T`, as for a long
//! thread, whatever the tick phases were; the credit is kept within
//! [`MAX_CREDIT`] signals either way. The sample is taken by the sampling
//! handler on the exiting thread (the signal sent to itself), so its stack
//! is the thread's last frames. A thread that ends with `pthread_exit`
//! adds nothing.
//!
//! When no recording samples ([`ACTIVE`] false), the hook calls the C
//! library's `pthread_create` with the program's own routine: no wrapper,
//! no wait. The wait is bounded ([`WAIT`]): a sampler that does not answer
//! (stopping, or descheduled on a saturated machine) delays a thread's
//! start by at most that; the thread is then attached at the next listing.
//! In a forked child [`ACTIVE`] is cleared (the sampler thread is not
//! copied).
//!
//! # The creator, for `jdk.ThreadStart`
//!
//! While a recording has `jdk.ThreadStart` on ([`set_starts`], published
//! by the periodic thread at each poll), the hook also wraps the routine
//! when sampling is off, and on the creating thread, before the C
//! library's `pthread_create`, registers the creator's thread constant and
//! (with `jdk.ThreadStart#stackTrace`, on by default) captures and interns
//! its stack from the hook's caller outward ([`creator`]). The new thread
//! files that [`Parent`] under its kernel id when it announces itself;
//! the thread-start poll ([`crate::periodic::lifecycle`]) takes it
//! ([`take_parent`]) when it writes the thread's `jdk.ThreadStart`, as the
//! JDK writes it: `eventThread` and `thread` the new thread, `stackTrace`
//! and `parentThread` its creator's. A thread the poll lists before its
//! first instruction ran (so before it filed its parent) gets no parent,
//! as a thread seen without the hook.
//!
//! Invariant: a thread that announced itself and whose wait did not time
//! out has its timers armed before it runs the program's routine.

use std::time::{Duration, Instant};

use crate::base::sync::global::{AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};

/// What the hook records of a thread's creation (module docs): nothing,
/// the creator, or the creator and its stack.
const STARTS_OFF: usize = 0;
const STARTS_PARENT: usize = 1;
const STARTS_STACK: usize = 2;
static STARTS: AtomicUsize = AtomicUsize::new(STARTS_OFF);

/// Longest a new thread waits for the sampler.
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
pub(crate) const WAIT: Duration = Duration::from_millis(50);

/// True while the sampler thread runs with some sampling on: only then does
/// the hook wrap a new thread's routine.
pub(crate) static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Most names [`inherited_name`] remembers (threads the thread-start poll
/// never saw leave theirs behind; past this many they are all forgotten).
const MAX_INHERITED: usize = 4096;

/// The sampling signal, the timer period and the CPU time one CPU-time
/// signal stood for lately (ns), as the sampler last published them.
static SIGNAL: AtomicU64 = AtomicU64::new(0);
static PERIOD_NS: AtomicU64 = AtomicU64::new(0);
static CPU_PER_SIGNAL_NS: AtomicU64 = AtomicU64::new(0);

/// Most signals of credit kept, either way (module docs).
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
pub(crate) const MAX_CREDIT: i64 = 64;

/// The exiting threads' credit, ns of CPU (an `i64` in two's complement).
static CREDIT: AtomicU64 = AtomicU64::new(0);

/// The sampler's figures for the exit samples (module docs); a new
/// configuration starts with no credit, and with `T` the longer of the
/// period and the kernel's tick until the sampler measured it.
pub(crate) fn publish_config(signal: i32, period: Duration) {
    CREDIT.store(0, Ordering::Relaxed);
    publish(signal, period, period.max(tick()));
}

/// The kernel's tick: the resolution of the coarse clocks (`1 s / HZ`).
fn tick() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and out-pointer.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32).min(Duration::from_millis(10))
}

/// The sampler's figures for the exit samples (module docs).
pub(crate) fn publish(signal: i32, period: Duration, cpu_per_signal: Duration) {
    SIGNAL.store(signal as u64, Ordering::Relaxed);
    PERIOD_NS.store(period.as_nanos() as u64, Ordering::Relaxed);
    CPU_PER_SIGNAL_NS.store(cpu_per_signal.as_nanos() as u64, Ordering::Relaxed);
}

/// What an attached thread keeps for its exit (module docs).
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
#[derive(Debug, Clone, Copy)]
pub(crate) struct Born {
    tid: u64,
    /// The CPU-time signal value of its slot.
    value: u64,
    index: usize,
    /// Its CPU time when it was armed.
    cpu0: u64,
}

/// The thread that created a thread through the hook, and its stack then
/// (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parent {
    /// The creator's thread constant.
    pub(crate) key: u64,
    /// Its stack at the creation (0: none), interned in `stack_epoch`.
    pub(crate) stack: u64,
    pub(crate) stack_epoch: u64,
}

/// Announced threads the sampler has not attached yet.
#[derive(Debug)]
pub(crate) struct Births {
    pending: Vec<u64>,
    /// Attached threads with a CPU timer: (tid, signal value, slot index),
    /// until each picks its entry up.
    attached: Vec<(u64, u64, usize)>,
    /// The sampler is attaching a batch it took from `pending`.
    busy: bool,
    /// The name each announced thread had at birth (its creator's, until
    /// it names itself after the wait).
    inherited: Vec<(u64, [u8; 16])>,
    /// The creator of each announced thread, while `jdk.ThreadStart` is on,
    /// until the thread-start poll takes it.
    parents: Vec<(u64, Parent)>,
}

static BIRTHS: Mutex<Births> = Mutex::new(Births {
    pending: Vec::new(),
    attached: Vec::new(),
    busy: false,
    inherited: Vec::new(),
    parents: Vec::new(),
});

/// The name thread `tid` had when it announced itself (its creator's), if
/// it did: the thread-start poll waits for a thread still showing it to
/// name itself, as it does for one showing the process's name. Forgotten
/// by [`forget`].
pub(crate) fn inherited_name(tid: u64) -> Option<String> {
    let b = BIRTHS.lock();
    let (_, name) = b.inherited.iter().find(|(t, _)| *t == tid)?;
    let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Some(String::from_utf8_lossy(&name[..len]).into_owned())
}

/// Drops what [`inherited_name`] and [`take_parent`] know of `tid`.
pub(crate) fn forget(tid: u64) {
    let mut b = BIRTHS.lock();
    b.inherited.retain(|(t, _)| *t != tid);
    b.parents.retain(|(t, _)| *t != tid);
}

/// The creator of thread `tid`, if the hook saw its creation while
/// `jdk.ThreadStart` was on (module docs); taken once.
pub(crate) fn take_parent(tid: u64) -> Option<Parent> {
    let mut b = BIRTHS.lock();
    let at = b.parents.iter().rposition(|(t, _)| *t == tid)?;
    Some(b.parents.swap_remove(at).1)
}

/// `jdk.ThreadStart` on or off in some recording, and with its stack trace
/// or not: from then on the hook records each thread's creator (module
/// docs). Off releases what was kept.
pub(crate) fn set_starts(on: bool, stack_trace: bool) {
    let starts = match (on, stack_trace) {
        (false, _) => STARTS_OFF,
        (true, false) => STARTS_PARENT,
        (true, true) => STARTS_STACK,
    };
    if STARTS.swap(starts, Ordering::Relaxed) != starts && starts == STARTS_OFF {
        BIRTHS.lock().parents.clear();
    }
}

/// On the creating thread, in the hook: its constant and, if asked, its
/// stack from the hook's caller outward. `None` when no recording wants
/// them.
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
#[inline(never)]
pub(crate) fn creator() -> Option<Parent> {
    let starts = STARTS.load(Ordering::Relaxed);
    if starts == STARTS_OFF {
        return None;
    }
    let rt = crate::runtime::get()?;
    // Its kernel name (a thread's own first event gives the key its Rust
    // name); nothing here panics, so the hook needs no unwinding guard (a
    // guard's frames would sit between the stack and the hook).
    let key = rt
        .threads
        .key_for_tid(crate::base::sync::os_thread_id(), || {
            let name = own_name();
            let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
            String::from_utf8_lossy(&name[..len]).into_owned()
        });
    let (stack, stack_epoch) = if starts == STARTS_STACK {
        creator_stack(rt)
    } else {
        (0, 0)
    };
    Some(Parent {
        key,
        stack,
        stack_epoch,
    })
}

/// The stack above the hook: skips this function, [`creator`] and the
/// exported `pthread_create` (with [`hook::create`] inlined in it); its key
/// and the epoch it was interned in.
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
#[inline(never)]
fn creator_stack(rt: &crate::runtime::Runtime) -> (u64, u64) {
    let mut frames = [0u64; 128];
    let depth = rt.max_stack_depth.min(frames.len());
    let c = crate::stack::capture(3, &mut frames[..depth]);
    if c.len == 0 {
        return (0, 0);
    }
    // Read before any write section loads it (see `cpool::stacks`).
    let epoch = rt.epoch.load(Ordering::Relaxed);
    match rt.stacks.intern(&frames[..c.len], c.truncated, epoch) {
        Some(key) => (key, epoch),
        None => {
            rt.losses
                .record(crate::base::loss::LossCause::StackDropped, 0);
            (0, 0)
        }
    }
}

/// The calling thread's name (`PR_GET_NAME`, at most 15 bytes).
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
fn own_name() -> [u8; 16] {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
    unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
    name
}
static CV: Condvar = Condvar::new();

/// On a new thread, before its routine: files its inherited name and its
/// `parent` (if the hook took one), then, while sampling runs, asks the
/// sampler to attach it and waits (at most [`WAIT`]) until it did. `Some`
/// if it has a CPU timer.
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
pub(crate) fn announce(parent: Option<Parent>) -> Option<Born> {
    let active = ACTIVE.load(Ordering::Acquire);
    if !active && parent.is_none() {
        return None;
    }
    let tid = crate::base::sync::os_thread_id() as u64;
    let name = own_name();
    let deadline = Instant::now() + WAIT;
    let mut b = BIRTHS.lock();
    if b.inherited.len() >= MAX_INHERITED {
        b.inherited.clear();
    }
    // A reused kernel id: the entries of the thread that had it go.
    b.inherited.retain(|(t, _)| *t != tid);
    b.inherited.push((tid, name));
    if let Some(p) = parent {
        if b.parents.len() >= MAX_INHERITED {
            b.parents.clear();
        }
        b.parents.retain(|(t, _)| *t != tid);
        b.parents.push((tid, p));
    }
    if !active {
        return None;
    }
    b.pending.push(tid);
    super::handler::doorbell::BELL.ring();
    while (b.busy || b.pending.contains(&tid)) && ACTIVE.load(Ordering::Acquire) {
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        b = CV.wait_for(b, deadline - now);
    }
    let at = b.attached.iter().position(|a| a.0 == tid)?;
    let (_, value, index) = b.attached.swap_remove(at);
    drop(b);
    Some(Born {
        tid,
        value,
        index,
        cpu0: super::handler::entry::thread_cpu_nanos(),
    })
}

/// On an announced thread whose routine returned: adds its deficit to the
/// credit and takes a sample per `T` of credit (module docs).
#[cfg_attr(not(feature = "thread-hook"), allow(dead_code))] // used by the hook
pub(crate) fn exiting(born: Born) {
    if !ACTIVE.load(Ordering::Acquire) {
        return;
    }
    let Some(slot) = super::handler::entry::SLOTS
        .get()
        .and_then(|t| t.get(born.index))
    else {
        return;
    };
    if slot.tid.load(Ordering::Relaxed) != born.tid {
        return;
    }
    let period = PERIOD_NS.load(Ordering::Relaxed).max(1);
    let per_signal = CPU_PER_SIGNAL_NS.load(Ordering::Relaxed).max(period) as i64;
    let cpu = super::handler::entry::thread_cpu_nanos().saturating_sub(born.cpu0) as i64;
    let signals = slot.cpu_signals.load(Ordering::Relaxed) as i64;
    let deficit = cpu - signals.saturating_mul(per_signal);
    let bound = MAX_CREDIT * per_signal;
    let mut credit = CREDIT.fetch_add(deficit as u64, Ordering::Relaxed) as i64 + deficit;
    if credit.abs() > bound {
        // Racy, and only a bound.
        credit = credit.clamp(-bound, bound);
        CREDIT.store(credit as u64, Ordering::Relaxed);
    }
    let overrun = (per_signal / period as i64).saturating_sub(1) as u32;
    while credit >= per_signal {
        // The signal the timers send now, read before each send: never one
        // the program has taken since (see `claim`; 0 while disarmed).
        let signal = super::claim::armed();
        if signal == 0 || signal != SIGNAL.load(Ordering::Relaxed) as i32 {
            break;
        }
        credit = CREDIT.fetch_sub(per_signal as u64, Ordering::Relaxed) as i64 - per_signal;
        if credit < 0 {
            // Another thread took it first.
            CREDIT.fetch_add(per_signal as u64, Ordering::Relaxed);
            break;
        }
        super::signal::sample_self(signal, born.value, overrun);
    }
}

/// On the sampler thread, between passes (an announcement rings its bell,
/// see `wake`): attaches each thread announced since with `attach` (which
/// returns the thread's CPU-time signal value and slot index if it got a
/// CPU timer). True if there was any.
pub(crate) fn serve(mut attach: impl FnMut(u64) -> Option<(u64, usize)>) -> bool {
    let mut b = BIRTHS.lock();
    if b.pending.is_empty() {
        return false;
    }
    let batch = std::mem::take(&mut b.pending);
    b.busy = true;
    drop(b);
    let attached: Vec<(u64, u64, usize)> = batch
        .into_iter()
        .filter_map(|tid| attach(tid).map(|(value, index)| (tid, value, index)))
        .collect();
    let mut b = BIRTHS.lock();
    if b.attached.len() >= MAX_INHERITED {
        // Entries of threads whose wait timed out.
        b.attached.clear();
    }
    b.attached.extend(attached);
    b.busy = false;
    drop(b);
    CV.notify_all();
    true
}

/// Sampling on (the sampler thread configured timers) or off (stopped):
/// off releases every waiting thread.
pub(crate) fn set_active(on: bool) {
    ACTIVE.store(on, Ordering::Release);
    if !on {
        let mut b = BIRTHS.lock();
        b.pending.clear();
        b.attached.clear();
        b.busy = false;
        CV.notify_all();
    }
}

/// Holds the announcements' lock across a `fork()`.
pub(crate) fn fork_lock() {
    crate::base::sync::fork_lock(&BIRTHS);
}

/// Releases what [`fork_lock`] holds; in the child, first forgets the
/// parent's announcements and turns the hook's wrapping off.
///
/// # Safety
///
/// Called once after [`fork_lock`] on the same thread; with `in_child`,
/// in the child with no other thread running.
pub(crate) unsafe fn fork_unlock(in_child: bool) {
    if in_child {
        ACTIVE.store(false, Ordering::Relaxed);
        STARTS.store(STARTS_OFF, Ordering::Relaxed);
        // SAFETY: the caller's contract: the lock is held for us and we
        // are the only thread.
        let b = unsafe { crate::base::sync::fork_data(&BIRTHS) };
        b.pending.clear();
        b.attached.clear();
        b.busy = false;
        b.inherited.clear();
        b.parents.clear();
    }
    // SAFETY: the caller's contract.
    unsafe { crate::base::sync::fork_unlock(&BIRTHS) }
}

mod hook {
    //! The wrapped `pthread_create` (module docs of [`super`]): [`create`],
    //! exported as `pthread_create` by the `thread-hook` feature and by the
    //! C library (`libflightrec.so`, `libflightrec.a`).

    use std::ffi::{c_int, c_void};

    use crate::base::sync::global::{AtomicUsize, Ordering};

    /// A thread's start routine.
    pub type Start = extern "C" fn(*mut c_void) -> *mut c_void;
    type Create = unsafe extern "C" fn(
        *mut libc::pthread_t,
        *const libc::pthread_attr_t,
        Start,
        *mut c_void,
    ) -> c_int;

    /// The C library's `pthread_create` (0: not looked up yet).
    static REAL: AtomicUsize = AtomicUsize::new(0);

    fn real() -> Option<Create> {
        let mut f = REAL.load(Ordering::Acquire);
        if f == 0 {
            // SAFETY: RTLD_NEXT with a NUL-terminated name; dlsym takes no
            // lock this hook could hold. The next definition after the
            // object that holds this code: the C library's.
            f = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) } as usize;
            // Never ourselves (that would recurse).
            #[cfg(feature = "thread-hook")]
            if f == pthread_create as Create as usize {
                f = 0;
            }
            REAL.store(f, Ordering::Release);
        }
        // SAFETY: a non-null `f` is the C library's `pthread_create`, whose
        // signature is `Create`.
        (f != 0).then(|| unsafe { std::mem::transmute::<usize, Create>(f) })
    }

    /// The program's routine and its argument, and the creator.
    struct Routine {
        start: Start,
        arg: *mut c_void,
        parent: Option<super::Parent>,
    }

    extern "C" fn trampoline(p: *mut c_void) -> *mut c_void {
        // SAFETY: `p` is the `Routine` boxed by `create` below, handed to
        // this thread only.
        let r = unsafe { Box::from_raw(p.cast::<Routine>()) };
        let born = super::announce(r.parent);
        let ret = (r.start)(r.arg);
        if let Some(born) = born {
            super::exiting(born);
        }
        ret
    }

    /// Creates a thread with the C library's `pthread_create`; while
    /// sampling runs, its timers are armed before `start` runs; while
    /// `jdk.ThreadStart` is on, its creator and the creator's stack (from
    /// the caller of the exported `pthread_create` outward) are kept for
    /// the thread's `jdk.ThreadStart`. For the exported `pthread_create`
    /// only: it must call this directly (the stack skips that one frame).
    ///
    /// # Safety
    ///
    /// The C library's contract for `pthread_create`.
    #[inline(always)]
    pub unsafe fn create(
        thread: *mut libc::pthread_t,
        attr: *const libc::pthread_attr_t,
        start: Start,
        arg: *mut c_void,
    ) -> c_int {
        let Some(real) = real() else {
            return libc::EAGAIN;
        };
        let parent = super::creator();
        if parent.is_none() && !super::ACTIVE.load(Ordering::Relaxed) {
            // SAFETY: the caller's arguments, passed on unchanged.
            return unsafe { real(thread, attr, start, arg) };
        }
        let routine = Box::into_raw(Box::new(Routine { start, arg, parent }));
        // SAFETY: the caller's arguments; `trampoline` takes ownership of
        // `routine` on the new thread.
        let rc = unsafe { real(thread, attr, trampoline, routine.cast()) };
        if rc != 0 {
            // SAFETY: no thread was created, so `routine` is still ours.
            drop(unsafe { Box::from_raw(routine) });
        }
        rc
    }

    /// [`create`], as the program's `pthread_create` (feature
    /// `thread-hook`).
    ///
    /// # Safety
    ///
    /// The C library's contract for `pthread_create`.
    #[cfg(feature = "thread-hook")]
    #[unsafe(no_mangle)]
    #[allow(unreachable_pub)] // exported by symbol name, not by path
    pub unsafe extern "C" fn pthread_create(
        thread: *mut libc::pthread_t,
        attr: *const libc::pthread_attr_t,
        start: Start,
        arg: *mut c_void,
    ) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { create(thread, attr, start, arg) }
    }

    /// Keeps the hook's code in the link (a `no_mangle` function in an
    /// object nothing else pulls in could be left out).
    #[cfg(feature = "thread-hook")]
    pub(crate) fn keep() {
        std::hint::black_box(pthread_create as Create);
    }
}

pub use hook::{Start, create};

/// Links the hook in (with the `thread-hook` feature); called when sampling
/// starts.
pub(crate) fn keep_hook() {
    #[cfg(feature = "thread-hook")]
    hook::keep();
}
