//! Issue 11: a panic never wedges a thread, hangs a rotation or `stop()`,
//! or hides a loss.
//!
//! * A field whose encoding panics, 1000 times on one thread while three
//!   others commit and the recording rotates: that thread's later events
//!   are in the file, the panicked ones are counted under their own cause
//!   (in the handle and in the file's `flightrec.EventsLost`), every other
//!   count is exact, and `stop()` returns within 2 s.
//! * A panic on the recorder thread (injected): the recording fails
//!   visibly (`stop()` returns the panic), events are switched off, and the
//!   program goes on.
//! * A panic on the CPU sampler's thread (injected): sampling ends, the
//!   panic is counted, and the recording stops normally.
//! * A user's periodic-event closure that panics every time: each panic is
//!   counted, the other periodic closures go on, `stop()` returns.
//!
//! One recording per process at a time, so the scenarios run in order in
//! one test.
#![cfg(not(flightrec_loom))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use flightrec_derive::Event;
use recorder::panic_guard::{self, Place};
use recorder::{
    Event, FieldKind, FieldValue, FieldWriter, LossCause, Recording, RecordingConfig,
    RecordingError, Settings,
};

/// A field value whose encoding panics when asked to.
struct Fragile {
    panic: bool,
    value: u64,
}

impl FieldValue for Fragile {
    const KIND: FieldKind = FieldKind::U64;
    fn write(&self, w: &mut FieldWriter<'_>) {
        if self.panic {
            panic!("a field that cannot be encoded");
        }
        w.uint(self.value);
    }
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.panic.Fragile")]
struct FragileEvent {
    before: u64,
    fragile: Fragile,
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.panic.Steady")]
struct Steady {
    seq: u64,
}

const PANICS: u64 = 1000;
const AFTER: u64 = 500;
const OTHERS: u64 = 3;
const PER_OTHER: u64 = 20_000;

#[test]
fn panics_are_contained() {
    let dir = flightrec_testkit::temp_dir("panic-safety");
    field_panics(&dir);
    recorder_thread_panic(&dir);
    sampler_panic(&dir);
    periodic_callback_panic(&dir);
}

fn field_panics(dir: &std::path::Path) {
    let out = dir.join("fields.jfr");
    // Panics print their message; 1000 of them would drown the test log.
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo-fields")))
        .expect("start");
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..OTHERS {
            s.spawn(move || {
                for i in 0..PER_OTHER {
                    Steady {
                        seq: t * PER_OTHER + i,
                    }
                    .commit();
                }
            });
        }
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                rec.rotate().expect("rotate");
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let panicking = s.spawn(|| {
            for i in 0..PANICS {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    FragileEvent {
                        before: i,
                        fragile: Fragile {
                            panic: true,
                            value: i,
                        },
                    }
                    .commit()
                }));
                assert!(r.is_err(), "the field's encoding panics");
            }
            // The same thread, after 1000 unwinds through its write section.
            for i in 0..AFTER {
                FragileEvent {
                    before: i,
                    fragile: Fragile {
                        panic: false,
                        value: i,
                    },
                }
                .commit();
            }
        });
        panicking.join().expect("the panicking thread's own loop");
        done.store(true, Ordering::Relaxed);
    });
    std::panic::set_hook(quiet);

    assert_eq!(rec.losses().events(LossCause::Panicked), PANICS);
    let started = Instant::now();
    let summary = rec.stop().expect("stop");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "stop() took {took:?}");
    assert_eq!(summary.losses.events(LossCause::Panicked), PANICS);
    // A user's field is encoded before the write section (issue 30), so the
    // panic hook's `jdk.JavaErrorThrow` of its panic is written, not
    // dropped as reentrant.
    assert_eq!(summary.losses.events(LossCause::Reentrant), 0);
    assert_eq!(
        summary.losses.total_events(),
        PANICS,
        "{:?}",
        summary.losses
    );

    let jfr = flightrec_testkit::summary(&out);
    assert!(jfr.chunks > 1, "the recording rotated: {jfr:?}");
    assert_eq!(jfr.counts["test.panic.Fragile"], AFTER);
    assert_eq!(jfr.counts["test.panic.Steady"], OTHERS * PER_OTHER);
    assert_eq!(jfr.counts["jdk.JavaErrorThrow"], PANICS);
    let events = flightrec_testkit::print_json(&out);
    let lost: u64 = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["type"] == "flightrec.EventsLost"
                && e["values"]["cause"] == LossCause::Panicked.name()
        })
        .map(|e| e["values"]["events"].as_u64().unwrap())
        .sum();
    assert_eq!(lost, PANICS, "panicked events in the file");
    let values: Vec<u64> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "test.panic.Fragile")
        .map(|e| e["values"]["fragile"].as_u64().unwrap())
        .collect();
    let mut sorted = values.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..AFTER).collect::<Vec<_>>());
}

