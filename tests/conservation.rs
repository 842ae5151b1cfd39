//! The conservation law, cell by cell: committed = in the file + counted
//! lost, per event type and per writer, whatever rotates the chunks and
//! whenever the recording ends.
//!
//! Emitting threads {1, 2, 4, 8, 16} × {no rotation, `rotate()` every
//! 5 ms, 1 MiB chunks closed by size} × {`stop()` during the flood,
//! `dump()` during the flood, then `stop()`}, three runs each. Every
//! writer commits two types (one with a bounded record, one with a string:
//! both write paths), each event numbered per writer and type, and counts
//! what `commit_fields` says it wrote. The file is read with the crate's
//! own reader: each writer's events of each type must be exactly its
//! numbers 0, 1, ... up to its count, each once, and with ample memory no
//! loss may be counted, in the handle or in the file, whatever the writers
//! were doing when the stop came: a commit racing the stop is in the file,
//! or `commit_fields` returned false and nothing was committed (see "The
//! last stop" in `docs/rotation-protocol.md`). A `dump()` must hold every
//! event committed before it was called, and be a prefix of the final
//! file. One cell per thread count is also counted by JDK 25's
//! `jfr summary`.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec::jfr_format::read::read_recording;
use flightrec::jfr_format::write::header::ChunkHeader;
use flightrec::{EventType, EventTypeBuilder, FieldKind, Recording, RecordingConfig};

/// One recording per process at a time.
static ALONE: Mutex<()> = Mutex::new(());

const BOUNDED: &str = "conserve.Bounded";
const TEXT: &str = "conserve.Text";
/// Every `TEXT_EVERY`th event of a writer is of the string type.
const TEXT_EVERY: u64 = 8;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rotation {
    None,
    Every5Ms,
    Size1MiB,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    Stop,
    DumpThenStop,
}

/// The two types, declared once per process.
fn types() -> (&'static EventType, &'static EventType) {
    static TYPES: std::sync::OnceLock<(&'static EventType, &'static EventType)> =
        std::sync::OnceLock::new();
    *TYPES.get_or_init(|| {
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
    })
}

/// What the file holds: per writer and type (0 bounded, 1 text), the count
/// of events and whether they were exactly 0, 1, ..., each once (the order
/// of records within a chunk is not kept: readers sort by time); the
/// losses its `flightrec.EventsLost` events report; its chunks.
#[derive(Debug)]
struct FileCounts {
    found: Vec<[u64; 2]>,
    exact: Vec<[bool; 2]>,
    lost: u64,
    /// The causes of those losses, as the file names them.
    causes: Vec<String>,
    chunks: u64,
}

fn count_file(path: &Path, writers: usize) -> FileCounts {
    let bytes = std::fs::read(path).expect("read the recording");
    let mut seqs: Vec<[Vec<u64>; 2]> = vec![Default::default(); writers];
    let mut c = FileCounts {
        found: vec![[0; 2]; writers],
        exact: vec![[true; 2]; writers],
        lost: 0,
        causes: Vec::new(),
        chunks: 0,
    };
    let mut at = 0;
    while at < bytes.len() {
        let header = ChunkHeader::parse(&bytes[at..]).expect("a chunk header");
        let end = at + usize::try_from(header.chunk_size).unwrap();
        let chunk = read_recording(&bytes[at..end]).expect("our reader reads the chunk");
        c.chunks += 1;
        for e in chunk.events() {
            let ty = match &*e.type_name {
                BOUNDED => 0,
                TEXT => 1,
                "flightrec.EventsLost" => {
                    c.lost += e.get("events").and_then(|v| v.as_i64()).unwrap() as u64;
                    let cause = e.get("cause").and_then(|v| v.as_str()).unwrap_or("?");
                    c.causes.push(cause.to_string());
                    continue;
                }
                _ => continue,
            };
            let w = e.get("writer").and_then(|v| v.as_i64()).unwrap() as usize;
            let s = e.get("seq").and_then(|v| v.as_i64()).unwrap() as u64;
            seqs[w][ty].push(s);
        }
        at = end;
    }
    for (w, types) in seqs.iter_mut().enumerate() {
        for (ty, s) in types.iter_mut().enumerate() {
            s.sort_unstable();
            c.found[w][ty] = s.len() as u64;
            c.exact[w][ty] = s.iter().enumerate().all(|(i, &n)| n == i as u64);
        }
    }
    c
}

