//! `flightrec jcmd` against a flightrec process (this test binary, run
//! again as a child that answers the attach protocol) and against a JDK 25
//! `java` process (started by the test: the HotSpot handshake with
//! `.attach_pid` and SIGQUIT): both are listed by `flightrec jcmd` (the
//! flightrec process by the JDK's `jcmd` too, from the discovery file it
//! removes at exit), and on
//! both `JFR.start`, `JFR.dump filename=F` and `JFR.stop` work, the dump
//! read by `jfr summary`. A flightrec process started with `attach=lazy`
//! opens its socket when `flightrec jcmd` asks by the handshake. A pid
//! that does not exist is refused in one line
//! with exit status 2.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use flightrec_testkit::child;

/// Child: answers `jcmd` (no recording yet) until its standard input
/// ends, then exits (running its `atexit` handlers).
#[test]
fn attachable_child() {
    if child::dir("attachable_child").is_none() {
        return;
    }
    recorder::attach::listen().unwrap();
    println!("listening");
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
    std::process::exit(0);
}

/// Child: answers `jcmd` only once asked by `.attach_pid` + SIGQUIT.
#[test]
fn lazy_child() {
    if child::dir("lazy_child").is_none() {
        return;
    }
    recorder::attach::listen_on_sigquit().unwrap();
    println!("waiting");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn flightrec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flightrec"))
        .args(args)
        .output()
        .expect("run flightrec")
}

/// `flightrec jcmd PID LINE...`, asserting status 0; its stdout.
fn jcmd_ok(pid: u32, line: &[&str]) -> String {
    let pid = pid.to_string();
    let mut args = vec!["jcmd", pid.as_str()];
    args.extend_from_slice(line);
    let out = flightrec(&args);
    assert_eq!(out.status.code(), Some(0), "flightrec {args:?}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.starts_with(&format!("{pid}:\n")), "{text}");
    text
}

/// Waits for the first line `child` prints, then checks the list shows it.
fn wait_ready(child: &mut Child, ready: &str) -> BufReader<std::process::ChildStdout> {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains(ready) {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the process ended before saying {ready:?}"
        );
    }
    out
}

fn listed(pid: u32) -> String {
    let out = flightrec(&["jcmd"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(pid.to_string().as_str()))
        .unwrap_or_else(|| panic!("{pid} not listed:\n{text}"))
        .to_owned()
}

/// JFR.start, JFR.dump filename=F, JFR.stop on `pid`; the dump's summary.
fn start_dump_stop(pid: u32, dump: &Path) -> flightrec_testkit::Summary {
    let started = jcmd_ok(pid, &["JFR.start", "name=cli"]);
    assert!(started.contains("Started recording"), "{started}");
    std::thread::sleep(Duration::from_millis(300));
    let filename = format!("filename={}", dump.display());
    let dumped = jcmd_ok(pid, &["JFR.dump", "name=cli", &filename]);
    assert!(dumped.contains(&dump.display().to_string()), "{dumped}");
    let stopped = jcmd_ok(pid, &["JFR.stop", "name=cli"]);
    assert!(stopped.contains("Stopped recording"), "{stopped}");
    flightrec_testkit::summary(dump)
}

#[test]
fn a_flightrec_process_is_listed_and_controlled() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("cli-jcmd-flightrec");
    let mut c = child::command("attachable_child", &dir)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let _out = wait_ready(&mut c, "listening");
    let pid = c.id();
    let line = listed(pid);
    assert!(line.contains("attachable_child"), "{line}");
    // The JDK's own jcmd lists it too (its hsperfdata discovery file).
    let jdk_jcmd = flightrec_testkit::jfr().home().join("bin/jcmd");
    let jdk_list = Command::new(&jdk_jcmd).output().unwrap();
    let jdk_list = String::from_utf8_lossy(&jdk_list.stdout);
    assert!(
        jdk_list
            .lines()
            .any(|l| l.starts_with(&format!("{pid} ")) && l.contains("attachable_child")),
        "the JDK's jcmd does not list {pid}:\n{jdk_list}"
    );
    let version = jcmd_ok(pid, &["VM.version"]);
    assert!(version.lines().count() >= 2, "{version}");
    let summary = start_dump_stop(pid, &dir.join("dump.jfr"));
    assert!(summary.chunks >= 1);
    assert!(
        summary
            .counts
            .get("jdk.ActiveRecording")
            .is_some_and(|&n| n >= 1),
        "{:?}",
        summary.counts
    );
    drop(c.stdin.take());
    assert!(c.wait().unwrap().success());
    let left: Vec<_> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("hsperfdata_"))
        .map(|e| e.path().join(pid.to_string()))
        .filter(|p| p.exists())
        .collect();
    assert!(left.is_empty(), "discovery file left after exit: {left:?}");
}

#[test]
fn a_jvm_is_listed_and_controlled() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("cli-jcmd-jvm");
    let source = dir.join("Sleep.java");
    std::fs::write(
        &source,
        "public class Sleep { public static void main(String[] a) throws Exception {\n\
         System.out.println(\"ready\"); System.out.flush(); Thread.sleep(120000); } }\n",
    )
    .unwrap();
    let mut java = Command::new(flightrec_testkit::jfr().java_path())
        .arg(&source)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let _out = wait_ready(&mut java, "ready");
    let pid = java.id();
    let line = listed(pid);
    assert!(line.contains("Sleep.java"), "{line}");
    let summary = start_dump_stop(pid, &dir.join("jvm.jfr"));
    assert!(
        summary
            .counts
            .get("jdk.JVMInformation")
            .is_some_and(|&n| n >= 1),
        "{:?}",
        summary.counts
    );
    // SIGTERM: the JVM removes its attach socket as it exits.
    // SAFETY: kill sends a signal to our own unreaped child.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    java.wait().unwrap();
}

#[test]
fn an_unknown_pid_is_refused_in_one_line() {
    if child::is_child() {
        return;
    }
    let out = flightrec(&["jcmd", "999999999", "JFR.check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(err, "flightrec: jcmd: no process 999999999\n");
}

#[test]
fn a_lazy_flightrec_process_is_woken_by_the_handshake() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("cli-jcmd-lazy");
    let mut c = child::command("lazy_child", &dir).spawn().unwrap();
    let _out = wait_ready(&mut c, "waiting");
    let pid = c.id();
    let socket = format!("/tmp/.java_pid{pid}");
    assert!(!Path::new(&socket).exists(), "listening before being asked");
    let version = jcmd_ok(pid, &["VM.version"]);
    assert!(version.lines().count() >= 2, "{version}");
    assert!(Path::new(&socket).exists(), "no socket after the handshake");
    assert!(
        !Path::new(&format!("/tmp/.attach_pid{pid}")).exists(),
        "trigger file left behind"
    );
    c.kill().unwrap();
    c.wait().unwrap();
    let _ = std::fs::remove_file(&socket);
}
