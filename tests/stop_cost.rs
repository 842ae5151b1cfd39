//! What `stop()` costs after a long recording of many small chunks
//! (issue 42): 64 threads commit while `rotate()` runs every 5 ms for
//! [`RECORD_FOR`], then `stop()` must return within [`OWN_WORK`] plus the
//! time this test measures for copying a file of the destination's size on
//! the same file system (the bytes already on disk must be moved, at the
//! disk's speed; nothing else may grow with the chunks). And nothing is
//! dropped to meet it: per type, what the writers committed is what
//! JDK 25's `jfr summary` finds in the file, and every `commit_fields` that
//! returned false is counted lost in the file. The repository's path is
//! gone when `stop()` returns, and its files, deleted in the background,
//! within [`REAPED_WITHIN`].

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec::{EventType, EventTypeBuilder, FieldKind, Recording, RecordingConfig};

/// How long the writers commit and the rotator rotates before the stop.
const RECORD_FOR: Duration = Duration::from_secs(60);
/// Emitting threads.
const THREADS: u32 = 64;
/// `rotate()` this often.
const ROTATE_EVERY: Duration = Duration::from_millis(5);
/// What the stop may take beyond copying the destination's bytes.
const OWN_WORK: Duration = Duration::from_secs(2);
/// How long the chunk files' deletion after the stop may take (a
/// functional bound: thousands of files at a few ms each, four at a time).
const REAPED_WITHIN: Duration = Duration::from_secs(300);
/// Each writer sleeps 1 ms after this many events: the file grows by some
/// hundreds of MB, not by what 64 threads flooding flat out could write.
const BURST: u64 = 8;

const BOUNDED: &str = "stopcost.Bounded";
const TEXT: &str = "stopcost.Text";

fn types() -> (&'static EventType, &'static EventType) {
    let bounded = EventTypeBuilder::new(BOUNDED)
        .field("writer", FieldKind::U32)
        .field("seq", FieldKind::U64)
        .build()
        .unwrap();
    let text = EventTypeBuilder::new(TEXT)
        .field("writer", FieldKind::U32)
        .field("seq", FieldKind::U64)
        .field("note", FieldKind::String)
        .build()
        .unwrap();
    (bounded, text)
}

/// Per type: events attempted and events `commit_fields` said it wrote.
#[derive(Default)]
struct Counts {
    attempted: [AtomicU64; 2],
    written: [AtomicU64; 2],
}

