//! Event times as JDK 25's `jfr` reads them: an event's `startTime` is the
//! wall-clock time of its commit, and a duration event's `duration` is the
//! time it spanned, on both clocks the recorder can run on: the TSC (when the
//! machine offers an invariant one, as CI's do) and the `CLOCK_MONOTONIC`
//! fallback, forced with `FLIGHTREC_CLOCK=monotonic` in a process of its own
//! (the clock is chosen once per process).

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flightrec_derive::Event;
use recorder::Event;
use recorder::clock::{self, ClockSource};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Mark", label = "Mark")]
struct Mark {
    seq: u64,
    /// The wall clock read just before the commit, ns since the epoch.
    wall_nanos: i64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.Span", label = "Span", duration)]
struct Span {
    seq: u64,
}

/// How far the JDK's reading of any one start time may be from the wall
/// clock read just before the commit (a preemption in between, on a loaded
/// machine, is the widest gap expected).
const START_TOLERANCE: Duration = Duration::from_millis(2);

/// How much the typical gap between the JDK's start times and the wall
/// clock may change from the first half of the marks to the second, about
/// 100 ms later: 4 µs is a tick rate 40 ppm off. A rate measured from
/// single clock reads was 90 to 130 ppm off here.
const DRIFT_TOLERANCE: Duration = Duration::from_micros(4);

#[test]
fn event_times_match_the_wall_clock() {
    check_times("default");
}

#[test]
fn event_times_match_the_wall_clock_on_the_monotonic_fallback() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "monotonic_child", "--ignored", "--nocapture"])
        .env("FLIGHTREC_CLOCK", "monotonic")
        .output()
        .expect("run the test binary again");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "monotonic run failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the monotonic run did not run its test:\n{text}"
    );
}

#[test]
#[ignore = "run by event_times_match_the_wall_clock_on_the_monotonic_fallback, with FLIGHTREC_CLOCK=monotonic"]
fn monotonic_child() {
    assert_eq!(
        std::env::var("FLIGHTREC_CLOCK").as_deref(),
        Ok("monotonic"),
        "run through event_times_match_the_wall_clock_on_the_monotonic_fallback"
    );
    check_times("monotonic");
}

fn wall_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn check_times(name: &str) {
    let dir = flightrec_testkit::temp_dir(&format!("event_times_{name}"));
    let path = dir.join("times.jfr");
    let rec = recorder::Recording::start(recorder::RecordingConfig::new(&path)).unwrap();
    if name == "monotonic" {
        assert_eq!(clock::source(), ClockSource::Monotonic);
    }
    const MARKS: u64 = 40;
    let mut spans = Vec::new();
    for seq in 0..MARKS {
        Mark {
            seq,
            wall_nanos: wall_nanos(),
        }
        .commit();
        let sleep = Duration::from_millis(2 + seq % 5);
        let timer = Span::begin();
        let before = std::time::Instant::now();
        std::thread::sleep(sleep);
        assert!(timer.commit(&Span { seq }));
        spans.push(before.elapsed());
    }
    rec.stop().unwrap();
    if name == "monotonic" {
        assert_whole_nanosecond_ticks(&path);
    }

    let events = flightrec_testkit::print_json(&path);
    let events = events.as_array().unwrap();
    let of = |ty: &str| {
        let mut v: Vec<_> = events
            .iter()
            .filter(|e| e["type"] == ty)
            .map(|e| &e["values"])
            .collect();
        v.sort_by_key(|e| e["seq"].as_u64());
        v
    };
    let marks = of("test.Mark");
    assert_eq!(marks.len() as u64, MARKS, "marks in the file");
    let mut gaps = Vec::new();
    for (seq, m) in marks.iter().enumerate() {
        assert_eq!(m["seq"].as_u64(), Some(seq as u64));
        let start = parse_instant(m["startTime"].as_str().unwrap());
        let gap = start - m["wall_nanos"].as_i64().unwrap();
        assert!(
            gap.abs() < START_TOLERANCE.as_nanos() as i64,
            "mark {seq}: the JDK reads startTime {gap} ns from the wall clock at commit"
        );
        gaps.push(gap);
    }
    let median = |v: &[i64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (early, late) = gaps.split_at(gaps.len() / 2);
    let drift = median(late) - median(early);
    assert!(
        drift.abs() < DRIFT_TOLERANCE.as_nanos() as i64,
        "the gap to the wall clock moved {drift} ns in 100 ms: the tick rate is off ({gaps:?})"
    );
    let read = of("test.Span");
    assert_eq!(read.len(), spans.len(), "spans in the file");
    for (seq, (s, elapsed)) in read.iter().zip(&spans).enumerate() {
        let d = parse_duration(s["duration"].as_str().unwrap());
        // The timer spans the sleep; the Instant read around it spans the
        // timer's two clock reads too: within a tenth of a millisecond, and
        // never shorter than the sleep.
        let sleep = Duration::from_millis(2 + seq as u64 % 5);
        assert!(
            d >= sleep && d <= *elapsed + Duration::from_micros(100),
            "span {seq}: duration {d:?}, slept {sleep:?}, measured around it {elapsed:?}"
        );
        let start = parse_instant(s["startTime"].as_str().unwrap());
        let mark = parse_instant(marks[seq]["startTime"].as_str().unwrap());
        assert!(start >= mark, "span {seq} starts before the mark before it");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Every chunk header of the file counts 10^9 ticks per second: the
/// monotonic fallback is the clock to record with for JDK Mission Control,
/// which computes end times exactly only with whole-nanosecond ticks and
/// miscounts duration events otherwise (docs/jfr-format.md §9.1, §10 #27).
fn assert_whole_nanosecond_ticks(path: &std::path::Path) {
    use jfr_format::write::header::ChunkHeader;
    let bytes = std::fs::read(path).unwrap();
    let mut at = 0;
    let mut chunks = 0;
    while at < bytes.len() {
        let header = ChunkHeader::parse(&bytes[at..])
            .unwrap_or_else(|| panic!("no chunk header at byte {at}"));
        assert_eq!(
            header.ticks_per_second, 1_000_000_000,
            "chunk {chunks}: the monotonic fallback writes nanosecond ticks"
        );
        assert!(
            header.chunk_size > 0,
            "chunk {chunks}: size {}",
            header.chunk_size
        );
        at += header.chunk_size as usize;
        chunks += 1;
    }
    assert!(chunks > 0, "no chunk in the file");
}

/// `2026-11-30T12:17:21.153465487Z` (what `jfr print --json` writes for a
/// `startTime` in UTC) as ns since the epoch.
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
    let days = days_from_civil(d[0], d[1], d[2]);
    ((days * 24 + t[0]) * 60 + t[1]) * 60_000_000_000 + t[2] * 1_000_000_000 + nanos
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `PT0.004977S` or `PT1M2.5S` (what `jfr print --json` writes for a
/// duration) as a `Duration`.
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
    assert_eq!(parse_instant("1970-01-01T00:00:00Z"), 0);
    assert_eq!(
        parse_instant("2026-11-30T12:17:21.153465487Z"),
        1_796_041_041_153_465_487
    );
    assert_eq!(
        parse_instant("2000-03-01T00:00:00.5Z"),
        951_868_800_500_000_000
    );
    assert_eq!(
        parse_duration("PT0.004977S"),
        Duration::from_nanos(4_977_000)
    );
    assert_eq!(parse_duration("PT1M2.5S"), Duration::from_millis(62_500));
}
