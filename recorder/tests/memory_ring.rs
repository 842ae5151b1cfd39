//! Issue 31: a recording kept in memory (`disk(false)`) is a bounded ring.
//!
//! Four threads flood one event type into a recording kept in memory with
//! a `memory_size` of 1 MiB (chunks of about 256 KiB), long enough to wrap
//! the ring many times. The test checks, every 20 ms, that
//! the chunks the recorder holds in memory (`Recording::memory`, and the
//! sizes of the process's memory files themselves) stay within the bound,
//! and at the stop that the file still accounts for every event:
//! committed = in the file + counted lost, with the evicted ones counted as
//! `LossCause::Evicted` in the file exactly as the recording counted them.
#![cfg(not(flightrec_loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use recorder::{Event, LossCause, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.ring.Tick")]
struct Tick {
    n: u64,
    text: &'static str,
}

const MEMORY_SIZE: u64 = 1 << 20;

/// Bytes of the memory files (`memfd:`) this process holds open (each
/// once, however many descriptors name it).
fn memfd_bytes() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(link) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if link.to_string_lossy().starts_with("/memfd:")
            && let Ok(meta) = std::fs::metadata(entry.path())
            && seen.insert(meta.ino())
        {
            total += meta.len();
        }
    }
    total
}

#[test]
fn an_in_memory_recording_stays_within_memory_size_and_counts_what_it_evicts() {
    let dir = flightrec_testkit::temp_dir("memory-ring");
    let out = dir.join("ring.jfr");
    let mut settings = Settings::new();
    for name in recorder::periodic::system_event_names() {
        settings.enable(name, false);
    }
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .disk(false)
            .memory_size(MEMORY_SIZE)
            // Small buffers: chunks end close to their size limit.
            .thread_buffer_size(8 << 10)
            .flush_interval(Duration::from_millis(100))
            .settings(settings),
    )
    .expect("start");
    let done = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let (mut peak_reported, mut peak_memfd, mut checks) = (0, 0, 0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) {
                    Tick {
                        n,
                        text: "a payload for the ring",
                    }
                    .commit();
                    n += 1;
                    if n.is_multiple_of(64) {
                        // Let the recorder keep up, so most events are
                        // written (and evicted) rather than dropped.
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                committed.fetch_add(n, Ordering::Relaxed);
            });
        }
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
            let m = rec.memory();
            assert_eq!(m.chunks_in_memory_limit, MEMORY_SIZE, "{m:?}");
            peak_reported = peak_reported.max(m.chunks_in_memory);
            let b = memfd_bytes();
            peak_memfd = peak_memfd.max(b);
            checks += 1;
        }
        done.store(true, Ordering::Relaxed);
    });
    let summary = rec.stop().expect("stop");
    let committed = committed.into_inner();
    let evicted = summary.losses.events(LossCause::Evicted);
    eprintln!(
        "ring: {committed} committed, {evicted} evicted, lost {:?}; peak in memory: \
         {peak_reported} B reported, {peak_memfd} B in memory files ({checks} checks)",
        summary.losses
    );
    // The chunks kept, and the memory files (the chunk being written
    // included), within the bound.
    assert!(peak_reported <= MEMORY_SIZE, "{peak_reported} B");
    assert!(peak_memfd <= MEMORY_SIZE, "{peak_memfd} B");
    assert!(evicted > committed / 2, "the ring wrapped many times");

    let jfr = flightrec_testkit::summary(&out);
    let in_file = jfr.counts.get("test.ring.Tick").copied().unwrap_or(0);
    let text = flightrec_testkit::jfr().run_text(&[
        "print",
        "--json",
        "--events",
        "flightrec.EventsLost",
        out.to_str().unwrap(),
    ]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = doc["recording"]["events"].as_array().unwrap();
    let mut lost_in_file = 0;
    let mut evicted_in_file = 0;
    for e in events {
        let cause = e["values"]["cause"].as_str().unwrap();
        let n = e["values"]["events"].as_u64().unwrap();
        let c = LossCause::ALL.iter().find(|c| c.name() == cause).unwrap();
        if c.loses_event() {
            lost_in_file += n;
        }
        if *c == LossCause::Evicted {
            evicted_in_file += n;
        }
    }
    assert_eq!(evicted_in_file, evicted, "evictions counted in the file");
    assert_eq!(
        in_file + lost_in_file,
        committed,
        "committed = in the file ({in_file}) + counted lost ({lost_in_file})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
