//! README's "Record any program" section runs as written: its two `sh`
//! blocks are taken from README.md and run by `bash -eu` in a directory
//! laid out as a checkout (`capi/` and `target/release/` linked to this
//! build's), all but their `cargo build` lines, which must name the
//! packages whose files this build already holds. The quick start records
//! a small C program (`./app`) into `app.jfr` and draws `app.html`; the C,
//! C++ and static builds each print their event counts, which `jfr
//! summary` of the file each wrote must show.

use std::path::{Path, PathBuf};
use std::process::Command;

const SECTION: &str = "## Record any program: `flightrec record`";

/// The `sh` blocks of README's section, in order.
fn blocks() -> Vec<String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let text = std::fs::read_to_string(&readme).unwrap();
    let start = text.find(SECTION).expect("README has the section");
    let section = &text[start + SECTION.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .split("```sh\n")
        .skip(1)
        .map(|b| b[..b.find("```").expect("a closed block")].to_owned())
        .collect()
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
    let blocks = blocks();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
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
    let blocks = blocks();
    let dir = checkout("cli-readme-capi");
    let printed = run_block(&blocks[1], &dir);
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
