//! Writing what the sites measured: `jdk.MethodTrace` records from the
//! calling thread, the end-of-chunk `jdk.MethodTiming` batch, and each
//! chunk's method constants for the sites.
//!
//! # Keys
//!
//! A site's constants live in a key range of their own, far above the keys
//! the stack-trace resolver hands out: site `i` has method
//! `SITE_KEY_BASE + 8i`, class `+1`, package `+2`, and symbols `+3` (class
//! name), `+4` (method name), `+5` (package name); `SITE_KEY_BASE - 1` is
//! the `()V` descriptor. A key means the same in every chunk of the process
//! (docs/jfr-format.md §6.4 rule 5), and every chunk defines the constants of
//! every site registered before each of its checkpoints, so a MethodTiming
//! or MethodTrace record always resolves, whatever stacks the chunk's epoch
//! tagged.
//!
//! # A trace's stack
//!
//! JEP 520's stack trace starts at the caller. The capture happens inside
//! the timed function (in its guard's drop), so the interned frames start
//! with a marker, [`MARKER`] | site index, which the resolver
//! (`cpool::methods`) removes, together with every resolved frame down to
//! and including the timed function's own.
//!
//! Invariant: every record written here references only method keys whose
//! site is registered, hence defined by the chunk's next checkpoint.

use jfr_format::types::ACC_NATIVE;
use jfr_format::write::constants::{
    ClassValue, MethodValue, write_class, write_method, write_package, write_symbol,
};
use jfr_format::write::events::{BuiltinEvent, MethodTiming, MethodTrace};
use jfr_format::{Checkpoint, TypeId};

use super::accum;
use super::site::TRACE_STACK;
use super::sites::{SITES, TRACE_THRESHOLD};
use crate::base::loss::LossCause;
use crate::base::sync::global::Ordering;
use crate::buffer::local;
use crate::event::builtin::{BuiltinRefs, builtin};
use crate::runtime;

/// The first key of the sites' constants (see the module docs).
pub(crate) const SITE_KEY_BASE: u64 = crate::cpool::keys::TIMED_SITES;
const STRIDE: u64 = 8;

/// The first frame of a trace's stack: this, or'ed with the site index.
const MARKER: u64 = 0xFFFF_F000_0000_0000;
const MARKER_MASK: u64 = 0xFFFF_F000_0000_0000;

fn method_key(index: usize) -> u64 {
    SITE_KEY_BASE + STRIDE * index as u64
}

/// The site index a stack's first frame marks, if it is a marker.
pub(crate) fn trace_marker_site(frame: u64) -> Option<usize> {
    (frame & MARKER_MASK == MARKER).then_some((frame & !MARKER_MASK) as usize)
}

/// Writes one `jdk.MethodTrace` for a call of `d` ticks from `start`, if it
/// reaches the threshold. Out of line: a trace is an event.
#[inline(never)]
pub(super) fn trace(w: u64, index: usize, start: i64, d: u64) {
    if d < TRACE_THRESHOLD.load(Ordering::Relaxed) {
        return;
    }
    let Some(rt) = runtime::get() else {
        return;
    };
    let (stack, stack_epoch) = if w & TRACE_STACK != 0 {
        capture_caller_stack(rt, index)
    } else {
        (0, 0)
    };
    let method = method_key(index);
    let written = local::with_slot(rt, |slot| {
        let thread = slot.thread_key;
        // The writer's own thread (its slot tags it) and the stack, tagged
        // with the section's epoch if a flip fell after the intern.
        let refs = BuiltinRefs {
            thread: None,
            stack,
            stack_epoch,
        };
        let encode = |buf: &mut [u8], stack: u64| {
            MethodTrace {
                start_time: start,
                duration: d as i64,
                event_thread: thread,
                stack_trace: stack,
                method,
            }
            .encode(buf)
        };
        slot.emit(&rt.epoch, &rt.pool, &rt.losses, &builtin(rt, refs, encode));
    });
    if written.is_none() {
        rt.losses.record(LossCause::ThreadExiting, 0);
    }
}

