//! How fast the `flightrec` command reads, against JDK 25's `jfr` in the
//! same run (issue 33):
//!
//! * `summary` of a multi-chunk file of at least 1 GiB, `flightrec` and
//!   `jfr` alternating, three rounds each (wall time of the whole command,
//!   JVM start included for `jfr`, as a user waits for it);
//! * `flame` of at least 1,000,000 CPU-time samples: wall time and peak
//!   RSS (`ru_maxrss` of the child).
//!
//! The files are built from real recordings: chunks of a `cpu_profile`
//! run (the example, built by `cargo build --release --examples`) repeated
//! back to back, which is a valid multi-chunk recording.
//!
//! ```sh
//! cargo build --release --examples && cargo bench -p flightrec-cli --bench speed
//! ```
//!
//! Prints one JSON line.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn target_release() -> PathBuf {
    let exe = std::env::current_exe().expect("bench path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_owned()
}

fn flightrec_bin() -> PathBuf {
    target_release().join("flightrec")
}

/// Runs `cmd` to the end; returns (seconds, peak RSS in KiB).
fn timed(cmd: &mut Command) -> (f64, i64) {
    let t = Instant::now();
    let out = cmd.output().expect("run");
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: getrusage fills the struct it is given; RUSAGE_CHILDREN
    // covers the child just waited for (the peak of all of them so far).
    let rss = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru.ru_maxrss
    };
    (secs, rss)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A `cpu_profile` recording sampled every millisecond.
fn sample_recording(dir: &Path) -> PathBuf {
    let example = target_release().join("examples").join("cpu_profile");
    assert!(
        example.exists(),
        "{} not built: run `cargo build --release --examples` first",
        example.display()
    );
    let out = dir.join("one.jfr");
    let run = Command::new(&example)
        .args([
            "--out",
            out.to_str().unwrap(),
            "--seconds",
            "4",
            "--throttle",
            "1ms",
        ])
        .output()
        .expect("run cpu_profile");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

/// `one` repeated until the file holds at least `bytes`.
fn repeated(one: &[u8], bytes: u64, path: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut n = 0u64;
    while n * (one.len() as u64) < bytes {
        f.write_all(one).unwrap();
        n += 1;
    }
    f.flush().unwrap();
    n
}

fn cpu_samples(jfr: &Path, file: &Path) -> u64 {
    let out = Command::new(jfr).arg("summary").arg(file).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("jdk.CPUTimeSample")).then(|| w.next()?.parse().ok())?
        })
        .unwrap_or(0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let jdk = flightrec_testkit::jfr();
    let jfr = jdk.jfr_path();
    let dir = flightrec_testkit::temp_dir("cli-speed");
    let one = std::fs::read(sample_recording(&dir)).unwrap();
    let per_copy = cpu_samples(&jfr, &dir.join("one.jfr"));

    // 1. summary of >= 1 GiB.
    let big = dir.join("big.jfr");
    let copies = repeated(&one, 1 << 30, &big);
    let size = std::fs::metadata(&big).unwrap().len();
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ours.push(timed(Command::new(flightrec_bin()).arg("summary").arg(&big)).0);
        theirs.push(timed(Command::new(&jfr).arg("summary").arg(&big)).0);
    }
    std::fs::remove_file(&big).unwrap();

    // 2. flame of >= 1,000,000 samples.
    let samples_file = dir.join("samples.jfr");
    let need = 1_000_000u64.div_ceil(per_copy.max(1));
    repeated(&one, need * one.len() as u64, &samples_file);
    let samples = per_copy * need;
    let (flame_secs, flame_rss) = timed(
        Command::new(flightrec_bin())
            .arg("flame")
            .arg(&samples_file)
            .arg("-o")
            .arg(dir.join("flame.html")),
    );
    std::fs::remove_file(&samples_file).unwrap();

    let (o, t) = (median(ours.clone()), median(theirs.clone()));
    println!(
        "{}",
        serde_json::json!({
            "summary_file_bytes": size,
            "summary_chunks": copies,
            "flightrec_summary_s": ours,
            "jfr_summary_s": theirs,
            "summary_speedup_median": t / o,
            "flame_samples": samples,
            "flame_s": flame_secs,
            "flame_peak_rss_mb": flame_rss as f64 / 1024.0,
        })
    );
}
