//! Dispatch frames: the frames of a library that sits between the user's
//! code and the event commit (a `tracing` subscriber and its layers), cut
//! from the top of the stack traces the recorder writes, so the top frame
//! is the user's call.
//!
//! # Mechanism
//!
//! The capture cannot cut them by count: how many there are depends on the
//! subscriber's layers and on inlining. Instead, when a stack captured on
//! the commit path (its top frame is the recorder's) is resolved to names
//! (on the recorder thread, once per stack, see [`crate::cpool::methods`]),
//! the leading frames whose class lies in one of the crates registered
//! here, or in the recorder itself, are dropped,
//! together with standard-library frames (`std`, `core`, `alloc`: thread
//! locals, closures, `Arc`) between them. The cut ends at the last
//! dispatch frame of that leading run: a standard-library frame above the
//! user's code, with no dispatch frame under it, stays. Below a dispatch
//! frame, the closure a logging macro wraps its call in (inlined into the
//! user's function at the macro's line) goes too, so the top frame is the
//! function that called the macro, at the macro's line. A stack made only
//! of such frames is written whole.
//!
//! A stack the sampler took keeps its dispatch frames: CPU time spent in
//! them is theirs.
//!
//! Invariant: only a leading run is ever cut, and never a whole stack.

use super::ResolvedFrame;

/// Module paths (`tracing_core`) whose leading frames are cut.
static CRATES: crate::base::sync::global::Mutex<Vec<&'static str>> =
    crate::base::sync::global::Mutex::new(Vec::new());

fn registered() -> Vec<&'static str> {
    CRATES.lock().clone()
}

/// Cuts the frames of crate `krate` (its name as in paths, `tracing_core`;
/// a module path `a::b` cuts only that module) from the top of every stack
/// trace written from now on, as described in the module docs.
pub fn trim_dispatch_frames(krate: &'static str) {
    let mut c = CRATES.lock();
    if !c.contains(&krate) {
        c.push(krate);
    }
}

/// True if `class` (internal form, `a/b/C`) lies in module path `path`
/// (`a::b`).
fn in_module(class: &str, path: &str) -> bool {
    let mut class = class.split('/');
    path.split("::").all(|seg| class.next() == Some(seg))
}

/// How many leading frames of `frames` (innermost first) to cut; `own` is
/// the recorder's own class prefix.
pub(crate) fn leading_cut(frames: &[ResolvedFrame], own: &str) -> usize {
    // Only a stack captured on the commit path (its top frame is the
    // recorder's) loses dispatch frames: a CPU sample taken in dispatch code
    // keeps them, or the time would be charged to the caller.
    let committed = frames.first().is_some_and(|f| f.class.starts_with(own));
    let crates = if committed { registered() } else { Vec::new() };
    let mut cut = 0;
    let mut dispatch = false;
    for (i, f) in frames.iter().enumerate() {
        let class = f.class.as_str();
        if class.starts_with(own) {
            cut = i + 1;
        } else if crates.iter().any(|k| in_module(class, k)) {
            cut = i + 1;
            dispatch = true;
        } else if !["std", "core", "alloc"].iter().any(|k| in_module(class, k)) {
            break;
        }
    }
    // The closure a logging macro wraps its dispatch in, inlined into the
    // function at the macro's line, is the macro's, not the user's.
    if dispatch
        && let [closure, caller, ..] = &frames[cut..]
        && closure.inlined
        && closure.method.starts_with("{closure")
        && closure.class == caller.class
        && closure.line == caller.line
    {
        cut += 1;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(class: &str, method: &str, line: u32, inlined: bool) -> ResolvedFrame {
        ResolvedFrame {
            package: String::new(),
            class: class.to_owned(),
            method: method.to_owned(),
            file: None,
            line: Some(line),
            inlined,
        }
    }

    fn cut(classes: &[&str]) -> usize {
        let frames: Vec<_> = classes.iter().map(|c| frame(c, "f", 1, false)).collect();
        leading_cut(&frames, "recorder/")
    }

    #[test]
    fn only_a_leading_run_of_dispatch_and_std_frames_is_cut() {
        trim_dispatch_frames("dispatch_test_crate");
        assert_eq!(
            cut(&[
                "recorder/event/commit",
                "dispatch_test_crate",
                "std/thread/local",
                "dispatch_test_crate/layer/Layered",
                "user/app",
                "dispatch_test_crate",
            ]),
            4
        );
        // Standard-library frames over the user's code stay.
        assert_eq!(cut(&["std/thread/local", "user/app"]), 0);
        assert_eq!(
            cut(&["recorder/x", "dispatch_test_crate", "core/ops", "user/app"]),
            2
        );
        // A crate is matched by whole segments.
        assert_eq!(
            cut(&["recorder/x", "dispatch_test_crate_2/x", "user/app"]),
            1
        );
        // A stack not captured by the recorder's commit path (a CPU
        // sample) keeps its dispatch frames.
        assert_eq!(cut(&["dispatch_test_crate", "user/app"]), 0);
    }

    #[test]
    fn a_macro_closure_at_its_callers_line_goes_with_the_dispatch_frames() {
        trim_dispatch_frames("dispatch_test_crate");
        let own = frame("recorder/event/commit", "stack_keys", 1, false);
        let d = frame("dispatch_test_crate", "event", 9, false);
        let macro_closure = frame("app", "{closure#1}", 42, true);
        let serve = frame("app", "serve", 42, false);
        let at = |fs: &[ResolvedFrame]| leading_cut(fs, "recorder/");
        assert_eq!(
            at(&[own.clone(), d.clone(), macro_closure.clone(), serve.clone()]),
            3
        );
        // A closure of the user's at another line stays, and so does one
        // with no dispatch frame above it.
        let own_closure = frame("app", "{closure#0}", 40, true);
        assert_eq!(at(&[own, d.clone(), own_closure, serve.clone()]), 2);
        assert_eq!(at(&[macro_closure, serve]), 0);
    }
}
