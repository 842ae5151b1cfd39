//! One writer racing one rotation.

use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{Drained, Runtime};

use super::chunks::{Chunks, Commit};

/// One writer racing one rotation: `write` runs on a writer thread and
/// returns its commit while the recorder thread rotates once; then the model
/// rotates again, so every committed event reaches a chunk. `end` is the
/// chunk-end work the model checks, run for each closed chunk with its
/// epoch and drained bytes. Returns the commit and both chunks.
pub fn commit_during_rotation(
    rt: &Arc<Runtime>,
    write: impl FnOnce(&Runtime) -> Commit + Send + 'static,
    end: fn(&Runtime, u64, &[Drained]),
) -> (Commit, Chunks) {
    let writer = {
        let rt = rt.clone();
        thread::spawn(move || write(&rt))
    };
    let recorder = {
        let rt = rt.clone();
        thread::spawn(move || {
            let mut drained = Vec::new();
            let closed = rt.rotate(&mut drained);
            end(&rt, closed, &drained);
            (closed, drained)
        })
    };
    let mut chunks = Chunks::default();
    let (closed, drained) = recorder.join().unwrap();
    chunks.push(closed, drained);
    let commit = writer.join().unwrap();
    let mut drained = Vec::new();
    let closed = rt.rotate(&mut drained);
    end(rt, closed, &drained);
    chunks.push(closed, drained);
    (commit, chunks)
}
