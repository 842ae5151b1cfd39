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
//! between only rotate (see [`crate::lifecycle::member`]) and re-apply the union of
//! the live recordings' settings (see [`crate::config::union`]).
//! Starts and stops are serialised by a [`Turn`], held for the whole of
//! one (a start's rotation, a stop's last chunk and file); [`PHYSICAL`]
//! itself is locked only for moments (to read or change it), never while
//! waiting for the recorder thread, which never takes either. A `fork()`
//! takes [`PHYSICAL`] and the turn's short lock (as the runtime's other
//! locks), so it never waits for a start, a stop or a rotation to finish;
//! the child forgets the parent's recorder and frees the turn (its holder
//! does not exist there): its own first start creates a new recorder.
//!
//! Invariant: [`PHYSICAL`] holds a recorder from the end of the first
//! start to the beginning of the last stop, and `members` lists the live
//! recordings, in start order; only the holder of the turn changes it.

use crate::base::sync::mpsc;
use std::thread::JoinHandle;

use crate::base::sync::global::{Condvar, Mutex};
use crate::output::recorder_thread::Command;
use crate::runtime::Runtime;

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

/// Whether a start or a stop holds the turn.
static TURN: Mutex<bool> = Mutex::new(false);
/// Signalled when the turn is given back.
static TURN_FREE: Condvar = Condvar::new();

/// The right to start or stop a recording (one at a time), given back on
/// drop.
#[derive(Debug)]
pub(crate) struct Turn(());

impl Turn {
    /// Waits for the turn: until no other start or stop runs.
    pub(crate) fn take() -> Self {
        let mut busy = TURN.lock();
        while *busy {
            busy = TURN_FREE.wait_for(busy, std::time::Duration::from_millis(100));
        }
        *busy = true;
        Turn(())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        *TURN.lock() = false;
        TURN_FREE.notify_all();
    }
}

/// A way to the recorder thread, if one runs.
pub(crate) fn sender() -> Option<(mpsc::Sender<Command>, &'static Runtime)> {
    PHYSICAL.lock().as_ref().map(|p| (p.commands.clone(), p.rt))
}

/// Holds the turn's lock and [`PHYSICAL`] across a `fork()` (each only
/// ever held for moments).
pub(crate) fn fork_lock() {
    crate::base::sync::fork_lock(&TURN);
    crate::base::sync::fork_lock(&PHYSICAL);
}

/// In a forked child: forgets the parent's recorder (its thread does not
/// exist here; its handle is leaked, never joined).
///
/// # Safety
///
/// Called in the child between [`fork_lock`] and [`fork_unlock`], with no
/// other thread running.
pub(crate) unsafe fn forget_in_child() {
    // SAFETY: the caller's contract: the locks are held for us and we are
    // the only thread.
    let (p, busy) = unsafe {
        (
            crate::base::sync::fork_data(&PHYSICAL),
            crate::base::sync::fork_data(&TURN),
        )
    };
    if let Some(p) = p.take() {
        std::mem::forget(p);
    }
    // The parent thread that held the turn (a start or stop in progress)
    // does not exist here.
    *busy = false;
}

/// Releases what [`fork_lock`] holds.
///
/// # Safety
///
/// Called once after [`fork_lock`] on the same thread.
pub(crate) unsafe fn fork_unlock() {
    // SAFETY: the caller's contract; reverse order of `fork_lock`.
    unsafe {
        crate::base::sync::fork_unlock(&PHYSICAL);
        crate::base::sync::fork_unlock(&TURN);
    }
}
