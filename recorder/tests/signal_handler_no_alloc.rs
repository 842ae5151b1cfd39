//! The sampling signal handler never allocates, frees, or initialises a
//! thread-local lazily, on any thread, including the first sample of a
//! thread that started during the recording.
//!
//! This binary replaces the C allocator (`malloc`, `calloc`, `realloc`,
//! `free`, `posix_memalign`, `aligned_alloc`, `memalign`; glibc forwards to
//! its `__libc_*` entry points), so every allocation is seen: Rust's (the
//! `System` allocator calls these) and the C library's own, such as the
//! destructor registration of a thread-local's lazy initialisation. A call
//! is counted as "inside the handler" when the sampling signal is blocked on
//! the calling thread: the kernel blocks it while its handler runs, and
//! nothing else in this process blocks it.
//!
//! The real handler (everything in `recorder/src/sampler/handler/`: the
//! entry point, the unwinder's capture, the sample queue, the doorbell) runs on CPU-time timers at 1 ms on threads spawned while the
//! recording runs; the file's `jdk.CPUTimeSample` events show it ran, on each
//! of them. Negative controls: a handler the recorder chains to (a `SIGPROF`
//! that is not its timer's goes to the handler installed before it) that
//! allocates, and one that initialises a thread-local on a fresh thread, are
//! both caught, inside the real handler's frame.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use recorder::{Recording, RecordingConfig, Settings};

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut libc::c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut libc::c_void;
    fn __libc_realloc(ptr: *mut libc::c_void, size: usize) -> *mut libc::c_void;
    fn __libc_free(ptr: *mut libc::c_void);
    fn __libc_memalign(align: usize, size: usize) -> *mut libc::c_void;
}

/// Whether allocations with the sampling signal blocked are counted.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Allocator calls made while the sampling signal was blocked.
static IN_HANDLER: AtomicU64 = AtomicU64::new(0);
/// The kernel thread id of the latest such call.
static LAST_TID: AtomicU64 = AtomicU64::new(0);

/// Counts the call if the sampling signal is blocked on this thread (only
/// async-signal-safe calls: this runs inside handlers).
fn watch() {
    if !ARMED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: an all-zero sigset is a valid value to overwrite.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a null new set only queries this thread's mask into `set`.
    let queried = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) };
    // SAFETY: `set` was filled by pthread_sigmask.
    if queried == 0 && unsafe { libc::sigismember(&set, libc::SIGPROF) } == 1 {
        IN_HANDLER.fetch_add(1, Ordering::Relaxed);
        // SAFETY: gettid has no preconditions.
        LAST_TID.store(unsafe { libc::gettid() } as u64, Ordering::Relaxed);
    }
}

/// # Safety
///
/// The C `malloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut libc::c_void {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator.
    unsafe { __libc_malloc(size) }
}

/// # Safety
///
/// The C `calloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut libc::c_void {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator.
    unsafe { __libc_calloc(n, size) }
}

/// # Safety
///
/// The C `realloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(ptr: *mut libc::c_void, size: usize) -> *mut libc::c_void {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator, which allocated `ptr`.
    unsafe { __libc_realloc(ptr, size) }
}

/// # Safety
///
/// The C `free` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(ptr: *mut libc::c_void) {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator, which allocated `ptr`.
    unsafe { __libc_free(ptr) }
}

/// # Safety
///
/// The C `memalign` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut libc::c_void {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator.
    unsafe { __libc_memalign(align, size) }
}

/// # Safety
///
/// The C `aligned_alloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut libc::c_void {
    watch();
    // SAFETY: forwarded unchanged to glibc's allocator.
    unsafe { __libc_memalign(align, size) }
}

/// # Safety
///
/// The C `posix_memalign` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut libc::c_void,
    align: usize,
    size: usize,
) -> libc::c_int {
    watch();
    if !align.is_power_of_two() || !align.is_multiple_of(size_of::<usize>()) {
        return libc::EINVAL;
    }
    // SAFETY: forwarded to glibc's allocator with a valid alignment.
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: `out` is a valid out-pointer (caller's contract).
    unsafe { *out = p };
    0
}

/// What the chained test handler does when a `SIGPROF` that is not a timer's
/// reaches it: 1 allocates, 2 initialises `LAZY` on this thread.
static CHAINED_ACTION: AtomicU64 = AtomicU64::new(0);
/// Runs of the chained test handler.
static CHAINED_RUNS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Lazily initialised, with a destructor to register on first use.
    #[allow(clippy::missing_const_for_thread_local)] // lazy on purpose: a negative control
    static LAZY: RefCell<Vec<u8>> = RefCell::new(Vec::new());
}

extern "C" fn chained(_sig: libc::c_int, _info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    CHAINED_RUNS.fetch_add(1, Ordering::Relaxed);
    match CHAINED_ACTION.load(Ordering::Relaxed) {
        1 => drop(black_box(Box::new([7u8; 48]))),
        2 => {
            LAZY.with(|v| black_box(v.borrow().len()));
        }
        _ => {}
    }
}

/// Installs [`chained`] for `SIGPROF` (before the recorder installs its own,
/// which then chains the signals that are not its timers' to it).
fn install_chained() {
    // SAFETY: an all-zero `sigaction` is valid (empty mask, no flags).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = chained as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is a valid `sigaction`; the old one is not wanted.
    let r = unsafe { libc::sigaction(libc::SIGPROF, &action, std::ptr::null_mut()) };
    assert_eq!(r, 0, "sigaction");
}

