//! How fast the `flightrec` command reads, against JDK 25's `jfr` in the
//! same run (issue 33):
//!
//! * `summary` of a multi-chunk file of at least 1 GiB, `flightrec` and
//!   `jfr` alternating, three rounds each (wall time of the whole command,
//!   JVM start included for `jfr`, as a user waits for it); the speed-up is
//!   the median of the rounds' ratios;
//! * `flame` of at least 1,000,000 CPU-time samples: wall time and peak
//!   RSS (`ru_maxrss` of the child), for two files: `dense`, chunks of
//!   about 100,000 samples each (1.8 MB; flightrec's chunks grow to
//!   12 MiB by default, some 700,000 samples), and `sparse`, the
//!   recording's own small chunks repeated, thousands of them, which
//!   measures the cost per chunk more than per sample.
//!
//! The files are built from real recordings: chunks of a `cpu_profile`
//! run (the example, built by `cargo build --release --examples`) repeated
//! back to back, which is a valid multi-chunk recording. A dense chunk is
//! that chunk with its `jdk.CPUTimeSample` records appended again and again
//! at its end (same constants, so every copy resolves) and its size in the
//! header made to match.
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

/// Runs `cmd` to the end; returns (seconds, its peak RSS in KiB).
///
/// The peak is the child's own (`wait4`'s rusage), not `RUSAGE_CHILDREN`'s,
/// which is the largest of every child so far, `jfr`'s JVM included.
fn timed(cmd: &mut Command) -> (f64, i64) {
    use std::io::Read;
    let t = Instant::now();
    #[allow(clippy::zombie_processes, reason = "reaped by wait4 below")]
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let mut status = 0;
    // SAFETY: wait4 reaps the child spawned above (std never waits for it:
    // `child` is dropped without `wait`) and fills the rusage it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru);
        assert_eq!(pid, child.id() as libc::pid_t, "wait4");
        ru
    };
    let secs = t.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?}: status {status}: {stderr}"
    );
    (secs, ru.ru_maxrss)
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

/// `chunk` (one chunk) with its `jdk.CPUTimeSample` records appended until
/// it holds at least `samples` of them; returns it and how many it holds.
fn densified(chunk: &[u8], samples: u64) -> (Vec<u8>, u64) {
    use jfr_format::write::header::{ChunkHeader, HEADER_LEN};
    let scan = jfr_format::read::scan_chunk(chunk).expect("a chunk");
    let id = scan
        .metadata
        .class_by_name("jdk.CPUTimeSample")
        .expect("CPU-time samples declared")
        .id
        .0;
    let varint = |b: &[u8], mut at: usize| {
        let mut v = 0u64;
        for shift in (0..56).step_by(7) {
            let x = b[at];
            at += 1;
            v |= u64::from(x & 0x7f) << shift;
            if x & 0x80 == 0 {
                return (v, at);
            }
        }
        (v | u64::from(b[at]) << 56, at + 1)
    };
    let mut records = Vec::new();
    let mut at = HEADER_LEN;
    while at < chunk.len() {
        let (size, body) = varint(chunk, at);
        let end = at + size as usize;
        if varint(chunk, body).0 == id {
            records.extend_from_slice(&chunk[at..end]);
        }
        at = end;
    }
    let per = scan.records.get(&id).map_or(0, |r| r.count);
    assert!(per > 0, "the recording has no CPU-time samples");
    let mut out = chunk.to_vec();
    let mut n = per;
    while n < samples {
        out.extend_from_slice(&records);
        n += per;
    }
    let mut header = scan.header;
    header.chunk_size = out.len() as i64;
    out[..HEADER_LEN].copy_from_slice(&header.to_bytes());
    assert!(ChunkHeader::parse(&out).is_some());
    (out, n)
}

/// Times `flightrec flame` of `file`; returns (seconds, peak RSS in MiB).
fn flame(file: &Path, out: &Path) -> (f64, f64) {
    let (secs, rss) = timed(
        Command::new(flightrec_bin())
            .arg("flame")
            .arg(file)
            .arg("-o")
            .arg(out),
    );
    (secs, rss as f64 / 1024.0)
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

    // 2. flame of >= 1,000,000 samples, dense chunks then sparse ones.
    let samples_file = dir.join("samples.jfr");
    let (dense, per_dense) = densified(&one, 100_000);
    let dense_chunks = 1_000_000u64.div_ceil(per_dense);
    repeated(&dense, dense_chunks * dense.len() as u64, &samples_file);
    let dense_samples = per_dense * dense_chunks;
    let (flame_secs, flame_rss) = flame(&samples_file, &dir.join("flame.html"));
    let need = 1_000_000u64.div_ceil(per_copy.max(1));
    repeated(&one, need * one.len() as u64, &samples_file);
    let sparse_samples = per_copy * need;
    let (sparse_secs, sparse_rss) = flame(&samples_file, &dir.join("flame.html"));
    std::fs::remove_file(&samples_file).unwrap();

    // Rounds alternate, so each round's ratio compares runs made under
    // the same load; the median of those ratios is the result.
    let ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(o, t)| t / o).collect();
    println!(
        "{}",
        serde_json::json!({
            "summary_file_bytes": size,
            "summary_chunks": copies,
            "flightrec_summary_s": ours,
            "jfr_summary_s": theirs,
            "summary_speedup_median": median(ratios),
            "flame_samples": dense_samples,
            "flame_chunks": dense_chunks,
            "flame_s": flame_secs,
            "flame_peak_rss_mb": flame_rss,
            "flame_sparse_samples": sparse_samples,
            "flame_sparse_chunks": need,
            "flame_sparse_s": sparse_secs,
            "flame_sparse_peak_rss_mb": sparse_rss,
        })
    );
}
