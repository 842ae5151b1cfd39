//! In-process streaming (`recorder::stream::EventStream`): a finished file
//! read once, a live recording followed across rotations and through its
//! chunk still being written, retention deleting chunks under the reader,
//! the recording stopped while streaming, a start time, stack traces
//! resolved to named frames, and panicking callbacks reported, not fatal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime};

use flightrec_derive::Event;
use jfr_format::read::read_recording;
use recorder::stream::{EventStream, StreamError};
use recorder::{Event, Recording, RecordingConfig, Settings};

static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Event)]
#[event(crate = "recorder", name = "test.stream.Tick", label = "Tick")]
struct Tick {
    seq: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.stream.Alloc", stack_trace)]
struct Alloc {
    size: u64,
}

/// Only the test's own events.
fn quiet() -> Settings {
    let mut s = Settings::new();
    for t in [
        "jdk.ThreadStart",
        "jdk.ThreadEnd",
        "jdk.CPULoad",
        "jdk.ThreadCPULoad",
        "jdk.ResidentSetSize",
    ] {
        s.enable(t, false);
    }
    s
}

#[inline(never)]
fn allocate_here(size: u64) {
    Alloc { size }.commit();
}

#[inline(never)]
fn stream_test_caller(size: u64) {
    allocate_here(size);
    std::hint::black_box(());
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_finished_file_is_read_once_with_fields_threads_and_named_frames() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_file");
    let out = dir.join("file.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).settings(quiet())).unwrap();
    for seq in 0..500 {
        Tick { seq }.commit();
    }
    for size in 0..20 {
        stream_test_caller(size);
    }
    rec.stop().unwrap();

    let seqs = Arc::new(Mutex::new(Vec::new()));
    let frames = Arc::new(Mutex::new(Vec::new()));
    let mut s = EventStream::open_file(&out);
    let q = Arc::clone(&seqs);
    s.on_event("test.stream.Tick", move |e| {
        assert_eq!(
            e.thread_name(),
            Some("a_finished_file_is_read_once_with_fields_threads_and_named_frames")
        );
        q.lock().unwrap().push(e.u64("seq").unwrap());
    });
    let f = Arc::clone(&frames);
    s.on_event("test.stream.Alloc", move |e| {
        f.lock()
            .unwrap()
            .push(e.stack_trace().expect("stack trace"));
    });
    let summary = s.run();
    assert_eq!(*seqs.lock().unwrap(), (0..500).collect::<Vec<_>>());
    let frames = frames.lock().unwrap();
    assert_eq!(frames.len(), 20);
    for st in frames.iter() {
        let names: Vec<&str> = st.iter().map(|f| f.name.as_str()).collect();
        let a = names.iter().position(|n| n.ends_with("allocate_here"));
        let c = names.iter().position(|n| n.ends_with("stream_test_caller"));
        assert!(matches!((a, c), (Some(a), Some(c)) if a < c), "{names:?}");
    }
    let file = read_recording(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(summary.events, file.events().count() as u64);
    assert_eq!(summary.errors, 0);
    let jfr = flightrec_testkit::summary(&out);
    assert_eq!(jfr.counts.get("test.stream.Tick"), Some(&500));
}

#[test]
fn a_live_recording_is_followed_across_rotations_and_its_open_chunk() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_live");
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .flush_interval(Duration::from_millis(50))
            .settings(quiet()),
    )
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let flushes = Arc::new(AtomicU64::new(0));
    let mut s = EventStream::for_recording(&rec).unwrap();
    s.poll_interval(Duration::from_millis(20));
    let q = Arc::clone(&seen);
    s.on_event("test.stream.Tick", move |e| {
        q.lock().unwrap().push(e.u64("seq").unwrap())
    });
    let fl = Arc::clone(&flushes);
    s.on_flush(move || {
        fl.fetch_add(1, Ordering::Relaxed);
    });
    let errors = Arc::new(Mutex::new(Vec::new()));
    let er = Arc::clone(&errors);
    s.on_error(move |e| er.lock().unwrap().push(e.to_string()));
    let h = s.start().unwrap();

    // The chunk still being written: its events arrive before any rotation.
    for seq in 0..300 {
        Tick { seq }.commit();
    }
    wait_until("the open chunk's events", Duration::from_secs(10), || {
        seen.lock().unwrap().len() == 300
    });
    for round in 1..4u64 {
        rec.rotate().unwrap();
        for seq in round * 300..(round + 1) * 300 {
            Tick { seq }.commit();
        }
    }
    wait_until(
        "the rotated chunks' events",
        Duration::from_secs(10),
        || seen.lock().unwrap().len() == 1200,
    );
    rec.stop().unwrap();
    let summary = h.join(); // ends by itself after the stop
    assert_eq!(*seen.lock().unwrap(), (0..1200).collect::<Vec<_>>());
    assert!(summary.chunks >= 4, "{summary:?}");
    assert!(flushes.load(Ordering::Relaxed) >= 2);
    assert!(
        errors.lock().unwrap().is_empty(),
        "{:?}",
        errors.lock().unwrap()
    );
}

#[test]
fn retention_deleting_chunks_under_the_reader_is_reported() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_retention");
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .flush_interval(Duration::from_millis(50))
            .max_size(Some(1))
            .settings(quiet()),
    )
    .unwrap();
    let (blocked_tx, blocked_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Mutex::new(go_rx);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let removed = Arc::new(Mutex::new(Vec::new()));
    let mut s = EventStream::for_recording(&rec).unwrap();
    s.poll_interval(Duration::from_millis(10));
    let q = Arc::clone(&seen);
    s.on_event("test.stream.Tick", move |e| {
        let first = q.lock().unwrap().is_empty();
        q.lock().unwrap().push(e.u64("seq").unwrap());
        if first {
            // Hold the reader inside the first chunk while retention runs.
            blocked_tx.send(()).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
        }
    });
    let r = Arc::clone(&removed);
    s.on_error(move |e| {
        if let StreamError::ChunkRemoved { delivered, .. } = e {
            r.lock().unwrap().push(*delivered);
        }
    });
    let h = s.start().unwrap();
    for seq in 0..100 {
        Tick { seq }.commit();
    }
    blocked_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("reader started");
    for round in 1..5u64 {
        for seq in round * 100..(round + 1) * 100 {
            Tick { seq }.commit();
        }
        rec.rotate().unwrap();
    }
    go_tx.send(()).unwrap();
    for seq in 500..600 {
        Tick { seq }.commit();
    }
    rec.stop().unwrap();
    let summary = h.join();
    let seen = seen.lock().unwrap();
    // The first chunk vanished while it was being read: reported with
    // what was delivered of it; every event delivered is delivered once,
    // in order; the newest chunks (kept by retention) arrive.
    let removed = removed.lock().unwrap();
    assert!(
        !removed.is_empty(),
        "no chunk reported removed: {summary:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "duplicates or disorder"
    );
    assert!(seen.contains(&599), "the last chunk's events: {summary:?}");
    assert!((seen.len() as u64) < 600);
}

