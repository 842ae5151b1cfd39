//! Floods a recording from several threads, stops it once every writer is
//! done, and checks that the file holds every committed event: each writer
//! numbers its events, and the file is read back (chunk by chunk, with the
//! crate's own reader) for each writer's sequence. One JSON line per run.
//!
//! ```text
//! cargo run --release --example conservation_flood -- \
//!     --threads 4 --events 2000000 --buffer-kib 64 --chunk-mib 12 --memory-mib 2048 --runs 10
//! ```
//!
//! `--events` is per thread. Every run records into its own file in
//! `--dir` (default: a new directory in the temp dir), deleted after it is
//! checked unless `--keep` is given. Exits 1 if any run misses an event
//! that is not counted lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use flightrec::jfr_format::read::read_recording;
use flightrec::jfr_format::write::header::ChunkHeader;
use flightrec::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(name = "flood.Seq", label = "Sequenced Event")]
struct Seq {
    #[event(label = "Writer")]
    writer: u32,
    #[event(label = "Sequence")]
    seq: u64,
}

struct Args {
    threads: u32,
    events: u64,
    buffer_kib: usize,
    chunk_mib: u64,
    memory_mib: usize,
    runs: u32,
    dir: Option<PathBuf>,
    keep: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 4,
        events: 2_000_000,
        buffer_kib: 64,
        chunk_mib: 12,
        memory_mib: 2048,
        runs: 10,
        dir: None,
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        let num = |s: String, name: &str| s.parse::<u64>().map_err(|e| format!("{name}: {e}"));
        match k.as_str() {
            "--threads" => a.threads = num(v("--threads")?, "--threads")? as u32,
            "--events" => a.events = num(v("--events")?, "--events")?,
            "--buffer-kib" => a.buffer_kib = num(v("--buffer-kib")?, "--buffer-kib")? as usize,
            "--chunk-mib" => a.chunk_mib = num(v("--chunk-mib")?, "--chunk-mib")?,
            "--memory-mib" => a.memory_mib = num(v("--memory-mib")?, "--memory-mib")? as usize,
            "--runs" => a.runs = num(v("--runs")?, "--runs")? as u32,
            "--dir" => a.dir = Some(PathBuf::from(v("--dir")?)),
            "--keep" => a.keep = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.threads == 0 || a.runs == 0 {
        return Err("--threads and --runs must be at least 1".into());
    }
    Ok(a)
}

/// Per writer: how many of its events the file holds, and whether they
/// are exactly its sequence numbers 0, 1, ... (each once; the order of
/// records within a chunk is not kept, readers sort by time).
fn count_file(path: &Path, writers: u32) -> (Vec<u64>, Vec<bool>, u64) {
    let bytes = std::fs::read(path).expect("read the recording");
    let mut seqs = vec![Vec::new(); writers as usize];
    let mut lost = 0;
    let mut at = 0;
    while at < bytes.len() {
        let header = ChunkHeader::parse(&bytes[at..]).expect("a chunk header");
        let end = at + usize::try_from(header.chunk_size).expect("chunk size");
        let chunk = read_recording(&bytes[at..end]).expect("our reader reads the chunk");
        for e in chunk.events() {
            match &*e.type_name {
                "flood.Seq" => {
                    let w = e.get("writer").and_then(|v| v.as_i64()).expect("writer") as usize;
                    let s = e.get("seq").and_then(|v| v.as_i64()).expect("seq") as u64;
                    seqs[w].push(s);
                }
                "flightrec.EventsLost" => {
                    lost += e.get("events").and_then(|v| v.as_i64()).unwrap_or(0) as u64;
                }
                _ => {}
            }
        }
        at = end;
    }
    let found = seqs.iter().map(|s| s.len() as u64).collect();
    let exact = seqs
        .iter_mut()
        .map(|s| {
            s.sort_unstable();
            s.iter().enumerate().all(|(i, &n)| n == i as u64)
        })
        .collect();
    (found, exact, lost)
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("conservation_flood: {e}");
        eprintln!(
            "usage: conservation_flood [--threads N] [--events PER_THREAD] [--buffer-kib K] \
             [--chunk-mib M] [--memory-mib M] [--runs R] [--dir DIR] [--keep]"
        );
        std::process::exit(2)
    });
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("conservation_flood.{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).expect("create the output directory");
    let mut failed = false;
    for run in 0..args.runs {
        let out = dir.join(format!("flood-{run}.jfr"));
        let config = RecordingConfig::new(&out)
            .thread_buffer_size(args.buffer_kib << 10)
            .max_chunk_size(args.chunk_mib << 20)
            .max_memory(args.memory_mib << 20);
        let recording = Recording::start(config).expect("start");
        let began = Instant::now();
        std::thread::scope(|s| {
            for writer in 0..args.threads {
                s.spawn(move || {
                    for seq in 0..args.events {
                        Seq { writer, seq }.commit();
                    }
                });
            }
        });
        let flood_ms = began.elapsed().as_millis();
        let summary = recording.stop().expect("stop");
        let counted = summary.losses.total_events();
        let (found, in_order, lost_in_file) = count_file(&out, args.threads);
        let committed = args.events * u64::from(args.threads);
        let in_file: u64 = found.iter().sum();
        let missing = committed - in_file.min(committed);
        let by_writer: BTreeMap<u32, u64> = (0..args.threads)
            .map(|w| (w, args.events - found[w as usize]))
            .filter(|&(_, m)| m > 0)
            .collect();
        let ordered = in_order.iter().all(|&o| o);
        let ok = missing == counted && counted == lost_in_file && in_file <= committed && ordered;
        failed |= !ok;
        println!(
            "{{\"run\": {run}, \"committed\": {committed}, \"in_file\": {in_file}, \
             \"missing\": {missing}, \"lost_counted\": {counted}, \"lost_in_file\": {lost_in_file}, \
             \"exact_sequences\": {ordered}, \"chunks\": {}, \"flood_ms\": {flood_ms}, \
             \"missing_by_writer\": {by_writer:?}, \"ok\": {ok}}}",
            summary.chunks
        );
        if !args.keep {
            let _ = std::fs::remove_file(&out);
        }
    }
    if !args.keep && args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if failed {
        std::process::exit(1);
    }
}
