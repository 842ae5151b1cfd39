//! Starting, re-configuring and stopping the sampler thread, driven by the
//! recording's lifecycle.
//!
//! ```text
//!                 reconcile(): recording && enabled
//!   Idle ─────────────────────────────────────────► Running
//!    ▲   (Recording::start / set / apply_settings)     │ the thread re-reads the
//!    │                                                 │ settings on every pass
//!    │                                                 │ (rung awake by reconcile)
//!    └───────────── shutdown() (Recording::stop) ◄─────┘
//! ```
//!
//! Only the caller of [`reconcile`]/[`shutdown`] (under `CONTROL`'s lock)
//! moves between states; the sampler thread only reads the settings.

use crate::base::sync::OnceLock;
use std::thread::JoinHandle;

use super::config::SamplerConfig;
use super::consumer::Consumer;
use crate::base::sync::global::{AtomicBool, AtomicU64, Mutex, Ordering};
use crate::base::sync::{self, Arc};
use crate::config::settings::SettingError;
use crate::event::registry::registry;
use crate::lifecycle::statistics::{Role, RoleThread};
use crate::runtime;

struct Running {
    /// The consumer's stop flag (the model's type: `Consumer::run` takes it).
    stop: Arc<sync::AtomicBool>,
    thread: JoinHandle<()>,
}

fn control() -> &'static Mutex<Option<Running>> {
    static CONTROL: OnceLock<Mutex<Option<Running>>> = OnceLock::new();
    CONTROL.get_or_init(|| Mutex::new(None))
}

/// The sampling signal (default `SIGPROF`).
static SIGNAL: AtomicU64 = AtomicU64::new(libc::SIGPROF as u64);

/// Whether flightrec's own threads are sampled (default: not).
static SAMPLE_OWN: AtomicBool = AtomicBool::new(false);

/// The configuration the current settings ask for.
fn current() -> SamplerConfig {
    let mut c = SamplerConfig::from_settings(
        &registry().settings.load(),
        SIGNAL.load(Ordering::Relaxed) as i32,
    );
    c.own_threads = SAMPLE_OWN.load(Ordering::Relaxed);
    c
}

/// Samples flightrec's own threads too (`true`), or not (`false`, the
/// default): the recorder, sampler, periodic, attach, allocation,
/// Pyroscope and stream threads (every thread named `flightrec-*`). Their
/// CPU time is in `flightrec.RecorderStatistics` either way. Takes effect
/// at the sampler's next pass. `FLIGHTREC`'s `sample-own-threads=BOOL`.
pub fn set_sample_own_threads(on: bool) {
    SAMPLE_OWN.store(on, Ordering::Relaxed);
    super::handler::doorbell::BELL.ring();
}

/// Sets the signal the timers send (default `SIGPROF`); a handler already
/// installed for it is chained. Takes effect when sampling is next
/// (re)configured. Only the signals [`super::signal_allowed`] accepts:
/// `SIGPROF`, `SIGVTALRM`, `SIGALRM`, or `SIGRTMIN..=SIGRTMAX` as the C
/// library reports them (never glibc's reserved 32/33, `SIGSEGV`, ...).
pub fn set_signal(signal: i32) -> Result<(), SettingError> {
    if !super::config::signal_allowed(signal) {
        return Err(SettingError::InvalidValue {
            setting: "signal".to_owned(),
            value: signal.to_string(),
            expected: "SIGPROF, SIGVTALRM, SIGALRM or a real-time signal SIGRTMIN..=SIGRTMAX",
        });
    }
    SIGNAL.store(signal as u64, Ordering::Relaxed);
    Ok(())
}

/// Starts the sampler thread if a recording runs and sampling is enabled.
/// Called after every settings change of the recording; idempotent. A
/// running thread follows later changes (including disabling) by itself.
pub(crate) fn reconcile() {
    let mut ctl = control().lock();
    if ctl.is_some() {
        // The running thread re-reads the settings at its next pass: now.
        super::handler::doorbell::BELL.ring();
        return;
    }
    if !registry().is_recording() || !current().any() {
        return;
    }
    let Some(rt) = runtime::get() else { return };
    let stop = Arc::new(sync::AtomicBool::new(false));
    let stop2 = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("flightrec-sampler".into())
        .spawn(move || {
            let _role = RoleThread::enter(Role::Sampler);
            let mut consumer = Consumer::new(rt);
            consumer.run(&stop2, current);
        });
    if let Ok(thread) = spawned {
        *ctl = Some(Running { stop, thread });
    }
}

/// Holds the control lock across a `fork()`.
pub(crate) fn fork_lock() {
    crate::base::sync::fork_lock(control());
    super::birth::fork_lock();
}

/// Releases what [`fork_lock`] holds; in the child, first forgets the
/// parent's sampler thread (it does not exist here, and its timers were
/// not inherited), so a recording of the child's own can start one.
///
/// # Safety
///
/// Called once after [`fork_lock`] on the same thread; with `in_child`,
/// in the child with no other thread running.
pub(crate) unsafe fn fork_unlock(in_child: bool) {
    // SAFETY: the caller's contract (taken last in `fork_lock`).
    unsafe { super::birth::fork_unlock(in_child) };
    if in_child {
        // SAFETY: the caller's contract: the lock is held for us and we
        // are the only thread.
        let running = unsafe { crate::base::sync::fork_data(control()) }.take();
        // No timer of the parent's is armed here.
        super::claim::forget_armed();
        // Joining or detaching a thread of the parent is undefined here.
        std::mem::forget(running);
    }
    // SAFETY: the caller's contract.
    unsafe { crate::base::sync::fork_unlock(control()) }
}

/// Stops the sampler thread: deletes every timer, writes the remaining
/// samples, and waits for the thread. Called before the recording's last
/// chunk is finished.
pub(crate) fn shutdown() {
    let running = control().lock().take();
    if let Some(r) = running {
        // Release: pairs with the sampler's Acquire load.
        r.stop.store(true, Ordering::Release);
        super::handler::doorbell::BELL.ring();
        let _ = r.thread.join();
    }
}