/// Captures the stack (marker first) and interns it; its key (0 if
/// dropped) and the epoch the intern tagged it with.
#[cold]
#[inline(never)]
fn capture_caller_stack(rt: &'static runtime::Runtime, index: usize) -> (u64, u64) {
    let mut frames = [0u64; 129];
    frames[0] = MARKER | index as u64;
    let depth = rt.max_stack_depth.min(128);
    let captured = crate::stack::capture(0, &mut frames[1..=depth]);
    if captured.len == 0 {
        return (0, 0);
    }
    // Read before the write section loads it (see `cpool::stacks`).
    let epoch = rt.epoch.load(Ordering::Relaxed);
    match rt
        .stacks
        .intern(&frames[..=captured.len], captured.truncated, epoch)
    {
        Some(key) => (key, epoch),
        None => {
            rt.losses.record(LossCause::StackDropped, 0);
            (0, 0)
        }
    }
}

/// Appends the `jdk.MethodTiming` batch: one record per site selected for
/// timing, all stamped `ticks`, values since the site was selected.
pub(crate) fn write_timing_events(out: &mut Vec<u8>, ticks: i64) {
    let selected: Vec<(usize, u64)> = {
        let mut s = SITES.lock();
        s.warn_unmatched();
        s.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| e.timing_in_force && *i < accum::MAX_SITES)
            .map(|(i, e)| (i, e.generation))
            .collect()
    };
    if selected.is_empty() {
        return;
    }
    let totals = accum::totals(&selected);
    for (&(index, _), t) in selected.iter().zip(&totals) {
        let (min, avg, max) = match t.sum.checked_div(t.count) {
            Some(avg) => (t.min, avg, t.max),
            None => (0, 0, 0), // selected, never called
        };
        MethodTiming {
            start_time: ticks,
            method: method_key(index),
            invocations: t.count as i64,
            minimum: min as i64,
            average: avg as i64,
            maximum: max as i64,
        }
        .append(out);
    }
}

/// Defines, in `cp`, the constants of sites `from..` (registered so far);
/// returns the number of registered sites.
pub(crate) fn write_site_constants(cp: &mut Checkpoint, from: usize) -> usize {
    let s = SITES.lock();
    let n = s.entries.len();
    if from >= n {
        return n;
    }
    let new = &s.entries[from..];
    let descriptor = SITE_KEY_BASE - 1;
    {
        let mut pool = cp.pool(TypeId::METHOD);
        for (i, _) in new.iter().enumerate() {
            let k = method_key(from + i);
            let value = MethodValue {
                class: k + 1,
                name: k + 4,
                descriptor,
                modifiers: ACC_NATIVE,
                hidden: false,
            };
            write_method(pool.entry(k), &value);
        }
    }
    {
        let mut pool = cp.pool(TypeId::CLASS);
        for (i, e) in new.iter().enumerate() {
            let k = method_key(from + i);
            let value = ClassValue {
                class_loader: 0,
                name: k + 3,
                package: if e.jfr_package.is_empty() { 0 } else { k + 2 },
                modifiers: 1,
                hidden: false,
            };
            write_class(pool.entry(k + 1), &value);
        }
    }
    if new.iter().any(|e| !e.jfr_package.is_empty()) {
        let mut pool = cp.pool(TypeId::PACKAGE);
        for (i, e) in new.iter().enumerate() {
            if !e.jfr_package.is_empty() {
                let k = method_key(from + i);
                write_package(pool.entry(k + 2), k + 5, 0, true);
            }
        }
    }
    let mut pool = cp.pool(TypeId::SYMBOL);
    write_symbol(pool.entry(descriptor), "()V");
    for (i, e) in new.iter().enumerate() {
        let k = method_key(from + i);
        write_symbol(pool.entry(k + 3), &e.jfr_class);
        write_symbol(pool.entry(k + 4), &e.method);
        if !e.jfr_package.is_empty() {
            write_symbol(pool.entry(k + 5), &e.jfr_package);
        }
    }
    n
}
