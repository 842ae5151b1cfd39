//! The periodic thread's life: started with the first recording, woken
//! when settings or threads change, asked to run a chunk edge's tasks by
//! the recorder thread (which waits a bounded time for them), and given a
//! last round (with `jdk.Shutdown`) at the last stop.
//!
//! At a rotation the recorder thread runs the `endChunk`/`everyChunk` tasks
//! itself, before it flips the epoch ([`end_chunk`]), and the
//! `beginChunk`/`everyChunk` tasks after it opened the next chunk
//! ([`begin_chunk`]), as the JDK's rotating thread does: the events land in
//! the chunk they describe, and a rotation never waits for another thread
//! to be scheduled. The built-in tasks' state ([`system::SystemEvents`]) is
//! shared under a mutex that the periodic thread holds only while it runs a
//! built-in task (file reads, never a wait on the recorder), so the
//! rotation waits at most for one such task. User closures run on their
//! own threads ([`calls`]): the edge posts their calls, runs the built-in
//! tasks, then waits for the calls at most [`calls::EDGE_WAIT`]; a call
//! still running then is abandoned and counted, its events landing in a
//! later chunk. A user closure that, run at a chunk edge, asks the recorder
//! thread for something (a flush, a rotation) gets an error instead of
//! waiting for a rotation that waits for it.

use super::control::{Control, Requests, Running, running, shared_system};
use super::edge::AT_EDGE;
use super::schedule::{Periodic, When, chunk_edge};
use super::{calls, system};
use std::time::{Duration, Instant};

use crate::base::sync::global::{Arc, Condvar, Mutex};
use crate::event::registry::registry;
use crate::lifecycle::statistics::{Role, RoleThread};
use crate::process::panic_guard::{self, Place};
use crate::runtime::Runtime;

/// Starts the periodic thread for a recording that just started.
pub(crate) fn start(rt: &'static Runtime) {
    let mut r = running().lock();
    if r.as_ref().is_some_and(|r| r.pid == std::process::id()) {
        return;
    }
    let control = Arc::new(Control {
        requests: Mutex::new(Requests::default()),
        cv: Condvar::new(),
    });
    let c = control.clone();
    // The first listing of the threads happens now, before the program
    // can start another: every thread started after `start` returns is
    // announced with a `jdk.ThreadStart`.
    let system = Arc::new(Mutex::new(system::SystemEvents::new(rt)));
    system.lock().poll_threads(
        system::ThreadEvents::of(&registry().settings.load()),
        Instant::now(),
    );
    let mut state = Periodic::new(system.clone());
    let spawned = std::thread::Builder::new()
        .name("flightrec-periodic".into())
        .spawn(move || {
            // A panic ends the periodic thread, not the recording.
            let _role = RoleThread::enter(Role::Periodic);
            let _ = panic_guard::catch(Place::RecorderThread, || state.run(&c));
            c.finish();
        });
    if let Ok(thread) = spawned {
        let parents = r.replace(Running {
            control,
            system,
            thread,
            pid: std::process::id(),
        });
        // A forked child's copy of the parent's handle: dropping it would
        // detach a `pthread_t` that names no thread here, and glibc reuses
        // the dead threads' descriptors, so it may be one of ours (the
        // child's own recorder thread, whose join then fails).
        std::mem::forget(parents);
    }
}

/// How long the stop waits for the periodic thread's last round: its user
/// calls are bounded by [`calls::EDGE_WAIT`], the rest is file reads.
pub(super) const LAST_ROUND_WAIT: Duration = Duration::from_millis(1500);

/// Stops the thread after its last round (end-of-chunk tasks, then
/// `jdk.Shutdown` with `reason`) and waits for it, at most
/// [`LAST_ROUND_WAIT`] (a thread not done by then is left to finish on its
/// own: the stop, at exit too, never hangs on it), and never on itself.
pub(crate) fn shutdown(reason: &str) {
    let taken = running().lock().take();
    let Some(r) = taken else { return };
    if r.pid != std::process::id() || r.thread.thread().id() == std::thread::current().id() {
        std::mem::forget(r.thread);
        return;
    }
    let deadline = Instant::now() + LAST_ROUND_WAIT;
    let mut q = r.control.requests.lock();
    q.stop = Some(reason.to_owned());
    r.control.cv.notify_all();
    while !q.finished {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        q = r.control.cv.wait_for(q, deadline - now);
    }
    let finished = q.finished;
    drop(q);
    if finished {
        let _ = r.thread.join();
    } else {
        eprintln!("flightrec: the periodic thread's last round is late; the stop goes on");
        std::mem::forget(r.thread);
    }
}

/// Called by the recorder thread before it flips the epoch of a rotation:
/// runs the `endChunk`/`everyChunk` tasks here, so their events land in the
/// chunk that ends.
pub(crate) fn end_chunk() {
    at_edge(When::End);
}

/// Called by the recorder thread after it opened a new chunk: runs the
/// `beginChunk`/`everyChunk` tasks here, so their events land in it.
pub(crate) fn begin_chunk() {
    at_edge(When::Begin);
}

pub(super) fn at_edge(edge: When) {
    let Some(system) = shared_system() else {
        return;
    };
    let settings = registry().settings.load();
    let deadline = Instant::now() + calls::EDGE_WAIT;
    let _ = AT_EDGE.try_with(|f| f.set(true));
    let posted = chunk_edge(&system, &settings, edge);
    calls::wait_all(posted, deadline);
    let _ = AT_EDGE.try_with(|f| f.set(false));
}
