//! README.md's shell blocks and the rule that every shell block of
//! README.md and docs/*.md is run by a test or says why not.
//!
//! The blocks of README's "From C and C++" and "Any program: `flightrec
//! record`" sections run as written: they are taken from README.md and run
//! by `bash -eu` in a directory laid out as a checkout (`capi/` and
//! `target/release/` linked to this build's), all but their `cargo build`
//! lines, which must name the packages whose files this build already
//! holds. The quick start records a small C program (`./app`) into
//! `app.jfr` and draws `app.html`; the C, C++ and static builds each print
//! their event counts, which `jfr summary` of the file each wrote must show.
//!
//! The marker rule: the line right before a ```` ```sh ```` (`bash`,
//! `console`, `shell`) fence is `<!-- not run: WHY -->`, or `<!-- run by:
//! TEST -->` naming the test file that runs it. This file runs exactly the
//! README blocks marked `run by: cli/tests/readme.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// This file, as README's markers name it.
const THIS_TEST: &str = "cli/tests/readme.rs";
/// The sections whose shell blocks this file runs.
const QUICK_START: &str = "### Any program: `flightrec record`";
const C_AND_CPP: &str = "### From C and C++";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// A fenced block of a Markdown file.
#[derive(Debug)]
struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string (`sh`, `rust`, ...).
    info: String,
    /// The line right before the fence.
    before: String,
    /// The heading the block is under.
    heading: String,
    body: String,
}

/// Every fenced block of `text`, in order; panics on an unclosed fence.
fn fenced_blocks(text: &str, file: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut heading = String::new();
    let mut prev = "";
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let mut body = String::new();
            loop {
                let (_, l) = lines
                    .next()
                    .unwrap_or_else(|| panic!("{file}:{}: the fence is never closed", i + 1));
                if l.trim_end() == "```" {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            blocks.push(Block {
                line: i + 1,
                info: info.trim().to_owned(),
                before: prev.trim().to_owned(),
                heading: heading.clone(),
                body,
            });
            prev = "```";
            continue;
        }
        if line.starts_with('#') {
            heading = line.trim().to_owned();
        }
        prev = line;
    }
    blocks
}

fn is_shell(info: &str) -> bool {
    matches!(
        info.split_whitespace().next(),
        Some("sh" | "bash" | "console" | "shell")
    )
}

/// The shell blocks under README's `heading`, in order.
fn blocks(heading: &str) -> Vec<String> {
    let blocks: Vec<String> = fenced_blocks(&readme(), "README.md")
        .into_iter()
        .filter(|b| is_shell(&b.info) && b.heading == heading)
        .map(|b| b.body)
        .collect();
    assert!(
        !blocks.is_empty(),
        "README has no shell block under {heading}"
    );
    blocks
}