fn recorder_thread_panic(dir: &std::path::Path) {
    let rec = Recording::start(
        RecordingConfig::new(dir.join("recorder.jfr")).repository(dir.join("repo-recorder")),
    )
    .expect("start");
    for seq in 0..100 {
        Steady { seq }.commit();
    }
    rec.flush().expect("flush before the panic");
    panic_guard::inject(Place::RecorderThread);
    // The recorder thread wakes at least every 10 ms; within a second it
    // has panicked, and the recording has switched every event off.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Steady::should_commit() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!Steady::should_commit(), "events are off after the panic");
    assert!(rec.flush().is_err(), "later calls report the failure");
    let started = Instant::now();
    let err = rec.stop().expect_err("stop reports the panic");
    // A guard against a stop that waits on the dead thread, not a speed test.
    assert!(started.elapsed() < Duration::from_secs(10));
    match &err {
        RecordingError::Failed { context, source } => {
            assert!(context.contains("panicked"), "{err}");
            assert!(source.to_string().contains("fault injected"), "{err}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    // The program goes on, and can record again.
    let again = dir.join("again.jfr");
    let rec = Recording::start(RecordingConfig::new(&again).repository(dir.join("repo-again")))
        .expect("a new recording after the failed one");
    for seq in 0..10 {
        Steady { seq }.commit();
    }
    rec.stop().expect("stop");
    assert_eq!(
        flightrec_testkit::summary(&again).counts["test.panic.Steady"],
        10
    );
}

fn sampler_panic(dir: &std::path::Path) {
    let out = dir.join("sampler.jfr");
    let mut settings = Settings::new();
    settings
        .set("jdk.CPUTimeSample", "enabled", "true")
        .expect("setting");
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .repository(dir.join("repo-sampler"))
            .settings(settings),
    )
    .expect("start");
    let burn = |d: Duration| {
        let until = Instant::now() + d;
        let mut x = 1u64;
        while Instant::now() < until {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    };
    burn(Duration::from_millis(200));
    panic_guard::inject(Place::SamplerPass);
    burn(Duration::from_millis(300));
    for seq in 0..10 {
        Steady { seq }.commit();
    }
    let summary = rec.stop().expect("the recording stops normally");
    assert_eq!(summary.losses.events(LossCause::Panicked), 1);
    let jfr = flightrec_testkit::summary(&out);
    assert_eq!(jfr.counts["test.panic.Steady"], 10);
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.panic.Periodic")]
struct Periodic {
    seq: u64,
}

fn periodic_callback_panic(dir: &std::path::Path) {
    use recorder::settings::Period;
    use std::sync::atomic::AtomicU64;
    static GOOD: AtomicU64 = AtomicU64::new(0);
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let every = Period::Interval(Duration::from_millis(20));
    recorder::add_periodic_event(Periodic::event_type(), every, || {
        panic!("a periodic callback that always fails")
    });
    recorder::add_periodic_event(Steady::event_type(), every, || {
        let seq = GOOD.fetch_add(1, Ordering::Relaxed);
        Steady { seq }.commit();
    });
    let out = dir.join("periodic.jfr");
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo-periodic")))
        .expect("start");
    std::thread::sleep(Duration::from_millis(400));
    let started = Instant::now();
    let summary = rec.stop().expect("the recording stops normally");
    // A guard against a stop that waits on the dead thread, not a speed test.
    assert!(started.elapsed() < Duration::from_secs(10));
    std::panic::set_hook(quiet);
    recorder::remove_periodic_event(Periodic::event_type());
    recorder::remove_periodic_event(Steady::event_type());
    let panicked = summary.losses.events(LossCause::Panicked);
    let good = GOOD.load(Ordering::Relaxed);
    assert!(panicked >= 5, "each failing call counted: {panicked}");
    assert!(good >= 5, "the other callback went on: {good}");
    assert_eq!(
        flightrec_testkit::summary(&out).counts["test.panic.Steady"],
        good
    );
}
