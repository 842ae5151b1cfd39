//! Runs the `custom_events` example (built by `cargo test` beside this test)
//! and checks its file with JDK 25's `jfr`: exact counts per type, declared
//! labels, thread names, and stack traces with the Rust function names.

use flightrec_testkit::run_example;

#[test]
fn custom_events_counts_labels_threads_and_stacks_match_jfr() {
    let dir = flightrec_testkit::temp_dir("custom_events");
    let out = dir.join("custom.jfr");
    let printed = run_example(
        "custom_events",
        &[
            "--out",
            out.to_str().unwrap(),
            "--threads",
            "8",
            "--events",
            "60000",
        ],
    );
    let printed = printed["counts"].as_object().expect("counts object");
    assert_eq!(printed.len(), 3);

    let summary = flightrec_testkit::summary(&out);
    for (name, n) in printed {
        assert_eq!(
            summary.counts.get(name).copied(),
            n.as_u64(),
            "count of {name}"
        );
    }
    assert_eq!(printed["com.example.Tick"].as_u64(), Some(20000));
    assert_eq!(printed["com.example.Allocation"].as_u64(), Some(20000));
    assert!(printed["com.example.Request"].as_u64().unwrap() > 0);

    let text = flightrec_testkit::print_text(&out);
    let meta = flightrec_testkit::metadata(&out);
    for label in ["Tick", "Request", "Allocation", "Response Size", "Sequence"] {
        assert!(
            meta.contains(&format!("@Label(\"{label}\")")),
            "label {label} missing from metadata"
        );
    }
    for t in 0..8 {
        assert!(
            text.contains(&format!("eventThread = \"worker-{t}\"")),
            "thread worker-{t} missing"
        );
    }
    assert!(
        text.contains("custom_events.allocate()"),
        "Rust function name missing from stack traces"
    );
    assert!(text.contains("custom_events.serve()") || text.contains("path = \"/index.html\""));
    assert!(
        !text.contains("recorder.event.commit"),
        "recorder internals leaked into stack traces"
    );
}
