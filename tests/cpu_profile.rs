//! Runs the `cpu_profile` example (built by `cargo test` beside this test)
//! and checks its `jdk.CPUTimeSample`s with JDK 25's `jfr` (issue 6): each
//! thread's share of the samples matches its share of measured CPU time,
//! `jfr view cpu-time-hot-methods` names the burn functions and the fast
//! handler (far above the slow one), and every sample has a real stack.

use std::collections::BTreeMap;
use std::process::Command;

use flightrec_testkit::example_binary;

/// The samples of the view's `Method` column, by method text.
fn view_counts(view: &str) -> BTreeMap<String, u64> {
    view.lines()
        .filter_map(|line| {
            let mut cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 3 || !cols.last()?.ends_with('%') {
                return None;
            }
            cols.pop();
            let n: u64 = cols.pop()?.parse().ok()?;
            Some((cols.join(" "), n))
        })
        .collect()
}

#[test]
fn cpu_time_samples_match_measured_cpu_time_and_name_the_hot_functions() {
    let dir = flightrec_testkit::temp_dir("cpu_profile");
    let out = dir.join("cpu.jfr");
    let run = Command::new(example_binary("cpu_profile"))
        .args(["--out", out.to_str().unwrap(), "--seconds", "5"])
        .output()
        .expect("run cpu_profile");
    assert!(
        run.status.success(),
        "cpu_profile failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).unwrap();
    let printed: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    let cpu: BTreeMap<String, u64> = printed["threads"]
        .as_object()
        .expect("threads object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("cpu ns")))
        .collect();
    assert_eq!(cpu.len(), 4, "{cpu:?}");

    let events = flightrec_testkit::print_json(&out);
    let mut samples: BTreeMap<String, u64> = BTreeMap::new();
    let mut n = 0;
    for e in events.as_array().unwrap() {
        if e["type"] != "jdk.CPUTimeSample" {
            continue;
        }
        n += 1;
        let v = &e["values"];
        let frames = v["stackTrace"]["frames"].as_array().map_or(0, Vec::len);
        assert!(frames >= 3, "sample with {frames} frames: {v}");
        let thread = v["eventThread"]["javaName"]
            .as_str()
            .or_else(|| v["eventThread"]["osName"].as_str())
            .unwrap_or("?")
            .to_owned();
        *samples.entry(thread).or_default() += 1;
    }
    assert!(n > 0, "no jdk.CPUTimeSample");

    // Shares among the example's own threads (the recorder's threads burn
    // CPU too, but the example cannot measure them).
    let total_cpu: u64 = cpu.values().sum();
    let total_samples: u64 = cpu
        .keys()
        .map(|t| samples.get(t).copied().unwrap_or(0))
        .sum();
    let mut report = String::new();
    for (thread, &ns) in &cpu {
        let s = samples.get(thread).copied().unwrap_or(0);
        let cpu_share = ns as f64 / total_cpu as f64;
        let sample_share = s as f64 / total_samples as f64;
        report += &format!(
            "{thread}: {s} samples ({:.1}%), {:.0} ms CPU ({:.1}%)\n",
            100.0 * sample_share,
            ns as f64 / 1e6,
            100.0 * cpu_share
        );
        if s >= 100 {
            let rel = (sample_share - cpu_share).abs() / cpu_share;
            assert!(
                rel <= 0.10,
                "{thread} off by {:.1}%:\n{report}",
                100.0 * rel
            );
        }
    }
    eprint!("{report}");
    assert!(
        cpu.keys()
            .filter(|t| samples.get(*t).copied().unwrap_or(0) >= 100)
            .count()
            >= 2,
        "too few threads with 100 samples to compare:\n{report}"
    );

    let view = flightrec_testkit::view("cpu-time-hot-methods", &out);
    let hot = view_counts(&view);
    let count = |m: &str| hot.get(m).copied().unwrap_or(0);
    for m in [
        "cpu_profile.burn_heavy()",
        "cpu_profile.burn_light()",
        "cpu_profile.handle_fast_request()",
    ] {
        assert!(count(m) > 0, "{m} missing from the view:\n{view}");
    }
    assert!(
        count("cpu_profile.handle_fast_request()")
            > 10 * count("cpu_profile.handle_slow_request()").max(1),
        "fast handler not far above the slow one:\n{view}"
    );
    assert!(
        count("cpu_profile.burn_heavy()") > count("cpu_profile.burn_light()"),
        "{view}"
    );
}
