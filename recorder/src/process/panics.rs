//! Panics as errors: a panic hook, chained in front of whatever hook the
//! program had (never replacing it), writes one `jdk.JavaErrorThrow` per
//! panic while a recording runs — message `panicked at FILE:LINE:COL:
//! PAYLOAD`, the panicking thread, and its stack trace with the panic
//! machinery cut off, so the top frame is the function that panicked — and
//! counts panics for the periodic `jdk.ExceptionStatistics`. Together they
//! make `jfr view exception-by-site` and `exception-count` work. The thrown
//! class is a synthetic class per panic location, named `FILE:LINE:COL`
//! (`panicked` when the location is unknown), so `exception-by-type` groups
//! panics by where they were raised: [`write_class_constants`] defines them
//! in every chunk, with keys of their own (`CLASS_KEY_BASE + 2i`, its name
//! symbol `+1`), as the timed sites do (`crate::timing`).
//! `jdk.JavaErrorThrow#enabled=false` turns the events off (the count goes
//! on); `stackTrace=false` leaves the stack out.
//!
//! # Cutting the stack
//!
//! At installation the hook is calibrated: one panic is raised and caught
//! on the installing thread, and the hook records the return addresses of
//! the frames between itself and the panicking function. A real panic's
//! stack shares exactly those frames (the same code of the hook, the
//! standard library's `rust_panic_with_hook`, `begin_panic_handler` and
//! `panic_fmt`); the first frame that differs is the panic site. A panic
//! that went through more library code (`Option::unwrap` reaching
//! `core::option::unwrap_failed`) shows that function as its site, with
//! the caller one frame below. Without unwinding (`panic = "abort"`) no
//! calibration is possible, and the stack is written uncut.
//!
//! The hook takes no lock the recorder could hold while panicking: the
//! recording flag is an atomic, and the event goes through the commit
//! path, whose reentrancy guard drops an event begun inside another.
//!
//! Invariant: the previous hook runs for every panic but the calibration
//! panic, after ours, with the same `PanicHookInfo`.

use crate::base::sync::{Once, OnceLock};
use std::cell::Cell;
use std::hint::black_box;
use std::panic::PanicHookInfo;

use jfr_format::Checkpoint;
use jfr_format::write::events::JavaErrorThrow;

use crate::base::sync::global::{AtomicBool, AtomicU64, Ordering};
use crate::cpool::named_classes::NamedClasses;
use crate::event::builtin::BuiltinRefs;
use crate::event::registry::registry;
use crate::periodic::emit::emit_with;
use crate::periodic::table::enabled;
use crate::runtime;

static PANICS: AtomicU64 = AtomicU64::new(0);
static RECORDING: AtomicBool = AtomicBool::new(false);
static CALIBRATION: OnceLock<Vec<u64>> = OnceLock::new();

crate::base::sync::global::thread_local! {
    static CALIBRATING: Cell<bool> = const { Cell::new(false) };
}

/// How deep in a panic's stack the machinery is looked for.
const MACHINERY_DEPTH: usize = 32;

/// Deepest stack a panic event keeps.
const MAX_FRAMES: usize = 128;

/// Keys of the panic classes: a range of their own (`cpool::keys`).
const CLASS_KEY_BASE: u64 = crate::cpool::keys::PANIC_CLASSES;

/// The panic locations seen, each a class.
static CLASSES: NamedClasses = NamedClasses::new(CLASS_KEY_BASE);

/// The class key of panics at `location` (registering it); 0 (no class)
/// if the registry stays locked, as when the recorder thread panicked while
/// writing it: the hook never waits on a lock.
fn class_key(location: String) -> u64 {
    CLASSES.key_without_waiting(&location, 100).unwrap_or(0)
}

/// Defines the panic classes registered since the `from`th in `cp`;
/// returns how many are defined now (see [`NamedClasses::write_constants`]).
pub(crate) fn write_class_constants(cp: &mut Checkpoint, from: usize) -> usize {
    CLASSES.write_constants(cp, from)
}

/// Panics seen while a recording ran.
pub(crate) fn count() -> u64 {
    PANICS.load(Ordering::Relaxed)
}

/// Installs the hook (once per process) and marks a recording as running.
pub(crate) fn start() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if on_panic(info) {
                previous(info);
            }
        }));
        calibrate();
    });
    RECORDING.store(true, Ordering::Release);
}

/// The recording stopped: panics are not counted or written.
pub(crate) fn stop() {
    RECORDING.store(false, Ordering::Release);
}

