//! Issue 20: per-request labels reach the samples as `contextId`, the
//! labels snapshot names them, and with the Pyroscope shape on the file is
//! what Pyroscope's JFR parser needs (checked by `support/pyroscope_parser`,
//! a walk of the raw bytes with that parser's rules) while JDK 25's `jfr`
//! still reads it.

#[path = "support/pyroscope_parser.rs"]
mod pyroscope_parser;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use flightrec_testkit::measure::thread_cpu_ns;
use recorder::labels::{self, LabelsSnapshot};
use recorder::{Recording, RecordingConfig, Settings, sampler};

/// The sampler and the Pyroscope switch are process-wide: one recording at
/// a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Spins until this thread has used `ms` more milliseconds of CPU.
#[inline(never)]
fn spin(ms: u64) -> u64 {
    let until = thread_cpu_ns() + ms * 1_000_000;
    let mut x = 1u64;
    while thread_cpu_ns() < until {
        for _ in 0..1000 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

/// Waits until the sampler has armed this thread's CPU-time timer: a timer
/// that signals this thread is listed in `/proc/self/timers`. The sampler
/// finds a thread started after the recording at its next pass over
/// `/proc/self/task`, which a loaded machine may delay by hundreds of
/// milliseconds; a phase spun before that is not sampled, and the counts
/// below would measure the machine's load, not the labels.
fn wait_until_sampled() {
    // SAFETY: gettid has no preconditions.
    let me = format!("tid.{}", unsafe { libc::gettid() });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        let timers = std::fs::read_to_string("/proc/self/timers").unwrap_or_default();
        if timers
            .lines()
            .any(|l| l.starts_with("notify:") && l.ends_with(&me))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no CPU-time timer for this thread after 30 s:\n{}", {
        std::fs::read_to_string("/proc/self/timers").unwrap_or_default()
    });
}

/// One function per phase of the test threads: a sample's phase (and so
/// the label scope it ran in) is the `phase_*` function on its stack. The
/// bodies differ in a constant so the linker does not fold them into one.
macro_rules! phases {
    ($($name:ident = $k:expr),* $(,)?) => {$(
        #[inline(never)]
        fn $name(ms: u64) -> u64 {
            black_box(spin(ms) ^ $k)
        }
    )*};
}

phases!(
    phase_a = 1,
    phase_b_outer = 2,
    phase_b_inner = 3,
    phase_b_back = 4,
    phase_none = 5,
    phase_wall_run = 6,
    phase_plain = 7,
);

#[inline(never)]
fn phase_wall_sleep(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    black_box(ms ^ 8)
}

/// The `phase_*` function on the sample's stack, if any.
fn phase_of(v: &serde_json::Value) -> Option<String> {
    v["stackTrace"]["frames"]
        .as_array()?
        .iter()
        .filter_map(|f| f["method"]["name"].as_str())
        .find(|n| n.contains("phase_"))
        .map(|n| n.rsplit("::").next().unwrap_or(n).to_owned())
}

/// (type, phase) → contextIds of the samples, from `jfr print --json`.
fn samples_by_phase(path: &Path) -> BTreeMap<(String, String), Vec<u64>> {
    let mut out: BTreeMap<_, Vec<u64>> = BTreeMap::new();
    for e in flightrec_testkit::print_json(path).as_array().unwrap() {
        let v = &e["values"];
        let ty = match e["type"].as_str() {
            Some(t @ ("jdk.CPUTimeSample" | "jdk.ExecutionSample")) => t,
            _ => continue,
        };
        let id = v["contextId"]
            .as_u64()
            .unwrap_or_else(|| panic!("{ty} without a contextId: {v}"));
        let phase = phase_of(v).unwrap_or_else(|| "-".into());
        out.entry((ty.to_owned(), phase.clone()))
            .or_default()
            .push(id);
        // The expiries a CPU-time sample stands for (its samplingPeriod over
        // the 5 ms interval), under a type of its own.
        if let Some(p) = v["samplingPeriod"].as_str() {
            let secs: f64 = p
                .trim_start_matches("PT")
                .trim_end_matches('S')
                .parse()
                .unwrap_or_else(|_| panic!("samplingPeriod {p}"));
            let n = (secs / 0.005).round() as usize;
            let w = out.entry(("expiries".to_owned(), phase)).or_default();
            w.extend(std::iter::repeat_n(id, n));
        }
    }
    out
}

