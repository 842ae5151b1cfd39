//! What a person sees: the flame graph page and the report, rendered by
//! headless Chromium (Debian's `chromium`, installed by `scripts/test.sh`)
//! at 1,400×900. A script the test appends to a copy of the page measures
//! the DOM once the page has loaded and writes its findings into a `<pre
//! id="test-result">` that `--dump-dom` prints; uncaught errors and console
//! errors are written there too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use flightrec_testkit::{jfr, run_example, temp_dir};
use serde_json::Value;

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

fn ok(args: &[&str]) -> Output {
    let out = flightrec(args);
    assert!(
        out.status.success(),
        "flightrec {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A `cpu_profile` recording; `swap`: the other workload mix.
fn cpu_profile(swap: bool) -> &'static Path {
    static A: OnceLock<PathBuf> = OnceLock::new();
    static B: OnceLock<PathBuf> = OnceLock::new();
    let cell = if swap { &B } else { &A };
    cell.get_or_init(|| {
        let name = if swap { "b" } else { "a" };
        let file = temp_dir(&format!("cli-report-cpu-{name}")).join(format!("{name}.jfr"));
        let mut args = vec![
            "--out",
            file.to_str().unwrap(),
            "--seconds",
            "3",
            "--min-cpu",
            "400",
        ];
        if swap {
            args.push("--swap");
        }
        run_example("cpu_profile", &args);
        file
    })
}

/// Copies `page` with `script` appended, renders it at 1,400×900 and
/// returns what the script wrote into `#test-result` (JSON).
fn render(page: &Path, script: &str) -> Value {
    let html = std::fs::read_to_string(page).expect("read the page");
    let probe = format!(
        "<pre id=\"test-result\"></pre><script>\n\
         var testErrors = [];\n\
         addEventListener('error', function (e) {{ testErrors.push(String(e.message)); }});\n\
         (function () {{ var ce = console.error; console.error = function () {{\n\
           testErrors.push(Array.prototype.join.call(arguments, ' ')); ce.apply(console, arguments); }}; }})();\n\
         addEventListener('load', function () {{ setTimeout(function () {{\n\
           var r = {{}};\n\
           try {{ (function (r) {{ {script} }})(r); }} catch (e) {{ testErrors.push('probe: ' + e); }}\n\
           r.errors = testErrors;\n\
           document.getElementById('test-result').textContent = JSON.stringify(r);\n\
         }}, 200); }});\n</script>\n"
    );
    let at = html.rfind("</body>").expect("a </body>");
    let copy = page.with_extension("probe.html");
    std::fs::write(&copy, format!("{}{probe}{}", &html[..at], &html[at..])).unwrap();
    let stem = page.file_stem().unwrap().to_string_lossy();
    let dir = temp_dir(&format!("cli-report-chromium-{stem}"));
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
            "--window-size=1400,900",
            "--run-all-compositor-stages-before-draw",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", copy.display()))
        .output()
        .expect("`chromium` is needed (scripts/test.sh installs Debian's chromium)");
    let dom = String::from_utf8_lossy(&run.stdout);
    let start = dom.find("<pre id=\"test-result\">").unwrap_or_else(|| {
        panic!(
            "no test result in the page: {}",
            &dom[..dom.len().min(2000)]
        )
    }) + "<pre id=\"test-result\">".len();
    let end = start + dom[start..].find("</pre>").expect("</pre>");
    let text = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("the probe wrote no JSON ({e}): {text:?}"));
    assert_eq!(
        v["errors"].as_array().map(Vec::len),
        Some(0),
        "errors in the page: {}",
        v["errors"]
    );
    v
}

/// The share `jfr view cpu-time-hot-methods` gives `method`, in percent.
fn hot_share(file: &Path, method: &str) -> f64 {
    let text =
        String::from_utf8(ok(&["view", "cpu-time-hot-methods", file.to_str().unwrap()]).stdout)
            .unwrap();
    text.lines()
        .find(|l| l.trim_start().starts_with(method))
        .and_then(|l| l.split_whitespace().last())
        .map_or(0.0, |p| p.trim_end_matches('%').parse().unwrap())
}

