//! flightrec's commit side by side with its peers, in one process, in
//! paired rounds; the end-to-end cost of an event; thread scaling.
//!
//! Each round times, back to back on the same thread, a batch of:
//!
//! * `rdtsc`: a bare read of the event clock (every event reads it);
//! * the floor: `rdtsc` and a store of the record's bytes at a
//!   thread-local cursor, the least any commit does. On CPUs where `rdtsc`
//!   does not overlap with the work around it (the Intel Xeon of the
//!   docs/performance.md's table), back-to-back commits do not overlap either, and a
//!   commit costs `rdtsc` plus everything else it does; this row shows
//!   what the least of that costs on the machine at hand;
//! * a flightrec commit of an enabled 3-field instant event;
//! * the same commit of a type the recording has disabled;
//! * a `tracing` event with the same three fields into a layer that only
//!   pushes the values to a thread-local `Vec` (the cheapest useful
//!   subscriber; `tracing` itself reads no clock);
//! * a `fastrace` local span (enter and exit under a local parent).
//!
//! Time is the thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`), so a
//! neighbour that takes the core away does not count; ratios are taken per
//! round and the medians reported. Then:
//!
//! * the JDK 25 JFR commit of the same event, by `benches/peers/Commit.java`
//!   run with the JDK that `flightrec-testkit` finds (its own median of
//!   rounds, wall time: the JVM's number is compared with this run's rdtsc);
//! * end to end: the process CPU time (every thread: commit, drain, write)
//!   per event for 10^7 events, after fastrace's collector has caught up;
//!   five runs, each with its own `rdtsc` measure just before it (the
//!   ratios are per run), medians reported;
//!   the recorder's part of it from its own threads' CPU clocks (every
//!   `flightrec-*` thread, through the final flush), and the emitting
//!   thread's;
//! * scaling: per-event CPU time of each emitting thread with 1, 2 and 4
//!   threads (contention shows as more CPU per event, whatever the host
//!   does with the second core).
//!
//! Prints a Markdown table between `peers table begin` and `peers table
//! end` (`scripts/peers-table.sh` copies it into docs/performance.md) and a last
//! line `peers summary: {json}`. Under `cargo test --benches` it runs a
//! small smoke version.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use fastrace::collector::{Config, Reporter, SpanRecord};
use fastrace::prelude::{LocalSpan, Span, SpanContext};
use flightrec::{Event, Recording, RecordingConfig};
use flightrec_testkit::measure::{
    StartLine, median, process_cpu_ns, thread_cpu_ns, threads_cpu_ns,
};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[derive(Event)]
#[event(name = "bench.Emit", label = "Emit")]
struct Emit {
    a: u64,
    b: i32,
    c: f64,
}

/// The same event with its type disabled: what a commit costs while the
/// recording does not want it.
#[derive(Event)]
#[event(name = "bench.Off", label = "Off", enabled = false)]
struct Off {
    a: u64,
    b: i32,
    c: f64,
}

/// Operations per timed segment: under fastrace's local span queue, so
/// every span is kept.
const SEGMENT: u64 = 8192;

// === the variants ===

#[inline(always)]
fn rdtsc_segment() {
    for _ in 0..SEGMENT {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: rdtsc exists on every x86-64 CPU and touches no memory.
        black_box(unsafe { core::arch::x86_64::_rdtsc() });
        #[cfg(not(target_arch = "x86_64"))]
        black_box(flightrec::clock::ticks());
    }
}

/// Bytes of the floor's own buffer (it stays in L1, as a thread's
/// current block does).
const FLOOR_BUF: usize = 16 << 10;

/// The floor's record: the bytes `floor_segment` stores per event.
const FLOOR_RECORD: usize = 27;

/// The floor's thread-local cursor and buffer.
struct FloorBuf {
    at: Cell<usize>,
    buf: UnsafeCell<[u8; FLOOR_BUF]>,
}

thread_local! {
    static FLOOR: FloorBuf = const {
        FloorBuf {
            at: Cell::new(0),
            buf: UnsafeCell::new([0; FLOOR_BUF]),
        }
    };
}

