//! flightrec's own threads are not sampled by default (issue 31): a CPU
//! profile shows the program's threads only, never the recorder's (its
//! symbolizer's frames were 3-7 % of users' profiles). A thread named
//! `flightrec-*` is one of ours; `set_sample_own_threads(true)`
//! (`sample-own-threads=true`) samples them too. One process: one
//! recording at a time.

use std::collections::BTreeMap;
use std::time::Duration;

use recorder::{Recording, RecordingConfig, Settings};

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn burn(name: &str, cpu: Duration) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let end = thread_cpu_nanos() + cpu.as_nanos() as u64;
            let mut x = 1u64;
            while thread_cpu_nanos() < end {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
        })
        .unwrap()
}

/// CPU-time samples per thread name, and every frame's type and method.
fn profile(own: bool, out: &std::path::Path) -> (BTreeMap<String, u64>, Vec<String>) {
    recorder::sampler::set_sample_own_threads(own);
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "1ms")
        .unwrap();
    let rec = Recording::start(RecordingConfig::new(out).settings(settings)).unwrap();
    let cpu = Duration::from_millis(300);
    let threads = [burn("flightrec-burn", cpu), burn("user-burn", cpu)];
    for t in threads {
        t.join().unwrap();
    }
    rec.stop().unwrap();
    let (mut per_thread, mut frames) = (BTreeMap::new(), Vec::new());
    for e in flightrec_testkit::print_json(out).as_array().unwrap() {
        if e["type"] != "jdk.CPUTimeSample" {
            continue;
        }
        let v = &e["values"];
        let name = v["eventThread"]["osName"]
            .as_str()
            .or_else(|| v["eventThread"]["javaName"].as_str())
            .unwrap_or("?")
            .to_owned();
        *per_thread.entry(name).or_insert(0) += 1;
        for f in v["stackTrace"]["frames"].as_array().into_iter().flatten() {
            let m = &f["method"];
            frames.push(format!("{}::{}", m["type"]["name"], m["name"]));
        }
    }
    (per_thread, frames)
}

#[test]
fn own_threads_are_sampled_only_when_asked() {
    let dir = flightrec_testkit::temp_dir("sample_own_threads");
    let (by_default, frames) = profile(false, &dir.join("default.jfr"));
    assert!(
        by_default.get("user-burn").copied().unwrap_or(0) > 0,
        "{by_default:?}"
    );
    let ours: Vec<_> = by_default
        .keys()
        .filter(|n| n.starts_with("flightrec-"))
        .collect();
    assert!(ours.is_empty(), "own threads sampled: {by_default:?}");
    let symbolizer = frames.iter().find(|f| {
        ["blazesym", "gimli", "miniz_oxide"]
            .iter()
            .any(|s| f.contains(s))
    });
    assert_eq!(symbolizer, None, "a frame of the symbolizer");

    let (asked, _) = profile(true, &dir.join("own.jfr"));
    recorder::sampler::set_sample_own_threads(false);
    assert!(
        asked.get("flightrec-burn").copied().unwrap_or(0) > 0,
        "not sampled with sample-own-threads on: {asked:?}"
    );
    assert!(
        asked.get("user-burn").copied().unwrap_or(0) > 0,
        "{asked:?}"
    );
}
