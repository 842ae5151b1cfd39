//! Panics in the recorder's own threads: caught, reported once, counted.
//!
//! The recorder runs code on threads it owns (the recorder thread, the
//! sampler's consumer, the periodic thread and the user closures it calls)
//! and in hooks the process calls (the `FLIGHTREC`
//! constructor and exit handler). A panic there must not take the program
//! down, hang `stop()`, or leave events enabled with nobody draining them.
//! Each such place runs its body under [`catch`], which reports the panic
//! on stderr (once per place and process), counts it as
//! [`LossCause::Panicked`](crate::LossCause::Panicked), and hands the
//! message back so the caller can fail visibly (the recorder thread turns
//! it into [`RecordingError::Failed`](crate::RecordingError::Failed), whose
//! context says the recorder thread panicked).
//!
//! # Fault injection
//!
//! [`inject`] arms a one-shot panic at one of these places, so the tests
//! can show the recovery on the real threads. Checking it is one relaxed
//! load on a path that already sleeps or syscalls.
//!
//! Invariant: no panic raised on a recorder-owned thread or in a
//! process hook unwinds past the function that owns that thread or hook.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::base::loss::LossCause;
use crate::base::sync::global::{AtomicU64, Ordering};

/// A place in the recorder where a panic is caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// One round of the recorder thread's loop (drain, flush, rotate).
    RecorderThread,
    /// One pass of the CPU sampler's consumer thread.
    SamplerPass,
    /// A user's periodic-event closure (`add_periodic_event`).
    PeriodicCallback,
}

impl Place {
    fn bit(self) -> u64 {
        match self {
            Self::RecorderThread => 1,
            Self::SamplerPass => 2,
            Self::PeriodicCallback => 4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::RecorderThread => "the recorder thread",
            Self::SamplerPass => "the CPU sampler's thread",
            Self::PeriodicCallback => "a periodic event's callback",
        }
    }
}

/// Places armed by [`inject`].
static INJECTED: AtomicU64 = AtomicU64::new(0);
/// Places that already reported a panic on stderr.
static REPORTED: AtomicU64 = AtomicU64::new(0);

/// Arms a one-shot panic at `place`, raised the next time it runs. For
/// tests of the recovery paths.
#[doc(hidden)]
pub fn inject(place: Place) {
    INJECTED.fetch_or(place.bit(), Ordering::Relaxed);
}

/// Panics if a fault was injected at `place` (and disarms it).
#[inline]
pub(crate) fn injection_point(place: Place) {
    if INJECTED.load(Ordering::Relaxed) & place.bit() != 0 {
        injected(place);
    }
}

#[cold]
#[inline(never)]
fn injected(place: Place) {
    if INJECTED.fetch_and(!place.bit(), Ordering::Relaxed) & place.bit() != 0 {
        panic!("flightrec: fault injected in {}", place.name());
    }
}

/// Runs `f`; a panic is reported (once per place), counted, and returned
/// as its message.
pub(crate) fn catch<R>(place: Place, f: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = message(&*payload);
        if let Some(rt) = crate::runtime::get() {
            rt.losses.record(LossCause::Panicked, 0);
        }
        if REPORTED.fetch_or(place.bit(), Ordering::Relaxed) & place.bit() == 0 {
            eprintln!("flightrec: {} panicked: {message}", place.name());
        }
        message
    })
}

/// The text of a panic payload.
pub(crate) fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}
