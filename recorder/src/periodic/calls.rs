//! User periodic closures ([`super::user::add_periodic_event`]) run on threads
//! of their own, never on the periodic or the recorder thread, and nothing
//! of the recorder waits for one past a deadline.
//!
//! # Lanes
//!
//! Each user task has a *lane*: a thread (named `flightrec-periodic`, as
//! the thread the calls ran on before, so events name the same thread),
//! started at the task's first call in a recording, that runs the task's
//! closure when a call is posted to it, one call at a time. The periodic
//! thread posts the interval calls and does not wait for them; a chunk
//! edge (the recorder thread's rotation, the periodic thread's first and
//! last rounds) posts the calls of every task due at that edge at once and
//! waits for them together until one deadline, [`EDGE_WAIT`] away, so their
//! events land in the chunk of that edge. The stop also waits, within the
//! same deadline, for interval calls still running.
//!
//! A closure may block, sleep, fork, or call `exit()`: its lane is then
//! busy, and
//!
//! * a call posted to a busy lane is *skipped*;
//! * a call still running when its waiter's deadline passes is
//!   *abandoned*: the waiter goes on (the rotation flips, the stop
//!   finishes), and the call finishes whenever it does, its events landing
//!   in whatever chunk is current then (or dropped, counted, if the
//!   recording stopped, as every event committed after a stop).
//!
//! Both are counted, one per call, as
//! [`LossCause::CallbackOverdue`], written into the file with the other
//! losses. Other tasks have lanes of their own and run on time.
//!
//! A lane runs an edge's call with the chunk-edge mark set on its thread
//! ([`super::edge::at_chunk_edge`]): the closure's requests to the recorder (a
//! flush, a rotation) fail at once, as they did when edge calls ran on the
//! recorder thread itself, instead of waiting for a rotation that waits for
//! them.
//!
//! At the stop every lane is closed: an idle lane's thread ends at once, a
//! busy one after its call returns. Lanes are never joined.
//!
//! Invariant: at most one call of a task runs at a time; no thread of the
//! recorder waits for a user closure past a deadline; every call posted is
//! run exactly once, and every call skipped or abandoned is counted once.

use std::time::{Duration, Instant};

use crate::base::loss::LossCause;
use crate::base::sync::OnceLock;
use crate::base::sync::global::{Arc, Condvar, Mutex};
use crate::event::descriptor::EventType;
use crate::process::panic_guard::{self, Place};

/// How long a chunk edge (and the stop) waits for its user calls.
pub(crate) const EDGE_WAIT: Duration = Duration::from_millis(500);

/// A user closure.
pub(crate) type Closure = Arc<dyn Fn() + Send + Sync>;

/// One lane's state.
#[derive(Default)]
struct State {
    /// The call posted and not taken yet, and whether it is an edge's.
    posted: Option<(Closure, bool)>,
    /// Calls posted so far; the `n`th call posted is ticket `n`.
    calls: u64,
    /// Calls finished so far (calls run in the order posted).
    finished: u64,
    /// The lane's thread ends once idle.
    closed: bool,
    /// The lane's thread has not ended (it ends only closed and idle).
    alive: bool,
}

/// A thread that runs one task's calls.
struct Lane {
    state: Mutex<State>,
    cv: Condvar,
}

/// A call posted, to wait for.
pub(crate) struct Ticket {
    lane: Arc<Lane>,
    call: u64,
}

/// The lanes of the process that made them, by task type.
struct Lanes {
    pid: u32,
    list: Vec<(&'static EventType, Arc<Lane>)>,
}

fn lanes() -> &'static Mutex<Lanes> {
    static LANES: OnceLock<Mutex<Lanes>> = OnceLock::new();
    LANES.get_or_init(|| {
        Mutex::new(Lanes {
            pid: std::process::id(),
            list: Vec::new(),
        })
    })
}

fn count_overdue() {
    if let Some(rt) = crate::runtime::get() {
        rt.losses.record(LossCause::CallbackOverdue, 0);
    }
}

/// Posts a call of `run`, the closure of task `ty`, to the task's lane
/// (starting it if needed); `edge` marks a chunk edge's call. `None` if
/// the lane's previous call still runs (the call is skipped and counted),
/// or if no lane could be started (the call then ran here, to its end).
pub(crate) fn post(ty: &'static EventType, run: &Closure, edge: bool) -> Option<Ticket> {
    let Some(lane) = lane_of(ty) else {
        run_call(run, edge);
        return None;
    };
    let mut s = lane.state.lock();
    if s.calls > s.finished {
        drop(s);
        count_overdue();
        return None;
    }
    s.posted = Some((run.clone(), edge));
    s.calls += 1;
    let call = s.calls;
    drop(s);
    lane.cv.notify_all();
    Some(Ticket { lane, call })
}

/// Waits for every call of `tickets` until `deadline`; each call not
/// finished by then is abandoned (counted). Returns how many finished.
pub(crate) fn wait_all(tickets: impl IntoIterator<Item = Ticket>, deadline: Instant) -> usize {
    let mut done = 0;
    for t in tickets {
        let mut s = t.lane.state.lock();
        loop {
            if s.finished >= t.call {
                done += 1;
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                drop(s);
                count_overdue();
                break;
            }
            s = t.lane.cv.wait_for(s, deadline - now);
        }
    }
    done
}