#[test]
fn a_stop_while_streaming_ends_the_stream_and_keeps_nothing_silent() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for keep in [true, false] {
        let dir = flightrec_testkit::temp_dir("stream_stop");
        let rec = Recording::start(
            RecordingConfig::new(dir.join("out.jfr"))
                .repository(dir.join("repo"))
                .keep_repository(keep)
                .flush_interval(Duration::from_millis(50))
                .settings(quiet()),
        )
        .unwrap();
        let n = Arc::new(AtomicU64::new(0));
        let missing = Arc::new(AtomicU64::new(0));
        let mut s = EventStream::for_recording(&rec).unwrap();
        s.poll_interval(Duration::from_millis(10));
        let c = Arc::clone(&n);
        s.on_event("test.stream.Tick", move |_| {
            c.fetch_add(1, Ordering::Relaxed);
        });
        let m = Arc::clone(&missing);
        s.on_error(move |e| {
            assert!(
                matches!(
                    e,
                    StreamError::ChunkRemoved { .. } | StreamError::FinalChunkUnread { .. }
                ),
                "{e}"
            );
            m.fetch_add(1, Ordering::Relaxed);
        });
        let h = s.start().unwrap();
        for seq in 0..2000 {
            Tick { seq }.commit();
        }
        rec.stop().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(h.join()).unwrap());
        let summary = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the stream ends after the stop");
        let got = n.load(Ordering::Relaxed);
        if keep {
            assert_eq!(got, 2000, "{summary:?}");
            assert_eq!(missing.load(Ordering::Relaxed), 0);
        } else {
            // The stop removes the chunks once the file is written: what the
            // stream had not read yet is reported.
            assert!(
                got == 2000 || missing.load(Ordering::Relaxed) > 0,
                "{got} {summary:?}"
            );
        }
    }
}