fn write(
    types: (&'static EventType, &'static EventType),
    writer: u32,
    counts: &Counts,
    done: &AtomicBool,
) {
    let mut i = 0u64;
    while !done.load(Ordering::Relaxed) {
        let ty = usize::from(i % 8 == 7);
        let ok = if ty == 0 {
            types.0.commit_fields(|w| {
                w.uint(u64::from(writer));
                w.uint(i);
                true
            })
        } else {
            types.1.commit_fields(|w| {
                w.uint(u64::from(writer));
                w.uint(i);
                w.str("a note of some length, as real events carry");
                true
            })
        };
        counts.attempted[ty].fetch_add(1, Ordering::Relaxed);
        if ok {
            counts.written[ty].fetch_add(1, Ordering::Relaxed);
        }
        i += 1;
        if i.is_multiple_of(BURST) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The time to copy `src` into a new file beside it and sync it, as the
/// file system does it (`std::fs::copy` uses `copy_file_range`), from the
/// disk: the chunks the stop copies were written with direct I/O, so they
/// are not in the page cache either.
fn copy_time(src: &Path) -> Duration {
    use std::os::fd::AsRawFd;
    let f = File::open(src).expect("open the destination");
    f.sync_all().expect("sync the destination");
    // SAFETY: `f` is open; the advice only drops clean cached pages.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise");
    let dst = src.with_extension("copy");
    let began = Instant::now();
    std::fs::copy(src, &dst).expect("copy the destination");
    File::options()
        .write(true)
        .open(&dst)
        .and_then(|f| f.sync_all())
        .expect("sync the copy");
    let took = began.elapsed();
    std::fs::remove_file(&dst).unwrap();
    took
}

#[test]
fn stop_after_thousands_of_chunks_costs_its_bytes_and_drops_nothing() {
    let dir = flightrec_testkit::temp_dir("stop_cost");
    let out = dir.join("stop.jfr");
    let config = RecordingConfig::new(&out)
        .repository(dir.join("repo"))
        .max_memory(256 << 20)
        .flush_interval(Duration::from_millis(100));
    let recording = Recording::start(config).expect("start");
    let types = types();
    let counts = Counts::default();
    let done = AtomicBool::new(false);
    let rotations = AtomicU64::new(0);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..THREADS)
            .map(|w| {
                let (counts, done) = (&counts, &done);
                s.spawn(move || write(types, w, counts, done))
            })
            .collect();
        let began = Instant::now();
        while began.elapsed() < RECORD_FOR {
            std::thread::sleep(ROTATE_EVERY);
            recording.rotate().expect("rotate");
            rotations.fetch_add(1, Ordering::Relaxed);
        }
        done.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
    });
    let began = Instant::now();
    let summary = recording.stop().expect("stop");
    let stop = began.elapsed();
    // The repository's path goes with the stop; its files after it.
    assert!(
        !dir.join("repo").exists(),
        "the repository is still at its path after the stop"
    );
    let size = std::fs::metadata(&out).expect("the destination").len();
    let copy = copy_time(&out);
    eprintln!(
        "stop_cost: {} rotations, {} chunks, {:.1} MB: stop {:.2} s, copying the file {:.2} s",
        rotations.load(Ordering::Relaxed),
        summary.chunks,
        size as f64 / 1e6,
        stop.as_secs_f64(),
        copy.as_secs_f64()
    );
    assert!(
        summary.chunks > 1000,
        "{} chunks: the recording did not rotate as asked",
        summary.chunks
    );
    assert!(
        stop <= OWN_WORK + copy,
        "stop() took {:.2} s with {} chunks ({} bytes); copying the file takes {:.2} s",
        stop.as_secs_f64(),
        summary.chunks,
        size,
        copy.as_secs_f64()
    );

    // Nothing dropped to meet the deadline: per type, every event written
    // is in the file, and every one refused is counted lost.
    let text =
        flightrec_testkit::jfr().run_text(&[std::ffi::OsStr::new("summary"), out.as_os_str()]);
    let jdk = flightrec_testkit::Summary::parse(&text);
    assert_eq!(jdk.chunks, summary.chunks, "jfr summary: chunks");
    let mut refused = 0;
    for (name, t) in [(BOUNDED, 0), (TEXT, 1)] {
        let written = counts.written[t].load(Ordering::Relaxed);
        assert!(written > 0, "{name}: nothing written");
        assert_eq!(
            jdk.counts.get(name).copied(),
            Some(written),
            "jfr summary: {name}"
        );
        refused += counts.attempted[t].load(Ordering::Relaxed) - written;
    }
    assert_eq!(
        summary.losses.total_events(),
        refused,
        "refused commits vs losses counted: {:?}",
        summary.losses
    );
    // The file says the same: the `events` of its `flightrec.EventsLost`
    // (printed only if there are any: printing reads the whole file).
    let reports = jdk.counts.get("flightrec.EventsLost").copied().unwrap_or(0);
    let in_file: u64 = if reports == 0 {
        0
    } else {
        let lost = flightrec_testkit::jfr().run_text(&[
            std::ffi::OsStr::new("print"),
            std::ffi::OsStr::new("--json"),
            std::ffi::OsStr::new("--events"),
            std::ffi::OsStr::new("flightrec.EventsLost"),
            out.as_os_str(),
        ]);
        let lost: serde_json::Value = serde_json::from_str(&lost).expect("jfr print --json");
        lost["recording"]["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["values"]["events"].as_u64().expect("events"))
            .sum()
    };
    assert_eq!(in_file, refused, "losses in the file vs refused commits");
    eprintln!("stop_cost: {refused} commits refused, counted lost");
    // The background deletion finishes: nothing is left beside the file.
    let deadline = Instant::now() + REAPED_WITHIN;
    loop {
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("the test's directory")
            .map(|e| e.expect("an entry").file_name())
            .filter(|n| n.as_encoded_bytes() != b"stop.jfr")
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still there {REAPED_WITHIN:?} after the stop: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