#[test]
fn every_shell_block_is_run_by_a_test_or_marked_not_run() {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut problems = Vec::new();
    let mut run_here = Vec::new();
    for path in &files {
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let text = std::fs::read_to_string(path).unwrap();
        for block in fenced_blocks(&text, &name) {
            if !is_shell(&block.info) {
                continue;
            }
            let at = format!("{name}:{}", block.line);
            let marker = block
                .before
                .strip_prefix("<!--")
                .and_then(|m| m.strip_suffix("-->"))
                .map(str::trim);
            if let Some(why) = marker.and_then(|m| m.strip_prefix("not run:")) {
                if why.trim().is_empty() {
                    problems.push(format!("{at}: `not run:` gives no reason"));
                }
            } else if let Some(test) = marker.and_then(|m| m.strip_prefix("run by:")) {
                let test = test.trim();
                match std::fs::read_to_string(root().join(test)) {
                    // The test must read the file the block is in.
                    Ok(source) if source.contains(path.file_name().unwrap().to_str().unwrap()) => {}
                    Ok(_) => problems.push(format!("{at}: {test} does not read {name}")),
                    Err(e) => problems.push(format!("{at}: run by {test}: {e}")),
                }
                if test == THIS_TEST {
                    assert_eq!(name, "README.md", "{at}");
                    run_here.push(block.heading.clone());
                }
            } else {
                problems.push(format!(
                    "{at}: a shell block with neither `<!-- not run: why -->` nor \
                     `<!-- run by: TEST -->` on the line before it"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // What this file claims to run is what it runs: one block under the
    // C and C++ heading, one under the quick start's.
    run_here.sort();
    let mut runs = vec![C_AND_CPP.to_owned(), QUICK_START.to_owned()];
    runs.sort();
    assert_eq!(run_here, runs, "README's `run by: {THIS_TEST}` markers");
}

/// `target/release`: where cargo put this test's `flightrec`.
fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_flightrec"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A directory laid out as a checkout, for the commands to run in.
fn checkout(name: &str) -> PathBuf {
    let dir = flightrec_testkit::temp_dir(name);
    std::fs::create_dir(dir.join("target")).unwrap();
    std::os::unix::fs::symlink(profile_dir(), dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../capi"),
        dir.join("capi"),
    )
    .unwrap();
    dir
}

/// Runs `block` in `dir` (its `cargo build` lines checked, not run);
/// returns its standard output.
fn run_block(block: &str, dir: &Path) -> String {
    let mut script = String::new();
    for line in block.lines() {
        if let Some(build) = line.strip_prefix("cargo build --release") {
            let build = build.split('#').next().unwrap();
            for package in build.split_whitespace().filter(|w| *w != "-p") {
                let file = match package {
                    "flightrec-cli" => "flightrec",
                    "flightrec-capi" => "libflightrec.so",
                    other => panic!("README builds {other}, which this test does not check"),
                };
                assert!(
                    profile_dir().join(file).exists(),
                    "{file} not built (README: {line})"
                );
            }
            continue;
        }
        script.push_str(line);
        script.push('\n');
    }
    let run = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir)
        .env_remove("FLIGHTREC")
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "README block failed ({}):\n{script}\n--- stderr ---\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8(run.stdout).unwrap()
}

#[test]
fn the_quick_start_records_and_draws() {
    let blocks = blocks(QUICK_START);
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let dir = checkout("cli-readme-quick");
    let src = dir.join("app.c");
    std::fs::write(
        &src,
        "static volatile double sink;\n\
         __attribute__((noinline)) double spin_the_wheel(long n) {\n\
           double x = 0; for (long i = 0; i < n; i++) x += (double)(i % 7); return x; }\n\
         int main(void) { sink = spin_the_wheel(300000000L); return 0; }\n",
    )
    .unwrap();
    let cc = Command::new("cc")
        .args(["-O1", "-g", "app.c", "-o", "app"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(cc.success());
    run_block(&blocks[0], &dir);
    let html = std::fs::read_to_string(dir.join("app.html")).unwrap();
    assert!(
        html.contains("spin_the_wheel"),
        "app.html lacks the hot function"
    );
    let summary = flightrec_testkit::Summary::parse(&flightrec_testkit::jfr().run_text(&[
        std::ffi::OsStr::new("summary"),
        dir.join("app.jfr").as_os_str(),
    ]));
    assert!(
        summary
            .counts
            .get("jdk.CPUTimeSample")
            .is_some_and(|&n| n >= 10),
        "{:?}",
        summary.counts
    );
}

#[test]
fn the_c_and_cpp_build_lines_build_programs_that_record() {
    let blocks = blocks(C_AND_CPP);
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let dir = checkout("cli-readme-capi");
    let printed = run_block(&blocks[0], &dir);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 3, "{printed}");
    for (line, file) in lines.iter().zip(["c.jfr", "cpp.jfr", "static.jfr"]) {
        let json: serde_json::Value = serde_json::from_str(line).unwrap();
        let summary = flightrec_testkit::Summary::parse(
            &flightrec_testkit::jfr()
                .run_text(&[std::ffi::OsStr::new("summary"), dir.join(file).as_os_str()]),
        );
        let counts = json["counts"].as_object().unwrap();
        assert_eq!(counts.len(), 2, "{line}");
        for (event, n) in counts {
            assert_eq!(
                summary.counts.get(event).copied(),
                n.as_u64(),
                "{file}: {event}"
            );
            assert_eq!(n.as_u64(), Some(80000), "{file}: {event}");
        }
    }
}
