//! Runs the `stream_watchdog` example, which streams its own recording:
//! its per-second lines add up to the counts in the file it writes (checked
//! with JDK 25's `jfr summary`), and their top frames have names and stacks
//! at least 3 frames deep.

use std::process::Command;

#[test]
fn watchdog_lines_match_the_file_and_name_their_frames() {
    let dir = flightrec_testkit::temp_dir("stream_watchdog");
    let out = dir.join("watchdog.jfr");
    let run = Command::new(flightrec_testkit::example_binary("stream_watchdog"))
        .args(["--seconds", "3", "--out", out.to_str().unwrap()])
        .output()
        .expect("run stream_watchdog");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (total, seconds) = lines.split_last().expect("lines");
    assert!(seconds.len() >= 3, "{stdout}");
    let (mut requests, mut samples, mut tops) = (0, 0, 0);
    for (i, s) in seconds.iter().enumerate() {
        assert_eq!(s["second"].as_u64(), Some(i as u64), "{stdout}");
        requests += s["requests"].as_u64().unwrap();
        samples += s["samples"].as_u64().unwrap();
        for t in s["top"].as_array().unwrap() {
            let f = t["function"].as_str().unwrap();
            assert!(!f.is_empty() && f != "?", "{t}");
            assert!(t["depth"].as_u64().unwrap() >= 3, "{t}");
            tops += 1;
        }
        if s["requests"].as_u64().unwrap() > 0 {
            assert!(s["p99_us"].as_f64().unwrap() > 0.0, "{s}");
        }
    }
    assert!(tops > 0, "no CPU samples at all: {stdout}");
    assert_eq!(total["stream_errors"].as_u64(), Some(0));
    let summary = flightrec_testkit::summary(&out);
    let file_requests = summary.counts["watchdog.Request"];
    let file_samples = summary.counts["jdk.CPUTimeSample"];
    assert!(file_requests > 0);
    assert_eq!(requests, file_requests, "{stdout}");
    assert_eq!(
        total["total"]["watchdog.Request"].as_u64(),
        Some(file_requests)
    );
    assert_eq!(samples, file_samples, "{stdout}");
    assert_eq!(
        total["total"]["jdk.CPUTimeSample"].as_u64(),
        Some(file_samples)
    );
}
