//! The settings word: a type's effective settings packed into one `u64`
//! that the hot path reads with one load.
//!
//! Each [`EventType`](crate::EventType) holds one `AtomicU64`:
//!
//! ```text
//! bit 0  registered      bit 1  enabled      bit 2  stack trace
//! bit 3  duration type   bit 4  clock is the TSC
//! bit 5  off (registered and not enabled)
//! bit 6  instant (registered, enabled, clock the TSC, no stack trace, not
//!        a duration type)
//! bits 7..64  threshold in ticks (saturating)
//! ```
//!
//! so an emitter reads all of a type's settings with one load and always sees
//! one consistent version of them, never the new `enabled` with the old
//! threshold. Bits 5 and 6 repeat what the others say, as one bit each: a
//! commit of a disabled type tests bit 5 first and is done after one load
//! and one branch; an instant commit that may take the shortest path is
//! told so by bit 6, one test instead of a mask and a compare. Bits 3 and 4 are not settings: the type's kind, and, in an
//! enabled word, whether the clock is the TSC (fixed for the process once a
//! recording calibrated it). They ride in the word so the hot path branches
//! on a register instead of loading the type's description and the clock's
//! state.
//!
//! Invariant: every settings word is 0 or made by [`pack`] (so bits 5 and
//! 6 agree with the others), and an [`EnabledWord`] exists only for a word
//! with the enabled bit, read with Acquire after a recording started (so
//! the runtime exists and the clock is calibrated).

/// Bit: the type is registered.
pub(crate) const REGISTERED: u64 = 1;
/// Bit: events of the type are written.
pub(crate) const ENABLED: u64 = 1 << 1;
/// Bit: events capture a stack trace.
pub(crate) const STACK_TRACE: u64 = 1 << 2;
/// Bit: the type is a duration event (its records carry a duration).
pub(crate) const DURATION: u64 = 1 << 3;
/// Bit: [`crate::base::clock::ticks`] reads the TSC (see [`EnabledWord::ticks`]).
pub(crate) const CLOCK_TSC: u64 = 1 << 4;
/// Bit: the type is registered and not enabled: an event of it is
/// dropped, uncounted, after this one test.
pub(crate) const OFF: u64 = 1 << 5;
/// Bit: an instant commit takes the shortest path: registered, enabled,
/// clock the TSC, no stack trace, not a duration type (see
/// [`EnabledWord::instant`]).
pub(crate) const INSTANT: u64 = 1 << 6;
const THRESHOLD_SHIFT: u32 = 7;

/// The bits [`INSTANT`] stands for, and their values then.
const INSTANT_MASK: u64 = REGISTERED | ENABLED | STACK_TRACE | DURATION | CLOCK_TSC;
const INSTANT_BITS: u64 = REGISTERED | ENABLED | CLOCK_TSC;

/// Packs a type's effective settings into its word. `fixed` holds the bits
/// that do not change after registration ([`DURATION`], [`CLOCK_TSC`]).
pub(crate) fn pack(enabled: bool, stack_trace: bool, threshold_ticks: u64, fixed: u64) -> u64 {
    debug_assert_eq!(fixed & !(DURATION | CLOCK_TSC), 0);
    let threshold = threshold_ticks.min(u64::MAX >> THRESHOLD_SHIFT);
    let word = REGISTERED
        | if enabled { ENABLED } else { OFF }
        | if stack_trace { STACK_TRACE } else { 0 }
        | fixed
        | threshold << THRESHOLD_SHIFT;
    if word & INSTANT_MASK == INSTANT_BITS {
        word | INSTANT
    } else {
        word
    }
}

/// A settings word with the enabled bit, as read by
/// [`EventType::enabled_word`](crate::EventType): the only way to get one,
/// so holding it proves a recording started, hence that the runtime exists
/// and the clock is calibrated (`Recording::start` does both before it
/// publishes any enabled word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EnabledWord(u64);

