//! Full thread buffers go to the chunk file from their own memory, each
//! after a filler record that aligns it (`recording::chunk_out`'s
//! *Gathered blocks*). Two threads fill dozens of buffers each: the JDK
//! counts and prints every event exactly once, with every value in order
//! per thread, and, where the repository takes direct I/O, the fillers are
//! in the file (as `jdk.Checkpoint` records) and skipped.

use std::collections::BTreeMap;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use flightrec_derive::Event;
use jfr_format::read::{Value, read_recording};
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.InPlace")]
struct InPlace {
    thread: u64,
    n: u64,
    x: f64,
}

/// Events per thread: about 1.6 MB each, some 25 buffers of 64 KiB.
const PER_THREAD: u64 = 60_000;
const THREADS: u64 = 2;

/// Whether files in `dir` take `O_DIRECT` (a tmpfs does not: the chunk is
/// then written through the page cache, with no fillers).
fn takes_direct_io(dir: &Path) -> bool {
    let probe = dir.join("direct-probe");
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[test]
fn buffers_written_in_place_read_back_exactly() {
    let dir = flightrec_testkit::temp_dir("in_place");
    let repo = dir.join("repo");
    let out = dir.join("out.jfr");
    std::fs::create_dir_all(&repo).unwrap();
    let direct = takes_direct_io(&repo);
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .repository(&repo)
            .keep_repository(true),
    )
    .unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                for n in 0..PER_THREAD {
                    InPlace {
                        thread: t,
                        n,
                        x: n as f64 / 2.0,
                    }
                    .commit();
                }
            });
        }
    });
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0, "64 MiB of buffers");

    let jdk = flightrec_testkit::summary(&out);
    assert_eq!(jdk.counts["test.InPlace"], THREADS * PER_THREAD);
    let checkpoints = jdk.counts["jdk.Checkpoint"];
    eprintln!(
        "{} chunks, {checkpoints} checkpoint records, direct I/O: {direct}",
        jdk.chunks
    );
    if direct {
        // One filler before nearly every full buffer (none only where the
        // file happened to be aligned already): far more checkpoint records
        // than the few flushes of a run this short write.
        let buffers = THREADS * PER_THREAD * 27 / (64 << 10);
        assert!(
            checkpoints >= buffers / 2,
            "{checkpoints} checkpoint records for about {buffers} full buffers"
        );
    }

    // The JDK's values: each (thread, n) once, with its own x.
    let mut seen: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in flightrec_testkit::print_json(&out).as_array().unwrap() {
        if e["type"] != "test.InPlace" {
            continue;
        }
        let v = &e["values"];
        let n = v["n"].as_u64().unwrap();
        assert_eq!(v["x"].as_f64().unwrap(), n as f64 / 2.0);
        seen.entry(v["thread"].as_u64().unwrap())
            .or_default()
            .push(n);
    }
    let expected: Vec<u64> = (0..PER_THREAD).collect();
    assert_eq!(seen.len() as u64, THREADS);
    for (t, mut ns) in seen {
        ns.sort_unstable();
        assert!(
            ns == expected,
            "thread {t}: {} events, not each of 0..{PER_THREAD} once",
            ns.len()
        );
    }
    // File order, read by the crate's own reader: a thread's buffers reach
    // the file in the order it filled them.
    let file = read_recording(&std::fs::read(&out).unwrap()).unwrap();
    let mut order: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for e in file.events().filter(|e| &*e.type_name == "test.InPlace") {
        let field = |name: &str| match e.get(name) {
            Some(Value::Long(v)) => *v as u64,
            other => panic!("{name}: {other:?}"),
        };
        order.entry(field("thread")).or_default().push(field("n"));
    }
    for (t, ns) in order {
        assert!(
            ns == expected,
            "thread {t}: not 0..{PER_THREAD} in file order"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