#[test]
fn flame_html_fills_a_1400_px_window() {
    let f = cpu_profile(false);
    let page = temp_dir("cli-report-flame").join("cpu.html");
    ok(&["flame", f.to_str().unwrap(), "-o", page.to_str().unwrap()]);
    let r = render(
        &page,
        "r.svg = document.querySelector('svg').getBoundingClientRect().width;\
         r.frames = document.getElementById('frames').getBoundingClientRect().width;",
    );
    let (svg, frames) = (r["svg"].as_f64().unwrap(), r["frames"].as_f64().unwrap());
    assert!(
        svg >= 1300.0,
        "the flame graph is {svg} px wide in a 1,400 px window"
    );
    assert!(frames >= 1300.0, "its frames span {frames} px of 1,400");
}

/// `--diff A B` of two workload mixes: the burner whose share grew is red,
/// the one whose share shrank is blue (as `view cpu-time-hot-methods`
/// measures the shares of each file).
#[test]
fn flame_diff_colours_the_changed_functions() {
    let (a, b) = (cpu_profile(false), cpu_profile(true));
    let page = temp_dir("cli-report-diff").join("diff.html");
    ok(&[
        "flame",
        "--diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    let r = render(
        &page,
        "r.fills = {}; document.querySelectorAll('#frames > g').forEach(function (g) {\
           var t = g.querySelector('title').textContent, m = t.match(/^cpu_profile\\.(burn_\\w+)\\(/);\
           if (m) r.fills[m[1]] = g.querySelector('rect').getAttribute('fill'); });",
    );
    for f in ["burn_heavy", "burn_light"] {
        let grew =
            hot_share(b, &format!("cpu_profile.{f}")) - hot_share(a, &format!("cpu_profile.{f}"));
        let fill = r["fills"][f]
            .as_str()
            .unwrap_or_else(|| panic!("no frame {f}: {r}"));
        let rgb: Vec<i64> = fill
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .map(|c| c.trim().parse().unwrap())
            .collect();
        if grew > 2.0 {
            assert!(
                rgb[0] > rgb[2],
                "{f} grew by {grew:.1} points but is {fill}"
            );
        } else if grew < -2.0 {
            assert!(
                rgb[2] > rgb[0],
                "{f} shrank by {grew:.1} points but is {fill}"
            );
        } else {
            panic!("{f}'s share changed by {grew:.1} points only: the mixes did not differ");
        }
    }
}

/// An `alloc_lock` recording (allocation samples, contended lock `orders`).
fn alloc_lock() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let file = temp_dir("cli-report-alloc").join("alloc.jfr");
        run_example(
            "alloc_lock",
            &["--out", file.to_str().unwrap(), "--seconds", "2"],
        );
        file
    })
}

/// An `always_on` recording (a long-running service's custom events).
fn always_on() -> PathBuf {
    let file = temp_dir("cli-report-always").join("always.jfr");
    run_example(
        "always_on",
        &["--out", file.to_str().unwrap(), "--seconds", "2"],
    );
    file
}

