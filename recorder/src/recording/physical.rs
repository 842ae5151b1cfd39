//! The physical recorder: the one recorder thread (with its buffers,
//! chunk stream, sampler and periodic thread) that runs while at least one
//! [`Recording`](crate::Recording) is live, as the JDK's `PlatformRecorder`
//! serves every `PlatformRecording`.
//!
//! ```text
//! start a ──► created, a live       start b ──► rotate, a b live
//! stop a  ──► rotate, b live        stop b  ──► last chunk, thread ends
//! ```
//!
//! The first start creates it, the last stop ends it; starts and stops in
//! between only rotate (see [`crate::recording::member`]) and re-apply the union of
//! the live recordings' settings (see [`crate::recording::config::union`]). [`PHYSICAL`] is
//! held for the whole of a start or a stop, so they are serialised; the
//! recorder thread never takes it. A `fork()` takes it (as the runtime's
//! other locks) and the child forgets the parent's recorder: its own first
//! start creates a new one.
//!
//! Invariant: [`PHYSICAL`] holds a recorder exactly while some recording
//! is live, and `members` lists the live recordings, in start order.

use crate::sync::mpsc;
use std::thread::JoinHandle;

use crate::recording::recorder_thread::Command;
use crate::runtime::Runtime;
use crate::sync::Mutex;

/// The running recorder, if any recording is live.
pub(crate) static PHYSICAL: Mutex<Option<Physical>> = Mutex::new(None);

/// The recorder thread and the recordings it serves.
#[derive(Debug)]
pub(crate) struct Physical {
    pub(crate) commands: mpsc::Sender<Command>,
    pub(crate) thread: JoinHandle<()>,
    pub(crate) rt: &'static Runtime,
    /// The live recordings: id and name, in start order.
    pub(crate) members: Vec<(u64, Option<String>)>,
}

impl Physical {
    /// The live recording named `name`, if any (its id).
    pub(crate) fn named(&self, name: &str) -> Option<u64> {
        self.members
            .iter()
            .find(|(_, n)| n.as_deref() == Some(name))
            .map(|(id, _)| *id)
    }
}

/// A way to the recorder thread, if one runs.
pub(crate) fn sender() -> Option<(mpsc::Sender<Command>, &'static Runtime)> {
    PHYSICAL.lock().as_ref().map(|p| (p.commands.clone(), p.rt))
}

/// Holds [`PHYSICAL`] across a `fork()`.
pub(crate) fn fork_lock() {
    crate::sync::fork_lock(&PHYSICAL);
}

/// In a forked child: forgets the parent's recorder (its thread does not
/// exist here; its handle is leaked, never joined).
///
/// # Safety
///
/// Called in the child between [`fork_lock`] and [`fork_unlock`], with no
/// other thread running.
pub(crate) unsafe fn forget_in_child() {
    // SAFETY: the caller's contract: the lock is held for us and we are
    // the only thread.
    let p = unsafe { crate::sync::fork_data(&PHYSICAL) };
    if let Some(p) = p.take() {
        std::mem::forget(p);
    }
}

/// Releases what [`fork_lock`] holds.
///
/// # Safety
///
/// Called once after [`fork_lock`] on the same thread.
pub(crate) unsafe fn fork_unlock() {
    // SAFETY: the caller's contract.
    unsafe { crate::sync::fork_unlock(&PHYSICAL) }
}
