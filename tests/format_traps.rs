//! The format traps of docs/jfr-format.md §10 that a writer can fall
//! into, each written with flightrec's chunk writer and read by JDK 25's
//! `jfr`. Where the trap is a JDK quirk (reused metadata ids, reused
//! constant keys), a control file shows the quirk is real, so the passing
//! case proves something.

use std::borrow::Cow;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use flightrec::jfr_format::builtin::start_time;
use flightrec::jfr_format::schema::EVENT_SUPER_TYPE;
use flightrec::jfr_format::write::checkpoint::FLAG_FLUSH;
use flightrec::jfr_format::write::constants::{ThreadValue, write_thread};
use flightrec::jfr_format::write::encode::Sink;
use flightrec::jfr_format::write::header::{ChunkHeader, STATE_FINISHED};
use flightrec::jfr_format::{
    Annotation, Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, EventEncoder, FieldDesc, Metadata,
    TypeDesc, TypeId,
};
use flightrec_testkit as testkit;

const TICK: TypeId = TypeId(1000);
const START_NANOS: i64 = 1_750_000_000_000_000_000;

/// `x.Tick`: `startTime`, then `fields`.
fn tick_type(fields: Vec<FieldDesc>) -> TypeDesc {
    let mut all = vec![start_time()];
    all.extend(fields);
    TypeDesc {
        id: TICK,
        name: Cow::Borrowed("x.Tick"),
        super_type: Some(Cow::Borrowed(EVENT_SUPER_TYPE)),
        simple_type: false,
        fields: Cow::Owned(all),
        annotations: Cow::Owned(vec![Annotation::Label(Cow::Borrowed("Tick"))]),
        settings: Cow::Borrowed(&[]),
    }
}

/// `x.Tick { startTime, n: long, thread: Thread }`.
fn metadata() -> Metadata {
    let mut m = Metadata::builtin();
    m.add(tick_type(vec![
        FieldDesc::new("n", TypeId::LONG),
        FieldDesc::pooled("thread", TypeId::THREAD),
    ]))
    .unwrap();
    m
}

/// Chunk `i` of a file: one second apart on one tick clock.
fn start(i: i64) -> ChunkStart {
    ChunkStart {
        start_nanos: START_NANOS + i * 1_000_000_000,
        start_ticks: 1_000_000_000 + i * 1_000_000_000,
        ticks_per_second: 1_000_000_000,
    }
}

