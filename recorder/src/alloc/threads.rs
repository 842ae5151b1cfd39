//! Per-thread allocated bytes, readable by the allocation thread for
//! `jdk.ThreadAllocationStatistics`: a fixed array of records, one claimed
//! by each thread at its first slow path and handed back when it exits.
//!
//! The owner stores its count (Relaxed, no read-modify-write) at each slow
//! path, so the figure lags the truth by less than one sampling interval:
//! the JDK's field is "approximate" too.
//!
//! Invariant: a record's `tid` is 0 (free) or the kernel id of the live
//! thread that claimed it; only that thread stores its `allocated`.

use crate::base::sync::global::{AtomicU64, Ordering};

/// Threads whose counts are reported (more: counted in no record).
pub(super) const MAX_THREADS: usize = 1024;

#[derive(Debug)]
struct Record {
    tid: AtomicU64,
    allocated: AtomicU64,
}

static RECORDS: [Record; MAX_THREADS] = [const {
    Record {
        tid: AtomicU64::new(0),
        allocated: AtomicU64::new(0),
    }
}; MAX_THREADS];

/// The calling thread's claim: hands the record back at thread exit.
#[derive(Debug)]
struct Claim(std::cell::Cell<Option<usize>>, std::cell::Cell<bool>);

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(i) = self.0.get() {
            RECORDS[i].tid.store(0, Ordering::Release);
        }
    }
}

crate::base::sync::global::thread_local! {
    static CLAIM: Claim = const { Claim(std::cell::Cell::new(None), std::cell::Cell::new(false)) };
}

/// The calling thread's counter, claiming a record the first time (the
/// first access registers the thread-local's destructor: called from the
/// slow path only). `None` once the thread's locals are gone or every
/// record is taken.
pub(super) fn own_counter() -> Option<&'static AtomicU64> {
    CLAIM
        .try_with(|c| {
            if let Some(i) = c.0.get() {
                return Some(&RECORDS[i].allocated);
            }
            if c.1.replace(true) {
                return None; // tried before: full
            }
            let tid = crate::base::sync::os_thread_id() as u64;
            let i = RECORDS.iter().position(|r| {
                r.tid
                    .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })?;
            RECORDS[i].allocated.store(0, Ordering::Relaxed);
            c.0.set(Some(i));
            Some(&RECORDS[i].allocated)
        })
        .ok()
        .flatten()
}

/// Every live thread with a record: (kernel id, bytes allocated).
pub(super) fn snapshot() -> Vec<(u64, u64)> {
    RECORDS
        .iter()
        .filter_map(|r| {
            let tid = r.tid.load(Ordering::Acquire);
            (tid != 0).then(|| (tid, r.allocated.load(Ordering::Relaxed)))
        })
        .collect()
}
