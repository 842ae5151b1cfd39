//! Streams its own recording while it runs: every second it prints the p99
//! duration of its `watchdog.Request` events and the top 3 CPU-sampled
//! functions (`jdk.CPUTimeSample`, innermost frame) with their stack depth,
//! as one JSON line per second; at the end one line with the totals, which
//! match the file the recording writes.
//!
//! ```text
//! cargo run --release --example stream_watchdog -- --seconds 5 [--out OUT.jfr]
//! ```
//!
//! Lines: `{"second": s, "requests": n, "p99_us": x, "samples": k,
//! "top": [{"function": "...", "samples": c, "depth": d}, ...]}`, then
//! `{"total": {"watchdog.Request": n, "jdk.CPUTimeSample": k}, "out": "...",
//! "stream_errors": e}`. Seconds count from the recording's start, by event
//! time, so each event lands in exactly one line.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use flightrec::stream::EventStream;
use flightrec::{Event, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(name = "watchdog.Request", label = "Request", duration)]
struct Request {
    id: u64,
}

#[derive(Default)]
struct Second {
    durations_us: Vec<f64>,
    /// Per innermost function: samples and the deepest stack seen.
    functions: BTreeMap<String, (u64, usize)>,
    samples: u64,
}

#[derive(Default)]
struct State {
    seconds: BTreeMap<u64, Second>,
    printed_up_to: u64,
    totals: BTreeMap<&'static str, u64>,
}

impl State {
    fn second(&mut self, start: SystemTime, t: SystemTime) -> &mut Second {
        let s = t.duration_since(start).unwrap_or_default().as_secs();
        self.seconds.entry(s).or_default()
    }

    /// Prints every second before `upto` not printed yet.
    fn print_until(&mut self, upto: u64) {
        while self.printed_up_to < upto {
            let s = self.printed_up_to;
            let sec = self.seconds.remove(&s).unwrap_or_default();
            print_line(s, sec);
            self.printed_up_to += 1;
        }
    }
}

fn print_line(s: u64, mut sec: Second) {
    sec.durations_us.sort_by(f64::total_cmp);
    let p99 = match sec.durations_us.len() {
        0 => 0.0,
        n => sec.durations_us[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1],
    };
    let mut top: Vec<(String, (u64, usize))> = sec.functions.into_iter().collect();
    top.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
    top.truncate(3);
    let top: Vec<serde_json::Value> = top
        .into_iter()
        .map(|(f, (n, d))| serde_json::json!({"function": f, "samples": n, "depth": d}))
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "second": s,
            "requests": sec.durations_us.len(),
            "p99_us": (p99 * 10.0).round() / 10.0,
            "samples": sec.samples,
            "top": top,
        })
    );
}

#[inline(never)]
fn hash_rounds(seed: u64, rounds: u64) -> u64 {
    let mut h = seed;
    for _ in 0..rounds {
        h = std::hint::black_box(
            h.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        );
    }
    h
}

#[inline(never)]
fn parse_request(id: u64) -> u64 {
    hash_rounds(id, 20_000)
}

#[inline(never)]
fn render_response(id: u64) -> u64 {
    hash_rounds(id ^ 0xff, 60_000)
}

#[inline(never)]
fn handle(id: u64) {
    let timer = Request::begin();
    let h = parse_request(id) ^ render_response(id);
    std::hint::black_box(h);
    timer.commit(&Request { id });
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut seconds = 5u64;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seconds" => seconds = args.next().ok_or("--seconds N")?.parse()?,
            "--out" => out = args.next(),
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    let dir = std::env::temp_dir().join(format!("flightrec-watchdog-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let out = out.map_or_else(|| dir.join("watchdog.jfr"), Into::into);

    let mut settings = Settings::new();
    settings.set("jdk.CPUTimeSample", "enabled", "true")?;
    settings.set("jdk.CPUTimeSample", "throttle", "10ms")?;
    // Before the start, so every event of the file is after it.
    let start = SystemTime::now();
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .repository(dir.join("repo"))
            // The stream reads the last chunk after the stop; the directory
            // is removed below, once it has.
            .keep_repository(true)
            .flush_interval(Duration::from_millis(250))
            .settings(settings),
    )?;
    let state = Arc::new(Mutex::new(State::default()));
    let errors = Arc::new(Mutex::new(0u64));

    let mut stream = EventStream::for_recording(&rec)?;
    stream.start_time(start);
    let st = Arc::clone(&state);
    stream.on_event("watchdog.Request", move |e| {
        let mut s = st.lock().unwrap();
        *s.totals.entry("watchdog.Request").or_default() += 1;
        let d = e.duration().unwrap_or_default().as_secs_f64() * 1e6;
        s.second(start, e.start_time()).durations_us.push(d);
    });
    let st = Arc::clone(&state);
    stream.on_event("jdk.CPUTimeSample", move |e| {
        let mut s = st.lock().unwrap();
        *s.totals.entry("jdk.CPUTimeSample").or_default() += 1;
        let frames = e.stack_trace().unwrap_or_default();
        let sec = s.second(start, e.start_time());
        sec.samples += 1;
        if let Some(top) = frames.first() {
            let f = sec.functions.entry(top.name.clone()).or_default();
            f.0 += 1;
            f.1 = f.1.max(frames.len());
        }
    });
    let st = Arc::clone(&state);
    stream.on_flush(move || {
        // A second is printed once the stream has passed its end by a
        // flush interval and a poll.
        let now = SystemTime::now()
            .duration_since(start)
            .unwrap_or_default()
            .saturating_sub(Duration::from_millis(600));
        st.lock().unwrap().print_until(now.as_secs());
    });
    let errs = Arc::clone(&errors);
    stream.on_error(move |e| {
        eprintln!("stream_watchdog: {e}");
        *errs.lock().unwrap() += 1;
    });
    let streaming = stream.start()?;

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut id = 0;
    while Instant::now() < deadline {
        handle(id);
        id += 1;
    }
    rec.stop()?;
    let summary = streaming.join();
    let mut s = state.lock().unwrap();
    let last = s.seconds.keys().next_back().map_or(0, |k| k + 1);
    s.print_until(last);
    println!(
        "{}",
        serde_json::json!({
            "total": s.totals,
            "out": out,
            "stream_errors": *errors.lock().unwrap(),
            "stream_events": summary.events,
        })
    );
    let _ = std::fs::remove_dir_all(dir.join("repo"));
    Ok(())
}
