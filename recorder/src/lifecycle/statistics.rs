//! The recorder's own cost: the CPU time of flightrec's threads and of its
//! signal handler, the bytes and events written, and the buffers in use,
//! read by [`crate::Recording::statistics`] and written every second as
//! `flightrec.RecorderStatistics` (by the periodic thread).
//!
//! # Mechanism
//!
//! * *Threads*: the recorder, sampler and periodic threads each publish
//!   their kernel thread id when they start; a reader takes their CPU time
//!   from the thread's CPU clock (`clock_gettime` on the clock id the
//!   kernel derives from the id, valid from any thread of the process).
//!   A thread that ends adds its final CPU time to its role's total
//!   first, then withdraws its id, so no time is lost when it is gone.
//! * *Signal handler*: the handler stamps each sample with the ticks it
//!   spent from entry to the end of the unwind (one more clock read per
//!   sample, no shared write); the sampler thread, the queues' only
//!   consumer, sums them here. Samples of flightrec's own threads are not
//!   summed: their handler time is already in those threads' CPU time.
//!   The kernel's delivery of the signal (entry, `sigreturn`) is not
//!   measured; it shows in the process CPU time only.
//! * *Bytes and events*: the recorder thread publishes, after every
//!   drain, the bytes in the finished chunks plus the current one and the
//!   event records it has drained from the buffers (its own records, such
//!   as the loss reports and the settings, are not counted).
//! * *Samples*: the sampler thread counts the sample events it writes.
//!
//! Everything counts from the start of the current recording ([`reset`]);
//! the process CPU time too (from a reading at the start).
//!
//! Invariant: each counter has one writer (a role's thread, or the
//! sampler for the handler sum), so plain stores or uncontended adds
//! suffice; nothing here is touched by an event's commit path or inside
//! the signal handler.

use std::time::{Duration, Instant};

use crate::base::sync::global::{AtomicU64, Ordering};

/// flightrec's threads whose CPU time is its own cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `flightrec-recorder`: drains buffers, writes chunks.
    Recorder = 0,
    /// `flightrec-sampler`: timers, sample queues, sample events.
    Sampler = 1,
    /// `flightrec-periodic`: periodic and thread events.
    Periodic = 2,
}

const ROLES: usize = 3;

/// The counters of the current recording.
#[derive(Debug)]
struct Counters {
    /// Kernel thread id of each role's live thread (0: none).
    tid: [AtomicU64; ROLES],
    /// CPU nanoseconds of each role's threads that ended.
    ended_cpu: [AtomicU64; ROLES],
    /// Ticks spent in the signal handler (summed by the sampler thread).
    handler_ticks: AtomicU64,
    /// Sample events written.
    samples: AtomicU64,
    /// Bytes in the recording's chunks (finished and current).
    bytes: AtomicU64,
    /// Event records drained from the buffers into chunks.
    events: AtomicU64,
    /// Bytes of finished chunks kept in memory (`disk(false)`).
    in_memory: AtomicU64,
    /// Process CPU nanoseconds when the recording started.
    process_cpu_start: AtomicU64,
}

/// When the current recording started (for the first period's rates).
fn started_at() -> &'static crate::base::sync::global::Mutex<Option<Instant>> {
    static STARTED: crate::base::sync::OnceLock<crate::base::sync::global::Mutex<Option<Instant>>> =
        crate::base::sync::OnceLock::new();
    STARTED.get_or_init(|| crate::base::sync::global::Mutex::new(None))
}

/// When the current recording started.
pub(crate) fn started() -> Option<Instant> {
    *started_at().lock()
}

static COUNTERS: Counters = Counters {
    tid: [const { AtomicU64::new(0) }; ROLES],
    ended_cpu: [const { AtomicU64::new(0) }; ROLES],
    handler_ticks: AtomicU64::new(0),
    samples: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    events: AtomicU64::new(0),
    in_memory: AtomicU64::new(0),
    process_cpu_start: AtomicU64::new(0),
};

/// What recording has cost so far, from the start of the recording
/// ([`crate::Recording::statistics`]; the same figures as the
/// `flightrec.RecorderStatistics` events).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub struct RecorderStatistics {
    /// CPU time of the recorder thread (draining buffers, writing chunks).
    pub recorder_cpu: Duration,
    /// CPU time of the sampler thread (timers, stacks, sample events).
    pub sampler_cpu: Duration,
    /// CPU time of the periodic thread (system, thread and these events).
    pub periodic_cpu: Duration,
    /// Time spent in the sampling signal handler on the sampled threads,
    /// summed over the samples (the kernel's signal delivery not included).
    pub signal_handler: Duration,
    /// CPU time of the whole process since the recording started.
    pub process_cpu: Duration,
    /// Bytes of the recording's chunks so far.
    pub bytes_written: u64,
    /// Events drained from the buffers into chunks.
    pub events: u64,
    /// Sample events written (`jdk.CPUTimeSample`, `jdk.ExecutionSample`).
    pub samples: u64,
    /// Share of the event buffers in use (0 to 1).
    pub buffer_occupancy: f64,
}

impl RecorderStatistics {
    /// The recorder's own CPU time: its threads plus the signal handler.
    pub fn own_cpu(&self) -> Duration {
        self.recorder_cpu + self.sampler_cpu + self.periodic_cpu + self.signal_handler
    }

    /// [`own_cpu`](Self::own_cpu) over the process's CPU time (0 to 1):
    /// the recorder's overhead, as a share that a busy neighbour on the
    /// machine does not disturb the way it disturbs wall time.
    pub fn overhead(&self) -> f64 {
        let process = self.process_cpu.as_secs_f64();
        if process <= 0.0 {
            return 0.0;
        }
        (self.own_cpu().as_secs_f64() / process).min(1.0)
    }
}