/// The least any commit of this event does: read the clock, find the
/// thread's cursor, store the record (a 2-byte header, the time as 8
/// bytes, the three fields as 8 + 1 + 8 bytes) and move the cursor; no
/// write section, no epoch, no varint encoding. What a commit costs beyond
/// this is the recorder's design, not the clock.
#[inline(always)]
fn floor_segment() {
    for i in 0..SEGMENT {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: rdtsc exists on every x86-64 CPU and touches no memory.
        let t = unsafe { core::arch::x86_64::_rdtsc() } as i64;
        #[cfg(not(target_arch = "x86_64"))]
        let t = flightrec::clock::ticks();
        FLOOR.with(|f| {
            let at = f.at.get();
            // SAFETY: the buffer is this thread's own, and this is the only
            // reference to it: it does not outlive the closure, which calls
            // nothing that could reach `FLOOR` again.
            let buf = unsafe { &mut *f.buf.get() };
            let rec = &mut buf[at..at + FLOOR_RECORD];
            rec[..2].copy_from_slice(&[FLOOR_RECORD as u8, 20]);
            rec[2..10].copy_from_slice(&t.to_le_bytes());
            rec[10..18].copy_from_slice(&black_box(i).to_le_bytes());
            rec[18] = 7;
            rec[19..27].copy_from_slice(&0.5f64.to_bits().to_le_bytes());
            let next = at + FLOOR_RECORD;
            f.at.set(if next > FLOOR_BUF - FLOOR_RECORD {
                0
            } else {
                next
            });
        });
    }
}

#[inline(always)]
fn flightrec_segment() {
    for i in 0..SEGMENT {
        Emit {
            a: black_box(i),
            b: 7,
            c: 0.5,
        }
        .commit();
    }
}

/// Disabled commits, four per turn of the loop. The fields are plain
/// values (no `black_box`, which would make every commit store and reload
/// one): a disabled commit costs its check, whatever the fields are. Four
/// per turn, and a function of its own (so its loop starts at the same
/// alignment in every build): with one per turn, the loop's own increment,
/// compare and branch are as many instructions as the commit, and the
/// time moved by 2× between builds that differed only in where the loop
/// fell in its cache line.
#[inline(never)]
fn disabled_segment() {
    let off = |a| Off { a, b: 7, c: 0.5 }.commit();
    for i in (0..SEGMENT).step_by(4) {
        off(i);
        off(i + 1);
        off(i + 2);
        off(i + 3);
    }
}

#[inline(always)]
fn tracing_segment() {
    for i in 0..SEGMENT {
        tracing::info!(a = black_box(i), b = 7i64, c = 0.5f64);
    }
}

#[inline(always)]
fn fastrace_segment() {
    for _ in 0..SEGMENT {
        let _s = LocalSpan::enter_with_local_parent("bench.Emit");
    }
}

/// A `tracing` layer that pushes each event's values to a thread-local Vec.
struct VecLayer;

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
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> Layer<S> for VecLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        SINK.with(|s| {
            let mut v = s.borrow_mut();
            if v.len() > (1 << 16) - 8 {
                v.clear();
            }
            event.record(&mut Push(&mut v));
        });
    }
}

/// Discards fastrace's spans (their collection is not what is compared).
struct Discard;

impl Reporter for Discard {
    fn report(&mut self, spans: Vec<SpanRecord>) {
        black_box(spans);
    }
}

/// CPU ns per operation of `segments` timed segments of `f`.
fn per_op(segments: u64, mut f: impl FnMut()) -> f64 {
    let mut total = 0.0;
    for _ in 0..segments {
        let t = thread_cpu_ns() as f64;
        f();
        total += thread_cpu_ns() as f64 - t;
    }
    total / (segments * SEGMENT) as f64
}

// === the runs ===

struct Peers {
    rdtsc: f64,
    floor: f64,
    floor_over_rdtsc: f64,
    flightrec: f64,
    tracing: f64,
    fastrace: f64,
    flightrec_over_rdtsc: f64,
    disabled: f64,
    tracing_ratio: f64,
    fastrace_ratio: f64,
}

fn peers(rec: &Recording, rounds: usize, segments: u64) -> Peers {
    let (mut t, mut f, mut tr, mut fa) = (vec![], vec![], vec![], vec![]);
    let (mut f_t, mut f_tr, mut f_fa) = (vec![], vec![], vec![]);
    let (mut fl, mut fl_t, mut off) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        rec.flush().expect("flush");
        let tsc = per_op(segments, rdtsc_segment);
        let floor = per_op(segments, floor_segment);
        let fr = per_op(segments, flightrec_segment);
        off.push(per_op(segments, disabled_segment));
        let tc = per_op(segments, tracing_segment);
        let fs = {
            let mut total = 0.0;
            for _ in 0..segments {
                let root = Span::root("bench", SpanContext::random());
                let guard = root.set_local_parent();
                let start = thread_cpu_ns() as f64;
                fastrace_segment();
                total += thread_cpu_ns() as f64 - start;
                drop(guard);
            }
            total / (segments * SEGMENT) as f64
        };
        t.push(tsc);
        fl.push(floor);
        fl_t.push(floor / tsc);
        f.push(fr);
        tr.push(tc);
        fa.push(fs);
        f_t.push(fr / tsc);
        f_tr.push(fr / tc);
        f_fa.push(fr / fs);
    }
    Peers {
        rdtsc: median(&mut t),
        floor: median(&mut fl),
        floor_over_rdtsc: median(&mut fl_t),
        flightrec: median(&mut f),
        tracing: median(&mut tr),
        fastrace: median(&mut fa),
        flightrec_over_rdtsc: median(&mut f_t),
        disabled: median(&mut off),
        tracing_ratio: median(&mut f_tr),
        fastrace_ratio: median(&mut f_fa),
    }
}

