//! The rotation protocol under load: 1000+ rotations while threads commit,
//! with every event in exactly one chunk, every referenced constant in the
//! chunk that references it, and every repository chunk file readable alone.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use jfr_format::read::read_recording;
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Seq")]
struct Seq {
    writer: u32,
    seq: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.Traced", stack_trace)]
struct Traced {
    writer: u32,
    seq: u64,
}

#[inline(never)]
fn traced(w: u32, seq: u64) {
    Traced { writer: w, seq }.commit();
}

fn chunk_files(dir: &PathBuf) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn a_thousand_rotations_lose_nothing_duplicate_nothing_and_miss_no_constant() {
    const WRITERS: u32 = 4;
    const ROTATIONS: usize = 1000;
    let dir = std::env::temp_dir().join(format!("flightrec-rotations-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let repo = dir.join("repo");
    let dest = dir.join("all.jfr");
    let rec = Recording::start(
        RecordingConfig::new(&dest)
            .repository(&repo)
            .keep_repository(true)
            .flush_interval(Duration::from_millis(20))
            .max_memory(128 << 20),
    )
    .unwrap();

    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    let written: Vec<u64> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let stop = &stop;
                std::thread::Builder::new()
                    .name(format!("writer-{w}"))
                    .spawn_scoped(s, move || {
                        let mut seq = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            if seq.is_multiple_of(32) {
                                traced(w, seq);
                            } else {
                                Seq { writer: w, seq }.commit();
                            }
                            seq += 1;
                            if seq.is_multiple_of(64) {
                                std::thread::yield_now();
                            }
                        }
                        seq
                    })
                    .unwrap()
            })
            .collect();
        for _ in 0..ROTATIONS {
            rec.rotate().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let rotating = t0.elapsed();
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0, "{:?}", summary.losses);
    // At least one chunk per rotation (a chunk may also have reached the
    // size limit while the first rotation symbolized stacks).
    assert!(
        summary.chunks > ROTATIONS as u64,
        "{} chunks",
        summary.chunks
    );
    eprintln!(
        "{ROTATIONS} rotations in {rotating:?}; {:?} events per writer",
        written
    );

    // Every event exactly once; every reference resolved in its own chunk.
    let file = read_recording(&std::fs::read(&dest).unwrap()).unwrap();
    assert_eq!(file.chunks.len() as u64, summary.chunks);
    let mut seen: Vec<HashSet<u64>> = vec![HashSet::new(); WRITERS as usize];
    for chunk in &file.chunks {
        for e in &chunk.events {
            let traced = match &*e.type_name {
                "test.Seq" => false,
                "test.Traced" => true,
                _ => continue,
            };
            let w = e.get("writer").and_then(|v| v.as_i64()).unwrap() as usize;
            let seq = e.get("seq").and_then(|v| v.as_i64()).unwrap() as u64;
            assert!(seen[w].insert(seq), "writer {w} seq {seq} written twice");
            let thread = e
                .get_path("eventThread.javaName")
                .and_then(|v| v.as_str().map(str::to_owned));
            assert_eq!(
                thread.as_deref(),
                Some(format!("writer-{w}").as_str()),
                "thread constant missing"
            );
            if traced {
                let frames = e
                    .get_path("stackTrace.frames")
                    .and_then(|v| v.as_array().map(|a| a.len()));
                assert!(
                    frames.unwrap_or(0) > 0,
                    "stack trace constant missing for writer {w} seq {seq}"
                );
                let method = e
                    .get_path("stackTrace.frames")
                    .and_then(|v| v.as_array().map(|a| a[0].clone()));
                let name = method
                    .as_ref()
                    .and_then(|f| f.get_path("method.name"))
                    .and_then(|v| v.as_str().map(str::to_owned));
                assert!(name.is_some(), "method constant missing");
            } else {
                assert!(e.get("stackTrace").is_none_or(|v| v.is_null()));
            }
        }
    }
    for (w, n) in written.iter().enumerate() {
        assert_eq!(seen[w].len() as u64, *n, "writer {w}: events lost");
    }

    // Every chunk file of the repository is readable alone, by us and by the
    // JDK, and holds the same events as its copy in the destination file.
    let files = chunk_files(&repo);
    assert_eq!(files.len() as u64, summary.chunks);
    let jdk = flightrec_testkit::jfr().read_each_with_recording_file(&files);
    for (i, f) in files.iter().enumerate() {
        let alone = read_recording(&std::fs::read(f).unwrap()).unwrap();
        assert_eq!(alone.chunks.len(), 1);
        let ours = alone.chunks[0]
            .events
            .iter()
            .filter(|e| e.type_name.starts_with("test."))
            .count() as u64;
        let theirs: u64 = jdk[i]
            .iter()
            .filter(|(k, _)| k.starts_with("test."))
            .map(|(_, v)| v)
            .sum();
        assert_eq!(ours, theirs, "{}", f.display());
        assert_eq!(
            ours as usize,
            file.chunks[i]
                .events
                .iter()
                .filter(|e| e.type_name.starts_with("test."))
                .count()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
