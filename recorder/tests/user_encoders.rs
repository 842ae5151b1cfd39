//! Issue 30: no user encoder can stall the recorder or corrupt a file.
//!
//! * An encoder blocked on a lock the controlling thread holds:
//!   `rotate()`, `dump()` and `stop()` each return within 2 s; every other
//!   thread's events are in the file exactly; the blocked event is written
//!   once its encoder returns while the recording runs (it is committed
//!   then, not before), and not at all when the recording stopped first.
//! * Encoders that write another kind's bytes, nothing, or too much (a
//!   `FieldValue`, a hand-written `write_fields`, a `commit_fields`
//!   writer): JDK 25's `jfr print` reads the file, the good events are
//!   exact with their values, and each bad one is counted under
//!   `InvalidEncoding`, in the handle and in the file.
//! * An encoder that commits other events, and a signal handler that runs
//!   inside one: built-in-field events are written, events needing the
//!   scratch are counted as reentrant, and the outer record is whole.
//! * `exit()` from inside `FieldValue::write` (20 child processes): each
//!   exits within 2 s and its `FLIGHTREC` recording is finished, every
//!   good event in it.
//!
//! One recording per process at a time, so the in-process scenarios run in
//! order in one test.
#![cfg(not(flightrec_loom))]

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use flightrec_testkit::child;
use jfr_format::read::{RecordingFile, read_recording};
use recorder::{
    DefaultSettings, Event, EventKind, EventType, EventTypeBuilder, EventTypeInfo, FieldInfo,
    FieldKind, FieldValue, FieldWriter, LossCause, Recording, RecordingConfig,
};

const LIVENESS: Duration = Duration::from_secs(2);

fn read(path: &Path) -> RecordingFile {
    read_recording(&std::fs::read(path).unwrap()).unwrap()
}

fn values(file: &RecordingFile, name: &str, field: &str) -> Vec<i64> {
    let mut v: Vec<i64> = file
        .events()
        .filter(|e| &*e.type_name == name)
        .map(|e| e.get(field).and_then(|v| v.as_i64()).unwrap())
        .collect();
    v.sort_unstable();
    v
}

/// `events` of the file's `flightrec.EventsLost` for `cause`.
fn lost_in_file(file: &RecordingFile, cause: LossCause) -> u64 {
    file.events()
        .filter(|e| &*e.type_name == "flightrec.EventsLost")
        .filter(|e| e.get("cause").and_then(|v| v.as_str()) == Some(cause.name()))
        .map(|e| e.get("events").and_then(|v| v.as_i64()).unwrap() as u64)
        .sum()
}

// ---------------------------------------------------------------------------
// Blocked encoders.

/// The lock a blocked encoder waits on, held by the test thread.
static GATE: Mutex<()> = Mutex::new(());
/// Set by the encoder just before it waits.
static WAITING: AtomicBool = AtomicBool::new(false);

/// A field whose encoding waits for [`GATE`].
struct Gated(u64);

impl FieldValue for Gated {
    const KIND: FieldKind = FieldKind::U64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        WAITING.store(true, Ordering::SeqCst);
        drop(GATE.lock().unwrap_or_else(|e| e.into_inner()));
        w.uint(self.0);
    }
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Blocked")]
struct Blocked {
    seq: Gated,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Steady")]
struct Steady {
    seq: u64,
}

const THREADS: u64 = 3;
const PER_THREAD: u64 = 20_000;

/// Holds [`GATE`] and has `seq`'s encoder wait on it on a thread of `s`.
fn block_one<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    seq: u64,
) -> (
    MutexGuard<'static, ()>,
    std::thread::ScopedJoinHandle<'s, ()>,
) {
    let gate = GATE.lock().unwrap();
    WAITING.store(false, Ordering::SeqCst);
    let h = s.spawn(move || Blocked { seq: Gated(seq) }.commit());
    while !WAITING.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    // Past the flag, into the lock.
    std::thread::sleep(Duration::from_millis(20));
    (gate, h)
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let r = f();
    let took = started.elapsed();
    assert!(
        took < LIVENESS,
        "{what} took {took:?} with an encoder blocked"
    );
    r
}