/// Tickets for the calls running now (the interval calls the periodic
/// thread posted without waiting): the stop waits for them.
pub(crate) fn running() -> Vec<Ticket> {
    let l = lanes().lock();
    if l.pid != std::process::id() {
        return Vec::new();
    }
    l.list
        .iter()
        .filter_map(|(_, lane)| {
            let s = lane.state.lock();
            (s.calls > s.finished).then(|| Ticket {
                lane: lane.clone(),
                call: s.calls,
            })
        })
        .collect()
}

/// Closes task `ty`'s lane (its closure was removed).
pub(crate) fn forget(ty: &'static EventType) {
    let mut l = lanes().lock();
    if l.pid != std::process::id() {
        return;
    }
    l.list.retain(|(t, lane)| {
        let keep = !std::ptr::eq(*t, ty);
        if !keep {
            close(lane);
        }
        keep
    });
}

/// Closes every lane (the recording stops).
pub(crate) fn close_all() {
    let mut l = lanes().lock();
    if l.pid != std::process::id() {
        // A forked child's copy: those threads do not exist here.
        std::mem::forget(std::mem::take(&mut l.list));
        l.pid = std::process::id();
        return;
    }
    for (_, lane) in l.list.drain(..) {
        close(&lane);
    }
}

fn close(lane: &Lane) {
    lane.state.lock().closed = true;
    lane.cv.notify_all();
}

/// Task `ty`'s lane, started if needed; `None` if no thread could start.
fn lane_of(ty: &'static EventType) -> Option<Arc<Lane>> {
    let mut l = lanes().lock();
    if l.pid != std::process::id() {
        std::mem::forget(std::mem::take(&mut l.list));
        l.pid = std::process::id();
    }
    if let Some(i) = l.list.iter().position(|(t, _)| std::ptr::eq(*t, ty)) {
        let lane = l.list[i].1.clone();
        let mut s = lane.state.lock();
        if s.alive {
            // Closed by a stop but not ended (busy, or not scheduled yet):
            // it serves the next recording, one call at a time still.
            s.closed = false;
            drop(s);
            return Some(lane);
        }
        drop(s);
        l.list.swap_remove(i);
    }
    let lane = Arc::new(Lane {
        state: Mutex::new(State {
            alive: true,
            ..State::default()
        }),
        cv: Condvar::new(),
    });
    let theirs = lane.clone();
    std::thread::Builder::new()
        .name("flightrec-periodic".into())
        .spawn(move || serve(&theirs))
        .ok()?;
    l.list.push((ty, lane.clone()));
    Some(lane)
}

/// A lane's thread: runs the calls posted, in order, until closed.
fn serve(lane: &Lane) {
    loop {
        let mut s = lane.state.lock();
        let (run, edge) = loop {
            if let Some(call) = s.posted.take() {
                break call;
            }
            if s.closed {
                s.alive = false;
                return;
            }
            s = lane.cv.wait_for(s, Duration::from_secs(3600));
        };
        drop(s);
        run_call(&run, edge);
        lane.state.lock().finished += 1;
        lane.cv.notify_all();
    }
}

/// Runs one call on this thread: a panic is caught, reported once and
/// counted, and the task runs again at its next period.
fn run_call(run: &Closure, edge: bool) {
    let _ = super::edge::AT_EDGE.try_with(|f| f.set(edge));
    let _ = panic_guard::catch(Place::PeriodicCallback, &**run);
    let _ = super::edge::AT_EDGE.try_with(|f| f.set(false));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_call_is_abandoned_then_its_lane_skips_until_it_returns() {
        use crate::event::descriptor::{DefaultSettings, EventKind, EventTypeInfo};
        static INFO: EventTypeInfo = EventTypeInfo {
            name: "flightrec.test.LaneBlock",
            label: None,
            description: None,
            category: &[],
            experimental: false,
            kind: EventKind::Instant,
            defaults: DefaultSettings::DEFAULT,
            fields: &[],
        };
        // Leaked rather than a `static`: loom's atomics (in a loom build's
        // check of the tests) are not const.
        let ty: &'static EventType = Box::leak(Box::new(EventType::new(&INFO)));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        let run: Closure = Arc::new(move || {
            let mut open = g.0.lock();
            while !*open {
                open = g.1.wait_for(open, Duration::from_secs(10));
            }
        });
        let first = post(ty, &run, false).expect("an idle lane takes the call");
        let again = Ticket {
            lane: first.lane.clone(),
            call: first.call,
        };
        let t0 = Instant::now();
        assert_eq!(wait_all([first], t0 + Duration::from_millis(50)), 0);
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(post(ty, &run, true).is_none(), "busy: skipped");
        *gate.0.lock() = true;
        gate.1.notify_all();
        let deadline = Instant::now() + Duration::from_secs(10);
        assert_eq!(wait_all([again], deadline), 1);
        let next = post(ty, &run, false).expect("free again");
        assert_eq!(wait_all([next], deadline), 1);
        forget(ty);
    }
}