/// The JDK's commit, ns per event, if a JDK 25 with `javac` is found.
fn java_commit(out: &Path, rounds: usize, batch: u64) -> Result<f64, String> {
    let jdk = flightrec_testkit::locate().map_err(|e| e.to_string())?;
    let javac = jdk.home().join("bin/javac");
    if !javac.exists() {
        return Err(format!("{} has no javac", jdk.home().display()));
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/Commit.java");
    let status = Command::new(&javac)
        .arg("-d")
        .arg(out)
        .arg(&src)
        .status()
        .map_err(|e| format!("javac: {e}"))?;
    if !status.success() {
        return Err(format!("javac failed: {status}"));
    }
    let run = Command::new(jdk.java_path())
        .arg("-cp")
        .arg(out)
        .arg("Commit")
        .arg(rounds.to_string())
        .arg(batch.to_string())
        .output()
        .map_err(|e| format!("java: {e}"))?;
    let text = String::from_utf8_lossy(&run.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("java commit ns: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "no result from java: {text}{}",
                String::from_utf8_lossy(&run.stderr)
            )
        })
}

/// Per event over `events` events: the process's CPU (commit, drain,
/// write), the emitting thread's part, and the recorder's threads' part
/// (every `flightrec-*` thread, read from each thread's own CPU clock,
/// until the final flush has written the last event).
fn end_to_end(rec: &Recording, events: u64) -> (f64, f64, f64) {
    // fastrace's collector thread works off the spans of the paired
    // rounds in the background: let it finish, so the process's CPU here
    // is flightrec's.
    fastrace::flush();
    rec.flush().expect("flush");
    let (p0, t0, r0) = (
        process_cpu_ns() as f64,
        thread_cpu_ns() as f64,
        threads_cpu_ns("flightrec") as f64,
    );
    for i in 0..events {
        Emit {
            a: black_box(i),
            b: 7,
            c: 0.5,
        }
        .commit();
    }
    let t1 = thread_cpu_ns() as f64;
    rec.flush().expect("flush");
    let (p1, r1) = (process_cpu_ns() as f64, threads_cpu_ns("flightrec") as f64);
    let n = events as f64;
    ((p1 - p0) / n, (t1 - t0) / n, (r1 - r0) / n)
}

