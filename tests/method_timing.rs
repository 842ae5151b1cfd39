//! Runs the `method_timing` example and checks its file with JDK 25's own
//! JEP 520 views: `jfr view method-timing` shows exactly the printed call
//! counts for the selected functions and no row for the unselected one;
//! `jfr view method-calls` names the caller; every `jdk.MethodTrace` has a
//! stack trace whose top frame is the calling function.

use flightrec_testkit::run_example;

#[test]
fn method_timing_counts_callers_and_stacks_match_jfr() {
    let dir = flightrec_testkit::temp_dir("method_timing");
    let out = dir.join("timing.jfr");
    let printed = run_example(
        "method_timing",
        &[
            "--out",
            out.to_str().unwrap(),
            "--threads",
            "3",
            "--iterations",
            "3000",
        ],
    );
    let calls = printed["calls"].as_object().expect("calls object");
    assert_eq!(calls.len(), 5);
    // 3 threads × 30 top-level fib(10), each 177 calls.
    assert_eq!(
        calls["method_timing::work::fib"].as_u64(),
        Some(3 * 30 * 177)
    );
    assert_eq!(calls["method_timing::work::Store::put"].as_u64(), Some(900));

    let view = flightrec_testkit::view("method-timing", &out);
    for (path, n) in calls {
        // `jfr` shows `krate.module.Type.method()`.
        let shown = format!("{}()", path.replace("::", "."));
        let row = view
            .lines()
            .find(|l| l.split_whitespace().next() == Some(shown.as_str()))
            .unwrap_or_else(|| panic!("no row for {shown} in:\n{view}"));
        let count: u64 = row
            .split_whitespace()
            .nth(1)
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert_eq!(Some(count), n.as_u64(), "invocations of {path}:\n{view}");
    }
    assert!(
        !view.contains("helper"),
        "unselected function has a row:\n{view}"
    );

    let calls_view = flightrec_testkit::view("method-calls", &out);
    let row = calls_view
        .lines()
        .find(|l| l.contains("method_timing.work.Store.put()"))
        .unwrap_or_else(|| panic!("no traced method:\n{calls_view}"));
    assert!(
        row.contains("method_timing.work.run_worker()"),
        "{calls_view}"
    );
    assert!(row.trim_end().ends_with("900"), "{calls_view}");

    let events = flightrec_testkit::print_json(&out);
    let traces: Vec<_> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.MethodTrace")
        .collect();
    assert_eq!(traces.len(), 900);
    for t in traces {
        let top = &t["values"]["stackTrace"]["frames"][0]["method"];
        assert_eq!(top["name"], "run_worker", "top frame: {top}");
        assert_eq!(t["values"]["method"]["name"], "put");
    }
}
