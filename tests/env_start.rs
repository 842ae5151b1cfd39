//! `FLIGHTREC` starts a recording in a program that never mentions one, and
//! the file is written at exit; a bad option string is reported, naming the
//! option, and the program runs unrecorded.

use std::process::Command;

use flightrec_testkit::example_binary;

#[test]
fn flightrec_env_var_records_a_program_without_code_changes() {
    let dir = flightrec_testkit::temp_dir("env_start");
    let out = dir.join("env.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("4321")
        .env(
            "FLIGHTREC",
            format!(
                "filename={},settings=profile,com.example.Work#enabled=true",
                out.display()
            ),
        )
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.counts.get("com.example.Work").copied(), Some(4321));

    // An override disabling the event: the file holds none.
    let off = dir.join("off.jfr");
    let run = Command::new(example_binary("env_start"))
        .arg("100")
        .env(
            "FLIGHTREC",
            format!("filename={},com.example.Work#enabled=false", off.display()),
        )
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(
        flightrec_testkit::summary(&off)
            .counts
            .get("com.example.Work")
            .copied(),
        Some(0)
    );
}

#[test]
fn a_bad_option_string_is_reported_and_nothing_is_recorded() {
    let run = Command::new(example_binary("env_start"))
        .arg("10")
        .env("FLIGHTREC", "filename=/tmp/never.jfr,maxsize=12q")
        .output()
        .unwrap();
    assert!(run.status.success(), "the program still runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("maxsize=12q") && err.contains("not a size"),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "committed 10");
}
