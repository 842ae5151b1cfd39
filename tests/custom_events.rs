//! Runs the `custom_events` example (built by `cargo test` beside this test)
//! and checks its file with JDK 25's `jfr`: exact counts per type, declared
//! labels, thread names, and stack traces with the Rust function names.

use std::process::Command;

use flightrec_testkit::example_binary;

#[test]
fn custom_events_counts_labels_threads_and_stacks_match_jfr() {
    let dir = flightrec_testkit::temp_dir("custom_events");
    let out = dir.join("custom.jfr");
    let run = Command::new(example_binary("custom_events"))
        .args([
            "--out",
            out.to_str().unwrap(),
            "--threads",
            "8",
            "--events",
            "60000",
        ])
        .output()
        .expect("run custom_events");
    assert!(
        run.status.success(),
        "custom_events failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).unwrap();
    let printed: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
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