#[inline(never)]
fn calibrate() {
    if !cfg!(panic = "unwind") {
        return;
    }
    CALIBRATING.with(|c| c.set(true));
    let _ = std::panic::catch_unwind(calibration_panic);
    CALIBRATING.with(|c| c.set(false));
}

#[inline(never)]
fn calibration_panic() {
    // Formatted, as most panics are (the path does not matter for the
    // cut, see `cut`).
    panic!("flightrec: calibrating the panic hook {}", black_box(1));
}

/// Captures the stack from the hook's caller outward.
#[inline(never)]
fn capture_into(frames: &mut [u64]) -> (usize, bool) {
    let c = crate::stack::capture(1, frames);
    (c.len, c.truncated)
}

/// Frames of `stack` below the panic machinery: after the deepest of its
/// first [`MACHINERY_DEPTH`] frames that is one of the calibration's
/// machinery frames (their return addresses are the same for every panic:
/// `panic_fmt`'s call into the handler is one call site, whichever path
/// led there).
fn cut(stack: &[u64]) -> &[u64] {
    let Some(machinery) = CALIBRATION.get() else {
        return stack;
    };
    let last = stack
        .iter()
        .take(MACHINERY_DEPTH)
        .rposition(|ip| machinery.contains(ip));
    match last {
        Some(i) => &stack[i + 1..],
        None => stack,
    }
}

/// The machinery frames of the calibration stack: those above the frame
/// of [`calibration_panic`], found by the function the unwinder says the
/// frame is in (not by distance from its start address: the hook's own
/// functions may be laid out just after it). Called inside the calibration
/// panic. Empty if that frame is not found.
fn machinery(frames: &[u64]) -> Vec<u64> {
    let f = calibration_panic as fn() as usize;
    let mut at = None;
    backtrace::trace(|frame| {
        if frame.symbol_address() as usize == f {
            // As `stack::capture` stores it: the call instruction.
            at = Some(frame.ip() as u64 - 1);
            return false;
        }
        true
    });
    at.and_then(|ip| frames.iter().position(|&x| x == ip))
        .map_or_else(Vec::new, |k| frames[..k].to_vec())
}

/// The hook's body; false for the calibration panic (the previous hook
/// is not told of it). The stack is captured at one call site for both
/// kinds of panic, so their frames above the panic site are the same.
#[inline(never)]
fn on_panic(info: &PanicHookInfo<'_>) -> bool {
    let calibrating = CALIBRATING.with(Cell::get);
    if !calibrating && !RECORDING.load(Ordering::Acquire) {
        return true;
    }
    let mut frames = [0u64; MAX_FRAMES];
    let (n, truncated) = capture_into(&mut frames);
    if calibrating {
        let _ = CALIBRATION.set(machinery(&frames[..n]));
        return false;
    }
    record(info, &frames[..n], truncated);
    true
}

fn record(info: &PanicHookInfo<'_>, frames: &[u64], truncated: bool) {
    let Some(rt) = runtime::get() else { return };
    PANICS.fetch_add(1, Ordering::Relaxed);
    let settings = registry().settings.load();
    if !enabled(&settings, "jdk.JavaErrorThrow") {
        return;
    }
    let with_stack = settings
        .get("jdk.JavaErrorThrow")
        .and_then(|s| s.stack_trace)
        .unwrap_or(true);
    let site = cut(frames);
    // Read before the write section loads it (see `cpool::stacks`).
    let epoch = rt.epoch.load(Ordering::Relaxed);
    let stack = if with_stack && !site.is_empty() {
        rt.stacks.intern(site, truncated, epoch).unwrap_or(0)
    } else {
        0
    };
    // This thread's own key: its slot tags it.
    let thread = crate::buffer::local::current_thread_key(rt).unwrap_or(0);
    let message = message(info);
    let class = class_key(info.location().map_or_else(
        || "panicked".to_owned(),
        |l| format!("{}:{}:{}", l.file(), l.line(), l.column()),
    ));
    let ticks = crate::base::clock::ticks();
    let refs = BuiltinRefs {
        thread: None,
        stack,
        stack_epoch: epoch,
    };
    emit_with(refs, |stack| JavaErrorThrow {
        start_time: ticks,
        event_thread: thread,
        stack_trace: stack,
        message: &message,
        thrown_class: class,
    });
}

/// `panicked at FILE:LINE:COL: PAYLOAD`, as the default hook prints it.
fn message(info: &PanicHookInfo<'_>) -> String {
    let payload = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "Box<dyn Any>".to_owned());
    match info.location() {
        Some(l) => format!(
            "panicked at {}:{}:{}: {payload}",
            l.file(),
            l.line(),
            l.column()
        ),
        None => format!("panicked: {payload}"),
    }
}
