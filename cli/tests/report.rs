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
