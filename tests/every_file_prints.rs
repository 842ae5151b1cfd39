//! Every example's file passes every `jfr` printer: plain `jfr print`,
//! `--json`, `--xml` and `jfr view all-events`, with exit status 0 and an
//! empty stderr (`flightrec_testkit::PRINT_COMMANDS`), and `jfr summary`
//! counts exactly what the example says it wrote.
//!
//! Every file also reads through the readers besides the JDK's
//! (`flightrec_testkit::readers`, run by `assert_prints`): the samples,
//! allocations and locks field by field in JDK 25's order with keys below
//! 2^31, as async-profiler's converter reads them, and every constant-pool
//! reference resolved in its own chunk by `jfrs` and by flightrec's reader.
//! Where an example writes samples, allocations or locks, the positional
//! reader must have read every one `jfr summary` counts.
//!
//! A file that `jfr summary` and `jfr print --json` read can still crash
//! plain `jfr print` (JDK 25's pretty printer on arrays of primitives, see
//! docs/jfr-format.md); the tests' own files get the same check from the
//! testkit helpers, this covers the examples, with small arguments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use flightrec_testkit::{self as testkit, example_binary, run_example, views};

/// The examples this file runs; `every_example_is_covered` keeps the list
/// in step with `examples/`.
const EXAMPLES: [&str; 13] = [
    "alloc_lock",
    "always_on",
    "conservation_flood",
    "cpu_profile",
    "custom_events",
    "env_start",
    "format_tour",
    "method_timing",
    "pyroscope_push",
    "rotation_stress",
    "stream_watchdog",
    "system_events",
    "tracing_layer",
];