#[test]
fn a_start_time_skips_older_events_and_panicking_callbacks_are_reported() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_start_panic");
    let out = dir.join("out.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).settings(quiet())).unwrap();
    for seq in 0..100 {
        Tick { seq }.commit();
    }
    std::thread::sleep(Duration::from_millis(20));
    let t = SystemTime::now();
    std::thread::sleep(Duration::from_millis(20));
    for seq in 100..400 {
        Tick { seq }.commit();
    }
    rec.stop().unwrap();

    let seen = Arc::new(Mutex::new(Vec::new()));
    let panics = Arc::new(Mutex::new(Vec::new()));
    let mut s = EventStream::open_file(&out);
    s.start_time(t);
    let q = Arc::clone(&seen);
    s.on_event("test.stream.Tick", move |e| {
        let seq = e.u64("seq").unwrap();
        q.lock().unwrap().push(seq);
        if seq % 50 == 0 {
            panic!("callback panics at {seq}");
        }
    });
    let p = Arc::clone(&panics);
    s.on_error(move |e| match e {
        StreamError::CallbackPanicked {
            event_type,
            message,
        } => {
            assert_eq!(event_type.as_deref(), Some("test.stream.Tick"));
            p.lock().unwrap().push(message.clone());
        }
        other => panic!("unexpected {other}"),
    });
    let summary = s.run();
    assert_eq!(*seen.lock().unwrap(), (100..400).collect::<Vec<_>>());
    assert_eq!(
        *panics.lock().unwrap(),
        (100..400)
            .filter(|s| s % 50 == 0)
            .map(|s| format!("callback panics at {s}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(summary.errors, 6);
}

#[test]
fn an_in_memory_recording_is_followed_to_its_end() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_memory");
    let out = dir.join("out.jfr");
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .disk(false)
            .flush_interval(Duration::from_millis(50))
            .settings(quiet()),
    )
    .unwrap();
    assert!(rec.repository().as_os_str().is_empty());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut s = EventStream::for_recording(&rec).expect("an in-memory recording streams");
    s.poll_interval(Duration::from_millis(10));
    let q = Arc::clone(&seen);
    s.on_event("test.stream.Tick", move |e| {
        q.lock().unwrap().push(e.u64("seq").unwrap())
    });
    let er = Arc::clone(&errors);
    s.on_error(move |e| er.lock().unwrap().push(e.to_string()));
    let h = s.start().unwrap();

    // The chunk being written, in memory, is followed as it grows.
    for seq in 0..300 {
        Tick { seq }.commit();
    }
    wait_until("the open chunk's events", Duration::from_secs(10), || {
        seen.lock().unwrap().len() == 300
    });
    rec.rotate().unwrap();
    for seq in 300..600 {
        Tick { seq }.commit();
    }
    // Stopped at once: the last chunk is freed by the stop, yet the stream
    // reads it to its end through its own descriptor.
    rec.stop().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(h.join()).unwrap());
    let summary = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the stream ends after the stop");
    assert_eq!(*seen.lock().unwrap(), (0..600).collect::<Vec<_>>());
    assert!(
        errors.lock().unwrap().is_empty(),
        "{:?}",
        errors.lock().unwrap()
    );
    assert!(summary.chunks >= 2, "{summary:?}");
    // The file the stop wrote holds the events the stream delivered.
    let counts = flightrec_testkit::summary(&out).counts;
    assert_eq!(counts.get("test.stream.Tick"), Some(&600), "{counts:?}");
}

#[test]
fn a_long_chunk_flushed_many_times_is_read_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("stream_read_once");
    let repo = dir.join("repo");
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(&repo)
            .keep_repository(true)
            .flush_interval(Duration::from_secs(3600))
            .settings(quiet()),
    )
    .unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let mut s = EventStream::for_recording(&rec).unwrap();
    s.poll_interval(Duration::from_millis(2));
    let c = Arc::clone(&seen);
    s.on_event("test.stream.Tick", move |_| {
        c.fetch_add(1, Ordering::Relaxed);
    });
    let h = s.start().unwrap();
    let flushes = 40u64;
    for round in 0..flushes {
        for seq in round * 200..(round + 1) * 200 {
            Tick { seq }.commit();
        }
        rec.flush().unwrap();
        // Each flush is read before the next one is made.
        wait_until("the flush's events", Duration::from_secs(10), || {
            seen.load(Ordering::Relaxed) == (round + 1) * 200
        });
    }
    rec.stop().unwrap();
    let summary = h.join();
    assert_eq!(seen.load(Ordering::Relaxed), flushes * 200);
    let chunks: Vec<_> = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jfr"))
        .collect();
    assert_eq!(chunks.len(), 1, "one long chunk: {chunks:?}");
    let size = std::fs::metadata(&chunks[0]).unwrap().len();
    // The chunk grew through 40 flushes, each read at once; its body was
    // still read once (a stream re-reading from the start would read
    // about 20 times as much).
    assert_eq!(summary.bytes_read, size, "{summary:?}");
    assert_eq!(summary.chunks, 1);
    let file = read_recording(&std::fs::read(&chunks[0]).unwrap()).unwrap();
    assert_eq!(
        file.events()
            .filter(|e| &*e.type_name == "test.stream.Tick")
            .count() as u64,
        flushes * 200
    );
}
