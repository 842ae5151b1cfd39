//! Whether the calling thread is running a chunk edge's tasks for the
//! recorder thread (a request to the recorder from there would wait for
//! itself).

crate::base::sync::global::thread_local! {
    /// Set while this thread runs a chunk edge's tasks for the recorder.
    pub(super) static AT_EDGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True on the recorder thread while it runs a chunk edge's tasks: a
/// request to the recorder from there would wait for itself.
pub(crate) fn at_chunk_edge() -> bool {
    AT_EDGE.try_with(std::cell::Cell::get).unwrap_or(false)
}