fn out(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// Asserts that the positional reader read every event of `types` that
/// `jfr summary` counts in `path`, and returns how many samples it read
/// with a `contextId`.
fn read_positionally(path: &Path, types: &[&str]) -> u64 {
    let report = testkit::positional::check(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let summary = summary(path);
    for ty in types {
        let n = summary.counts.get(*ty).copied().unwrap_or(0);
        assert!(n > 0, "{}: no {ty}", path.display());
        assert_eq!(
            report.events.get(*ty).copied().unwrap_or(0),
            n,
            "{}: {ty} read positionally",
            path.display()
        );
    }
    report.with_context_id
}

/// `jfr summary` of `path`, after checking that the `flightrec` command
/// agrees with it: `flightrec summary` prints the same per-type counts and
/// sizes, and `flightrec print --json` holds as many events of each type.
/// (Run where the file's `jfr summary` is wanted anyway, so no JVM more.)
fn summary(path: &Path) -> testkit::Summary {
    let jfr = testkit::summary(path);
    let mut rec = flightrec_cli::recording::Recording::open(path).unwrap();
    let mut text = Vec::new();
    flightrec_cli::summary::run(&mut rec, &mut text).unwrap();
    let ours = testkit::Summary::parse(&String::from_utf8(text).unwrap());
    assert_eq!(
        ours.counts,
        jfr.counts,
        "{}: flightrec summary",
        path.display()
    );
    assert_eq!(
        ours.sizes,
        jfr.sizes,
        "{}: flightrec summary",
        path.display()
    );
    assert_eq!(
        ours.chunks,
        jfr.chunks,
        "{}: flightrec summary",
        path.display()
    );

    let opts = flightrec_cli::print::Options {
        json: true,
        events: None,
        stack_depth: 1,
    };
    let mut rec = flightrec_cli::recording::Recording::open(path).unwrap();
    let mut json = Vec::new();
    flightrec_cli::print::run(&mut rec, &opts, &mut json).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let mut printed: std::collections::BTreeMap<String, u64> = Default::default();
    for ev in doc["recording"]["events"].as_array().unwrap() {
        *printed
            .entry(ev["type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for (ty, &n) in &jfr.counts {
        if n > 0 && !matches!(ty.as_str(), "jdk.Metadata" | "jdk.Checkpoint") {
            assert_eq!(
                printed.get(ty).copied(),
                Some(n),
                "{}: {ty} in flightrec print --json",
                path.display()
            );
        }
    }
    same_values(path, &jfr);
    jfr
}

/// Asserts that `flightrec print --json` and `jfr print --json` give the
/// same values, event for event, for the file's three most numerous event
/// types (one JVM: `jfr print --json --events A,B,C`).
fn same_values(path: &Path, jfr: &testkit::Summary) {
    let mut types: Vec<(&String, &u64)> = jfr
        .counts
        .iter()
        .filter(|&(ty, &n)| n > 0 && !matches!(ty.as_str(), "jdk.Metadata" | "jdk.Checkpoint"))
        .collect();
    types.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let types: Vec<String> = types.iter().take(3).map(|(t, _)| (*t).clone()).collect();
    let list = types.join(",");
    let theirs = testkit::jfr().run_text(&[
        "print".as_ref(),
        "--json".as_ref(),
        "--events".as_ref(),
        list.as_ref(),
        path.as_os_str(),
    ]);
    let opts = flightrec_cli::print::Options {
        json: true,
        events: Some(types.iter().cloned().collect()),
        stack_depth: 5,
    };
    let mut rec = flightrec_cli::recording::Recording::open(path).unwrap();
    let mut ours = Vec::new();
    flightrec_cli::print::run(&mut rec, &opts, &mut ours).unwrap();
    let ours: serde_json::Value = serde_json::from_slice(&ours).unwrap();
    let theirs: serde_json::Value = serde_json::from_str(&theirs).unwrap();
    // The same events with the same values; the order of events with equal
    // times within a chunk is the printer's own.
    let events = |v: &serde_json::Value| {
        let mut e: Vec<String> = (v["recording"]["events"].as_array().unwrap().iter())
            .map(|e| e.to_string())
            .collect();
        e.sort();
        e
    };
    let (ours, theirs) = (events(&ours), events(&theirs));
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{}: events of {list}",
        path.display()
    );
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "{}: event {i} of {list}", path.display());
    }
}

/// Asserts that `flightrec view VIEW` and `jfr view VIEW` of `path` have
/// the same top 5 rows.
fn same_top_rows(path: &Path, view: &str) {
    let mut rec = flightrec_cli::recording::Recording::open(path).unwrap();
    let mut ours = Vec::new();
    flightrec_cli::view::run(&mut rec, view, &mut ours).unwrap();
    let ours = views::rows(&String::from_utf8(ours).unwrap());
    let theirs = views::rows(&testkit::view(view, path));
    assert!(
        !theirs.is_empty(),
        "{}: jfr view {view}: no rows",
        path.display()
    );
    assert_eq!(
        views::top(&ours, 5),
        views::top(&theirs, 5),
        "{}: flightrec view {view}",
        path.display()
    );
}

/// Asserts that `path` prints and that `jfr summary` shows `counts` (the
/// example's own `{"<event name>": N}` object) exactly.
fn check(path: &Path, counts: &serde_json::Value) {
    testkit::assert_prints(path);
    let summary = summary(path);
    let counts = counts.as_object().expect("counts object");
    assert!(!counts.is_empty(), "{}: no counts printed", path.display());
    for (name, n) in counts {
        assert_eq!(
            summary.counts.get(name).copied(),
            n.as_u64(),
            "{}: count of {name}",
            path.display()
        );
    }
}

#[test]
fn every_example_is_covered() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let found: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").map_or(name.clone(), str::to_owned)
        })
        .collect();
    let listed: BTreeSet<String> = EXAMPLES.iter().map(|s| s.to_string()).collect();
    assert_eq!(found, listed, "examples/ and this file's EXAMPLES differ");
}