fn blocked_encoders(dir: &Path) {
    let out = dir.join("blocked.jfr");
    let dumped = dir.join("dumped.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo-blocked")))
        .expect("start");
    std::thread::scope(|s| {
        let (gate, blocked) = block_one(s, 1);
        // Other threads emit while it waits, and rotations and a dump run.
        let steady: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        Steady {
                            seq: t * PER_THREAD + i,
                        }
                        .commit();
                    }
                })
            })
            .collect();
        for _ in 0..3 {
            timed("rotate()", || rec.rotate()).expect("rotate");
        }
        for h in steady {
            h.join().unwrap();
        }
        timed("dump()", || rec.dump(&dumped)).expect("dump");
        // Released while recording: committed now, written once.
        drop(gate);
        blocked.join().unwrap();

        // Stopped while one waits: never committed to this recording.
        let (gate, blocked) = block_one(s, 2);
        let summary = timed("stop()", || rec.stop()).expect("stop");
        drop(gate);
        blocked.join().unwrap();
        assert_eq!(summary.losses.total_events(), 0, "{:?}", summary.losses);
    });

    let all: Vec<i64> = (0..(THREADS * PER_THREAD) as i64).collect();
    let file = read(&out);
    assert_eq!(values(&file, "test.encoders.Steady", "seq"), all);
    assert_eq!(values(&file, "test.encoders.Blocked", "seq"), [1]);
    let jfr = flightrec_testkit::summary(&out);
    assert!(jfr.chunks > 3, "rotated: {jfr:?}");
    assert_eq!(jfr.counts["test.encoders.Steady"], THREADS * PER_THREAD);
    assert_eq!(jfr.counts["test.encoders.Blocked"], 1);
    // The dump came while the first one waited: every steady event, and
    // not the blocked one.
    let dump = read(&dumped);
    assert_eq!(values(&dump, "test.encoders.Steady", "seq"), all);
    assert!(values(&dump, "test.encoders.Blocked", "seq").is_empty());
    let jfr = flightrec_testkit::summary(&dumped);
    assert_eq!(jfr.counts["test.encoders.Steady"], THREADS * PER_THREAD);
}

// ---------------------------------------------------------------------------
// Bad encoders.

/// Declared a string; writes the byte 9 (no string encoding).
struct NotAString;
impl FieldValue for NotAString {
    const KIND: FieldKind = FieldKind::String;
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.byte(9);
    }
}

/// Declared a `long`; writes nothing.
struct Nothing;
impl FieldValue for Nothing {
    const KIND: FieldKind = FieldKind::I64;
    fn write(&self, _: &mut FieldWriter<'_>) {}
}

/// Declared a `long`; writes two.
struct TooMuch;
impl FieldValue for TooMuch {
    const KIND: FieldKind = FieldKind::I64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.int(1);
        w.int(2);
    }
}

/// Declared a `double`; writes a one-byte varint.
struct ShortDouble;
impl FieldValue for ShortDouble {
    const KIND: FieldKind = FieldKind::F64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.uint(1);
    }
}

/// A user type that writes what it declares: its events are kept.
struct Celsius(f64);
impl FieldValue for Celsius {
    const KIND: FieldKind = FieldKind::F64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.f64(self.0);
    }
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Good")]
struct Good {
    seq: u64,
    temp: Celsius,
    note: &'static str,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.BadString")]
struct BadString {
    seq: u64,
    name: NotAString,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Missing")]
struct Missing {
    seq: u64,
    value: Nothing,
    after: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Extra")]
struct Extra {
    value: TooMuch,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Short")]
struct Short {
    value: ShortDouble,
    seq: u64,
}

/// A hand-written `write_fields` that writes a string where a `long` is
/// declared.
static HAND_INFO: EventTypeInfo = EventTypeInfo {
    name: "test.encoders.Hand",
    label: None,
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Instant,
    defaults: DefaultSettings::DEFAULT,
    fields: &[FieldInfo::new("n", FieldKind::I64)],
};
static HAND: EventType = EventType::new(&HAND_INFO);
struct Hand(Option<i64>);
impl Event for Hand {
    fn event_type() -> &'static EventType {
        &HAND
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        match self.0 {
            Some(n) => w.int(n),
            None => w.str("not a long"),
        }
    }
}

const ROUNDS: u64 = 200;

fn bad_encoders(dir: &Path) {
    let out = dir.join("bad.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo-bad")))
        .expect("start");
    let dynamic = EventTypeBuilder::new("test.encoders.Dynamic")
        .field("a", FieldKind::I32)
        .field("s", FieldKind::String)
        .build()
        .unwrap();
    let mut bad = 0;
    for i in 0..ROUNDS {
        Good {
            seq: i,
            temp: Celsius(i as f64 / 2.0),
            note: "fine",
        }
        .commit();
        Hand(Some(i as i64)).commit();
        assert!(dynamic.commit_fields(|w| {
            w.int(i as i64);
            w.str("ok");
            true
        }));
        BadString {
            seq: i,
            name: NotAString,
        }
        .commit();
        Missing {
            seq: i,
            value: Nothing,
            after: 7,
        }
        .commit();
        Extra { value: TooMuch }.commit();
        Short {
            value: ShortDouble,
            seq: i,
        }
        .commit();
        Hand(None).commit();
        // A writer that forgets the second field, one that adds a third.
        assert!(!dynamic.commit_fields(|w| {
            w.int(1);
            true
        }));
        assert!(!dynamic.commit_fields(|w| {
            w.int(1);
            w.str("ok");
            w.bool(true);
            true
        }));
        bad += 7;
    }
    assert_eq!(rec.losses().events(LossCause::InvalidEncoding), bad);
    let summary = rec.stop().expect("stop");
    assert_eq!(summary.losses.events(LossCause::InvalidEncoding), bad);
    assert_eq!(summary.losses.total_events(), bad, "{:?}", summary.losses);