/// One `x.Tick` record per `(n, thread key)`, 1 ms apart from `ticks`.
fn ticks(ticks: i64, events: &[(i64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    for (i, &(n, thread)) in events.iter().enumerate() {
        let mut e = EventEncoder::begin(&mut buf, TICK);
        e.put_i64(ticks + 1_000_000 * (i as i64 + 1));
        e.put_i64(n);
        e.put_varint(thread);
        let len = e.finish().unwrap();
        out.extend_from_slice(&buf[..len]);
    }
    out
}

/// A checkpoint defining threads `(key, name)`.
fn threads(defs: &[(u64, &str)]) -> Checkpoint {
    let mut cp = Checkpoint::new(FLAG_FLUSH);
    let mut pool = cp.pool(TypeId::THREAD);
    for &(key, name) in defs {
        let t = ThreadValue {
            os_name: name,
            os_thread_id: key as i64,
            java_name: Some(name),
            java_thread_id: key as i64,
            group: 0,
        };
        write_thread(pool.entry(key), &t);
    }
    drop(pool);
    cp
}

/// What one chunk holds.
struct Chunk {
    metadata: Metadata,
    metadata_id: u64,
    events: Vec<u8>,
    checkpoint: Option<Checkpoint>,
}

impl Chunk {
    fn new(events: Vec<u8>, checkpoint: Option<Checkpoint>) -> Self {
        Self {
            metadata: metadata(),
            metadata_id: 1,
            events,
            checkpoint,
        }
    }
}

/// Writes `chunks` back to back into `dir/name`.
fn write(dir: &Path, name: &str, chunks: Vec<Chunk>) -> PathBuf {
    let path = dir.join(name);
    let mut out = BufWriter::new(File::create(&path).unwrap());
    let last = chunks.len() - 1;
    for (i, c) in chunks.into_iter().enumerate() {
        let s = start(i as i64);
        let mut w = ChunkWriter::begin(out, s).unwrap();
        w.write_metadata(&c.metadata, c.metadata_id, s.start_ticks)
            .unwrap();
        w.write_events(&c.events).unwrap();
        if let Some(cp) = &c.checkpoint {
            w.write_checkpoint(cp, s.start_ticks + 900_000_000, 0)
                .unwrap();
        }
        let end = ChunkEnd {
            duration_nanos: 1_000_000_000,
            ticks_per_second: None,
            last: i == last,
        };
        out = w.finish(end).unwrap();
    }
    drop(out);
    path
}

/// `(n, eventThread javaName)` of every printed `x.Tick`, sorted by `n`.
fn printed_ticks(path: &Path) -> Vec<(i64, Option<String>)> {
    let events = testkit::print_json(path);
    let mut out: Vec<(i64, Option<String>)> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "x.Tick")
        .map(|e| {
            let v = &e["values"];
            let name = v["thread"]["javaName"].as_str().map(str::to_owned);
            (v["n"].as_i64().expect("n"), name)
        })
        .collect();
    out.sort();
    out
}

fn named(n: i64, name: &str) -> (i64, Option<String>) {
    (n, Some(name.to_owned()))
}

#[test]
fn a_chunk_without_events_reads_as_a_later_chunk() {
    // §10 #20: a chunk after the first needs a checkpoint. One with metadata
    // and a checkpoint but no events, and one where `finish` had to add the
    // (empty) checkpoint itself, both read back.
    let dir = testkit::temp_dir("traps-empty-chunk");
    let path = write(
        &dir,
        "empty-later-chunk.jfr",
        vec![
            Chunk::new(
                ticks(start(0).start_ticks, &[(1, 1)]),
                Some(threads(&[(1, "a")])),
            ),
            Chunk::new(Vec::new(), Some(threads(&[(1, "a")]))),
            Chunk::new(Vec::new(), None),
            Chunk::new(
                ticks(start(3).start_ticks, &[(4, 1)]),
                Some(threads(&[(1, "a")])),
            ),
        ],
    );
    let summary = testkit::summary(&path);
    assert_eq!(summary.chunks, 4);
    assert_eq!(summary.counts["x.Tick"], 2);
    assert_eq!(summary.counts["jdk.Metadata"], 4);
    assert_eq!(summary.counts["jdk.Checkpoint"], 4);
    assert_eq!(printed_ticks(&path), [named(1, "a"), named(4, "a")]);
}

#[test]
fn every_event_of_a_three_chunk_file_counts() {
    let dir = testkit::temp_dir("traps-three-chunks");
    let chunk = |i: i64, ns: &[i64]| {
        let events: Vec<(i64, u64)> = ns.iter().map(|&n| (n, 1)).collect();
        Chunk::new(
            ticks(start(i).start_ticks, &events),
            Some(threads(&[(1, "main")])),
        )
    };
    let path = write(
        &dir,
        "three.jfr",
        vec![
            chunk(0, &[1, 2, 3]),
            chunk(1, &[4, 5, 6, 7, 8]),
            chunk(2, &[9, 10, 11, 12, 13, 14, 15]),
        ],
    );
    let summary = testkit::summary(&path);
    assert_eq!(summary.chunks, 3);
    assert_eq!(summary.counts["x.Tick"], 15);
    let expected: Vec<_> = (1..=15).map(|n| named(n, "main")).collect();
    assert_eq!(printed_ticks(&path), expected);
}

#[test]
fn empty_pools_are_never_written() {
    // §10 #1: "Pool … must contain at least one element" is fatal to `jfr`.
    // A pool that ends up without entries removes itself.
    let dir = testkit::temp_dir("traps-empty-pool");
    let mut cp = threads(&[(1, "only")]);
    drop(cp.pool(TypeId::STACK_TRACE));
    drop(cp.pool(TypeId::CLASS));
    assert_eq!(cp.pool_count(), 1);
    let path = write(
        &dir,
        "empty-pool.jfr",
        vec![Chunk::new(ticks(start(0).start_ticks, &[(1, 1)]), Some(cp))],
    );
    assert_eq!(printed_ticks(&path), [named(1, "only")]);
}

#[test]
fn changed_metadata_needs_a_new_id() {
    // §10 #2: the JDK reuses the previous chunk's metadata when the id is
    // unchanged. Chunk 2 puts a field before `n`: with a new id it reads
    // right; with the old id (control) `jfr` decodes it with stale fields.
    let dir = testkit::temp_dir("traps-metadata-id");
    let mut changed = Metadata::builtin();
    changed
        .add(tick_type(vec![
            FieldDesc::new("extra", TypeId::LONG),
            FieldDesc::new("n", TypeId::LONG),
            FieldDesc::pooled("thread", TypeId::THREAD),
        ]))
        .unwrap();
    let second = |id| {
        let mut buf = [0u8; 64];
        let mut e = EventEncoder::begin(&mut buf, TICK);
        e.put_i64(start(1).start_ticks + 1);
        e.put_i64(1_000_000); // extra
        e.put_i64(2); // n
        e.put_varint(1); // thread
        let len = e.finish().unwrap();
        Chunk {
            metadata: changed.clone(),
            metadata_id: id,
            events: buf[..len].to_vec(),
            checkpoint: Some(threads(&[(1, "t")])),
        }
    };
    let first = || {
        Chunk::new(
            ticks(start(0).start_ticks, &[(1, 1)]),
            Some(threads(&[(1, "t")])),
        )
    };

    let good = write(&dir, "new-id.jfr", vec![first(), second(2)]);
    assert_eq!(printed_ticks(&good), [named(1, "t"), named(2, "t")]);

    let stale = write(&dir, "reused-id.jfr", vec![first(), second(1)]);
    let out = testkit::jfr().try_run(&["print", "--json", stale.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() || !text.contains("\"n\": 2"),
        "control: with a reused metadata id the JDK should misread chunk 2"
    );
}

#[test]
fn constant_keys_keep_their_meaning_across_chunks() {
    // §10 #3: the JDK keeps a key's value from the previous chunk. The same
    // key with the same value in every chunk reads right; a key reused for
    // another thread (control) shows the old name.
    let dir = testkit::temp_dir("traps-stable-keys");
    let file = |name: &str, second: &str| {
        write(
            &dir,
            name,
            vec![
                Chunk::new(
                    ticks(start(0).start_ticks, &[(1, 7)]),
                    Some(threads(&[(7, "alpha")])),
                ),
                Chunk::new(
                    ticks(start(1).start_ticks, &[(2, 7)]),
                    Some(threads(&[(7, second)])),
                ),
            ],
        )
    };
    let stable = file("stable.jfr", "alpha");
    assert_eq!(
        printed_ticks(&stable),
        [named(1, "alpha"), named(2, "alpha")]
    );
    let reused = file("reused.jfr", "beta");
    assert_eq!(
        printed_ticks(&reused),
        [named(1, "alpha"), named(2, "alpha")],
        "control: the JDK should show the first chunk's value for a reused key"
    );
}

#[test]
fn only_finished_chunks_are_readable() {
    // §10 #4: `jfr` gives up on a chunk whose state byte is not 0. The
    // writer's live header updates keep the state non-zero until `finish`.
    let dir = testkit::temp_dir("traps-finish");
    let s = start(0);
    let open = |path: &Path| {
        let out = BufWriter::new(File::create(path).unwrap());
        let mut w = ChunkWriter::begin(out, s).unwrap();
        w.write_metadata(&metadata(), 1, s.start_ticks).unwrap();
        w.write_events(&ticks(s.start_ticks, &[(1, 1), (2, 1)]))
            .unwrap();
        w.write_checkpoint(&threads(&[(1, "w")]), s.start_ticks, 0)
            .unwrap();
        w.flush_header(500_000_000).unwrap();
        w
    };
    let finished = dir.join("finished.jfr");
    let end = ChunkEnd {
        duration_nanos: 1_000_000_000,
        ticks_per_second: None,
        last: true,
    };
    drop(open(&finished).finish(end).unwrap());
    let header = ChunkHeader::parse(&std::fs::read(&finished).unwrap()).unwrap();
    assert_eq!(header.state, STATE_FINISHED);
    assert_eq!(printed_ticks(&finished), [named(1, "w"), named(2, "w")]);

    let in_progress = dir.join("in-progress.jfr");
    drop(open(&in_progress).into_inner());
    let header = ChunkHeader::parse(&std::fs::read(&in_progress).unwrap()).unwrap();
    assert_ne!(header.state, STATE_FINISHED);
    let out = testkit::jfr().try_run(&["summary", in_progress.to_str().unwrap()]);
    assert!(
        !out.status.success(),
        "control: `jfr` should reject an unfinished chunk"
    );
}