/// A HotSpot recording of a small Java program (JDK 25's `java`).
fn hotspot() -> PathBuf {
    let dir = temp_dir("cli-report-hotspot");
    let src = dir.join("Burn.java");
    std::fs::write(
        &src,
        "public class Burn {\n\
         static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         public static void main(String[] a) {\n\
           long end = System.currentTimeMillis() + 2000, s = 0;\n\
           while (System.currentTimeMillis() < end) s += fib(22);\n\
           System.out.println(s);\n\
         }\n}\n",
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
}

/// Writes the report of `file`; returns the page.
fn report_of(file: &Path, name: &str) -> PathBuf {
    let page = temp_dir(&format!("cli-report-page-{name}")).join(format!("{name}.html"));
    ok(&[
        "report",
        file.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    page
}

/// What every report must show: no error, a flame graph of at least
/// 1,300 px in a 1,400 px window, a lane per thread.
const COMMON_PROBE: &str = "var D = report.data;\
    r.flameWidth = document.querySelector('#flame-graph canvas').getBoundingClientRect().width;\
    r.cells = D.cells; r.cell = D.cell;\
    r.lanes = D.lanes.map(function (l) { return D.threads[l.thread]; });\
    r.findings = D.findings.map(function (f) { return f.text; });\
    r.listed = document.querySelectorAll('#findings li').length;\
    r.total = report.total();";

fn assert_common(r: &Value) {
    let width = r["flameWidth"].as_f64().unwrap();
    assert!(
        width >= 1300.0,
        "the flame graph is {width} px wide at 1,400 px"
    );
    assert_eq!(
        r["listed"].as_u64(),
        r["findings"].as_array().map(|f| f.len() as u64),
        "the page lists every finding"
    );
    let lanes: Vec<&str> = r["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let mut unique = lanes.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), lanes.len(), "one lane per thread: {lanes:?}");
}

/// `cpu_profile`: a range of the heatmap gives the flame graph the count
/// `flightrec flame --from --to` gives the same range; the search's share
/// of the hottest function is `view cpu-time-hot-methods`'s; the findings
/// name it; the sampled threads have lanes.
#[test]
fn report_of_cpu_profile_selects_searches_and_finds_the_hottest_function() {
    let f = cpu_profile(false);
    let page = report_of(f, "cpu");
    let view = String::from_utf8(ok(&["view", "cpu-time-hot-methods", f.to_str().unwrap()]).stdout)
        .unwrap();
    let hottest = view
        .lines()
        .find(|l| l.trim_start().starts_with("cpu_profile."))
        .and_then(|l| l.split('(').next())
        .expect("a hot method")
        .trim()
        .to_owned();
    let share = hot_share(f, &hottest);
    let probe = format!(
        "{COMMON_PROBE}\
         var a = Math.floor(D.cells / 4), b = Math.floor(D.cells * 3 / 4);\
         report.select(a, b); r.from = a; r.to = b; r.range = report.total();\
         r.shown = document.getElementById('flame-total').getAttribute('data-total');\
         report.clear(); report.search('{}');\
         r.matched = report.matched(); r.self = report.matchedSelf();",
        hottest.replace('.', "\\\\.")
    );
    let r = render(&page, &probe);
    assert_common(&r);
    let cell_ms = r["cell"].as_i64().unwrap() / 1_000_000;
    let (from, to) = (
        r["from"].as_i64().unwrap() * cell_ms,
        r["to"].as_i64().unwrap() * cell_ms,
    );
    let counted = flightrec(&[
        "flame",
        f.to_str().unwrap(),
        "--from",
        &format!("{from}ms"),
        "--to",
        &format!("{to}ms"),
        "-o",
        page.with_extension("range.html").to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&counted.stderr);
    let n: f64 = said
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("flame said: {said}"));
    assert!(n > 0.0, "no samples in {from}..{to} ms");
    assert_eq!(
        r["range"].as_f64(),
        Some(n),
        "the page's total of {from}..{to} ms"
    );
    assert_eq!(r["shown"].as_str().and_then(|s| s.parse().ok()), Some(n));
    assert!(
        r["total"].as_f64().unwrap() > n,
        "the whole recording has more"
    );
    // The view counts samples whose top frame is the method: the search's
    // share as the top frame; its inclusive share is at least that.
    let matched: f64 = r["self"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("a matched share");
    assert!(
        (matched - share).abs() < 0.006,
        "search for {hottest}: {matched}% in the page, {share}% in view cpu-time-hot-methods"
    );
    let inclusive: f64 = r["matched"].as_str().and_then(|s| s.parse().ok()).unwrap();
    assert!(
        inclusive >= matched,
        "{inclusive}% inclusive, {matched}% as the top frame"
    );
    let function = hottest.rsplit('.').next().unwrap();
    assert!(
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains(function)),
        "no finding names {function}: {}",
        r["findings"]
    );
    for t in ["burn-heavy", "burn-light", "fast-server", "slow-server"] {
        assert!(
            r["lanes"].as_array().unwrap().iter().any(|l| l == t),
            "no lane {t}: {}",
            r["lanes"]
        );
    }
}

#[test]
fn report_of_alloc_lock_names_the_contended_lock() {
    let r = render(&report_of(alloc_lock(), "alloc"), COMMON_PROBE);
    assert_common(&r);
    let findings = r["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|t| {
            let t = t.as_str().unwrap();
            t.starts_with("Lock contention") && t.contains("orders")
        }),
        "no finding names the lock orders: {findings:?}"
    );
    assert!(
        findings
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("Allocation pressure")),
        "no allocation finding: {findings:?}"
    );
}

#[test]
fn report_of_always_on_renders() {
    let r = render(&report_of(&always_on(), "always"), COMMON_PROBE);
    assert_common(&r);
}

#[test]
fn report_of_a_hotspot_recording_renders() {
    let r = render(&report_of(&hotspot(), "hotspot"), COMMON_PROBE);
    assert_common(&r);
    assert!(
        r["lanes"].as_array().unwrap().iter().any(|l| l == "main"),
        "no lane of the main thread: {}",
        r["lanes"]
    );
    assert!(r["total"].as_f64().unwrap() > 0.0, "no samples drawn");
}
