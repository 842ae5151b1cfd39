//! What the Pyroscope uploader costs the program's threads (issue 20): the
//! CPU time of one event commit while a recording uploads every 100 ms to
//! a receiver that is down (connections refused, so the uploader retries
//! and drops all along), against the same commit in a recording without
//! an uploader. The uploader never touches the commit path, so the ratio
//! should be 1 within noise.
//!
//! Paired rounds in one run: each round starts one recording of each
//! kind in turn (the order alternating), commits `SEGMENT` events on this
//! thread under each, and takes this thread's CPU time per commit
//! (`CLOCK_THREAD_CPUTIME_ID`); the ratio is taken per round and the
//! median reported.
//!
//! `cargo bench --bench pyroscope`; under
//! `cargo test --benches` it runs a small smoke version. Prints a last
//! line `pyroscope summary: {json}`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use flightrec::pyroscope::PyroscopeConfig;
use flightrec::{
    EventType, EventTypeBuilder, FieldKind, Recording, RecordingConfig, Settings, Value,
};
use flightrec_testkit::measure::{median, thread_cpu_ns};
use flightrec_testkit::receiver::{Mode, Receiver};

/// Commits per measured segment.
const SEGMENT: u64 = 200_000;

/// Thread CPU ns per commit over `segments` segments.
fn per_commit(ty: &'static EventType, segments: u64) -> f64 {
    let t0 = thread_cpu_ns();
    for i in 0..segments * SEGMENT {
        ty.commit_values(&[Value::Int(black_box(i) as i64)]);
    }
    (thread_cpu_ns() - t0) as f64 / (segments * SEGMENT) as f64
}

/// Starts a recording (with `upload` if given), lets it settle, times the
/// commits, stops it.
fn timed(
    dir: &Path,
    ty: &'static EventType,
    upload: Option<PyroscopeConfig>,
    segments: u64,
) -> f64 {
    let mut config = RecordingConfig::repository_only()
        .repository(dir.join("repo"))
        .max_memory(256 << 20)
        .max_size(Some(64 << 20))
        .settings(Settings::new());
    if let Some(u) = upload {
        config = config.pyroscope(u);
    }
    let rec = Recording::start(config).expect("start recording");
    std::thread::sleep(Duration::from_millis(150));
    let ns = per_commit(ty, segments);
    let totals = rec.pyroscope_totals();
    rec.stop().expect("stop");
    if let Some(t) = totals {
        // The uploader was at work (failing) while the commits were timed.
        assert!(t.failed_requests > 0 || t.chunks_dropped > 0, "{t:?}");
    }
    ns
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, segments) = if full { (21, 25) } else { (2, 1) };
    let dir =
        std::env::temp_dir().join(format!("flightrec-pyroscope-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let ty = EventTypeBuilder::new("bench.Commit")
        .field("n", FieldKind::I64)
        .build()
        .expect("event type");
    let rx = Receiver::start();
    rx.set_mode(Mode::Down);
    let upload = PyroscopeConfig::new(&rx.url())
        .expect("url")
        .period(Duration::from_millis(100))
        .expect("period")
        .retries(3, Duration::from_millis(10))
        .expect("retries")
        .stop_timeout(Duration::from_millis(200));

    let (mut plain, mut down, mut ratio) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let (a, b) = if round % 2 == 0 {
            let a = timed(&dir, ty, None, segments);
            (a, timed(&dir, ty, Some(upload.clone()), segments))
        } else {
            let b = timed(&dir, ty, Some(upload.clone()), segments);
            (timed(&dir, ty, None, segments), b)
        };
        plain.push(a);
        down.push(b);
        ratio.push(b / a);
    }
    let (p, d, r) = (median(&mut plain), median(&mut down), median(&mut ratio));
    println!("| variant | ns per commit (median of {rounds} rounds) |");
    println!("|---|---|");
    println!("| no uploader | {p:.1} |");
    println!("| uploader, receiver down | {d:.1} |");
    println!("| ratio (median of per-round ratios) | {r:.3} |");
    println!(
        "pyroscope summary: {{\"rounds\": {rounds}, \"plain_ns\": {p:.2}, \"receiver_down_ns\": {d:.2}, \"ratio\": {r:.4}}}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
