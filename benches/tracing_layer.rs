//! The flightrec `tracing` layer against its peers, in one process, in
//! paired rounds on one thread (thread CPU time, `CLOCK_THREAD_CPUTIME_ID`;
//! ratios taken per round, medians reported):
//!
//! * a 3-field `tracing` event through the flightrec layer (type enabled,
//!   recording running) vs the same event into a minimal layer that pushes
//!   every field value to a thread-local `Vec` (target ≤ 1.5×), vs that
//!   layer also pushing a timestamp read from the recorder's clock (what
//!   any recorder of events does at least: the flightrec layer reads the
//!   same clock), and vs `tracing-subscriber`'s fmt layer writing to
//!   `io::sink()`;
//! * a span enter/exit through the layer (one duration event each);
//! * an event of a type disabled by its JFR setting vs the same event with no
//!   subscriber interested (target ≤ 1.2×).
//!
//! Every variant uses its own callsite (its own target) and runs under its
//! own scoped dispatcher (`with_default`), built for its turn in each round
//! and dropped after it, so while it is timed it is the only live
//! dispatcher, as the one subscriber of a process is: `tracing` combines a
//! callsite's interest over every live dispatcher, and with several (each
//! wanting only its own targets) every callsite would be `sometimes`, which
//! makes `tracing` ask the subscriber's `enabled` on every event, a cost a
//! process with one subscriber does not pay (about 90 instructions, the
//! same for every layer). Each layer carries a per-layer filter wanting
//! only its targets. The disabled and no-subscriber callsites are both
//! `Interest::never`: the first timed under the flightrec subscriber with
//! its type disabled, the second under `Dispatch::none()` with every
//! subscriber built so far declining it (the flightrec one by a disabled
//! type too; a process with no subscriber at all cannot be timed in the
//! same run).
//!
//! `FLIGHTREC_BENCH_ONLY=<variant>` (vec, jfr, fmt, span, off, none, vec_ts) times
//! one variant only, for a profiler.
//!
//! Prints a Markdown table and a last line `tracing_layer summary: {json}`.
//! Under `cargo test --benches` it runs a small smoke version.

use std::cell::RefCell;
use std::hint::black_box;

use flightrec::{Recording, RecordingConfig, Settings};
use tracing::field::{Field, Visit};
use tracing::{Dispatch, dispatcher};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

const SEGMENT: u64 = 4096;

fn thread_ns() -> f64 {
    flightrec_testkit::measure::thread_cpu_ns() as f64
}

/// A `tracing` layer that pushes each event's values (every field, of any
/// kind) to a thread-local Vec, and with `stamp` a timestamp first.
struct VecLayer {
    stamp: bool,
}

thread_local! {
    static SINK: RefCell<Vec<u64>> = RefCell::new(Vec::with_capacity(1 << 16));
}

struct Push<'a>(&'a mut Vec<u64>);

impl Visit for Push<'_> {
    fn record_u64(&mut self, _: &Field, v: u64) {
        self.0.push(v);
    }
    fn record_i64(&mut self, _: &Field, v: i64) {
        self.0.push(v as u64);
    }
    fn record_f64(&mut self, _: &Field, v: f64) {
        self.0.push(v.to_bits());
    }
    fn record_bool(&mut self, _: &Field, v: bool) {
        self.0.push(u64::from(v));
    }
    fn record_str(&mut self, _: &Field, v: &str) {
        self.0.extend(v.bytes().map(u64::from));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.record_str(f, &format!("{v:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for VecLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        SINK.with(|s| {
            let mut v = s.borrow_mut();
            if v.len() > (1 << 16) - 8 {
                v.clear();
            }
            if self.stamp {
                v.push(flightrec::clock::ticks() as u64);
            }
            event.record(&mut Push(&mut v));
        });
    }
}

