//! Periodic events: the JDK's `period` setting (`everyChunk`, `beginChunk`,
//! `endChunk`, or an interval such as `1 s`), for the built-in system events
//! ([`system`]) and for user event types registered with
//! [`add_periodic_event`]. They run on recorder-owned threads, never on the
//! program's threads; user closures each on a thread of their own
//! ([`calls`]), so none can hold up the recorder or the other tasks.
//!
//! # The thread
//!
//! `flightrec-periodic`, started by `Recording::start`, stopped (and
//! joined) first thing in the stop. Each round it:
//!
//! 1. runs the `beginChunk`/`everyChunk` tasks of the first chunk (once);
//! 2. runs the interval tasks that are due; a task's period is read from the
//!    settings every round, so a change while recording takes effect within
//!    one period (a shorter period at once);
//! 3. polls the thread list (one `fstat`, see [`lifecycle`]) for
//!    `jdk.ThreadStart`/`jdk.ThreadEnd`;
//! 4. sleeps until the next task is due or the next poll: every [`POLL`]
//!    while threads come and go, every [`QUIET_POLL`] once none did for
//!    [`QUIET_AFTER`] (the sampler, when it runs, asks for a poll as soon
//!    as its own watch sees the thread list change:
//!    [`threads_changed`]).
//!
//! # Few wakes
//!
//! A wake costs a context switch, about as much as a round's work, so one
//! wake serves everything due near it: polls fall on a fixed grid from the
//! thread's first round (multiples of [`POLL`]), interval tasks keep a
//! fixed rate from that same round (the JDK's periods, `1 s`, `10 s`, ...,
//! are multiples of the grid), and a task due within [`SLACK`] of a wake
//! runs in it. With the default settings and no thread starting or ending
//! that is [`QUIET_POLL`]'s 5 wakes a second, the 1 s tasks included.
//!
//! A wake with nothing due does no more than it must: the tasks' periods
//! and the thread events' switches are read from the settings only when
//! the settings change (a new snapshot), not looked up every wake, and the
//! poll is one `fstat` (see [`lifecycle`]).
//!
//! At the stop it runs every enabled interval task once more (the figures
//! at the stop), the `endChunk`/`everyChunk` tasks a last time, and writes
//! `jdk.Shutdown` with the reason.
//!
//! # Chunk edges
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
//!
//! Events go through the same commit path as every other event (user
//! closures commit with the event API; built-in events through
//! `emit_builtin` into the running thread's own buffer, which tags the threads and
//! stacks they reference with the epoch of the chunk they land in), so
//! whatever makes a chunk include the constants its events reference
//! applies to them too.
//!
//! Invariant: a built-in task runs only on the periodic or the recorder
//! thread, a user task only on its own thread ([`calls`]); each only while
//! a recording runs, and at most once per due time or chunk edge: events of
//! a periodic type are never committed by a program thread, an edge's
//! events land in the chunk of that edge unless its call was abandoned
//! (counted), and none land after the stop. No thread of the recorder waits
//! for user code past a deadline.

pub(crate) mod calls;
pub(crate) mod emit;
pub(crate) mod lifecycle;
mod plug;
pub(crate) mod procfs;
pub(crate) mod system;
pub(crate) mod table;

pub(crate) use plug::PeriodicEvents;

use crate::base::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::base::sync::{Arc, Condvar, Mutex, StdArc};
use crate::config::settings::{Period, Settings};
use crate::event::descriptor::EventType;
use crate::event::registry::registry;
use crate::lifecycle::statistics::{Role, RoleThread};
use crate::process::panic_guard::{self, Place};
use crate::runtime::Runtime;

/// Time between two polls of the thread list while threads come and go:
/// how late a thread start or end is seen then.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// Time between two polls once no thread started or ended for
/// [`QUIET_AFTER`] (a multiple of [`POLL`], on the same grid, and a divisor
/// of the JDK's `1 s` periods). Each round is a wake and a few system
/// calls; on a loaded 2-core VM a wake costs the thread 30-60 µs of CPU
/// however little it does, so at 100 ms the wakes alone were 0.05-0.06 %
/// of a core with 200 threads, most of the periodic thread's cost.
pub(crate) const QUIET_POLL: Duration = Duration::from_millis(200);

