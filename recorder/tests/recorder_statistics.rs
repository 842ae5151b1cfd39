//! Issue 12: the recorder accounts for its own cost. A recording samples a
//! malloc-heavy workload on two threads; `Recording::statistics()` and the
//! periodic `flightrec.RecorderStatistics` events (read back with JDK 25's
//! `jfr print --json`) must agree with what the file and the process show:
//! the recorder's CPU is positive and within the process's, the bytes
//! written are the chunks' sizes, and the samples counted are the
//! `jdk.CPUTimeSample` events in the file.
#![cfg(not(flightrec_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use recorder::{Recording, RecordingConfig, Settings};

/// Allocates, touches and frees blocks of many sizes until `stop`.
fn churn(stop: &AtomicBool, seed: u64) -> u64 {
    let mut x = seed | 1;
    let mut keep: Vec<Vec<u8>> = Vec::with_capacity(64);
    let mut sum = 0u64;
    while !stop.load(Ordering::Relaxed) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = 16 + (x % 4096) as usize;
        let v = vec![x as u8; size];
        sum = sum.wrapping_add(v.iter().step_by(64).map(|&b| b as u64).sum::<u64>());
        if keep.len() == 64 {
            keep.swap_remove((x % 64) as usize);
        }
        keep.push(v);
    }
    sum
}

/// The sizes of the chunk files in `dir`.
fn chunk_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jfr"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn statistics_account_for_the_recorders_cost() {
    let dir = flightrec_testkit::temp_dir("recorder-statistics");
    let out = dir.join("stats.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .unwrap();
    settings
        .set("jdk.CPUTimeSample", "throttle", "10 ms")
        .unwrap();
    settings
        .set("flightrec.RecorderStatistics", "period", "500 ms")
        .unwrap();
    // No timed flush between the program's flush and its look at the
    // files: the bytes must match exactly.
    let config = RecordingConfig::new(&out)
        .settings(settings)
        .repository(dir.join("repo"))
        .flush_interval(Duration::from_secs(600));
    let poll = recorder::EventTypeBuilder::new("test.StatisticsPoll")
        .enabled(true)
        .build()
        .unwrap();
    static POLLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    recorder::add_periodic_event(
        poll,
        recorder::settings::Period::Interval(Duration::from_millis(500)),
        || {
            POLLS.fetch_add(1, Ordering::Relaxed);
        },
    );
    let rec = Recording::start(config).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || std::hint::black_box(churn(&stop, t + 7)))
        })
        .collect();
    // 2.6 s, and until the periodic thread made five passes (a user
    // periodic event on the statistics' period counts them): a loaded
    // machine may run it late.
    let t0 = std::time::Instant::now();
    while (t0.elapsed() < Duration::from_millis(2600) || POLLS.load(Ordering::Relaxed) < 5)
        && t0.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }

    rec.flush().unwrap();
    let s = rec.statistics();
    let on_disk = chunk_bytes(rec.repository());
    assert_eq!(
        s.bytes_written, on_disk,
        "bytes written are the chunks' bytes: {s:?}"
    );
    assert!(s.recorder_cpu > Duration::ZERO, "{s:?}");
    assert!(s.sampler_cpu > Duration::ZERO, "{s:?}");
    assert!(s.periodic_cpu > Duration::ZERO, "{s:?}");
    assert!(s.signal_handler > Duration::ZERO, "{s:?}");
    assert!(
        s.process_cpu >= Duration::from_millis(200),
        "two threads busy for 2.6 s (on a loaded machine): {s:?}"
    );
    assert!(s.own_cpu() <= s.process_cpu, "{s:?}");
    assert!(s.overhead() > 0.0 && s.overhead() < 0.5, "{s:?}");
    // One sample per 10 ms of a thread's CPU time: the workload's CPU
    // time (the process's less the recorder's) in samples, less what the
    // kernel's tick and the last partial period cut.
    let workload = (s.process_cpu - s.own_cpu()).as_secs_f64();
    let expected = workload / 0.010;
    assert!(
        s.samples as f64 >= expected * 0.5 && s.samples as f64 <= expected * 1.2 + 4.0,
        "{} samples for {workload:.3} s of workload CPU time: {s:?}",
        s.samples
    );
    assert!(s.events >= s.samples, "{s:?}");
    assert!((0.0..=1.0).contains(&s.buffer_occupancy), "{s:?}");
    rec.stop().unwrap();
    assert!(recorder::remove_periodic_event(poll));

    let events = flightrec_testkit::print_json(&out);
    let events = events.as_array().unwrap();
    let sample_times: Vec<i64> = events
        .iter()
        .filter(|e| e["type"] == "jdk.CPUTimeSample")
        .map(|e| parse_instant(e["values"]["startTime"].as_str().unwrap()))
        .collect();
    let stats: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "flightrec.RecorderStatistics")
        .map(|e| &e["values"])
        .collect();
    assert!(
        stats.len() >= 5,
        "every 500 ms for 2.6 s and one at the stop: {}",
        stats.len()
    );
    let file_size = std::fs::metadata(&out).unwrap().len();
    let time = |v: &serde_json::Value, k: &str| parse_duration(v[k].as_str().unwrap());
    let int = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    let mut prev: Option<&serde_json::Value> = None;
    for v in &stats {
        let own = time(v, "recorderCpuTime")
            + time(v, "samplerCpuTime")
            + time(v, "periodicCpuTime")
            + time(v, "signalHandlerTime");
        let process = time(v, "processCpuTime");
        assert!(time(v, "periodicCpuTime") > Duration::ZERO, "{v}");
        assert!(own <= process, "own CPU within the process's: {v}");
        let overhead = v["overhead"].as_f64().unwrap();
        let expected = own.as_secs_f64() / process.as_secs_f64();
        assert!(
            (overhead - expected).abs() < 1e-3,
            "overhead {overhead} is own/process {expected}: {v}"
        );
        let occupancy = v["bufferOccupancy"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&occupancy), "{v}");
        assert!(int(v, "bytesWritten") <= file_size, "{v}");
        let at = parse_instant(v["startTime"].as_str().unwrap());
        // Samples are counted when written, after their handler ran: every
        // counted sample was taken before this event, and every sample
        // taken 300 ms before it (the sampler drains every 20 ms) is
        // counted.
        let samples = int(v, "samples") as usize;
        let before = sample_times.iter().filter(|&&t| t < at).count();
        let settled = sample_times
            .iter()
            .filter(|&&t| t < at - 300_000_000)
            .count();
        assert!(
            settled <= samples && samples <= before,
            "{settled} samples taken 300 ms before the event <= {samples} counted <= {before} taken before it: {v}"
        );
        if let Some(p) = prev {
            for k in [
                "recorderCpuTime",
                "samplerCpuTime",
                "periodicCpuTime",
                "signalHandlerTime",
                "processCpuTime",
            ] {
                assert!(
                    time(v, k) >= time(p, k),
                    "{k} never decreases: {p} then {v}"
                );
            }
            for k in ["bytesWritten", "events", "samples"] {
                assert!(int(v, k) >= int(p, k), "{k} never decreases: {p} then {v}");
            }
            // The rate is the count over the time between the two events
            // (by the periodic thread's clock; the file's times may differ
            // by a little scheduling).
            let secs = (at - parse_instant(p["startTime"].as_str().unwrap())) as f64 / 1e9;
            let delta = (int(v, "samples") - int(p, "samples")) as f64;
            let rate = int(v, "samplesPerSecond") as f64;
            if secs > 0.2 {
                assert!(
                    (rate * secs - delta).abs() <= 2.0 + 0.1 * delta,
                    "samplesPerSecond {rate} over {secs} s against {delta} samples: {p} then {v}"
                );
            }
        }
        prev = Some(v);
    }
    let last = stats.last().unwrap();
    assert!(int(last, "samples") >= s.samples, "{last}");
    assert!(
        int(last, "samples") as usize <= sample_times.len(),
        "the file holds every sample counted: {last}"
    );
    // The last event comes at the stop, before the last drain and the
    // chunk's end (constants, settings, losses): the file is larger by
    // those bytes only.
    let bytes = int(last, "bytesWritten");
    assert!(
        bytes > 0 && file_size - bytes < 512 << 10,
        "{bytes} bytes written at the stop of a {file_size}-byte file: {last}"
    );
    assert!(
        time(last, "signalHandlerTime") > Duration::ZERO,
        "the handler's time is summed: {last}"
    );
}

