//! Synchronous capture of the current thread's call stack.
//!
//! # Mechanism
//!
//! [`capture`] walks the stack with the platform unwinder through
//! `backtrace::trace_unsynchronized`. On Linux that is libgcc's
//! `_Unwind_Backtrace`, which reads the DWARF call-frame information
//! (`.eh_frame`, found through `.eh_frame_hdr` by binary search); frame
//! pointers are not needed, and std Rust release builds have none. Each frame
//! the unwinder reports is handed to a closure that writes one `u64` into the
//! caller's slice and stops the walk when the slice is full.
//!
//! # Which frames are recorded
//!
//! The unwinder first reports the frames of the unwinding machinery itself,
//! then the frame of [`capture`]. Those are recognised by the start address of
//! their function (`_Unwind_FindEnclosingFunction`), which is compared with
//! the address of [`capture`] (kept `#[inline(never)]` so it has a frame and
//! an address of its own). After that, `skip` further frames are dropped, and
//! the rest are recorded, innermost first: slot 0 is the frame of the caller
//! of [`capture`] (or of its `skip`-th ancestor).
//!
//! # Addresses are lookup addresses
//!
//! Every recorded frame, slot 0 included, is suspended at a call (slot 0 at
//! the call into [`capture`]), so the unwinder reports *return addresses*: the
//! instruction after the call. That instruction may belong to another line, or
//! to another inlined function, than the call. Therefore [`capture`] stores
//! `return_address - 1`, an address inside the call instruction, and the
//! symbolizer looks addresses up exactly as given. A sampler that records an
//! interrupted program counter (which is *not* a return address) stores it
//! unadjusted in slot 0 and adjusts only the frames above it.
//!
//! # Hot-path rules
//!
//! [`capture`] runs on the commit path of events that ask for a stack trace.
//! It does not allocate (the `stack_capture_alloc` test proves it after a
//! warm-up call) and takes no lock of ours: the unwinder reads the unwind
//! tables in place; on glibc, finding them goes through `dl_iterate_phdr`,
//! which takes glibc's loader lock for reading. It is not async-signal-safe
//! and must not be called from a signal handler.
//!
//! Invariant: the slots `out[..len]` hold, innermost first, one lookup address
//! (`return_address - 1`) per frame of the calling thread, starting `skip`
//! frames above the caller of [`capture`].

/// The result of one [`capture`]: how much of the slice was filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    /// Number of frames written to the front of the slice.
    pub len: usize,
    /// Whether the stack had more frames than the slice could hold.
    pub truncated: bool,
}

/// Captures the calling thread's stack into `out`, innermost frame first.
///
/// Slot 0 is the caller of `capture` when `skip` is 0; `skip` drops that many
/// further frames (for example the recorder's own event-commit functions).
/// Each slot holds a return address minus one, ready for symbolization (see
/// the module docs). Never allocates, never takes a lock of ours.
///
/// ```
/// # use recorder as flightrec;
/// let mut ips = [0u64; 64];
/// let captured = flightrec::stack::capture(0, &mut ips);
/// assert!(captured.len > 0);
/// ```
#[inline(never)]
pub fn capture(skip: usize, out: &mut [u64]) -> Captured {
    let this_fn = capture as fn(usize, &mut [u64]) -> Captured as usize;
    let mut seen_self = false;
    let mut to_skip = skip;
    let mut len = 0;
    let mut truncated = false;
    let on_frame = |frame: &backtrace::Frame| -> bool {
        if !seen_self {
            // Frames of the unwinder run until the frame of `capture` itself.
            seen_self = frame.symbol_address() as usize == this_fn;
            return true;
        }
        if to_skip > 0 {
            to_skip -= 1;
            return true;
        }
        let ip = frame.ip() as u64;
        if ip == 0 {
            // The outermost frame of some threads reports no return address.
            return false;
        }
        if len == out.len() {
            truncated = true;
            return false;
        }
        // A return address: step back into the call instruction.
        out[len] = ip - 1;
        len += 1;
        true
    };
    walk(on_frame);
    Captured { len, truncated }
}

/// Runs the platform unwinder over the current stack.
#[cfg(not(windows))]
#[inline(always)]
fn walk(on_frame: impl FnMut(&backtrace::Frame) -> bool) {
    // SAFETY: `trace_unsynchronized` is unsafe only because it does not
    // serialise concurrent walks, which matters where the unwinder is not
    // thread-safe (Windows' dbghelp, handled below). Off Windows the unwinder
    // is libgcc's or LLVM's libunwind, both thread-safe: they only read the
    // unwind tables, and locate them under the loader's own lock.
    // `on_frame` does not panic (it only indexes `out` below its length), so
    // no unwind crosses the unwinder's C frames.
    unsafe { backtrace::trace_unsynchronized(on_frame) }
}

/// Runs the platform unwinder over the current stack, under the `backtrace`
/// crate's global lock, since dbghelp is single-threaded.
#[cfg(windows)]
#[inline(always)]
fn walk(on_frame: impl FnMut(&backtrace::Frame) -> bool) {
    backtrace::trace(on_frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn nested(depth: usize, out: &mut [u64]) -> Captured {
        if depth == 0 {
            capture(0, out)
        } else {
            let captured = nested(depth - 1, out);
            std::hint::black_box(captured)
        }
    }

    #[test]
    fn records_frames_without_zeroes() {
        let mut out = [0u64; 128];
        let captured = capture(0, &mut out);
        assert!(captured.len >= 2, "{captured:?}");
        assert!(!captured.truncated);
        assert!(out[..captured.len].iter().all(|&ip| ip != 0));
    }

    #[test]
    fn skip_drops_innermost_frames() {
        let mut all = [0u64; 128];
        let mut skipped = [0u64; 128];
        let a = nested(5, &mut all);
        let b = {
            // Same call chain, one more frame dropped at the top.
            #[inline(never)]
            fn nested_skip(depth: usize, out: &mut [u64]) -> Captured {
                if depth == 0 {
                    capture(1, out)
                } else {
                    let captured = nested_skip(depth - 1, out);
                    std::hint::black_box(captured)
                }
            }
            nested_skip(5, &mut skipped)
        };
        assert_eq!(a.len, b.len + 1);
        // Above the recursion, both walks see the same caller frames.
        assert_eq!(all[7..a.len], skipped[6..b.len]);
    }

    #[test]
    fn truncates_at_slice_length() {
        let mut out = [0u64; 3];
        let captured = nested(10, &mut out);
        assert_eq!(
            captured,
            Captured {
                len: 3,
                truncated: true
            }
        );
        let mut none: [u64; 0] = [];
        let captured = capture(0, &mut none);
        assert_eq!(
            captured,
            Captured {
                len: 0,
                truncated: true
            }
        );
    }
}
