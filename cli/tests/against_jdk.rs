//! The `flightrec` command against JDK 25's `jfr` on the same files: a
//! recording HotSpot makes here, and one of flightrec's own (the
//! `cpu_profile` example). `summary` must print what `jfr summary` prints,
//! byte for byte; `print --json` must hold the same events, with the same
//! values for three types; the views' top rows must agree; and the profile
//! outputs must count exactly the file's samples.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use flightrec_testkit::views::{rows, top};
use flightrec_testkit::{jfr, run_example, temp_dir};
use serde_json::Value;

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

fn stdout_of(args: &[&str]) -> String {
    let out = flightrec(args);
    assert!(
        out.status.success(),
        "flightrec {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A HotSpot recording of a small program that burns CPU in `Burn.fib`
/// and allocates in `Burn.main`, made once per test binary.
fn hotspot_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = temp_dir("cli-hotspot");
        let src = dir.join("Burn.java");
        std::fs::write(
            &src,
            r#"
import java.util.*;
public class Burn {
    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    static List<int[]> keep = new ArrayList<>();
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + 2500, s = 0;
        while (System.currentTimeMillis() < end) {
            s += fib(24);
            keep.add(new int[1000]);
            if (keep.size() > 2000) keep.clear();
        }
        System.out.println(s);
    }
}
"#,
        )
        .unwrap();
        let file = dir.join("hs.jfr");
        let run = Command::new(jfr().java_path())
            .arg(format!(
                "-XX:StartFlightRecording:filename={},settings=profile",
                file.display()
            ))
            .arg(&src)
            .output()
            .expect("run java");
        assert!(
            run.status.success() && file.exists(),
            "java failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        file
    })
}

/// A `cpu_profile` recording (CPU-time samples of named Rust functions).
fn flightrec_file() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let file = temp_dir("cli-flightrec").join("cpu.jfr");
        run_example(
            "cpu_profile",
            &[
                "--out",
                file.to_str().unwrap(),
                "--seconds",
                "2",
                "--min-cpu",
                "300",
            ],
        );
        file
    })
}

fn both() -> [&'static Path; 2] {
    [hotspot_file(), flightrec_file()]
}

#[test]
fn summary_prints_what_jfr_summary_prints() {
    for f in both() {
        let ours = stdout_of(&["summary", f.to_str().unwrap()]);
        let theirs = jfr().run_text(&["summary".as_ref(), f.as_os_str()]);
        assert_eq!(ours, theirs, "summary of {}", f.display());
    }
}

/// Events of `json` (either printer's) grouped by type.
fn by_type(json: &Value) -> BTreeMap<String, Vec<Value>> {
    let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for e in json["recording"]["events"].as_array().expect("events") {
        m.entry(e["type"].as_str().unwrap().to_owned())
            .or_default()
            .push(e["values"].clone());
    }
    m
}

#[test]
fn print_json_has_the_same_events_and_values_as_jfr() {
    for (f, types) in [
        (
            hotspot_file(),
            [
                "jdk.ExecutionSample",
                "jdk.ObjectAllocationSample",
                "jdk.CPULoad",
            ],
        ),
        (
            flightrec_file(),
            [
                "jdk.CPUTimeSample",
                "jdk.ThreadCPULoad",
                "jdk.ActiveSetting",
            ],
        ),
    ] {
        let ours: Value =
            serde_json::from_str(&stdout_of(&["print", "--json", f.to_str().unwrap()])).unwrap();
        let theirs: Value = serde_json::from_str(&jfr().run_text(&[
            "print".as_ref(),
            "--json".as_ref(),
            f.as_os_str(),
        ]))
        .unwrap();
        let (ours, theirs) = (by_type(&ours), by_type(&theirs));
        let counts = |m: &BTreeMap<String, Vec<Value>>| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.len()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            counts(&ours),
            counts(&theirs),
            "event counts of {}",
            f.display()
        );
        for t in types {
            assert!(!theirs[t].is_empty(), "{} has no {t}", f.display());
            assert_eq!(ours[t], theirs[t], "values of {t} in {}", f.display());
        }
    }
}

#[test]
fn views_top_rows_match_jfr_view() {
    for (f, view) in [
        (hotspot_file(), "hot-methods"),
        (hotspot_file(), "allocation-by-site"),
        (flightrec_file(), "cpu-time-hot-methods"),
    ] {
        let ours = rows(&stdout_of(&["view", view, f.to_str().unwrap()]));
        let theirs = rows(&jfr().run_text(&["view".as_ref(), view.as_ref(), f.as_os_str()]));
        assert!(!theirs.is_empty(), "jfr view {view} printed no rows");
        assert_eq!(top(&ours, 5), top(&theirs, 5), "{view} of {}", f.display());
    }
}