/// An ISO-8601 UTC instant (what `jfr print --json` writes) in nanoseconds
/// since the epoch.
fn parse_instant(s: &str) -> i64 {
    let (date, time) = s
        .strip_suffix('Z')
        .and_then(|s| s.split_once('T'))
        .unwrap_or_else(|| panic!("not a UTC instant: {s}"));
    let num = |t: &str| t.parse::<i64>().unwrap_or_else(|_| panic!("{s}"));
    let d: Vec<i64> = date.split('-').map(num).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(num).collect();
    let nanos = num(&format!("{frac:0<9}")[..9]);
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1])
    } else {
        (d[0], d[1])
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d[2] - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    ((days * 24 + t[0]) * 60 + t[1]) * 60_000_000_000 + t[2] * 1_000_000_000 + nanos
}

/// `PT0.004977S`, `PT1M2.5S` or `PT0S` (a duration as `jfr print --json`
/// writes it).
fn parse_duration(s: &str) -> Duration {
    let body = s
        .strip_prefix("PT")
        .and_then(|b| b.strip_suffix('S'))
        .unwrap_or_else(|| panic!("not a seconds duration: {s}"));
    let (minutes, secs) = body.split_once('M').unwrap_or(("0", body));
    let minutes: u64 = minutes.parse().unwrap_or_else(|_| panic!("{s}"));
    Duration::from_secs(minutes * 60) + Duration::from_secs_f64(secs.parse().unwrap())
}

#[test]
fn the_parsers_read_what_jfr_prints() {
    assert_eq!(
        parse_instant("2026-11-30T12:17:21.153465487Z"),
        1_796_041_041_153_465_487
    );
    assert_eq!(parse_instant("1970-01-01T00:00:00Z"), 0);
    assert_eq!(parse_duration("PT0S"), Duration::ZERO);
    assert_eq!(parse_duration("PT1M2.5S"), Duration::from_millis(62_500));
}
