//! Whether samples carry `contextId`: asked for by the program
//! ([`set_in_samples`]) or by the features that need labels (Pyroscope),
//! latched for the recorder's life as it starts, so the metadata and the
//! sampler agree on the samples' layout.

use crate::base::sync::global::{AtomicBool, Ordering};

/// Asked for by [`set_in_samples`].
static ASKED: AtomicBool = AtomicBool::new(false);

/// Whether the running recorder's samples carry `contextId` (latched at
/// its start, [`latch_for_recording`]).
static IN_SAMPLES: AtomicBool = AtomicBool::new(false);

/// Makes the samples of recordings started from now on carry `contextId`
/// (the label set of the sampled thread), or not. Off by default, on
/// anyway while Pyroscope's events are on or a recording uploads to
/// Pyroscope. A running recording keeps the layout it started with.
pub fn set_in_samples(on: bool) {
    ASKED.store(on, Ordering::Relaxed);
}

/// Fixes, as the recorder starts, whether its samples carry `contextId`:
/// if [`set_in_samples`] asked for it or `pyroscope` (Pyroscope's events
/// or an upload are on). Returns the choice.
pub(crate) fn latch_for_recording(pyroscope: bool) -> bool {
    let on = pyroscope || ASKED.load(Ordering::Relaxed);
    IN_SAMPLES.store(on, Ordering::Relaxed);
    on
}

/// Whether the running recorder's samples carry `contextId`: the metadata
/// declares the field and the sampler writes it.
#[inline]
pub(crate) fn in_samples() -> bool {
    IN_SAMPLES.load(Ordering::Relaxed)
}
