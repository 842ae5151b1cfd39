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
    // A user periodic event on the same period counts the periodic
    // thread's passes, so the burner can run until several have happened
    // however late a loaded machine runs that thread.
    let poll = EventTypeBuilder::new("test.LoadPoll")
        .enabled(true)
        .build()
        .unwrap();
    static POLLS: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(poll, Period::Interval(Duration::from_millis(500)), || {
        POLLS.fetch_add(1, Ordering::Relaxed);
    });
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings)).unwrap();
    // The burner logs its CPU time against the wall clock every 2 ms: on a
    // loaded machine its share of a CPU changes from one period to the
    // next, so each event is compared with what the thread measured over
    // that event's own window, not with an assumed or lifetime share.
    let burner = std::thread::Builder::new()
        .name("burner".into())
        .spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = i64::from(unsafe { libc::gettid() });
            let t0 = Instant::now();
            let polls = POLLS.load(Ordering::Relaxed);
            let mut log = vec![(wall_nanos(), thread_cpu_nanos())];
            let mut x = 1u64;
            let enough = || {
                t0.elapsed() >= Duration::from_millis(2600)
                    && POLLS.load(Ordering::Relaxed) >= polls + 6
            };
            while !enough() && t0.elapsed() < Duration::from_secs(30) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                if log
                    .last()
                    .is_some_and(|&(w, _)| wall_nanos() - w >= 2_000_000)
                {
                    log.push((wall_nanos(), thread_cpu_nanos()));
                }
            }
            log.push((wall_nanos(), thread_cpu_nanos()));
            (tid, log)
        })
        .unwrap();
    let (tid, log) = burner.join().unwrap();
    rec.stop().unwrap();
    assert!(flightrec::remove_periodic_event(poll));
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    // (time, share of one CPU): the load is per all CPUs, as the JDK's.
    let loads: Vec<(i128, f64)> = events(&out, "jdk.ThreadCPULoad")
        .iter()
        // By thread id: a thread first seen between its creation and its
        // naming itself carries its creator's name.
        .filter(|e| e["eventThread"]["osThreadId"] == tid)
        .map(|e| {
            let t = utc_nanos(e["startTime"].as_str().unwrap());
            let load = e["user"].as_f64().unwrap() + e["system"].as_f64().unwrap();
            (t, load * cpus)
        })
        .collect();
    assert!(loads.len() >= 3, "{loads:?}");
    // CPU time at wall time `t`, from the burner's log (the last entry at
    // or before `t`; `None` outside the log).
    let cpu_at = |t: i128| -> Option<f64> {
        let i = log.partition_point(|&(w, _)| i128::from(w) <= t);
        (i > 0 && i < log.len()).then(|| log[i - 1].1 as f64)
    };
    // Every event after the first covers the time since the one before:
    // (window, recorded share, CPU time the burner measured in it).
    let mut compared = Vec::new();
    for pair in loads.windows(2) {
        let ((t0, _), (t1, load)) = (pair[0], pair[1]);
        if let (Some(c0), Some(c1)) = (cpu_at(t0), cpu_at(t1)) {
            compared.push(((t1 - t0) as f64, load, c1 - c0));
        }
    }
    assert!(compared.len() >= 2, "{loads:?}");
    // Over the windows together (the kernel counts thread time in clock
    // ticks: summed, the rounding of each window cancels out).
    let span: f64 = compared.iter().map(|c| c.0).sum();
    let recorded = compared.iter().map(|c| c.0 * c.1).sum::<f64>() / span;
    let measured = compared.iter().map(|c| c.2).sum::<f64>() / span;
    assert!(
        (recorded - measured).abs() <= 0.1 * measured + 0.03,
        "recorded {recorded:.3}, measured {measured:.3} of one CPU: {compared:?}"
    );
    assert!(measured > 0.1, "the burner hardly ran: {compared:?}");
}

/// Wall-clock time now, in nanoseconds since 1970 (the clock `jfr` prints).
fn wall_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// `2026-12-01T23:44:58.209924737Z` as nanoseconds since 1970.
fn utc_nanos(s: &str) -> i128 {
    let num = |r: std::ops::Range<usize>| s[r].parse::<i128>().unwrap();
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    // Days from 1970-03-01-based civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + num(11..13) * 3600 + num(14..16) * 60 + num(17..19);
    let digits = s.get(20..s.len() - 1).filter(|_| &s[19..20] == ".");
    let frac = digits.unwrap_or("").to_owned() + "000000000";
    secs * 1_000_000_000 + frac[..9].parse::<i128>().unwrap()
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
/// built-in chunk-edge tasks itself and waits (bounded) for the user calls
/// it posts to their own threads (issue 30). Each repository chunk holds
/// its own edges, and a closure run at an edge that asks the recorder for
/// something gets an error instead of a deadlock.
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
        // Every call runs on the task's own periodic thread (never the
        // recorder's); a rotation's is refused a flush, the last chunk's
        // end (the periodic thread's last round) has no handle to ask.
        let last = i == ROTATIONS;
        assert_eq!(ends[0]["flushRefused"], !last, "chunk {i}");
        assert_eq!(
            ends[0]["eventThread"]["osName"], "flightrec-periodic",
            "chunk {i}"
        );
        // A built-in everyChunk type: once at each edge of every chunk.
        assert_eq!(events(f, "jdk.PhysicalMemory").len(), 2, "chunk {i}");
    }
}
