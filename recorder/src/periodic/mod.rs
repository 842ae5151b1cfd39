//! Periodic events: the JDK's `period` setting (`everyChunk`, `beginChunk`,
//! `endChunk`, or an interval such as `1 s`), for the built-in system events
//! (`system`) and for user event types registered with
//! [`add_periodic_event`]. They run on recorder-owned threads, never on the
//! program's threads; user closures each on a thread of their own
//! (`calls`), so none can hold up the recorder or the other tasks.
//!
//! The periodic thread's loop and its few wakes are in `schedule`; the
//! chunk edges the recorder thread runs itself, in `thread`.
//!
//! Events go through the same commit path as every other event (user
//! closures commit with the event API; built-in events through
//! `emit_builtin` into the running thread's own buffer, which tags the threads and
//! stacks they reference with the epoch of the chunk they land in), so
//! whatever makes a chunk include the constants its events reference
//! applies to them too.
//!
//! Invariant: a built-in task runs only on the periodic or the recorder
//! thread, a user task only on its own thread (`calls`); each only while
//! a recording runs, and at most once per due time or chunk edge: events of
//! a periodic type are never committed by a program thread, an edge's
//! events land in the chunk of that edge unless its call was abandoned
//! (counted), and none land after the stop. No thread of the recorder waits
//! for user code past a deadline.

mod cadence;
pub(crate) mod calls;
pub(crate) mod control;
pub(crate) mod edge;
pub(crate) mod emit;
pub(crate) mod lifecycle;
mod plug;
pub(crate) mod procfs;
mod schedule;
pub(crate) mod system;
pub(crate) mod table;
pub(crate) mod thread;
pub(crate) mod user;

pub use cadence::MIN_PERIOD;
pub(crate) use plug::PeriodicEvents;
pub use user::{add_periodic_event, remove_periodic_event, system_event_names};
