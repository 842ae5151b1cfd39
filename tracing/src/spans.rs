//! A span's state and the thread's view of it: what `on_enter` and
//! `on_exit` need without asking the registry.
//!
//! A recorded span's state ([`SpanShared`]: its `spanId`, `parentId`, JFR
//! type and field values) is created once, by `on_new_span`, and put in
//! the span's extensions; it is an `Arc`, shared with
//!
//! * each open entry of the span on a thread's entry stack, so `on_exit`
//!   writes the duration event from the stack;
//! * a small per-thread direct-mapped cache keyed by `tracing`'s span id,
//!   filled by `on_new_span` and by an `on_enter` that missed, so entering
//!   a span this thread has seen needs no registry lookup either.
//!
//! `tracing` reuses the id of a closed span. Invariant: a cached state is
//! used only for the span it was made for, because `on_close` marks it
//! closed (Release) before the registry can hand its id out again, and a
//! hit is taken only if the id matches and the mark is unset (Acquire):
//! the id reaching this thread for a new span orders that mark before the
//! check.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::site::Built;
use crate::values::Slots;

/// The extension holding a recorded span's state.
pub(crate) struct SpanData(pub(crate) Arc<SpanShared>);

/// A recorded span's state.
pub(crate) struct SpanShared {
    /// `tracing`'s id of the span (reused after close, unlike `id`).
    pub(crate) key: u64,
    /// Its `spanId`.
    pub(crate) id: u64,
    pub(crate) parent: u64,
    pub(crate) built: &'static Built,
    /// The field values; `on_record` updates them from any thread.
    values: Mutex<Slots>,
    /// Set by `on_close`: `key` may now name another span.
    closed: AtomicBool,
}

impl SpanShared {
    pub(crate) fn new(
        key: u64,
        id: u64,
        parent: u64,
        built: &'static Built,
        values: Slots,
    ) -> Self {
        Self {
            key,
            id,
            parent,
            built,
            values: Mutex::new(values),
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn values(&self) -> MutexGuard<'_, Slots> {
        // A panic in a `Debug` impl while recording leaves whole slots.
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The span closed: its id may be reused from now on.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// One open entry of a span on this thread.
pub(crate) struct Entry {
    /// `tracing`'s id of the span.
    pub(crate) key: u64,
    /// Its `spanId` (0 for a span not recorded).
    pub(crate) id: u64,
    /// Its state, for a recorded span.
    pub(crate) span: Option<Arc<SpanShared>>,
    /// Start ticks.
    pub(crate) start: i64,
}

/// Ways of the per-thread span cache.
const WAYS: usize = 64;

/// The per-thread cache of span states by `tracing` id.
pub(crate) struct SpanCache {
    ways: [Option<Arc<SpanShared>>; WAYS],
}

impl SpanCache {
    pub(crate) const fn new() -> Self {
        Self {
            ways: [const { None }; WAYS],
        }
    }

    #[inline(always)]
    fn way(key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize & (WAYS - 1)
    }

    /// The state of the open span `key`, if cached.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<&Arc<SpanShared>> {
        self.ways[Self::way(key)]
            .as_ref()
            .filter(|s| s.key == key && !s.closed.load(Ordering::Acquire))
    }

    pub(crate) fn insert(&mut self, span: &Arc<SpanShared>) {
        self.ways[Self::way(span.key)] = Some(span.clone());
    }

    /// Drops `span` if cached (it closed), so its values go now.
    pub(crate) fn remove(&mut self, span: &Arc<SpanShared>) {
        let way = &mut self.ways[Self::way(span.key)];
        if way.as_ref().is_some_and(|s| Arc::ptr_eq(s, span)) {
            *way = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recorder::EventTypeBuilder;

    fn built(name: &str) -> &'static Built {
        let ty = EventTypeBuilder::new(name).build().expect("type");
        Box::leak(Box::new(Built {
            ty,
            kinds: Box::new([]),
            plan: [None; crate::site::PLAN],
        }))
    }

    fn span(key: u64, id: u64, built: &'static Built) -> Arc<SpanShared> {
        Arc::new(SpanShared::new(key, id, 0, built, Slots::new()))
    }

    /// `tracing` hands a closed span's id to the next span: the cache
    /// stops answering for the closed one the moment it is marked, and
    /// answers for the new one once it is inserted, never the other way.
    #[test]
    fn a_closed_spans_id_names_the_next_span_only() {
        let b = built("test.spans.Reuse");
        let mut cache = SpanCache::new();
        let old = span(42, 1, b);
        cache.insert(&old);
        assert_eq!(cache.get(42).map(|s| s.id), Some(1));
        assert!(cache.get(43).is_none(), "another id is a miss");

        // Closed but still cached (another thread closed it): a miss, so
        // an entry of the id's next span asks the registry.
        old.close();
        assert!(cache.get(42).is_none(), "a closed span is never a hit");

        // The id's next span, cached by its `on_new_span` or first entry.
        let new = span(42, 2, b);
        cache.insert(&new);
        assert_eq!(cache.get(42).map(|s| s.id), Some(2));
        // Removing the old state (its `on_close` on this thread) leaves
        // the new one in place.
        cache.remove(&old);
        assert_eq!(cache.get(42).map(|s| s.id), Some(2));
        cache.remove(&new);
        assert!(cache.get(42).is_none());
    }

    /// Ids that share a way evict each other; neither answers for the
    /// other.
    #[test]
    fn ids_sharing_a_way_never_answer_for_each_other() {
        let b = built("test.spans.Ways");
        let mut cache = SpanCache::new();
        let first = span(1, 10, b);
        let way = SpanCache::way(1);
        let other = (2..10_000u64)
            .find(|k| SpanCache::way(*k) == way)
            .expect("a key in the same way");
        let second = span(other, 20, b);
        cache.insert(&first);
        cache.insert(&second);
        assert!(cache.get(1).is_none(), "evicted");
        assert_eq!(cache.get(other).map(|s| s.id), Some(20));
    }
}
