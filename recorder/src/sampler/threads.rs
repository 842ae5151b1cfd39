//! Finding every thread of the process: `/proc/self/task`, re-read by the
//! sampler thread on each pass, so threads that start are attached and
//! threads that exit are detached within one pass.
//!
//! A thread that lives shorter than one pass may never be seen; its CPU time
//! is then not sampled.

use std::collections::HashSet;

/// The kernel ids of the process's threads now.
pub(crate) fn list() -> HashSet<u64> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return HashSet::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The kernel's name for thread `tid` (what `pthread_setname_np` and Rust's
/// `Builder::name` set, up to 15 bytes).
pub(crate) fn name(tid: u64) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| format!("thread-{tid}"))
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests {
    use super::*;

    #[test]
    fn sees_a_named_thread_come_and_go() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::Builder::new()
            .name("threads-test".into())
            .spawn(move || {
                tx.send(crate::sync::os_thread_id() as u64).unwrap();
                done_rx.recv().unwrap();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        assert!(list().contains(&tid));
        assert_eq!(name(tid), "threads-test");
        done_tx.send(()).unwrap();
        h.join().unwrap();
        assert!(!list().contains(&tid));
    }
}