/// Starts counting for a new recording.
pub(crate) fn reset() {
    let c = &COUNTERS;
    for r in 0..ROLES {
        c.ended_cpu[r].store(0, Ordering::Relaxed);
    }
    c.handler_ticks.store(0, Ordering::Relaxed);
    c.samples.store(0, Ordering::Relaxed);
    c.bytes.store(0, Ordering::Relaxed);
    c.events.store(0, Ordering::Relaxed);
    c.in_memory.store(0, Ordering::Relaxed);
    c.process_cpu_start.store(
        clock_nanos(libc::CLOCK_PROCESS_CPUTIME_ID),
        Ordering::Relaxed,
    );
    *started_at().lock() = Some(Instant::now());
}

/// Held by a role's thread for its life ([`RoleThread::enter`] first
/// thing on the thread): publishes the thread's id, and when dropped (the
/// thread's last act, also when it unwinds) adds its CPU time to the
/// role's total before withdrawing the id.
#[derive(Debug)]
pub(crate) struct RoleThread(Role);

impl RoleThread {
    /// Publishes the calling thread as `role`'s.
    pub(crate) fn enter(role: Role) -> Self {
        let tid = crate::base::sync::os_thread_id() as u64;
        COUNTERS.tid[role as usize].store(tid, Ordering::Release);
        // The recorder's own allocations are not the program's.
        crate::feature::each(|f| f.own_thread());
        Self(role)
    }
}

impl Drop for RoleThread {
    fn drop(&mut self) {
        let r = self.0 as usize;
        let own = clock_nanos(libc::CLOCK_THREAD_CPUTIME_ID);
        COUNTERS.ended_cpu[r].fetch_add(own, Ordering::Relaxed);
        COUNTERS.tid[r].store(0, Ordering::Release);
    }
}

/// The kernel thread ids of the recorder and periodic threads (0: none):
/// the sampler does not add their handler time (it is in their CPU time).
pub(crate) fn is_own_thread(tid: u64) -> bool {
    tid != 0
        && (COUNTERS.tid[Role::Recorder as usize].load(Ordering::Relaxed) == tid
            || COUNTERS.tid[Role::Periodic as usize].load(Ordering::Relaxed) == tid)
}

/// Sampler thread: ticks spent in the handler and sample events written
/// in one drain.
pub(crate) fn add_samples(handler_ticks: u64, samples: u64) {
    if handler_ticks > 0 {
        COUNTERS
            .handler_ticks
            .fetch_add(handler_ticks, Ordering::Relaxed);
    }
    if samples > 0 {
        COUNTERS.samples.fetch_add(samples, Ordering::Relaxed);
    }
}

/// Recorder thread: the bytes in the recording's chunks and the events
/// drained so far.
pub(crate) fn set_written(bytes: u64, events: u64) {
    COUNTERS.bytes.store(bytes, Ordering::Relaxed);
    COUNTERS.events.store(events, Ordering::Relaxed);
}

/// Recorder thread: the bytes of finished chunks kept in memory
/// (`disk(false)`).
pub(crate) fn set_in_memory(bytes: u64) {
    COUNTERS.in_memory.store(bytes, Ordering::Relaxed);
}

/// The bytes of finished chunks kept in memory, as last published.
pub(crate) fn in_memory() -> u64 {
    COUNTERS.in_memory.load(Ordering::Relaxed)
}

/// The figures now; `buffer_occupancy` is the caller's (it knows the pool).
pub(crate) fn snapshot(buffer_occupancy: f64) -> RecorderStatistics {
    let c = &COUNTERS;
    let process = clock_nanos(libc::CLOCK_PROCESS_CPUTIME_ID)
        .saturating_sub(c.process_cpu_start.load(Ordering::Relaxed));
    let handler =
        crate::base::clock::ticks_to_nanos(c.handler_ticks.load(Ordering::Relaxed) as i64);
    RecorderStatistics {
        recorder_cpu: Duration::from_nanos(role_cpu(Role::Recorder)),
        sampler_cpu: Duration::from_nanos(role_cpu(Role::Sampler)),
        periodic_cpu: Duration::from_nanos(role_cpu(Role::Periodic)),
        signal_handler: Duration::from_nanos(handler.max(0) as u64),
        process_cpu: Duration::from_nanos(process),
        bytes_written: c.bytes.load(Ordering::Relaxed),
        events: c.events.load(Ordering::Relaxed),
        samples: c.samples.load(Ordering::Relaxed),
        buffer_occupancy,
    }
}

/// CPU nanoseconds of `role`'s threads in this recording.
fn role_cpu(role: Role) -> u64 {
    let r = role as usize;
    let tid = COUNTERS.tid[r].load(Ordering::Acquire);
    let live = if tid == 0 {
        Some(0)
    } else {
        crate::base::clock::thread_cpu_time_ns(tid)
    };
    match live {
        Some(live) => COUNTERS.ended_cpu[r].load(Ordering::Relaxed) + live,
        // It ended between the two loads: its time is in the total now.
        None => COUNTERS.ended_cpu[r].load(Ordering::Relaxed),
    }
}

fn clock_nanos(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; these clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_own_cpu_over_process_cpu() {
        let ms = Duration::from_millis;
        let s = RecorderStatistics {
            recorder_cpu: ms(1),
            sampler_cpu: ms(2),
            periodic_cpu: ms(3),
            signal_handler: ms(4),
            process_cpu: ms(1000),
            ..RecorderStatistics::default()
        };
        assert_eq!(s.own_cpu(), ms(10));
        assert!((s.overhead() - 0.01).abs() < 1e-12);
        assert_eq!(RecorderStatistics::default().overhead(), 0.0);
    }
}