    // The JDK reads every record (print exits 0) and counts exactly.
    flightrec_testkit::assert_prints(&out);
    let jfr = flightrec_testkit::summary(&out);
    for name in [
        "test.encoders.Good",
        "test.encoders.Hand",
        "test.encoders.Dynamic",
    ] {
        assert_eq!(jfr.counts[name], ROUNDS, "{name}");
    }
    for name in [
        "test.encoders.BadString",
        "test.encoders.Missing",
        "test.encoders.Extra",
        "test.encoders.Short",
    ] {
        assert_eq!(jfr.counts.get(name).copied().unwrap_or(0), 0, "{name}");
    }
    let file = read(&out);
    let seqs: Vec<i64> = (0..ROUNDS as i64).collect();
    assert_eq!(values(&file, "test.encoders.Good", "seq"), seqs);
    assert_eq!(values(&file, "test.encoders.Hand", "n"), seqs);
    assert_eq!(values(&file, "test.encoders.Dynamic", "a"), seqs);
    for e in file
        .events()
        .filter(|e| &*e.type_name == "test.encoders.Good")
    {
        let seq = e.get("seq").and_then(|v| v.as_i64()).unwrap();
        assert_eq!(
            e.get("temp").and_then(|v| v.as_f64()),
            Some(seq as f64 / 2.0)
        );
        assert_eq!(e.get("note").and_then(|v| v.as_str()), Some("fine"));
    }
    assert_eq!(lost_in_file(&file, LossCause::InvalidEncoding), bad);
}

// ---------------------------------------------------------------------------
// Nested emits and signal handlers inside an encoder.

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Inner")]
struct Inner {
    seq: u64,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.InnerUser")]
struct InnerUser {
    temp: Celsius,
}

/// Commits an `Inner` (built-in fields: written) and an `InnerUser` (a
/// user field: needs the scratch, which holds this record: dropped) from
/// inside its own encoding, and raises `SIGUSR2`, whose handler does the
/// same; then writes its value.
struct Nesting(u64);
impl FieldValue for Nesting {
    const KIND: FieldKind = FieldKind::U64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        w.uint(self.0);
        Inner { seq: self.0 }.commit();
        InnerUser { temp: Celsius(1.0) }.commit();
        // SAFETY: raise has no preconditions; the handler is installed.
        unsafe { libc::raise(libc::SIGUSR2) };
    }
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Outer")]
struct Outer {
    before: u64,
    value: Nesting,
    after: &'static str,
}

static IN_HANDLER: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigusr2(_: libc::c_int) {
    let n = IN_HANDLER.fetch_add(1, Ordering::Relaxed);
    Inner { seq: 1_000_000 + n }.commit();
    InnerUser { temp: Celsius(2.0) }.commit();
}

const NESTED: u64 = 50;

fn nested_emits(dir: &Path) {
    let out = dir.join("nested.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo-nested")))
        .expect("start");
    // SAFETY: installs a handler for a signal nothing else in this test
    // process uses.
    unsafe {
        libc::signal(
            libc::SIGUSR2,
            on_sigusr2 as extern "C" fn(libc::c_int) as libc::sighandler_t,
        )
    };
    for i in 0..NESTED {
        Outer {
            before: i,
            value: Nesting(i),
            after: "whole",
        }
        .commit();
    }
    let summary = rec.stop().expect("stop");
    assert_eq!(IN_HANDLER.load(Ordering::Relaxed), NESTED);
    assert_eq!(summary.losses.events(LossCause::Reentrant), 2 * NESTED);
    assert_eq!(summary.losses.total_events(), 2 * NESTED);