/// How long the thread list must stay unchanged before polls slow down.
pub(crate) const QUIET_AFTER: Duration = Duration::from_secs(1);

/// A task due this soon after a wake runs in it (module docs).
pub(crate) const SLACK: Duration = Duration::from_millis(2);

/// The shortest interval honoured (shorter ones are clamped to it).
pub const MIN_PERIOD: Duration = Duration::from_millis(1);

/// A user periodic event: its type and the closure that commits it.
struct UserTask {
    ty: &'static EventType,
    default_period: Period,
    run: calls::Closure,
}

fn user_tasks() -> &'static Mutex<Vec<UserTask>> {
    static TASKS: OnceLock<Mutex<Vec<UserTask>>> = OnceLock::new();
    TASKS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Registers `run` as the producer of the periodic event type `ty`, like
/// the JDK's `FlightRecorder.addPeriodicEvent`: while a recording runs and
/// `ty` is enabled, `run` is called on flightrec's periodic thread at the
/// type's `period` setting (`default_period` unless the recording's
/// settings give one, e.g. `com.example.Queue#period=5 s`), and commits
/// events of `ty` (or any other type) with the event API.
///
/// A second registration for the same type replaces the first. The closure
/// runs on a thread of its own ([`calls`]), one call at a time: one that
/// blocks delays neither the other periodic events nor the recorder. A
/// rotation (and the stop) waits for the `endChunk`, `beginChunk` and
/// `everyChunk` calls at most [`calls::EDGE_WAIT`]; a call still running
/// then is abandoned (its events land in a later chunk), and a call due
/// while the previous one still runs is skipped, both counted as
/// [`LossCause::CallbackOverdue`](crate::LossCause::CallbackOverdue).
pub fn add_periodic_event(
    ty: &'static EventType,
    default_period: Period,
    run: impl Fn() + Send + Sync + 'static,
) {
    let mut tasks = user_tasks().lock();
    tasks.retain(|t| !std::ptr::eq(t.ty, ty));
    tasks.push(UserTask {
        ty,
        default_period,
        run: Arc::new(run),
    });
    drop(tasks);
    wake();
}

/// The built-in event types the recorder writes about the process and the
/// machine by itself (periodic ones, thread start and end, shutdown,
/// panics): to switch them off, e.g. for a recording that must hold only
/// the program's own events.
pub fn system_event_names() -> impl Iterator<Item = &'static str> {
    table::BUILTIN
        .iter()
        .map(|b| b.name)
        .chain(table::EVENTS.iter().map(|e| e.0))
}

/// Stops calling the closure registered for `ty`; true if there was one.
pub fn remove_periodic_event(ty: &'static EventType) -> bool {
    let mut tasks = user_tasks().lock();
    let before = tasks.len();
    tasks.retain(|t| !std::ptr::eq(t.ty, ty));
    let removed = before != tasks.len();
    drop(tasks);
    calls::forget(ty);
    removed
}

/// True if `event` is a periodic type (built-in or registered by the
/// program), so it takes a `period` setting.
pub(crate) fn is_periodic(event: &str) -> bool {
    table::BUILTIN
        .iter()
        .any(|b| b.name == event && b.period.is_some())
        || user_tasks().lock().iter().any(|t| t.ty.name() == event)
}

/// When a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    Begin,
    End,
    Interval(Duration),
}

/// What the recorder and the handle ask of the thread.
#[derive(Debug, Default)]
struct Requests {
    stop: Option<String>,
    /// Something to look at now (settings, a new task).
    poke: bool,
    /// The thread's body returned.
    finished: bool,
}

#[derive(Debug)]
struct Control {
    requests: Mutex<Requests>,
    cv: Condvar,
}

