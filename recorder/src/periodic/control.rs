//! What the periodic thread and those who ask things of it share: the
//! running thread's handle, its request flags (stop, look now, finished)
//! under one lock with a condition variable, and the built-in tasks' state.

use crate::base::sync::OnceLock;
use std::thread::JoinHandle;

use crate::base::sync::global::{Arc, Condvar, Mutex};

use super::system;

/// What the recorder and the handle ask of the thread.
#[derive(Debug, Default)]
pub(super) struct Requests {
    pub(super) stop: Option<String>,
    /// Something to look at now (settings, a new task).
    pub(super) poke: bool,
    /// The thread's body returned.
    pub(super) finished: bool,
}

#[derive(Debug)]
pub(super) struct Control {
    pub(super) requests: Mutex<Requests>,
    pub(super) cv: Condvar,
}

impl Control {
    /// The thread is done (its last round ran, or it panicked).
    pub(super) fn finish(&self) {
        self.requests.lock().finished = true;
        self.cv.notify_all();
    }
}

pub(super) struct Running {
    pub(super) control: Arc<Control>,
    /// The built-in tasks' state, shared with the rotation path.
    pub(super) system: Arc<Mutex<system::SystemEvents>>,
    pub(super) thread: JoinHandle<()>,
    pub(super) pid: u32,
}

pub(super) fn running() -> &'static Mutex<Option<Running>> {
    static RUNNING: OnceLock<Mutex<Option<Running>>> = OnceLock::new();
    RUNNING.get_or_init(|| Mutex::new(None))
}

pub(super) fn control() -> Option<Arc<Control>> {
    let r = running().lock();
    r.as_ref()
        .filter(|r| r.pid == std::process::id())
        .map(|r| r.control.clone())
}

pub(super) fn shared_system() -> Option<Arc<Mutex<system::SystemEvents>>> {
    let r = running().lock();
    r.as_ref()
        .filter(|r| r.pid == std::process::id())
        .map(|r| r.system.clone())
}

/// The sampler saw threads start or end: poll the thread list now (and
/// keep polling often for a while).
pub(crate) fn threads_changed() {
    wake();
}

/// Settings changed, or a task was added: look now.
pub(crate) fn wake() {
    if let Some(c) = control() {
        c.requests.lock().poke = true;
        c.cv.notify_all();
    }
}