/// Per-event CPU time of each of `threads` emitting threads (their mean).
fn scaling_round(rec: &Recording, threads: usize, n: u64) -> f64 {
    rec.flush().expect("flush");
    let start_line = StartLine::new(threads);
    let per_event = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                Emit { a: 0, b: 1, c: 2.0 }.commit();
                start_line.wait();
                let start = thread_cpu_ns() as f64;
                for i in 0..n {
                    Emit {
                        a: black_box(i),
                        b: 7,
                        c: 0.5,
                    }
                    .commit();
                }
                let spent = thread_cpu_ns() as f64 - start;
                per_event.lock().unwrap().push(spent / n as f64);
            });
        }
    });
    let v = per_event.into_inner().unwrap();
    v.iter().sum::<f64>() / v.len() as f64
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, segments, events, scaling_n) = if full {
        (31, 6, 10_000_000, 200_000)
    } else {
        (2, 1, 100_000, 10_000) // `cargo test --benches`: a smoke run
    };
    let dir = std::env::temp_dir().join(format!("flightrec-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .max_memory(1 << 30)
            .max_size(Some(256 << 20)),
    )
    .expect("start recording");
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(VecLayer))
        .expect("the bench's subscriber");
    fastrace::set_reporter(Discard, Config::default());

    let p = peers(&rec, rounds, segments);
    let java = java_commit(
        &dir,
        if full { 31 } else { 3 },
        if full { 1_000_000 } else { 10_000 },
    );
    // End to end, a few runs of `events` each: the host's speed drifts
    // between the phases of this bench, so each run's ratio is taken
    // against an `rdtsc` measure made just before it, and medians reported.
    let e2e_runs = if full { 5 } else { 1 };
    let (mut e2e_v, mut commit_v, mut recorder_v) = (vec![], vec![], vec![]);
    let (mut e2e_x, mut commit_x, mut recorder_x) = (vec![], vec![], vec![]);
    for _ in 0..e2e_runs {
        let tsc = per_op(segments, rdtsc_segment);
        let (e, c, r) = end_to_end(&rec, events);
        e2e_v.push(e);
        commit_v.push(c);
        recorder_v.push(r);
        e2e_x.push(e / tsc);
        commit_x.push(c / tsc);
        recorder_x.push(r / tsc);
    }
    let (e2e, commit_part, recorder) = (
        median(&mut e2e_v),
        median(&mut commit_v),
        median(&mut recorder_v),
    );
    let (e2e_x, commit_x, recorder_x) = (
        median(&mut e2e_x),
        median(&mut commit_x),
        median(&mut recorder_x),
    );
    let (mut two, mut four) = (Vec::new(), Vec::new());
    for _ in 0..if full { 11 } else { 1 } {
        let before = scaling_round(&rec, 1, scaling_n);
        let t2 = scaling_round(&rec, 2, scaling_n);
        let t4 = scaling_round(&rec, 4, scaling_n);
        let after = scaling_round(&rec, 1, scaling_n);
        let one = (before + after) / 2.0;
        two.push(t2 / one);
        four.push(t4 / one);
    }
    let (two, four) = (median(&mut two), median(&mut four));
    let summary = rec.stop().expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
    let lost = summary.losses.total_events();

    let x = |ns: f64| ns / p.rdtsc;
    println!("peers table begin");
    println!("| Operation (thread CPU time, median of {rounds} paired rounds) | ns | × rdtsc |");
    println!("|---|---:|---:|");
    println!("| `rdtsc` (the event clock) | {:.1} | 1.00 |", p.rdtsc);
    println!(
        "| floor: `rdtsc` + storing the record at a thread-local cursor | {:.1} | {:.2} |",
        p.floor, p.floor_over_rdtsc
    );
    println!(
        "| flightrec: commit a 3-field event | {:.1} | {:.2} |",
        p.flightrec, p.flightrec_over_rdtsc
    );
    println!(
        "| flightrec: commit of a disabled type | {:.2} | {:.2} |",
        p.disabled,
        x(p.disabled)
    );
    println!(
        "| `tracing`: 3-field event into a thread-local Vec layer | {:.1} | {:.2} |",
        p.tracing,
        x(p.tracing)
    );
    println!(
        "| `fastrace`: local span | {:.1} | {:.2} |",
        p.fastrace,
        x(p.fastrace)
    );
    match &java {
        Ok(ns) => println!(
            "| JDK 25 JFR: commit a 3-field event (wall, own process) | {ns:.1} | {:.2} |",
            x(*ns)
        ),
        Err(why) => println!("| JDK 25 JFR: not measured ({why}) | | |"),
    }
    println!(
        "| flightrec end to end: commit + drain + write (process CPU / event, median of {e2e_runs} runs of {events} events) | {e2e:.1} | {e2e_x:.2} |"
    );
    println!(
        "| flightrec recorder threads per event (their own CPU time: drain + write) | {recorder:.1} | {recorder_x:.2} |"
    );
    println!(
        "| flightrec commit inside the end-to-end runs (emitting thread CPU / event) | {commit_part:.1} | {commit_x:.2} |"
    );
    println!("| per-thread CPU per event, 2 threads / 1 thread | | {two:.2} |");
    println!("| per-thread CPU per event, 4 threads / 1 thread | | {four:.2} |");
    println!("peers table end");
    if lost > 0 {
        eprintln!("peers bench: {lost} events dropped: the figures include the drop path");
    }
    println!(
        "peers summary: {{\"rdtsc_ns\": {:.2}, \"flightrec_ns\": {:.2}, \"flightrec_over_rdtsc\": {:.3}, \
         \"flightrec_over_tracing\": {:.3}, \"flightrec_over_fastrace\": {:.3}, \"java_ns\": {}, \
         \"end_to_end_ns\": {e2e:.2}, \"end_to_end_over_rdtsc\": {e2e_x:.3}, \"recorder_ns\": {recorder:.2}, \
         \"end_to_end_commit_ns\": {commit_part:.2}, \"floor_ns\": {:.2}, \"floor_over_rdtsc\": {:.3}, \
         \"two_threads_cpu_ratio\": {two:.3}, \"four_threads_cpu_ratio\": {four:.3}, \"events_lost\": {lost}, \
         \"recorder_over_rdtsc\": {recorder_x:.3}, \"end_to_end_runs\": {e2e_runs}, \"disabled_ns\": {:.3}}}",
        p.rdtsc,
        p.flightrec,
        p.flightrec_over_rdtsc,
        p.tracing_ratio,
        p.fastrace_ratio,
        java.as_ref()
            .map_or("null".to_owned(), |v| format!("{v:.2}")),
        p.floor,
        p.floor_over_rdtsc,
        p.disabled,
    );
}
