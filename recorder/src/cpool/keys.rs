//! The key ranges of the constant pools, all below 2^31.
//!
//! Readers other than the JDK's read constant-pool keys as Java `int`s:
//! async-profiler's converter (`one.jfr.JfrReader`) reads the thread,
//! stack-trace and class references of samples, allocations and locks
//! with a 32-bit varint decoder, and a key at or above 2^31 comes back
//! negative or cut (its classes print as `null`). So every key flightrec
//! writes stays below 2^31, in one range per kind of constant:
//!
//! | range | what |
//! |---|---|
//! | `1 .. FRAME_KEYS_END` | the frame tables (`cpool::methods`): methods, classes, packages, symbols, counted from 1; threads and stack traces count from 1 in pools of their own |
//! | [`APP_LOADER`], `+1` | the program's class loader and its name symbol |
//! | [`TIMED_SITES`] | the timed and traced functions (method timing's), 8 keys each, its descriptor symbol at `TIMED_SITES - 1` |
//! | [`PANIC_CLASSES`], [`ALLOC_CLASSES`], [`LOCK_CLASSES`] | the classes known only by name (`cpool::named_classes`), 2 keys each |
//! | [`OLD_OBJECTS`] `..` [`OLD_OBJECTS_END`] | `jdk.types.OldObject` constants, fresh per chunk, wrapping inside the range |
//!
//! Invariant: the ranges do not overlap and end at or below 2^31
//! ([`KEY_LIMIT`]); each range is wider than what its kind can use (the
//! frame tables and named classes are bounded by the constant memory long
//! before 2^26 entries).

/// Every key is below this: 2^31, the first key a Java `int` cannot hold.
pub(crate) const KEY_LIMIT: u64 = 1 << 31;

/// The frame tables' keys are below this.
pub(crate) const FRAME_KEYS_END: u64 = 0x4000_0000;

/// The program's class loader (`jdk.types.ClassLoader` named `app`); its
/// name symbol is `APP_LOADER + 1`.
pub(crate) const APP_LOADER: u64 = 0x4000_0000;

/// The first timed site's method key.
pub(crate) const TIMED_SITES: u64 = 0x4400_0000;

/// The first panic location class.
pub(crate) const PANIC_CLASSES: u64 = 0x4800_0000;

/// The first allocation class.
pub(crate) const ALLOC_CLASSES: u64 = 0x4c00_0000;

/// The first lock class.
pub(crate) const LOCK_CLASSES: u64 = 0x5000_0000;

/// The first `jdk.types.OldObject` key.
pub(crate) const OLD_OBJECTS: u64 = 0x6000_0000;

/// The end of the `jdk.types.OldObject` range.
pub(crate) const OLD_OBJECTS_END: u64 = KEY_LIMIT;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_ordered_and_fit_an_int() {
        let starts = [
            FRAME_KEYS_END,
            APP_LOADER,
            TIMED_SITES,
            PANIC_CLASSES,
            ALLOC_CLASSES,
            LOCK_CLASSES,
            OLD_OBJECTS,
            OLD_OBJECTS_END,
        ];
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:x?}");
        // The loader and its symbol sit below the timed sites' descriptor.
        const { assert!(APP_LOADER + 1 < TIMED_SITES - 1) };
        const { assert!(OLD_OBJECTS_END <= KEY_LIMIT) };
        assert!(i32::try_from(OLD_OBJECTS_END - 1).is_ok());
    }
}