fn settings_cpu() -> Settings {
    let mut s = Settings::new();
    s.set("jdk.CPUTimeSample", "enabled", "true").unwrap();
    s.set("jdk.CPUTimeSample", "throttle", "5 ms").unwrap();
    s
}

#[test]
fn every_sample_in_a_scope_carries_its_id_and_pyroscope_reads_the_file() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("labels_cpu");
    let out = dir.join("labels.jfr");
    sampler::set_pyroscope_events(true);
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings_cpu())).unwrap();

    // label-a: one scope. label-b: an outer scope, a nested one overriding
    // `tenant`, the outer again. label-none: no labels.
    let a = std::thread::Builder::new()
        .name("label-a".into())
        .spawn(|| {
            wait_until_sampled();
            let _g = labels::scope(&[("endpoint", "/a"), ("tenant", "t1")]);
            phase_a(400);
            labels::current()
        })
        .unwrap();
    let b = std::thread::Builder::new()
        .name("label-b".into())
        .spawn(|| {
            wait_until_sampled();
            let _g = labels::scope(&[("endpoint", "/b"), ("tenant", "t1")]);
            let outer = labels::current();
            phase_b_outer(250);
            let inner = labels::with(&[("tenant", "t2")], || {
                phase_b_inner(250);
                labels::current()
            });
            assert_eq!(labels::current(), outer, "the outer set is back");
            phase_b_back(250);
            (outer, inner)
        })
        .unwrap();
    let none = std::thread::Builder::new()
        .name("label-none".into())
        .spawn(|| {
            wait_until_sampled();
            phase_none(250);
            labels::current()
        })
        .unwrap();
    let id_a = a.join().unwrap();
    let (id_b, id_b2) = b.join().unwrap();
    assert_eq!(none.join().unwrap(), 0);
    // What an upload of these samples declares: 5 ms per sample.
    assert_eq!(sampler::pyroscope_sample_rate(), Some(200));
    rec.stop().unwrap();
    sampler::set_pyroscope_events(false);

    let ids = [id_a, id_b, id_b2];
    assert!(ids.iter().all(|&i| i != 0), "{ids:?}");
    assert!(id_a != id_b && id_b != id_b2 && id_a != id_b2, "{ids:?}");

    // The snapshot, through its protobuf, names each id's labels.
    let snap = LabelsSnapshot::decode(&labels::snapshot().encode()).unwrap();
    assert_eq!(
        snap.labels_of(id_a).unwrap(),
        [("endpoint", "/a"), ("tenant", "t1")]
    );
    assert_eq!(
        snap.labels_of(id_b).unwrap(),
        [("endpoint", "/b"), ("tenant", "t1")]
    );
    assert_eq!(
        snap.labels_of(id_b2).unwrap(),
        [("endpoint", "/b"), ("tenant", "t2")]
    );

    // Every sample taken inside a phase carries the id of the scope the
    // phase ran in, in both sample events; each CPU-time sample is also an
    // ExecutionSample (Pyroscope's shape, CPU-only sampling).
    let by = samples_by_phase(&out);
    let expect = [
        ("phase_a", id_a),
        ("phase_b_outer", id_b),
        ("phase_b_inner", id_b2),
        ("phase_b_back", id_b),
        ("phase_none", 0),
    ];
    let mut report = String::new();
    for (phase, id) in expect {
        let get = |ty: &str| {
            by.get(&(ty.to_owned(), phase.to_owned()))
                .cloned()
                .unwrap_or_default()
        };
        let (cpu, exec) = (get("jdk.CPUTimeSample"), get("jdk.ExecutionSample"));
        let expiries = get("expiries").len();
        report += &format!(
            "{phase}: {} cpu ({expiries} expiries), {} exec\n",
            cpu.len(),
            exec.len()
        );
        // Expiries, not samples: on a loaded machine the kernel's tick
        // often lands on another task, and one signal then stands for
        // several expiries (its samplingPeriod says how many).
        assert!(
            !cpu.is_empty() && expiries >= 10,
            "{phase}: only {} samples, {expiries} expiries",
            cpu.len()
        );
        assert_eq!(
            exec.len(),
            expiries,
            "{phase}: one ExecutionSample per timer expiry of the CPU samples"
        );
        let wrong: Vec<u64> = cpu
            .iter()
            .chain(&exec)
            .copied()
            .filter(|&i| i != id)
            .collect();
        assert!(
            wrong.is_empty(),
            "{phase}: {} of {} samples lack id {id}: {wrong:?}",
            wrong.len(),
            cpu.len() + exec.len()
        );
    }
    eprintln!("{report}");

    // What Pyroscope's parser reads: `event` = cpu before the samples, every
    // sample RUNNABLE (so all of them count as CPU), the same context ids.
    let file = std::fs::read(&out).unwrap();
    let parsed = pyroscope_parser::parse(&file);
    assert!(
        !parsed.event_settings.is_empty() && parsed.event_settings.iter().all(|v| v == "cpu"),
        "{:?}",
        parsed.event_settings
    );
    assert!(
        parsed
            .samples
            .iter()
            .all(|s| s.state.as_deref() == Some("STATE_RUNNABLE"))
    );
    let exec_total: usize = by
        .iter()
        .filter(|(k, _)| k.0 == "jdk.ExecutionSample")
        .map(|(_, v)| v.len())
        .sum();
    assert_eq!(
        parsed.samples.len(),
        exec_total,
        "the same samples as jfr print"
    );
    let mut pyro_ids: BTreeMap<u64, usize> = BTreeMap::new();
    for s in &parsed.samples {
        *pyro_ids.entry(s.context_id).or_default() += 1;
    }
    for id in ids {
        assert!(
            pyro_ids.get(&id).copied().unwrap_or(0) >= 10,
            "{pyro_ids:?}"
        );
    }
    assert_eq!(parsed.strings_by_encoding.get(&2), None);
    assert!(parsed.strings_by_encoding.values().sum::<u64>() > 100);

    // The JDK's CPU-time view still reads the CPU-time samples.
    let view = flightrec_testkit::view("cpu-time-hot-methods", &out);
    let rows = flightrec_testkit::view_rows(&view);
    assert!(rows.iter().map(|r| r.1).sum::<u64>() >= 50, "{view}");
}