/// Per writer and type: events written (as `commit_fields` said), shared
/// with the main thread as they go.
struct Written(Vec<[AtomicU64; 2]>);

impl Written {
    fn snapshot(&self) -> Vec<[u64; 2]> {
        self.0
            .iter()
            .map(|w| [w[0].load(Ordering::Acquire), w[1].load(Ordering::Acquire)])
            .collect()
    }

    fn total(&self) -> u64 {
        self.snapshot().iter().map(|w| w[0] + w[1]).sum()
    }
}

/// Commits until `done` or `cap` events, numbering each type's events.
fn flood(writer: u32, written: &[AtomicU64; 2], done: &AtomicBool, cap: u64) {
    let (bounded, text) = types();
    let mut seq = [0u64; 2];
    for i in 0..cap {
        if i.is_multiple_of(64) && done.load(Ordering::Relaxed) {
            break;
        }
        let ty = usize::from(i % TEXT_EVERY == TEXT_EVERY - 1);
        let s = seq[ty];
        let ok = if ty == 0 {
            bounded.commit_fields(|w| {
                w.uint(u64::from(writer));
                w.uint(s);
                true
            })
        } else {
            text.commit_fields(|w| {
                w.uint(u64::from(writer));
                w.uint(s);
                w.str("x");
                true
            })
        };
        if ok {
            seq[ty] += 1;
            // Release: the main thread's snapshot before a dump sees only
            // events whose commit returned.
            written[ty].store(seq[ty], Ordering::Release);
        }
    }
}

