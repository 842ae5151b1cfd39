//! `fork()` never waits for a rotation or a stop to finish: the fork
//! handlers take only locks that are held for moments (see
//! `recorder/src/process/fork.rs` and `lifecycle/physical.rs`).
//!
//! 100 forks while writers flood and the recording rotates every 5 ms (each
//! child `_exit(0)`s at once): the 99th percentile of the parent's `fork()`
//! stays under 50 ms. Then forks while a `stop()` of a well-filled
//! recording runs: each returns long before the stop does.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use flightrec::{EventTypeBuilder, FieldKind, Recording, RecordingConfig};

/// One recording per process at a time.
static ALONE: Mutex<()> = Mutex::new(());

/// Forks a child that exits at once; returns how long the parent's
/// `fork()` took.
fn timed_fork() -> Duration {
    let t = Instant::now();
    // SAFETY: the child only calls `_exit`, which is async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: ends the child at once, without running exit handlers.
        unsafe { libc::_exit(0) };
    }
    let took = t.elapsed();
    assert!(pid > 0, "fork failed");
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(r, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    took
}

fn flood_type() -> &'static flightrec::EventType {
    static TY: std::sync::OnceLock<&'static flightrec::EventType> = std::sync::OnceLock::new();
    TY.get_or_init(|| {
        EventTypeBuilder::new("forklat.Tick")
            .field("n", FieldKind::U64)
            .build()
            .unwrap()
    })
}

/// Commits until `done`, resting `rest` after every 1024 events.
fn writer(done: &AtomicBool, rest: Duration) {
    let ty = flood_type();
    let mut n = 0u64;
    while !done.load(Ordering::Relaxed) {
        ty.commit_fields(|w| {
            w.uint(n);
            true
        });
        n += 1;
        if n.is_multiple_of(1024) && !rest.is_zero() {
            std::thread::sleep(rest);
        }
    }
}

#[test]
fn fork_p99_under_50ms_while_rotating_every_5ms() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("fork_latency");
    let out = dir.join("rotating.jfr");
    let recording = Recording::start(RecordingConfig::new(&out)).expect("start");
    let done = AtomicBool::new(false);
    let mut took = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
                recording.rotate().expect("rotate");
            }
        });
        // Every chunk gets events; the forks' latency is the handlers' and
        // the kernel's, not that of a thread starved by our own flood.
        s.spawn(|| writer(&done, Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(50));
        // Spread over some 50 rotations.
        let took: Vec<Duration> = (0..100)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(2));
                timed_fork()
            })
            .collect();
        done.store(true, Ordering::Relaxed);
        took
    });
    let summary = recording.stop().expect("stop");
    assert!(
        summary.chunks > 10,
        "{} chunks: too few rotations",
        summary.chunks
    );
    took.sort();
    let p99 = took[98];

    eprintln!(
        "fork while rotating: median {:?}, p99 {p99:?}, max {:?}, {} chunks",
        took[50], took[99], summary.chunks
    );
    assert!(p99 < Duration::from_millis(50), "fork p99 {p99:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fork_does_not_wait_for_a_stop() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("fork_latency_stop");
    let out = dir.join("stopping.jfr");
    let recording = Recording::start(
        RecordingConfig::new(&out)
            .max_memory(512 << 20)
            .flush_interval(Duration::from_secs(60)),
    )
    .expect("start");
    // A few million events buffered: the stop has them to write.
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| writer(&done, Duration::ZERO));
        }
        std::thread::sleep(Duration::from_millis(400));
        done.store(true, Ordering::Relaxed);
    });
    let stopping = AtomicBool::new(true);
    let (stop_took, forks) = std::thread::scope(|s| {
        let stopper = s.spawn(|| {
            let t = Instant::now();
            recording.stop().expect("stop");
            stopping.store(false, Ordering::Release);
            t.elapsed()
        });
        let mut forks = Vec::new();
        while stopping.load(Ordering::Acquire) && forks.len() < 50 {
            forks.push(timed_fork());
        }
        (stopper.join().unwrap(), forks)
    });
    let longest = forks.iter().max().copied().unwrap_or_default();
    eprintln!(
        "fork during stop: {} forks, longest {longest:?}; the stop took {stop_took:?}",
        forks.len()
    );
    // Generous (a loaded machine): the issue saw 2.9 s, the whole stop.
    assert!(
        longest < Duration::from_millis(500),
        "a fork took {longest:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
