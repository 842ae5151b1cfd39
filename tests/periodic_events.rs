//! Periodic events recorded in this process (issue 14): a user periodic
//! event follows its `period` while recording and runs on flightrec's
//! thread, `jdk.ThreadCPULoad` of a burning thread agrees with its measured
//! CPU time, environment variables are recorded only when asked, and the
//! chunk-edge events land in the chunk they describe.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flightrec::settings::Period;
use flightrec::{EventTypeBuilder, FieldKind, Recording, RecordingConfig, Settings, Value};
use serde_json::Value as Json;

/// One recording per process at a time.
static ALONE: Mutex<()> = Mutex::new(());

fn events(path: &std::path::Path, ty: &str) -> Vec<Json> {
    let all = flightrec_testkit::print_json(path);
    all.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| e["values"].clone())
        .collect()
}

fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
fn a_user_periodic_event_follows_its_period_on_the_periodic_thread() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("periodic_user");
    let out = dir.join("user.jfr");
    let ty = EventTypeBuilder::new("com.example.QueueDepth")
        .enabled(true)
        .field("depth", FieldKind::I64)
        .field("phase", FieldKind::I64)
        .build()
        .unwrap();
    static PHASE: AtomicU64 = AtomicU64::new(0);
    static CALLS: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(ty, Period::Interval(Duration::from_millis(50)), move || {
        let n = CALLS.fetch_add(1, Ordering::Relaxed) as i64;
        ty.commit_values(&[
            Value::Int(n),
            Value::Int(PHASE.load(Ordering::Relaxed) as i64),
        ]);
    });
    let rec = Recording::start(RecordingConfig::new(&out)).unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    PHASE.store(1, Ordering::Relaxed);
    rec.set("com.example.QueueDepth", "period", "250 ms")
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    rec.stop().unwrap();
    assert!(flightrec::remove_periodic_event(ty));
    let evs = events(&out, "com.example.QueueDepth");
    let phase = |p: i64| evs.iter().filter(|e| e["phase"] == p).count();
    // 50 ms over 1 s: about 20; 250 ms over 1 s: about 4 (at most 5 +
    // the one at the change).
    assert!((12..=22).contains(&phase(0)), "{} at 50 ms", phase(0));
    assert!((2..=6).contains(&phase(1)), "{} at 250 ms", phase(1));
    for e in &evs {
        assert_eq!(e["eventThread"]["osName"], "flightrec-periodic", "{e}");
    }
    // A setting for the type's period is accepted only for periodic types.
    assert!(
        Settings::new()
            .set("com.example.QueueDepth", "period", "1 s")
            .is_ok()
    );
}

#[test]
fn thread_cpu_load_of_a_burning_thread_matches_its_cpu_time() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("periodic_load");
    let out = dir.join("load.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.ThreadCPULoad", "period", "500 ms")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    let burner = std::thread::Builder::new()
        .name("burner".into())
        .spawn(|| {
            let t0 = Instant::now();
            let c0 = thread_cpu_nanos();
            let mut x = 1u64;
            while t0.elapsed() < Duration::from_millis(2600) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            (thread_cpu_nanos() - c0) as f64 / t0.elapsed().as_nanos() as f64
        })
        .unwrap();
    let share = burner.join().unwrap();
    rec.stop().unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let loads: Vec<f64> = events(&out, "jdk.ThreadCPULoad")
        .iter()
        .filter(|e| e["eventThread"]["javaName"] == "burner")
        .map(|e| (e["user"].as_f64().unwrap() + e["system"].as_f64().unwrap()) * cpus)
        .collect();
    assert!(loads.len() >= 3, "{loads:?}");
    // The load is per all CPUs, as the JDK's: times the CPU count, it is
    // the share of one CPU the thread had. The thread got `share` of one
    // CPU over its life (all of it on an idle machine).
    let mean = loads.iter().sum::<f64>() / loads.len() as f64;
    assert!(
        mean >= 0.8 * share,
        "mean {mean} of {loads:?}, measured {share}"
    );
    assert!(
        mean <= 1.1 * share.max(0.1) + 0.05,
        "mean {mean}, measured {share}"
    );
    if share > 0.95 {
        assert!(mean >= 0.8, "{loads:?}");
    }
}

