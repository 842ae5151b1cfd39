//! The chunks of a recording kept in memory (`disk(false)`), handed to the
//! streams that follow it.
//!
//! # Mechanism
//!
//! An in-memory chunk is an anonymous memory file (see the repository's
//! *In memory*). The repository publishes each one here when it creates it
//! and withdraws it when it frees it (retention, or the last stop). A
//! stream [`subscribe`]s when it is made: it gets the chunks present then,
//! and every chunk created after, each as a descriptor of its own, at its
//! next poll ([`Subscription::take`]). It reads them with `pread` exactly
//! as it reads chunk files on disk, and lets go of each once read to its
//! end. So a stream sees every chunk, even one created and freed between
//! two of its polls (a rotation just before the stop); what it holds is the
//! chunks it has not finished reading: a stream that falls behind keeps
//! their memory until it catches up.
//!
//! Invariant: every chunk published while a subscription lives is handed to
//! it exactly once, in creation (start-time) order.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::base::sync::global::Mutex;

/// A chunk and a descriptor of it.
type Chunk = (PathBuf, File);

#[derive(Debug, Default)]
struct Chunks {
    /// The in-memory chunks the repository holds.
    present: Vec<Chunk>,
    /// Per live subscription: its id and the chunks not yet taken.
    subscribers: Vec<(u64, Vec<Chunk>)>,
    next_id: u64,
}

static CHUNKS: Mutex<Chunks> = Mutex::new(Chunks {
    present: Vec::new(),
    subscribers: Vec::new(),
    next_id: 0,
});

fn dup((path, file): &Chunk) -> Option<Chunk> {
    Some((path.clone(), file.try_clone().ok()?))
}

/// The repository created in-memory chunk `path` (`file` is its
/// descriptor; copies of it are kept).
pub(crate) fn publish(path: &Path, file: &File) {
    let Ok(file) = file.try_clone() else {
        return;
    };
    let chunk = (path.to_owned(), file);
    let mut c = CHUNKS.lock();
    for (_, pending) in &mut c.subscribers {
        pending.extend(dup(&chunk));
    }
    c.present.push(chunk);
}

/// The repository freed in-memory chunk `path` (subscribers that were
/// handed it keep their own descriptors).
pub(crate) fn withdraw(path: &Path) {
    CHUNKS.lock().present.retain(|(p, _)| p != path);
}

/// A stream's claim on the in-memory chunks (see the module docs); ends
/// when dropped.
#[derive(Debug)]
pub(crate) struct Subscription {
    id: u64,
}

/// Subscribes: the chunks present now are the first taken.
pub(crate) fn subscribe() -> Subscription {
    let mut c = CHUNKS.lock();
    let id = c.next_id;
    c.next_id += 1;
    let present = c.present.iter().filter_map(dup).collect();
    c.subscribers.push((id, present));
    Subscription { id }
}

impl Subscription {
    /// The chunks handed to this subscription since the last call, in
    /// creation order.
    pub(crate) fn take(&self) -> Vec<(PathBuf, File)> {
        let mut c = CHUNKS.lock();
        c.subscribers
            .iter_mut()
            .find(|(id, _)| *id == self.id)
            .map(|(_, pending)| std::mem::take(pending))
            .unwrap_or_default()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        CHUNKS.lock().subscribers.retain(|(id, _)| *id != self.id);
    }
}
