//! One raw sample, as the signal handler writes it into its thread's queue
//! ([`super::queue`]) and the sampler thread reads it back: when, which
//! timer, the unwound frames and what the handler measured.
//!
//! Invariant: a sample is plain data (`Copy`, no pointers, no drop), fixed
//! in size, so writing one in the handler allocates nothing.

/// Deepest stack a sample records.
pub(crate) const MAX_DEPTH: usize = 128;

/// What made a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SampleKind {
    /// The thread's CPU-time timer expired.
    CpuTime = 0,
    /// The wall-clock timer expired.
    Wall = 1,
}

/// One captured sample, as the handler writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawSample {
    /// `clock::ticks()` in the handler.
    pub(crate) ticks: i64,
    pub(crate) kind: SampleKind,
    /// The thread consumed CPU since its previous wall-clock sample.
    pub(crate) running: bool,
    /// The unwind stopped early (unreadable memory, no unwind info).
    pub(crate) failed: bool,
    /// The stack had more than [`MAX_DEPTH`] frames.
    pub(crate) truncated: bool,
    pub(crate) len: u16,
    /// Expiries merged into this one signal (the kernel checks CPU timers
    /// at its tick, so periods shorter than a tick arrive as overruns).
    pub(crate) overrun: u32,
    /// Ticks the handler spent on this sample, from its entry to the end
    /// of the unwind (summed into `crate::lifecycle::statistics` by the consumer).
    pub(crate) handler_ticks: u64,
    /// The thread's label context id when the signal came (see
    /// `crate::labels`); 0 for none.
    pub(crate) context: u64,
    /// Lookup addresses, innermost first: the interrupted PC unadjusted,
    /// then return addresses minus one.
    pub(crate) frames: [u64; MAX_DEPTH],
}

impl RawSample {
    pub(crate) const EMPTY: RawSample = RawSample {
        ticks: 0,
        kind: SampleKind::CpuTime,
        running: false,
        failed: false,
        truncated: false,
        len: 0,
        overrun: 0,
        handler_ticks: 0,
        context: 0,
        frames: [0; MAX_DEPTH],
    };

    /// The recorded frames.
    pub(crate) fn frames(&self) -> &[u64] {
        &self.frames[..self.len as usize]
    }
}
