//! Builds `examples/c/events.c` and `examples/cpp/events.cpp` with the
//! system compiler against `libflightrec.so` and `libflightrec.a`, runs
//! them, and checks their files with JDK 25's `jfr`: `jfr summary` has the
//! exact counts they print, every event's fields in `jfr print --json` are
//! the values the program derived from (worker, i), and `jfr view
//! cpu-time-hot-methods` names the function that burns the CPU.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;
use support::{Link, capi_dir, compile, hot_methods, run_ok};

/// One profiled run at a time: two would share the two cores.
static ONE_RUN_AT_A_TIME: Mutex<()> = Mutex::new(());

const THREADS: u64 = 4;
const EVENTS: u64 = 8000;

/// Builds and runs one example; returns the file and the counts it printed.
fn run(source: &str, link: Link, name: &str) -> (std::path::PathBuf, Value) {
    let _alone = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir(&format!("{name}-{link:?}"));
    let exe = compile(&capi_dir().join(source), &dir.join(name), link);
    let out = dir.join("out.jfr");
    let run = run_ok(Command::new(&exe).args([
        out.to_str().unwrap(),
        &THREADS.to_string(),
        &EVENTS.to_string(),
    ]));
    let printed: Value = serde_json::from_slice(&run.stdout).expect("one JSON line");
    (out, printed)
}

/// `jfr summary` counts equal the printed ones.
fn check_counts(out: &Path, printed: &Value) {
    let summary = flightrec_testkit::summary(out);
    let counts = printed["counts"].as_object().expect("counts");
    assert_eq!(counts.len(), 2);
    for (ty, n) in counts {
        assert_eq!(n.as_u64(), Some(THREADS * EVENTS), "{ty} printed");
        assert_eq!(
            summary.counts.get(ty).copied(),
            n.as_u64(),
            "{ty} in jfr summary"
        );
    }
}

fn events<'a>(all: &'a Value, ty: &str) -> Vec<&'a Value> {
    all.as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| &e["values"])
        .collect()
}

/// The hottest method of the file's CPU samples is `method`.
fn check_hot(out: &Path, method: &str) {
    let view = flightrec_testkit::view("cpu-time-hot-methods", out);
    let hot = hot_methods(&view);
    assert_eq!(
        hot.first().map(|(m, _)| m.as_str()),
        Some(method),
        "not on top:\n{view}"
    );
    assert!(hot[0].1 >= 20, "too few samples:\n{view}");
}

fn check_c(out: &Path, printed: &Value) {
    check_counts(out, printed);
    let all = flightrec_testkit::print_json(out);
    let methods = ["GET", "PUT", "DELETE"];
    let mut seen = BTreeSet::new();
    for v in events(&all, "com.example.c.Request") {
        let bytes = v["bytes"].as_i64().expect("bytes");
        let (i, w) = (bytes / 16, bytes % 16);
        assert!(w < THREADS as i64 && i < EVENTS as i64, "{v}");
        assert_eq!(v["method"], methods[(i % 3) as usize], "{v}");
        assert_eq!(v["status"].as_i64(), Some(200 + i % 5), "{v}");
        assert!(v["duration"].is_string(), "{v}");
        assert!(seen.insert(bytes), "duplicate {v}");
    }
    assert_eq!(seen.len() as u64, THREADS * EVENTS);
    let mut ticks = 0;
    for v in events(&all, "com.example.c.Tick") {
        let i = v["seq"].as_i64().expect("seq");
        let w = v["worker"].as_i64().expect("worker");
        assert!((0..THREADS as i64).contains(&w), "{v}");
        assert_eq!(v["ratio"].as_f64(), Some(i as f64 / 1000.0), "{v}");
        assert_eq!(v["even"].as_bool(), Some(i % 2 == 0), "{v}");
        assert_eq!(
            v["worker_thread"]["javaThreadId"], v["eventThread"]["javaThreadId"],
            "{v}"
        );
        ticks += 1;
    }
    assert_eq!(ticks, THREADS * EVENTS);
    check_hot(out, "events_c.crunch_numbers()");
}

fn check_cpp(out: &Path, printed: &Value) {
    check_counts(out, printed);
    let all = flightrec_testkit::print_json(out);
    let symbols = ["ACME", "INITECH", "HOOLI", "UMBRELLA"];
    let mut seen = BTreeSet::new();
    for v in events(&all, "com.example.cpp.Order") {
        let id = v["quantity"].as_i64().expect("quantity");
        let i = id / 8;
        assert_eq!(v["symbol"], symbols[(i % 4) as usize], "{v}");
        assert_eq!(
            v["price"].as_f64(),
            Some(100.0 + (i % 50) as f64 + 0.25),
            "{v}"
        );
        assert!(seen.insert(id), "duplicate {v}");
    }
    assert_eq!(seen.len() as u64, THREADS * EVENTS);
    for v in events(&all, "com.example.cpp.Fill") {
        let id = v["order"].as_i64().expect("order");
        assert!(seen.contains(&id), "fill of no order: {v}");
        assert_eq!(v["partial"].as_bool(), Some((id / 8) % 3 == 0), "{v}");
        assert_eq!(
            v["trader"]["javaThreadId"], v["eventThread"]["javaThreadId"],
            "{v}"
        );
    }
    check_hot(out, "pricing.Model.evaluate()");
}

#[test]
fn c_example_against_the_shared_library() {
    let (out, printed) = run("examples/c/events.c", Link::Shared, "events_c");
    check_c(&out, &printed);
}

#[test]
fn c_example_against_the_static_library() {
    let (out, printed) = run("examples/c/events.c", Link::Static, "events_c");
    check_c(&out, &printed);
}

#[test]
fn cpp_example_against_the_shared_library() {
    let (out, printed) = run("examples/cpp/events.cpp", Link::Shared, "events_cpp");
    check_cpp(&out, &printed);
}

#[test]
fn cpp_example_against_the_static_library() {
    let (out, printed) = run("examples/cpp/events.cpp", Link::Static, "events_cpp");
    check_cpp(&out, &printed);
}