fn cpu_samples(f: &Path) -> u64 {
    jfr().summary(f).nonzero_counts()["jdk.CPUTimeSample"]
}

#[test]
fn collapsed_and_pprof_count_every_cpu_sample() {
    let f = flightrec_file();
    let n = cpu_samples(f);
    let dir = temp_dir("cli-convert");

    let collapsed = dir.join("cpu.collapsed");
    stdout_of(&[
        "convert",
        f.to_str().unwrap(),
        "-o",
        collapsed.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&collapsed).unwrap();
    let total: u64 = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, n, "collapsed total");
    assert!(text.contains("cpu_profile.burn_heavy"), "{text}");

    let pb = dir.join("cpu.pb.gz");
    stdout_of(&["convert", f.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    let profile = flightrec_cli::convert::pprof::read(&std::fs::read(&pb).unwrap()).unwrap();
    let total: i64 = profile.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total as u64, n, "pprof total");
    assert!(
        profile
            .string_table
            .iter()
            .any(|s| s.starts_with("cpu_profile.burn_heavy"))
    );
    assert_eq!(profile.string_table[0], "");

    let speedscope = dir.join("cpu.speedscope.json");
    stdout_of(&[
        "convert",
        f.to_str().unwrap(),
        "-o",
        speedscope.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_slice(&std::fs::read(&speedscope).unwrap()).unwrap();
    let total: i64 = doc["profiles"][0]["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_i64().unwrap())
        .sum();
    assert_eq!(total as u64, n, "speedscope total");
}

#[test]
fn flame_graph_names_the_hottest_function() {
    let f = flightrec_file();
    let dir = temp_dir("cli-flame");
    for name in ["cpu.html", "cpu.svg"] {
        let out = dir.join(name);
        let run = flightrec(&["flame", f.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let page = std::fs::read_to_string(&out).unwrap();
        assert!(
            page.contains("cpu_profile.burn_heavy"),
            "{name} lacks the hot frame"
        );
        assert!(
            page.contains("function search("),
            "{name} lacks the search script"
        );
    }
}

/// `go tool pprof -raw` (Debian's `golang-go`, installed by
/// `scripts/test.sh`) reads the pprof file: its samples add up to the
/// file's `jdk.CPUTimeSample` count, and the Rust functions are named.
#[test]
fn go_tool_pprof_reads_the_profile() {
    let f = flightrec_file();
    let n = cpu_samples(f);
    let pb = temp_dir("cli-go-pprof").join("cpu.pb.gz");
    stdout_of(&["convert", f.to_str().unwrap(), "-o", pb.to_str().unwrap()]);
    let run = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(&pb)
        .env("HOME", temp_dir("cli-go-home"))
        .output()
        .expect("`go` is needed (scripts/test.sh installs Debian's golang-go)");
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "go tool pprof failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    // "Samples:" then a header line, then `COUNT: LOCATIONS` lines, each
    // followed by its labels, up to "Locations".
    let body = text
        .split("Samples:")
        .nth(1)
        .and_then(|s| s.split("Locations").next())
        .expect("a Samples section");
    let total: u64 = body
        .lines()
        .filter_map(|l| l.trim().split_once(':'))
        .filter_map(|(count, _)| count.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(total, n, "pprof's samples: {text}");
    assert!(text.contains("cpu_profile.burn_heavy"), "{text}");
}

/// The flame graph page, rendered by headless Chromium (Debian's
/// `chromium`, installed by `scripts/test.sh`): it holds a frame named after
/// the hottest function, and searching for it (`?s=`, the page's own
/// search) highlights that frame and reports a match.
#[test]
fn chromium_renders_the_flame_graph_and_its_search_finds_the_hottest_function() {
    let f = flightrec_file();
    let top = rows(&jfr().view("cpu-time-hot-methods", f));
    let hottest = &top.first().expect("a hot method").0;
    let function = hottest.rsplit('.').next().unwrap();
    let dir = temp_dir("cli-chromium");
    let page = dir.join("cpu.html");
    stdout_of(&["flame", f.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let profile_dir = dir.join("profile");
    let run = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}?s={function}", page.display()))
        .output()
        .expect("`chromium` is needed (scripts/test.sh installs Debian's chromium)");
    let dom = String::from_utf8_lossy(&run.stdout);
    assert!(
        dom.contains(hottest.as_str()),
        "no frame named {hottest} in the rendered page"
    );
    // The search colours matching frames rgb(230,0,230) and fills in the
    // "Matched:" line.
    let highlighted = dom
        .split("<g>")
        .filter(|g| g.contains(function) && g.contains("rgb(230,0,230)"))
        .count();
    assert!(highlighted > 0, "searching {function} highlighted no frame");
    assert!(dom.contains("Matched: "), "the search reported no match");
}