/// Waits until the writers wrote `n` events in all (at most 20 s: a stuck
/// recorder shows as a failed count, not as a hang).
fn wait_for(written: &Written, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while written.total() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Events before the end (per run, over all writers): enough to fill
/// several 1 MiB chunks, few enough to read back fast.
const BEFORE_END: u64 = 150_000;

/// One run of one cell; panics with the cell's name if the law breaks.
/// Returns the final file when `keep`.
fn run_cell(dir: &Path, threads: u32, rotation: Rotation, end: End, run: u32, keep: bool) {
    let name = format!("{threads}t-{rotation:?}-{end:?}-{run}");
    let out = dir.join(format!("{name}.jfr"));
    let dump = dir.join(format!("{name}.dump.jfr"));
    let mut config = RecordingConfig::new(&out)
        .thread_buffer_size(16 << 10)
        .max_memory(512 << 20)
        .flush_interval(Duration::from_millis(100));
    if rotation == Rotation::Size1MiB {
        config = config.max_chunk_size(1 << 20);
    }
    // Shared with the rotator, taken out for the stop.
    let recording = Mutex::new(Some(Recording::start(config).expect("start")));
    let written = Written((0..threads).map(|_| Default::default()).collect());
    let done = AtomicBool::new(false);
    // Far more than the flood needs before its end: the writers are
    // still committing when the recording stops.
    let cap = 4 * BEFORE_END / u64::from(threads);
    let (summary, before_dump) = std::thread::scope(|s| {
        let rotator = (rotation == Rotation::Every5Ms).then(|| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                    match recording.lock().unwrap().as_ref() {
                        Some(r) => r.rotate().expect("rotate"),
                        None => break,
                    }
                }
            })
        });
        for w in 0..threads {
            let (written, done) = (&written.0[w as usize], &done);
            s.spawn(move || flood(w, written, done, cap));
        }
        let mut before_dump = None;
        if end == End::DumpThenStop {
            wait_for(&written, BEFORE_END / 2);
            before_dump = Some(written.snapshot());
            let r = recording.lock().unwrap();
            r.as_ref().unwrap().dump(&dump).expect("dump");
        }
        wait_for(&written, BEFORE_END);
        let r = recording.lock().unwrap().take().unwrap();
        let summary = r.stop().expect("stop");
        done.store(true, Ordering::Relaxed);
        if let Some(r) = rotator {
            r.join().unwrap();
        }
        (summary, before_dump)
    });
    let written = written.snapshot();
    let file = count_file(&out, threads as usize);
    // With ample memory nothing is lost, not even at the stop: a writer's
    // commit racing it is either in the file or was not committed (its
    // `commit_fields` said false, so it is not in `written`).
    assert_eq!(
        summary.losses.total_events(),
        0,
        "{name}: losses with ample memory: {:?}",
        summary.losses
    );
    assert_eq!(
        (file.lost, &file.causes),
        (0, &Vec::new()),
        "{name}: losses in the file"
    );
    assert_eq!(file.chunks, summary.chunks, "{name}: chunks");
    for (w, wrote) in written.iter().enumerate() {
        // `commit_fields` is true only for an event written into a block,
        // so the file holds exactly those.
        assert_eq!(
            file.found[w], *wrote,
            "{name}: writer {w}: in the file vs written"
        );
        assert_eq!(
            file.exact[w], [true; 2],
            "{name}: writer {w}: a gap or a duplicate"
        );
    }
    if let Some(before) = before_dump {
        let d = count_file(&dump, threads as usize);
        for w in 0..threads as usize {
            for ty in 0..2 {
                assert!(
                    d.found[w][ty] >= before[w][ty] && d.found[w][ty] <= written[w][ty],
                    "{name}: writer {w} type {ty}: dump holds {} of {} committed before it, {} in all",
                    d.found[w][ty],
                    before[w][ty],
                    written[w][ty]
                );
            }
            assert_eq!(
                d.exact[w], [true; 2],
                "{name}: writer {w}: the dump is not a prefix"
            );
        }
        assert_eq!(d.lost, 0, "{name}: losses in the dump");
    }
    if rotation == Rotation::Size1MiB {
        assert!(
            file.chunks >= 2,
            "{name}: {} chunks: no size rotation",
            file.chunks
        );
    }
    if keep {
        // `jfr summary` alone: its counts are exact, and it does not print
        // every event as `flightrec_testkit::summary` first does.
        let text =
            flightrec_testkit::jfr().run_text(&[std::ffi::OsStr::new("summary"), out.as_os_str()]);
        let summary = flightrec_testkit::Summary::parse(&text);
        for (ty, t) in [(BOUNDED, 0), (TEXT, 1)] {
            let ours: u64 = written.iter().map(|w| w[t]).sum();
            assert_eq!(
                summary.counts.get(ty).copied(),
                Some(ours),
                "{name}: jfr summary {ty}"
            );
        }
        assert_eq!(summary.chunks, file.chunks, "{name}: jfr summary chunks");
    }
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&dump);
}

#[test]
fn committed_equals_written_plus_lost_in_every_cell() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("conservation");
    let began = Instant::now();
    for threads in [1, 2, 4, 8, 16] {
        for rotation in [Rotation::None, Rotation::Every5Ms, Rotation::Size1MiB] {
            for end in [End::Stop, End::DumpThenStop] {
                for run in 0..3 {
                    // One cell per thread count is counted by the JDK too.
                    let jdk = rotation == Rotation::Size1MiB && end == End::Stop && run == 0;
                    run_cell(&dir, threads, rotation, end, run, jdk);
                }
            }
        }
    }
    eprintln!(
        "conservation matrix: {:.1} s",
        began.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