    let file = read(&out);
    let seqs: Vec<i64> = (0..NESTED as i64).collect();
    assert_eq!(values(&file, "test.encoders.Outer", "value"), seqs);
    assert_eq!(values(&file, "test.encoders.Outer", "before"), seqs);
    let inner = values(&file, "test.encoders.Inner", "seq");
    let handler: Vec<i64> = (1_000_000..1_000_000 + NESTED as i64).collect();
    assert_eq!(inner, [seqs.clone(), handler].concat());
    assert!(values(&file, "test.encoders.InnerUser", "temp").is_empty());
    for e in file
        .events()
        .filter(|e| &*e.type_name == "test.encoders.Outer")
    {
        assert_eq!(e.get("after").and_then(|v| v.as_str()), Some("whole"));
    }
    assert_eq!(lost_in_file(&file, LossCause::Reentrant), 2 * NESTED);
    let jfr = flightrec_testkit::summary(&out);
    assert_eq!(jfr.counts["test.encoders.Outer"], NESTED);
    assert_eq!(jfr.counts["test.encoders.Inner"], 2 * NESTED);
}

#[test]
fn user_encoders_cannot_stall_or_corrupt() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("user-encoders");
    blocked_encoders(&dir);
    bad_encoders(&dir);
    nested_emits(&dir);
}

// ---------------------------------------------------------------------------
// exit() from an encoder, in child processes.

/// Calls `exit(0)` when encoded.
struct Exits;
impl FieldValue for Exits {
    const KIND: FieldKind = FieldKind::U64;
    fn write(&self, _: &mut FieldWriter<'_>) {
        std::process::exit(0);
    }
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.encoders.Exit")]
struct ExitEvent {
    value: Exits,
}

const BEFORE_EXIT: u64 = 1000;
const EXIT_RUNS: usize = 20;

/// The child: records under `FLIGHTREC`, commits [`BEFORE_EXIT`] events on
/// two threads, then exits from inside an encoder while the other thread
/// goes on committing.
#[test]
fn exit_from_encoder_child() {
    let Some(_) = child::dir("exit_from_encoder_child") else {
        return;
    };
    // Types registered in one order in every run, so every run's chunks
    // number them alike (see `exit_from_encoder`).
    assert!(Steady::should_commit() && ExitEvent::should_commit() && Inner::should_commit());
    for i in 0..BEFORE_EXIT / 2 {
        Steady { seq: i }.commit();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in BEFORE_EXIT / 2..BEFORE_EXIT {
                Steady { seq: i }.commit();
            }
        })
        .join()
        .unwrap();
        // A thread still committing when the process exits; its events
        // after the exit began may or may not be in the file.
        s.spawn(|| {
            loop {
                Inner { seq: 0 }.commit();
                std::thread::sleep(Duration::from_micros(100));
            }
        });
        println!("exiting");
        ExitEvent { value: Exits }.commit();
        unreachable!("the encoder exits");
    });
}

#[test]
fn exit_from_encoder() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("encoder-exit");
    let mut all = Vec::new();
    for run in 0..EXIT_RUNS {
        let out = dir.join(format!("exit-{run}.jfr"));
        let mut c = child::command("exit_from_encoder_child", &dir)
            .env("FLIGHTREC", format!("filename={}", out.display()))
            .spawn()
            .unwrap();
        // Timed from the child's report that it is about to commit the
        // event whose encoder exits.
        let reported = child::lines(&mut c).any(|l| child::report(&l, "exiting").is_some());
        assert!(reported, "run {run}: the child reported nothing");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = c.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > LIVENESS {
                let _ = c.kill();
                let _ = c.wait();
                panic!("run {run}: no exit within {LIVENESS:?} of the child's start");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "run {run}: {status}");
        println!("run {run}: exited {:?} after its report", started.elapsed());
        let file = read(&out);
        let seqs: Vec<i64> = (0..BEFORE_EXIT as i64).collect();
        assert_eq!(
            values(&file, "test.encoders.Steady", "seq"),
            seqs,
            "run {run}"
        );
        assert!(values(&file, "test.encoders.Exit", "value").is_empty());
        all.extend(std::fs::read(&out).unwrap());
    }
    // Every run's chunks, concatenated (a recording is a sequence of
    // chunks): one `jfr summary` reads all twenty. (It counts by type id
    // across chunks, so the child registers its types in a fixed order.)
    let joined = dir.join("all-runs.jfr");
    std::fs::write(&joined, all).unwrap();
    let jfr = flightrec_testkit::summary(&joined);
    assert_eq!(
        jfr.counts["test.encoders.Steady"],
        EXIT_RUNS as u64 * BEFORE_EXIT
    );
    assert_eq!(
        jfr.counts.get("test.encoders.Exit").copied().unwrap_or(0),
        0
    );
}