#[test]
fn wall_mode_says_wall_and_sleeping_samples_keep_their_ids() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("labels_wall");
    let out = dir.join("wall.jfr");
    let mut s = Settings::new();
    s.set("jdk.ExecutionSample", "enabled", "true").unwrap();
    s.set("jdk.ExecutionSample", "period", "10 ms").unwrap();
    sampler::set_pyroscope_events(true);
    let rec = Recording::start(RecordingConfig::new(&out).settings(s)).unwrap();
    let t = std::thread::Builder::new()
        .name("label-wall".into())
        .spawn(|| {
            let _g = labels::scope(&[("endpoint", "/wall")]);
            phase_wall_run(300);
            phase_wall_sleep(400);
            labels::current()
        })
        .unwrap();
    let id = t.join().unwrap();
    assert_eq!(sampler::pyroscope_sample_rate(), Some(100));
    rec.stop().unwrap();
    sampler::set_pyroscope_events(false);
    assert_ne!(id, 0);

    let by = samples_by_phase(&out);
    for phase in ["phase_wall_run", "phase_wall_sleep"] {
        let got = by
            .get(&("jdk.ExecutionSample".to_owned(), phase.to_owned()))
            .cloned()
            .unwrap_or_default();
        assert!(got.len() >= 5, "{phase}: {} samples", got.len());
        assert!(got.iter().all(|&i| i == id), "{phase}: {got:?} vs {id}");
    }
    let parsed = pyroscope_parser::parse(&std::fs::read(&out).unwrap());
    assert!(
        !parsed.event_settings.is_empty() && parsed.event_settings.iter().all(|v| v == "wall"),
        "{:?}",
        parsed.event_settings
    );
    let states: BTreeMap<Option<String>, usize> =
        parsed.samples.iter().fold(BTreeMap::new(), |mut m, s| {
            *m.entry(s.state.clone()).or_default() += 1;
            m
        });
    assert!(
        states
            .get(&Some("STATE_RUNNABLE".into()))
            .copied()
            .unwrap_or(0)
            >= 5
            && states
                .get(&Some("STATE_SLEEPING".into()))
                .copied()
                .unwrap_or(0)
                >= 5,
        "{states:?}"
    );
    assert_eq!(states.get(&None), None, "every state resolves");
}