#[test]
fn environment_variables_only_when_enabled() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: set before any thread of this test reads the environment;
    // the other tests of this file do not read it.
    unsafe { std::env::set_var("FLIGHTREC_TEST_SECRET", "hunter2") };
    let dir = flightrec_testkit::temp_dir("periodic_env");
    let off = dir.join("off.jfr");
    Recording::start(RecordingConfig::new(&off))
        .unwrap()
        .stop()
        .unwrap();
    assert!(events(&off, "jdk.InitialEnvironmentVariable").is_empty());
    let on = dir.join("on.jfr");
    let mut s = Settings::new();
    s.set("jdk.InitialEnvironmentVariable", "enabled", "true")
        .unwrap();
    Recording::start(RecordingConfig::new(&on).settings(s))
        .unwrap()
        .stop()
        .unwrap();
    let vars = events(&on, "jdk.InitialEnvironmentVariable");
    assert!(
        vars.iter()
            .any(|v| v["key"] == "FLIGHTREC_TEST_SECRET" && v["value"] == "hunter2"),
        "{} variables",
        vars.len()
    );
}

/// Regression (issue 14): a rotation ran the end-of-chunk events by asking
/// the periodic thread and waiting for it; the recorder thread now runs the
/// chunk-edge tasks itself. Each repository chunk holds its own edges, and a
/// closure run at an edge that asks the recorder for something gets an
/// error instead of a deadlock.
#[test]
fn chunk_edge_events_land_in_the_chunk_they_describe() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    const ROTATIONS: usize = 4;
    let dir = flightrec_testkit::temp_dir("periodic_edges");
    let repo = dir.join("repo");
    let begin = EventTypeBuilder::new("com.example.ChunkBegin")
        .enabled(true)
        .field("n", FieldKind::I64)
        .build()
        .unwrap();
    let end = EventTypeBuilder::new("com.example.ChunkEnd")
        .enabled(true)
        .field("n", FieldKind::I64)
        .field("flushRefused", FieldKind::Bool)
        .build()
        .unwrap();
    let mark = EventTypeBuilder::new("com.example.Mark")
        .enabled(true)
        .field("chunk", FieldKind::I64)
        .build()
        .unwrap();
    static REC: Mutex<Option<std::sync::Arc<Recording>>> = Mutex::new(None);
    static BEGINS: AtomicU64 = AtomicU64::new(0);
    static ENDS: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(begin, Period::BeginChunk, move || {
        let n = BEGINS.fetch_add(1, Ordering::Relaxed) as i64;
        begin.commit_values(&[Value::Int(n)]);
    });
    flightrec::add_periodic_event(end, Period::EndChunk, move || {
        let n = ENDS.fetch_add(1, Ordering::Relaxed) as i64;
        let rec = REC.lock().unwrap().clone();
        let refused =
            rec.is_some_and(|r| matches!(r.flush(), Err(flightrec::RecordingError::FromChunkEdge)));
        end.commit_values(&[Value::Int(n), Value::Bool(refused)]);
    });
    let rec = std::sync::Arc::new(
        Recording::start(
            RecordingConfig::new(dir.join("all.jfr"))
                .repository(&repo)
                .keep_repository(true),
        )
        .unwrap(),
    );
    // The first chunk's beginning is the periodic thread's first round.
    std::thread::sleep(Duration::from_millis(200));
    for chunk in 0..=ROTATIONS {
        mark.commit_values(&[Value::Int(chunk as i64)]);
        if chunk < ROTATIONS {
            *REC.lock().unwrap() = Some(rec.clone());
            rec.rotate().unwrap();
            *REC.lock().unwrap() = None;
        }
    }
    std::sync::Arc::into_inner(rec).unwrap().stop().unwrap();
    assert!(flightrec::remove_periodic_event(begin));
    assert!(flightrec::remove_periodic_event(end));

    let mut files: Vec<_> = std::fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jfr"))
        .collect();
    files.sort();
    assert_eq!(files.len(), ROTATIONS + 1, "{files:?}");
    for (i, f) in files.iter().enumerate() {
        let marks = events(f, "com.example.Mark");
        assert_eq!(marks.len(), 1, "chunk {i}");
        assert_eq!(marks[0]["chunk"], i as i64, "chunk {i}");
        let begins = events(f, "com.example.ChunkBegin");
        assert_eq!(begins.len(), 1, "chunk {i}: {begins:?}");
        assert_eq!(begins[0]["n"], i as i64, "chunk {i}");
        let ends = events(f, "com.example.ChunkEnd");
        assert_eq!(ends.len(), 1, "chunk {i}: {ends:?}");
        assert_eq!(ends[0]["n"], i as i64, "chunk {i}");
        // Rotations run the end on the recorder thread; the last chunk's
        // end is the periodic thread's last round.
        let last = i == ROTATIONS;
        assert_eq!(ends[0]["flushRefused"], !last, "chunk {i}");
        let thread = if last {
            "flightrec-periodic"
        } else {
            "flightrec-recorder"
        };
        assert_eq!(ends[0]["eventThread"]["osName"], thread, "chunk {i}");
        // A built-in everyChunk type: once at each edge of every chunk.
        assert_eq!(events(f, "jdk.PhysicalMemory").len(), 2, "chunk {i}");
    }
}