/// Sends `SIGPROF` to the calling thread (`SI_TKILL`: not a timer's) with
/// the chained handler doing `action`; returns the calls counted meanwhile.
fn raise_with(action: u64) -> u64 {
    CHAINED_ACTION.store(action, Ordering::Relaxed);
    let runs = CHAINED_RUNS.load(Ordering::Relaxed);
    let before = IN_HANDLER.load(Ordering::Relaxed);
    // SAFETY: raising a signal with an installed handler.
    assert_eq!(unsafe { libc::raise(libc::SIGPROF) }, 0);
    assert_eq!(
        CHAINED_RUNS.load(Ordering::Relaxed),
        runs + 1,
        "the recorder chained the signal"
    );
    CHAINED_ACTION.store(0, Ordering::Relaxed);
    IN_HANDLER.load(Ordering::Relaxed) - before
}

/// Burns `cpu` of this thread's CPU time.
#[inline(never)]
fn spin(cpu: Duration) -> u64 {
    let start = thread_cpu();
    let mut x = 1u64;
    while thread_cpu() - start < cpu {
        for _ in 0..10_000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Fresh threads spawned while the recording runs.
const FRESH: usize = 8;

#[test]
fn sampling_handler_never_allocates_even_on_a_fresh_thread() {
    let dir = flightrec_testkit::temp_dir("signal-no-alloc");
    let out = dir.join("handler.jfr");
    install_chained();
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "1ms")
        .unwrap();
    // The samples carry `contextId` (checked below for the labelled
    // threads).
    recorder::labels::set_in_samples(true);
    let recording = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();

    ARMED.store(true, Ordering::SeqCst);
    // The detector sees no allocation of the recorder's handler itself, and
    // catches one of the handler it chains to, inside the recorder's frame.
    assert_eq!(
        raise_with(0),
        0,
        "the recorder's handler allocated on a signal it chains"
    );
    assert!(
        raise_with(1) >= 1,
        "negative control: an allocation in the handler not caught"
    );
    // A thread-local's lazy initialisation on a fresh thread is caught too.
    let lazy = std::thread::spawn(|| raise_with(2)).join().unwrap();
    assert!(
        lazy >= 1,
        "negative control: a lazy thread-local initialisation not caught"
    );

    // The real handler, sampling threads that start during the recording
    // (each thread's first sample included) and the main thread.
    IN_HANDLER.store(0, Ordering::SeqCst);
    let started = Instant::now();
    let workers: Vec<_> = (0..FRESH)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("fresh-{i}"))
                .spawn(move || {
                    // Half of them in a label scope: the handler then finds
                    // the thread's published context id (issue 20).
                    let _labels =
                        (i % 2 == 0).then(|| recorder::labels::scope(&[("worker", "fresh")]));
                    spin(Duration::from_millis(150));
                    // SAFETY: gettid has no preconditions.
                    unsafe { libc::gettid() as u64 }
                })
                .unwrap()
        })
        .collect();
    spin(Duration::from_millis(200));
    let fresh: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let counted = IN_HANDLER.load(Ordering::SeqCst);
    let tid = LAST_TID.load(Ordering::SeqCst);
    ARMED.store(false, Ordering::SeqCst);
    let summary = recording.stop().unwrap();
    eprintln!(
        "workload took {:?}; losses {:?}",
        started.elapsed(),
        summary.losses
    );
    assert_eq!(
        counted, 0,
        "allocator called {counted} times inside the handler (last on thread {tid})"
    );

    // The handler ran: samples of every fresh thread are in the file (by
    // kernel thread id: a thread sampled before it set its name is written
    // under its id).
    let json = flightrec_testkit::print_json(&out);
    let events = json.as_array().expect("events");
    let mut per_thread: BTreeMap<u64, u64> = BTreeMap::new();
    let mut labelled: BTreeMap<u64, u64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["type"] == "jdk.CPUTimeSample") {
        let tid = e["values"]["eventThread"]["osThreadId"]
            .as_u64()
            .unwrap_or_else(|| panic!("a sample without a thread id: {e}"));
        *per_thread.entry(tid).or_default() += 1;
        if e["values"]["contextId"].as_u64() != Some(0) {
            *labelled.entry(tid).or_default() += 1;
        }
    }
    let total: u64 = per_thread.values().sum();
    eprintln!("{total} samples by thread id: {per_thread:?}; fresh threads {fresh:?}");
    for (i, tid) in fresh.iter().enumerate() {
        let n = per_thread.get(tid).copied().unwrap_or(0);
        assert!(
            n >= 1,
            "no sample of fresh-{i} (thread {tid}): {per_thread:?}"
        );
        // Labelled threads' samples (taken in their scope, which covers all
        // but their first and last microseconds) carry their context id.
        let with_id = labelled.get(tid).copied().unwrap_or(0);
        if i % 2 == 0 {
            assert!(with_id >= 1, "fresh-{i}: no sample with its labels");
        } else {
            assert_eq!(with_id, 0, "fresh-{i} has no labels");
        }
    }
    assert!(total >= 100, "the handler ran only {total} times");
    let _ = std::fs::remove_dir_all(&dir);
}
