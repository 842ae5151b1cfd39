//! A thread's label scopes: [`scope`] and [`with`] push a set onto the
//! thread's stack, the guard pops it, and each change publishes the
//! thread's current context for the sampler's signal handler to read.

use super::published;
use super::table::{self, Set};

use std::cell::RefCell;
use std::marker::PhantomData;

/// What a thread knows about its own labels.
#[derive(Debug, Default)]
struct ThreadLabels {
    set: Set,
    context: u64,
    /// This thread's entry in the published table, once claimed.
    entry: Option<published::Entry>,
}

impl Drop for ThreadLabels {
    fn drop(&mut self) {
        if let Some(e) = self.entry.take() {
            e.release();
        }
    }
}

crate::base::sync::global::thread_local! {
    static CURRENT: RefCell<ThreadLabels> = RefCell::new(ThreadLabels::default());
}

/// While alive, the calling thread's samples carry the labels of the
/// enclosing scopes merged with `labels` (a key given here overrides the
/// same key outside). Dropping it restores the enclosing labels.
///
/// Drop scopes in the reverse order of opening them (as blocks do): each
/// restores the set that was current when it was opened.
#[must_use = "the labels apply only while the guard is alive"]
#[derive(Debug)]
pub struct LabelScope {
    previous: Option<(Set, u64)>,
    /// The scope belongs to the thread that opened it.
    _not_send: PhantomData<*const ()>,
}

/// Opens a label scope on the calling thread: see [`LabelScope`].
///
/// Keys and values are any strings; a label set that does not fit in the
/// bounded table (see [`MAX_CONTEXTS`](super::MAX_CONTEXTS), [`MAX_STRINGS`](super::MAX_STRINGS),
/// [`MAX_STRING_BYTES`](super::MAX_STRING_BYTES)) is recorded as no labels and counted as a loss.
pub fn scope(labels: &[(&str, &str)]) -> LabelScope {
    let previous = CURRENT
        .try_with(|cur| {
            let mut cur = cur.borrow_mut();
            let previous = (cur.set.clone(), cur.context);
            let (set, context) = table::merge_and_intern(&cur.set, labels);
            cur.set = set;
            publish(&mut cur, context);
            previous
        })
        .ok();
    LabelScope {
        previous,
        _not_send: PhantomData,
    }
}

/// Runs `f` inside a label scope (see [`scope`]) and returns its result.
pub fn with<R>(labels: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    let _g = scope(labels);
    f()
}

/// The calling thread's context id: 0 outside every scope.
pub fn current() -> u64 {
    CURRENT.try_with(|c| c.borrow().context).unwrap_or(0)
}

impl Drop for LabelScope {
    fn drop(&mut self) {
        let Some((set, context)) = self.previous.take() else {
            return;
        };
        let _ = CURRENT.try_with(|cur| {
            let mut cur = cur.borrow_mut();
            cur.set = set;
            publish(&mut cur, context);
        });
    }
}

/// Makes `context` the thread's id, where the handler reads it.
fn publish(cur: &mut ThreadLabels, context: u64) {
    cur.context = context;
    if cur.entry.is_none() && context != 0 {
        cur.entry = published::Entry::claim(crate::base::sync::os_thread_id() as u64);
    }
    if let Some(e) = &cur.entry {
        e.set(context);
    }
}