#[test]
fn without_the_pyroscope_shape_cpu_samples_stay_cpu_time_samples_only() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("labels_plain");
    let out = dir.join("plain.jfr");
    // Labels in the samples without Pyroscope's shape.
    labels::set_in_samples(true);
    let rec = Recording::start(RecordingConfig::new(&out).settings(settings_cpu())).unwrap();
    labels::set_in_samples(false);
    let id = std::thread::Builder::new()
        .name("label-plain".into())
        .spawn(|| {
            wait_until_sampled();
            let _g = labels::scope(&[("endpoint", "/plain")]);
            phase_plain(200);
            labels::current()
        })
        .unwrap()
        .join()
        .unwrap();
    rec.stop().unwrap();
    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("jdk.ExecutionSample"), Some(&0));
    let by = samples_by_phase(&out);
    let got = &by[&("jdk.CPUTimeSample".to_owned(), "phase_plain".to_owned())];
    let expiries = by[&("expiries".to_owned(), "phase_plain".to_owned())].len();
    assert!(
        !got.is_empty() && expiries >= 10 && got.iter().all(|&i| i == id),
        "{got:?} ({expiries} expiries) vs {id}"
    );
    // No `event` setting without the switch; the rest of the rules hold.
    let parsed = pyroscope_parser::parse(&std::fs::read(&out).unwrap());
    assert!(parsed.event_settings.is_empty());
}

/// A one-chunk file of the built-in metadata (the samples with `contextId`,
/// as with Pyroscope's shape on) and the records `events` writes.
fn chunk_with(events: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    use jfr_format::{ChunkEnd, ChunkStart, ChunkWriter, Metadata};
    let start = ChunkStart {
        start_nanos: 0,
        start_ticks: 0,
        ticks_per_second: 1_000_000_000,
    };
    let mut w = ChunkWriter::begin(std::io::Cursor::new(Vec::new()), start).unwrap();
    w.write_metadata(&Metadata::builtin_for(true), 1, 0)
        .unwrap();
    let mut buf = Vec::new();
    events(&mut buf);
    w.write_events(&buf).unwrap();
    let end = ChunkEnd {
        duration_nanos: 1,
        ticks_per_second: None,
        last: true,
    };
    w.finish(end).unwrap().into_inner()
}

fn active_setting(out: &mut Vec<u8>, name: &str, value: &str) {
    use jfr_format::write::encode::Sink;
    use jfr_format::write::record::{begin_record, end_record};
    let r = begin_record(out, jfr_format::TypeId::ACTIVE_SETTING);
    out.put_i64(5);
    out.put_i64(jfr_format::TypeId::EXECUTION_SAMPLE.0 as i64);
    out.put_str(name);
    out.put_str(value);
    end_record(out, r);
}

fn execution_sample(out: &mut Vec<u8>) {
    use jfr_format::write::encode::Sink;
    use jfr_format::write::record::{begin_record, end_record};
    let r = begin_record(out, jfr_format::TypeId::EXECUTION_SAMPLE);
    out.put_i64(6);
    out.put_varint(0);
    out.put_varint(0);
    out.put_varint(jfr_format::write::constants::thread_state::RUNNABLE.0);
    out.put_i64(0);
    end_record(out, r);
}

// Negative controls: the parser check fails where Pyroscope's would.

#[test]
fn the_check_accepts_a_sample_after_the_event_setting() {
    let file = chunk_with(|out| {
        active_setting(out, "event", "cpu");
        execution_sample(out);
    });
    let parsed = pyroscope_parser::parse(&file);
    assert_eq!(parsed.samples.len(), 1);
    assert_eq!(parsed.event_settings, ["cpu"]);
}

#[test]
#[should_panic(expected = "before any `event` setting")]
fn the_check_rejects_a_sample_before_the_event_setting() {
    let file = chunk_with(|out| {
        execution_sample(out);
        active_setting(out, "event", "cpu");
    });
    pyroscope_parser::parse(&file);
}

#[test]
#[should_panic(expected = "string encoding 2")]
fn the_check_rejects_string_pool_references() {
    use jfr_format::write::encode::Sink;
    use jfr_format::write::record::{begin_record, end_record};
    let file = chunk_with(|out| {
        let r = begin_record(out, jfr_format::TypeId::ACTIVE_SETTING);
        out.put_i64(5);
        out.put_i64(1);
        out.put_str("event");
        out.put_str_ref(1);
        end_record(out, r);
    });
    pyroscope_parser::parse(&file);
}