#[test]
fn conservation_flood_prints() {
    let dir = testkit::temp_dir("prints-conservation_flood");
    let printed = run_example(
        "conservation_flood",
        &[
            "--threads",
            "2",
            "--events",
            "20000",
            "--runs",
            "1",
            "--keep",
            "--dir",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(printed["ok"], true, "{printed}");
    let path = dir.join("flood-0.jfr");
    testkit::assert_prints(&path);
    summary(&path);
    assert_eq!(printed["in_file"], printed["committed"], "{printed}");
}

#[test]
fn always_on_prints() {
    let dir = testkit::temp_dir("prints-always_on");
    let path = out(&dir, "always_on.jfr");
    let printed = run_example(
        "always_on",
        &[
            "--seconds",
            "1",
            "--threads",
            "1",
            "--out",
            path.to_str().unwrap(),
        ],
    );
    check(&path, &printed["counts"]);
}

#[test]
fn pyroscope_push_prints() {
    let dir = testkit::temp_dir("prints-pyroscope_push");
    let path = out(&dir, "pyroscope_push.jfr");
    let printed = run_example(
        "pyroscope_push",
        &[
            "--url",
            "local",
            "--seconds",
            "3",
            "--out",
            path.to_str().unwrap(),
        ],
    );
    let recorded = printed["samples_recorded"]
        .as_u64()
        .expect("samples_recorded");
    assert!(recorded > 0, "{printed}");
    assert_eq!(
        printed["samples_uploaded"].as_u64(),
        Some(recorded),
        "{printed}"
    );
    assert!(printed["uploads"].as_u64() >= Some(2), "{printed}");
    check(
        &path,
        &serde_json::json!({ "jdk.ExecutionSample": recorded }),
    );
    // Uploads carry labels: the samples end with `contextId` (the
    // documented exception, docs/pyroscope-events.md), and only they.
    assert_eq!(read_positionally(&path, &["jdk.ExecutionSample"]), recorded);
}

#[test]
fn alloc_lock_prints() {
    let dir = testkit::temp_dir("prints-alloc_lock");
    let path = out(&dir, "alloc_lock.jfr");
    let printed = run_example(
        "alloc_lock",
        &["--seconds", "1", "--out", path.to_str().unwrap()],
    );
    assert!(printed["allocated"].is_object(), "{printed}");
    testkit::assert_prints(&path);
    let summary = summary(&path);
    for event in [
        "jdk.ObjectAllocationSample",
        "jdk.OldObjectSample",
        "jdk.ThreadAllocationStatistics",
    ] {
        assert!(
            summary.counts.get(event).copied().unwrap_or(0) > 0,
            "no {event} in {}",
            path.display()
        );
    }
    let waits: u64 = printed["contended"]
        .as_object()
        .expect("contended object")
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert!(waits > 0, "no wait over the threshold: {printed}");
    same_top_rows(&path, "allocation-by-site");
    // Every wait the example counted, none more: the holds are far from
    // the threshold on either side.
    assert_eq!(
        summary.counts.get("jdk.JavaMonitorEnter").copied(),
        Some(waits)
    );
    let types = ["jdk.ObjectAllocationSample", "jdk.JavaMonitorEnter"];
    assert_eq!(read_positionally(&path, &types), 0);
}

#[test]
fn format_tour_prints() {
    let dir = testkit::temp_dir("prints-format_tour");
    let path = out(&dir, "tour.jfr");
    let printed = run_example("format_tour", &[path.to_str().unwrap()]);
    check(&path, &printed["counts"]);
    // The array field is printed element by element by plain `jfr print`.
    let text = testkit::print_text(&path);
    assert!(
        text.contains("flightrec.tour.Widget.layout(byte[], boolean) line: 108"),
        "ArrayEvent frames missing from `jfr print`"
    );
}

#[test]
fn custom_events_prints() {
    let dir = testkit::temp_dir("prints-custom_events");
    let path = out(&dir, "custom.jfr");
    let p = path.to_str().unwrap();
    let printed = run_example(
        "custom_events",
        &["--out", p, "--threads", "2", "--events", "3000"],
    );
    check(&path, &printed["counts"]);
}

#[test]
fn rotation_stress_prints() {
    let dir = testkit::temp_dir("prints-rotation_stress");
    let path = out(&dir, "stress.jfr");
    let p = path.to_str().unwrap();
    let printed = run_example(
        "rotation_stress",
        &[
            "--out",
            p,
            "--threads",
            "2",
            "--events",
            "20000",
            "--rotate-ms",
            "5",
        ],
    );
    check(&path, &printed["counts"]);
}

#[test]
fn cpu_profile_prints() {
    let dir = testkit::temp_dir("prints-cpu_profile");
    for (file, extra) in [("cpu.jfr", None), ("wall.jfr", Some("--wall"))] {
        let path = out(&dir, file);
        let mut args = vec!["--out", path.to_str().unwrap(), "--seconds", "1"];
        args.extend(extra);
        let printed = run_example("cpu_profile", &args);
        assert!(printed.is_object(), "{printed}");
        testkit::assert_prints(&path);
        let summary = summary(&path);
        let kind = if extra.is_some() {
            "jdk.ExecutionSample"
        } else {
            "jdk.CPUTimeSample"
        };
        assert!(
            summary.counts.get(kind).copied().unwrap_or(0) > 0,
            "{file}: no {kind} events: {summary:?}"
        );
        // Without labels the samples are the JDK's, field for field.
        assert_eq!(read_positionally(&path, &[kind]), 0, "{file}");
        let view = if extra.is_some() {
            "hot-methods"
        } else {
            "cpu-time-hot-methods"
        };
        same_top_rows(&path, view);
    }
}

#[test]
fn system_events_prints() {
    let dir = testkit::temp_dir("prints-system_events");
    let path = out(&dir, "system.jfr");
    let printed = run_example(
        "system_events",
        &[
            "--out",
            path.to_str().unwrap(),
            "--seconds",
            "1",
            "--panics",
            "2",
        ],
    );
    assert_eq!(printed["panics"], 2, "{printed}");
    testkit::assert_prints(&path);
    let summary = summary(&path);
    for kind in [
        "jdk.ThreadStart",
        "jdk.CPUInformation",
        "jdk.JavaErrorThrow",
        "jdk.Shutdown",
    ] {
        assert!(
            summary.counts.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} events: {summary:?}"
        );
    }
}

#[test]
fn env_start_prints() {
    let dir = testkit::temp_dir("prints-env_start");
    let path = out(&dir, "env.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("500")
        .env(
            "FLIGHTREC",
            format!(
                "filename={},settings=profile,com.example.Work#enabled=true",
                path.display()
            ),
        )
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    check(&path, &serde_json::json!({ "com.example.Work": 500 }));
}

#[test]
fn method_timing_prints() {
    let dir = testkit::temp_dir("prints-method_timing");
    let path = out(&dir, "timing.jfr");
    let printed = run_example("method_timing", &["--out", path.to_str().unwrap()]);
    testkit::assert_prints(&path);
    let summary = summary(&path);
    // One traced call per `Store::put`.
    assert_eq!(
        summary.counts.get("jdk.MethodTrace").copied(),
        printed["calls"]["method_timing::work::Store::put"].as_u64()
    );
}

#[test]
fn tracing_layer_prints() {
    let dir = testkit::temp_dir("prints-tracing_layer");
    let path = out(&dir, "tracing.jfr");
    let printed = run_example("tracing_layer", &["--out", path.to_str().unwrap()]);
    testkit::assert_prints(&path);
    let summary = summary(&path);
    let counts = printed["counts"].as_object().expect("counts object");
    assert!(!counts.is_empty());
    for (ty, n) in counts {
        assert_eq!(
            summary.counts.get(ty).copied().unwrap_or(0),
            n.as_u64().unwrap(),
            "{ty}"
        );
    }
}

#[test]
fn stream_watchdog_prints() {
    let dir = testkit::temp_dir("prints-stream_watchdog");
    let path = out(&dir, "watchdog.jfr");
    let run = Command::new(example_binary("stream_watchdog"))
        .args(["--seconds", "2", "--out", path.to_str().unwrap()])
        .output()
        .expect("run stream_watchdog");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    testkit::assert_prints(&path);
    summary(&path);
}