impl EnabledWord {
    /// `word` if it has the enabled bit. Only `EventType`'s word readers
    /// call this, on a word they loaded with Acquire.
    #[inline(always)]
    pub(crate) fn new(word: u64) -> Option<Self> {
        (word & ENABLED != 0).then_some(Self(word))
    }

    /// `word` if an instant commit of it takes the shortest path: registered
    /// and enabled, clock the TSC, no stack trace, not a duration type (the
    /// threshold does not apply to an instant commit). One test of
    /// [`INSTANT`], which the compiler is told implies the five bits, so
    /// nothing after it tests them again; the same callers as
    /// [`new`](Self::new).
    #[inline(always)]
    pub(crate) fn instant(word: u64) -> Option<Self> {
        if word & INSTANT == 0 {
            return None;
        }
        // SAFETY: every settings word is made by `pack` (the module's
        // invariant), which sets INSTANT only with these bits.
        unsafe { std::hint::assert_unchecked(word & INSTANT_MASK == INSTANT_BITS) };
        Some(Self(word))
    }

    /// The word (for the loom models' checks of what the hot path read).
    #[allow(dead_code)] // called by `loom_api` only
    pub(crate) fn bits(self) -> u64 {
        self.0
    }

    /// True if events capture a stack trace.
    #[inline(always)]
    pub(crate) fn stack_trace(self) -> bool {
        self.0 & STACK_TRACE != 0
    }

    /// True if the type is a duration event.
    #[inline(always)]
    pub(crate) fn is_duration(self) -> bool {
        self.0 & DURATION != 0
    }

    /// The threshold, in ticks.
    #[inline(always)]
    pub(crate) fn threshold_ticks(self) -> u64 {
        threshold_ticks(self.0)
    }

    /// The clock now, as [`crate::base::clock::ticks`] reads it: the TSC read
    /// inline when the word says the clock is the TSC.
    #[inline(always)]
    pub(crate) fn ticks(self) -> i64 {
        if self.0 & CLOCK_TSC != 0 {
            crate::base::clock::read_tsc()
        } else {
            crate::base::clock::ticks()
        }
    }
}

/// The threshold, in ticks, of a settings word.
#[inline]
pub(crate) fn threshold_ticks(word: u64) -> u64 {
    word >> THRESHOLD_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_pack_every_setting() {
        let w = pack(true, false, 12345, DURATION);
        assert_eq!(
            w & (REGISTERED | ENABLED | STACK_TRACE | DURATION | CLOCK_TSC | OFF),
            REGISTERED | ENABLED | DURATION
        );
        assert_eq!(threshold_ticks(w), 12345);
        let w = pack(false, true, u64::MAX, CLOCK_TSC);
        assert_eq!(threshold_ticks(w), u64::MAX >> THRESHOLD_SHIFT);
        assert_eq!(
            w & (ENABLED | STACK_TRACE | CLOCK_TSC | OFF),
            STACK_TRACE | CLOCK_TSC | OFF
        );
        // Only a registered, disabled type is off: an enabled one is not,
        // nor is an unregistered one (word 0), whose first commit
        // registers it.
        assert_eq!(pack(true, true, 0, CLOCK_TSC) & OFF, 0);
        // The shortest path: only an enabled instant type without a stack
        // trace on the TSC.
        assert_ne!(pack(true, false, 9, CLOCK_TSC) & INSTANT, 0);
        assert_eq!(pack(true, true, 9, CLOCK_TSC) & INSTANT, 0);
        assert_eq!(pack(true, false, 9, CLOCK_TSC | DURATION) & INSTANT, 0);
        assert_eq!(pack(true, false, 9, 0) & INSTANT, 0);
        assert_eq!(pack(false, false, 9, CLOCK_TSC) & INSTANT, 0);
        assert_eq!(threshold_ticks(pack(true, false, 9, CLOCK_TSC)), 9);
        assert_eq!(
            pack(false, false, 0, 0) & (OFF | REGISTERED),
            OFF | REGISTERED
        );
    }
}
