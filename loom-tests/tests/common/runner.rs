//! The loom runner with the suite's preemption bound, and the
//! negative controls' plumbing: a model that must fail.

use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f` under loom with `LOOM_MAX_PREEMPTIONS` if set, else `bound`.
pub fn model<F>(bound: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let mut b = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        b.preemption_bound = Some(bound);
    }
    // Counts explored executions (std atomic: outside the model).
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    eprintln!(
        "loom: {} executions, preemption bound {:?}",
        runs.load(std::sync::atomic::Ordering::Relaxed),
        b.preemption_bound
    );
}

/// A negative control: runs the model against the weakened protocol and
/// passes only if loom finds a failing execution.
pub fn expect_failure<F>(what: &str, bound: usize, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let r = catch_unwind(AssertUnwindSafe(|| model(bound, f)));
    assert!(
        r.is_err(),
        "negative control `{what}`: the weakened protocol passed the model, \
         so the model would not notice this bug"
    );
    eprintln!("negative control `{what}`: the model failed as expected");
}