impl Control {
    /// The thread is done (its last round ran, or it panicked).
    fn finish(&self) {
        self.requests.lock().finished = true;
        self.cv.notify_all();
    }
}

struct Running {
    control: Arc<Control>,
    /// The built-in tasks' state, shared with the rotation path.
    system: Arc<Mutex<system::SystemEvents>>,
    thread: JoinHandle<()>,
    pid: u32,
}

fn running() -> &'static Mutex<Option<Running>> {
    static RUNNING: OnceLock<Mutex<Option<Running>>> = OnceLock::new();
    RUNNING.get_or_init(|| Mutex::new(None))
}

fn control() -> Option<Arc<Control>> {
    let r = running().lock();
    r.as_ref()
        .filter(|r| r.pid == std::process::id())
        .map(|r| r.control.clone())
}

fn shared_system() -> Option<Arc<Mutex<system::SystemEvents>>> {
    let r = running().lock();
    r.as_ref()
        .filter(|r| r.pid == std::process::id())
        .map(|r| r.system.clone())
}

crate::base::sync::thread_local! {
    /// Set while this thread runs a chunk edge's tasks for the recorder.
    static AT_EDGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True on the recorder thread while it runs a chunk edge's tasks: a
/// request to the recorder from there would wait for itself.
pub(crate) fn at_chunk_edge() -> bool {
    AT_EDGE.try_with(std::cell::Cell::get).unwrap_or(false)
}

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
const LAST_ROUND_WAIT: Duration = Duration::from_millis(1500);

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

fn at_edge(edge: When) {
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

/// Runs every enabled built-in task whose period is `edge` or
/// `everyChunk` on the calling thread, under `system`'s lock, and posts
/// the user tasks' calls to their lanes ([`calls`]): the caller waits for
/// the tickets returned, until its deadline.
fn chunk_edge(
    system: &Mutex<system::SystemEvents>,
    settings: &Settings,
    edge: When,
) -> Vec<calls::Ticket> {
    // Posted first: they run while the built-in tasks do.
    let mut posted = Vec::new();
    for (ty, period, run) in user_snapshot() {
        let p = effective_user_period(settings, ty, period);
        if hits(p, edge) && ty.is_enabled() {
            posted.extend(calls::post(ty, &run, true));
        }
    }
    for (i, b) in table::BUILTIN.iter().enumerate() {
        if let Some(p) = b.effective_period(settings)
            && hits(p, edge)
        {
            system.lock().run(i, settings);
        }
    }
    posted
}

/// One task's schedule.
#[derive(Debug)]
struct Schedule {
    when: Option<When>,
    next: Instant,
}

/// What the settings say of the built-in tasks, read once per settings
/// snapshot (module docs, "Few wakes").
struct Plan {
    /// The snapshot read; held, so its address names it.
    settings: StdArc<Settings>,
    /// The interval of each built-in task (`None`: off or per chunk), by
    /// index in [`table::BUILTIN`].
    intervals: Vec<Option<When>>,
    threads: system::ThreadEvents,
}

impl Plan {
    fn of(settings: StdArc<Settings>) -> Self {
        let intervals = table::BUILTIN
            .iter()
            .map(|b| b.effective_period(&settings).and_then(interval))
            .collect();
        Self {
            threads: system::ThreadEvents::of(&settings),
            settings,
            intervals,
        }
    }
}

/// The thread's state.
struct Periodic {
    /// The built-in tasks' state, locked only while one runs.
    system: Arc<Mutex<system::SystemEvents>>,
    /// The settings' reading, renewed when they change.
    plan: Option<Plan>,
    /// Schedules of the built-in tasks, by index in [`table::BUILTIN`].
    builtin: Vec<Schedule>,
    /// Schedules of user tasks, by type name.
    user: Vec<(&'static str, Schedule)>,
    /// The first chunk's begin tasks have run.
    begun: bool,
}

impl Periodic {
    fn new(system: Arc<Mutex<system::SystemEvents>>) -> Self {
        let now = Instant::now();
        Self {
            system,
            builtin: table::BUILTIN
                .iter()
                .map(|_| Schedule {
                    when: None,
                    next: now,
                })
                .collect(),
            user: Vec::new(),
            begun: false,
            plan: None,
        }
    }

    /// The settings now, and the plan read from them.
    fn plan(&mut self) -> &Plan {
        let now = registry().settings.load_full();
        match &mut self.plan {
            Some(p) if StdArc::ptr_eq(&p.settings, &now) => {}
            slot => *slot = Some(Plan::of(now)),
        }
        self.plan.as_ref().expect("set above")
    }

    fn run(&mut self, c: &Control) {
        // The grid of polls and the interval tasks' schedules start at the
        // first round (module docs, "Few wakes").
        let anchor = Instant::now();
        let mut last_change = anchor;
        loop {
            let stop = {
                let mut q = c.requests.lock();
                q.poke = false;
                q.stop.clone()
            };
            let settings = self.plan().settings.clone();
            let now = Instant::now();
            // The first chunk's beginning (later ones: the rotation's own
            // [`begin_chunk`]); also when the recording stops before the
            // first round.
            if !self.begun {
                self.begun = true;
                let posted = chunk_edge(&self.system, &settings, When::Begin);
                calls::wait_all(posted, now + calls::EDGE_WAIT);
            }
            if let Some(reason) = stop {
                // One deadline for the user calls still running and the
                // last chunk's: the stop waits for none of them longer.
                let deadline = Instant::now() + calls::EDGE_WAIT;
                let mut posted = calls::running();
                // A last value of every interval event, so the recording
                // ends with the figures at its stop.
                for (i, b) in table::BUILTIN.iter().enumerate() {
                    if b.effective_period(&settings).and_then(interval).is_some() {
                        self.system.lock().run(i, &settings);
                    }
                }
                posted.extend(chunk_edge(&self.system, &settings, When::End));
                calls::wait_all(posted, deadline);
                calls::close_all();
                self.system.lock().shutdown(&reason);
                return;
            }
            let next = self.intervals(&settings, now);
            let threads = self.plan().threads;
            if self.system.lock().poll_threads(threads, now) {
                last_change = now;
            }
            let poll = if now.duration_since(last_change) < QUIET_AFTER {
                POLL
            } else {
                QUIET_POLL
            };
            // Timed from the round's start (one clock read per round): the
            // round's own few microseconds are not worth another.
            let wake = next.min(next_on_grid(anchor, now, poll));
            let q = c.requests.lock();
            if q.stop.is_none() && !q.poke {
                drop(c.cv.wait_for(q, wake.saturating_duration_since(now)));
            }
        }
    }

    /// Runs the interval tasks that are due; returns when the next is.
    fn intervals(&mut self, settings: &Settings, now: Instant) -> Instant {
        let mut next = now + Duration::from_secs(3600);
        for i in 0..table::BUILTIN.len() {
            let when = self.plan.as_ref().and_then(|p| p.intervals[i]);
            if let Some(due) = step(&mut self.builtin[i], when, now) {
                self.system.lock().run(i, settings);
                next = next.min(due);
            } else if let Some(When::Interval(_)) = self.builtin[i].when {
                next = next.min(self.builtin[i].next);
            }
        }
        let users = user_snapshot();
        if users.is_empty() && self.user.is_empty() {
            return next;
        }
        self.user
            .retain(|(n, _)| users.iter().any(|(t, _, _)| t.name() == *n));
        for (ty, period, run) in users {
            let when = interval(effective_user_period(settings, ty, period));
            let idx = match self.user.iter().position(|(n, _)| *n == ty.name()) {
                Some(i) => i,
                None => {
                    self.user.push((
                        ty.name(),
                        Schedule {
                            when: None,
                            next: now,
                        },
                    ));
                    self.user.len() - 1
                }
            };
            let s = &mut self.user[idx].1;
            if let Some(due) = step(s, when, now) {
                // Not waited for: a call that blocks holds up only its own
                // task (its next calls are skipped until it returns).
                if ty.is_enabled() {
                    drop(calls::post(ty, &run, false));
                }
                next = next.min(due);
            } else if s.when.is_some() {
                next = next.min(s.next);
            }
        }
        next
    }
}

/// Advances `s` to `when` at `now`; returns the next due time if the task
/// runs now (due, or due within [`SLACK`]). A changed period restarts the schedule: a task whose period
/// shrank runs at once, one whose period grew waits one new period.
fn step(s: &mut Schedule, when: Option<When>, now: Instant) -> Option<Instant> {
    let Some(When::Interval(p)) = when else {
        s.when = when;
        return None;
    };
    if s.when != when {
        let shrank = match s.when {
            Some(When::Interval(old)) => p < old,
            _ => true,
        };
        s.when = when;
        s.next = if shrank { now } else { now + p };
    }
    if now + SLACK < s.next {
        return None;
    }
    // Fixed rate, but never a burst to catch up after a stall.
    s.next += p;
    if s.next <= now {
        s.next = now + p;
    }
    Some(s.next)
}

/// The first instant after `now` on the grid of `step`s from `anchor`.
fn next_on_grid(anchor: Instant, now: Instant, step: Duration) -> Instant {
    let step_ns = step.as_nanos().max(1);
    let k = now.saturating_duration_since(anchor).as_nanos() / step_ns + 1;
    anchor + Duration::from_nanos((k * step_ns).min(u64::MAX as u128) as u64)
}

fn hits(p: Period, edge: When) -> bool {
    matches!(
        (p, edge),
        (Period::EveryChunk, _) | (Period::BeginChunk, When::Begin) | (Period::EndChunk, When::End)
    )
}

fn interval(p: Period) -> Option<When> {
    match p {
        Period::Interval(d) => Some(When::Interval(d.max(MIN_PERIOD))),
        _ => None,
    }
}

fn effective_user_period(settings: &Settings, ty: &EventType, default: Period) -> Period {
    settings
        .get(ty.name())
        .and_then(|s| s.period)
        .unwrap_or(default)
}

#[allow(clippy::type_complexity)]
fn user_snapshot() -> Vec<(&'static EventType, Period, calls::Closure)> {
    user_tasks()
        .lock()
        .iter()
        .map(|t| (t.ty, t.default_period, t.run.clone()))
        .collect()
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_runs_at_its_period_and_follows_changes() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Schedule {
            when: None,
            next: t0,
        };
        let every = |d| Some(When::Interval(d));
        // First round: due at once, then every 100 ms.
        assert_eq!(step(&mut s, every(ms(100)), t0), Some(t0 + ms(100)));
        assert_eq!(step(&mut s, every(ms(100)), t0 + ms(50)), None);
        assert_eq!(
            step(&mut s, every(ms(100)), t0 + ms(100)),
            Some(t0 + ms(200))
        );
        // Shorter: runs now. Longer: waits one new period.
        assert_eq!(
            step(&mut s, every(ms(10)), t0 + ms(120)),
            Some(t0 + ms(130))
        );
        assert_eq!(step(&mut s, every(ms(1000)), t0 + ms(125)), None);
        assert_eq!(s.next, t0 + ms(1125));
        // A stall does not cause a burst.
        assert_eq!(
            step(&mut s, every(ms(1000)), t0 + ms(5000)),
            Some(t0 + ms(6000))
        );
        // A chunk period is not an interval.
        assert_eq!(step(&mut s, Some(When::Begin), t0 + ms(9000)), None);
    }

    #[test]
    fn chunk_periods_hit_their_edges() {
        assert!(hits(Period::EveryChunk, When::Begin) && hits(Period::EveryChunk, When::End));
        assert!(hits(Period::BeginChunk, When::Begin) && !hits(Period::BeginChunk, When::End));
        assert!(hits(Period::EndChunk, When::End) && !hits(Period::EndChunk, When::Begin));
        assert!(!hits(Period::Interval(Duration::from_secs(1)), When::End));
    }
}