fn vec_segment() {
    for i in 0..SEGMENT {
        tracing::info!(target: "bench_vec", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn vec_ts_segment() {
    for i in 0..SEGMENT {
        tracing::info!(target: "bench_vec_ts", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn jfr_segment() {
    for i in 0..SEGMENT {
        tracing::info!(target: "bench_jfr", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn fmt_segment() {
    for i in 0..SEGMENT {
        tracing::info!(target: "bench_fmt", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn off_segment() {
    for i in 0..SEGMENT {
        tracing::info!(name: "off", target: "bench_off", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn none_segment() {
    for i in 0..SEGMENT {
        tracing::info!(name: "none", target: "bench_none", a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

fn span_segment(span: &tracing::Span) {
    for _ in 0..SEGMENT {
        let _e = black_box(span).enter();
    }
}

/// CPU ns per operation of `segments` segments of `f` under `d`, given a
/// span made under `d` before the timing starts (it holds `d` while it
/// lives; only the span variant enters it).
fn per_op(d: &Dispatch, segments: u64, f: &dyn Fn(&tracing::Span)) -> f64 {
    dispatcher::with_default(d, || {
        let span = tracing::info_span!(target: "bench_jfr", "op", a = 1u64);
        let mut total = 0.0;
        for _ in 0..segments {
            let t = thread_ns();
            f(&span);
            total += thread_ns() - t;
        }
        total / (segments * SEGMENT) as f64
    })
}

use flightrec_testkit::measure::median;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, segments) = if full { (31, 8) } else { (2, 1) };
    let dir = std::env::temp_dir().join(format!("flightrec-tracing-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    let only = |t: &'static str| filter_fn(move |m| m.target() == t);
    // Built afresh for each turn (see the module doc): while one is timed,
    // no other dispatcher is alive.
    let make = |k: &str| -> Dispatch {
        match k {
            "vec" | "vec_ts" => {
                let (stamp, target) = if k == "vec" {
                    (false, "bench_vec")
                } else {
                    (true, "bench_vec_ts")
                };
                Dispatch::new(
                    tracing_subscriber::registry()
                        .with(VecLayer { stamp }.with_filter(only(target))),
                )
            }
            "fmt" => Dispatch::new(
                tracing_subscriber::registry().with(
                    tracing_subscriber::fmt::layer()
                        .with_ansi(false)
                        .with_writer(std::io::sink)
                        .with_filter(only("bench_fmt")),
                ),
            ),
            "none" => Dispatch::none(),
            _ => Dispatch::new(tracing_subscriber::registry().with(flightrec::tracing::layer())),
        }
    };

    let mut settings = Settings::new();
    settings.enable("tracing.bench_off.off", false);
    settings.enable("tracing.bench_none.none", false);
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .max_memory(1 << 30)
            .max_size(Some(256 << 20))
            .settings(settings),
    )
    .expect("start recording");

    let only = std::env::var("FLIGHTREC_BENCH_ONLY").ok();
    let keys = ["vec", "jfr", "fmt", "span", "off", "none", "vec_ts"];
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); keys.len()];
    let (mut jfr_vec, mut jfr_fmt, mut off_none, mut span_vec) = (vec![], vec![], vec![], vec![]);
    let mut jfr_vec_ts = vec![];
    for _ in 0..rounds {
        rec.flush().expect("flush");
        let run = |k: usize, f: &dyn Fn(&tracing::Span)| {
            if only.as_deref().is_none_or(|o| o == keys[k]) {
                let d = make(keys[k]);
                per_op(&d, segments, f)
            } else {
                f64::NAN
            }
        };
        let r = [
            run(0, &|_| vec_segment()),
            run(1, &|_| jfr_segment()),
            run(2, &|_| fmt_segment()),
            run(3, &span_segment),
            run(4, &|_| off_segment()),
            run(5, &|_| none_segment()),
            run(6, &|_| vec_ts_segment()),
        ];
        for (v, x) in ns.iter_mut().zip(r) {
            v.push(x);
        }
        jfr_vec.push(r[1] / r[0]);
        jfr_fmt.push(r[1] / r[2]);
        span_vec.push(r[3] / r[0]);
        off_none.push(r[4] / r[5]);
        jfr_vec_ts.push(r[1] / r[6]);
    }
    let summary = rec.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
    let m: Vec<f64> = ns.iter_mut().map(|v| median(v)).collect();
    let jfr_vec_ts = median(&mut jfr_vec_ts);
    let (jfr_vec, jfr_fmt, span_vec, off_none) = (
        median(&mut jfr_vec),
        median(&mut jfr_fmt),
        median(&mut span_vec),
        median(&mut off_none),
    );
    println!("| Operation (thread CPU time, median of {rounds} paired rounds) | ns | ratio |");
    println!("|---|---:|---:|");
    println!(
        "| 3-field event into a thread-local Vec layer | {:.1} | 1.00 |",
        m[0]
    );
    println!(
        "| 3-field event into the Vec layer, with a clock read | {:.1} | {:.2} |",
        m[6],
        m[6] / m[0]
    );
    println!(
        "| 3-field event through the flightrec layer | {:.1} | {jfr_vec:.2} × Vec, {jfr_vec_ts:.2} × Vec with clock |",
        m[1]
    );
    println!(
        "| 3-field event through fmt into io::sink | {:.1} | flightrec = {jfr_fmt:.2} × fmt |",
        m[2]
    );
    println!(
        "| span enter/exit through the flightrec layer | {:.1} | {span_vec:.2} × Vec event |",
        m[3]
    );
    println!(
        "| event of a disabled type (flightrec layer) | {:.2} | {off_none:.2} × no subscriber |",
        m[4]
    );
    println!(
        "| event with no subscriber interested | {:.2} | 1.00 |",
        m[5]
    );
    let lost = summary.losses.total_events();
    if lost > 0 {
        eprintln!("tracing_layer bench: {lost} events dropped: the figures include the drop path");
    }
    println!(
        "tracing_layer summary: {{\"vec_ns\": {:.2}, \"vec_clock_ns\": {:.2}, \"flightrec_ns\": {:.2}, \"fmt_ns\": {:.2}, \
         \"span_enter_exit_ns\": {:.2}, \"disabled_ns\": {:.3}, \"no_subscriber_ns\": {:.3}, \
         \"flightrec_over_vec\": {jfr_vec:.3}, \"flightrec_over_vec_clock\": {jfr_vec_ts:.3}, \"flightrec_over_fmt\": {jfr_fmt:.3}, \
         \"span_over_vec\": {span_vec:.3}, \"disabled_over_no_subscriber\": {off_none:.3}, \"events_lost\": {lost}}}",
        m[0], m[6], m[1], m[2], m[3], m[4], m[5]
    );
}
