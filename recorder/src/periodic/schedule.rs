//! The periodic thread's loop: each task's schedule (an interval on a
//! fixed grid, or a chunk edge), the requests the recorder and settings
//! changes post to it, and the run of every task due.
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
//! 3. polls the thread list (one `fstat`, see [`lifecycle`](super::lifecycle)) for
//!    `jdk.ThreadStart`/`jdk.ThreadEnd`;
//! 4. sleeps until the next task is due or the next poll: every [`POLL`]
//!    while threads come and go, every [`QUIET_POLL`] once none did for
//!    [`QUIET_AFTER`] (the sampler, when it runs, asks for a poll as soon
//!    as its own watch sees the thread list change:
//!    [`threads_changed`](super::control::threads_changed)).
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
//! poll is one `fstat` (see [`lifecycle`](super::lifecycle)).
//!
//! At the stop it runs every enabled interval task once more (the figures
//! at the stop), the `endChunk`/`everyChunk` tasks a last time, and writes
//! `jdk.Shutdown` with the reason.

use super::cadence::MIN_PERIOD;
use super::cadence::{POLL, QUIET_AFTER, QUIET_POLL, SLACK};
use super::control::Control;
use super::user::{effective_user_period, user_snapshot};
use super::{calls, system, table};
use std::time::{Duration, Instant};

use crate::base::sync::StdArc;
use crate::base::sync::global::{Arc, Mutex};
use crate::config::settings::{Period, Settings};
use crate::event::registry::registry;

/// When a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum When {
    Begin,
    End,
    Interval(Duration),
}

/// Runs every enabled built-in task whose period is `edge` or
/// `everyChunk` on the calling thread, under `system`'s lock, and posts
/// the user tasks' calls to their lanes ([`calls`]): the caller waits for
/// the tickets returned, until its deadline.
pub(super) fn chunk_edge(
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
pub(super) struct Schedule {
    when: Option<When>,
    next: Instant,
}

/// What the settings say of the built-in tasks, read once per settings
/// snapshot (module docs, "Few wakes").
pub(super) struct Plan {
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
pub(super) struct Periodic {
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
    pub(super) fn new(system: Arc<Mutex<system::SystemEvents>>) -> Self {
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

    pub(super) fn run(&mut self, c: &Control) {
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
pub(super) fn step(s: &mut Schedule, when: Option<When>, now: Instant) -> Option<Instant> {
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
pub(super) fn next_on_grid(anchor: Instant, now: Instant, step: Duration) -> Instant {
    let step_ns = step.as_nanos().max(1);
    let k = now.saturating_duration_since(anchor).as_nanos() / step_ns + 1;
    anchor + Duration::from_nanos((k * step_ns).min(u64::MAX as u128) as u64)
}

pub(super) fn hits(p: Period, edge: When) -> bool {
    matches!(
        (p, edge),
        (Period::EveryChunk, _) | (Period::BeginChunk, When::Begin) | (Period::EndChunk, When::End)
    )
}

pub(super) fn interval(p: Period) -> Option<When> {
    match p {
        Period::Interval(d) => Some(When::Interval(d.max(MIN_PERIOD))),
        _ => None,
    }
}

#[cfg(test)]
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
