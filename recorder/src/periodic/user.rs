//! User periodic events: types the program registers with a closure
//! that commits them, run by the periodic thread at their period (or at
//! chunk edges) on a lane of their own ([`super::calls`]).

use super::control::wake;
use super::{calls, table};
use crate::base::sync::OnceLock;

use crate::base::sync::global::{Arc, Mutex};
use crate::config::settings::{Period, Settings};
use crate::event::descriptor::EventType;

/// A user periodic event: its type and the closure that commits it.
pub(super) struct UserTask {
    ty: &'static EventType,
    default_period: Period,
    run: calls::Closure,
}

pub(super) fn user_tasks() -> &'static Mutex<Vec<UserTask>> {
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
/// runs on a thread of its own (`calls`), one call at a time: one that
/// blocks delays neither the other periodic events nor the recorder. A
/// rotation (and the stop) waits for the `endChunk`, `beginChunk` and
/// `everyChunk` calls at most `calls::EDGE_WAIT`; a call still running
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

pub(super) fn effective_user_period(
    settings: &Settings,
    ty: &EventType,
    default: Period,
) -> Period {
    settings
        .get(ty.name())
        .and_then(|s| s.period)
        .unwrap_or(default)
}

#[allow(clippy::type_complexity)]
pub(super) fn user_snapshot() -> Vec<(&'static EventType, Period, calls::Closure)> {
    user_tasks()
        .lock()
        .iter()
        .map(|t| (t.ty, t.default_period, t.run.clone()))
        .collect()
}
