//! Events from threads that start before and after the recording, and from
//! threads that exit while it runs, are all in the file, exactly.

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use flightrec_derive::Event;
use jfr_format::read::read_recording;
use recorder::Event;

#[derive(Event)]
#[event(crate = "recorder", name = "test.Beat", label = "Beat")]
struct Beat {
    n: u64,
}

/// One recording at a time: the loss counters are the process's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn threads_starting_before_after_and_exiting_during_the_recording_all_count() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("flightrec-lifecycle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lifecycle.jfr");

    // Started before the recording, emits once it runs, keeps living.
    let go = Arc::new(Barrier::new(2));
    let early = {
        let go = go.clone();
        std::thread::Builder::new()
            .name("early".into())
            .spawn(move || {
                Beat { n: 0 }.commit(); // before the recording: not recorded
                go.wait(); // the recording starts
                go.wait();
                for n in 0..5000 {
                    Beat { n }.commit();
                }
                go.wait(); // stay alive until the recording stopped
            })
            .unwrap()
    };
    go.wait();
    let rec = recorder::Recording::start(
        recorder::RecordingConfig::new(&path)
            .thread_buffer_size(4096)
            .flush_interval(Duration::from_millis(20)),
    )
    .unwrap();
    go.wait();
    // Short-lived threads that exit while recording (idle buffers of exited
    // threads must be flushed by their TLS destructor).
    for t in 0..20 {
        std::thread::Builder::new()
            .name(format!("short-{t}"))
            .spawn(move || {
                for n in 0..(100 + t) {
                    Beat { n }.commit();
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
    rec.rotate().unwrap();
    for n in 0..777 {
        Beat { n }.commit();
    }
    let summary = rec.stop().unwrap();
    go.wait();
    early.join().unwrap();
    assert_eq!(summary.losses.total_events(), 0);

    let expected = 5000 + (0..20).map(|t| 100 + t).sum::<u64>() + 777;
    let bytes = std::fs::read(&path).unwrap();
    let file = read_recording(&bytes).expect("our reader parses the file");
    let beats: u64 = file
        .chunks
        .iter()
        .map(|c| {
            c.events
                .iter()
                .filter(|e| &*e.type_name == "test.Beat")
                .count() as u64
        })
        .sum();
    assert_eq!(beats, expected);
    let jdk = flightrec_testkit::summary(&path);
    assert_eq!(jdk.counts.get("test.Beat").copied(), Some(expected));
    assert_eq!(jdk.chunks, 2);
}

#[derive(Event)]
#[event(crate = "recorder", name = "test.LateTraced", stack_trace)]
struct LateTraced {
    n: u64,
}

/// Commits `LATE` stack-traced events from its destructor.
struct CommitsWhenDropped;

const LATE: u64 = 25;

impl Drop for CommitsWhenDropped {
    fn drop(&mut self) {
        for n in 0..LATE {
            LateTraced { n }.commit();
        }
    }
}

thread_local! {
    static LATE_COMMITTER: CommitsWhenDropped = const { CommitsWhenDropped };
}

/// A thread-local destructor that runs after the recorder's own (locals are
/// destroyed in the reverse order of their first use) commits into a
/// thread that has no slot any more: every such event is counted as lost
/// (ThreadExiting), and none captures and interns a stack first.
#[test]
fn events_from_a_destructor_after_the_recorders_are_counted_and_intern_no_stack() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("flightrec-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("late.jfr");
    let rec = recorder::Recording::start(recorder::RecordingConfig::new(&path)).unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        // First use of the user's local, then of the recorder's: the
        // recorder's is destroyed first.
        LATE_COMMITTER.with(|_| ());
        LateTraced { n: u64::MAX }.commit();
        ready_tx.send(()).unwrap();
        exit_rx.recv().unwrap();
    });
    ready_rx.recv().unwrap();
    let stacks = rec.memory().stacks;
    let exiting =
        |rec: &recorder::Recording| rec.losses().events(recorder::LossCause::ThreadExiting);
    let before = exiting(&rec);
    exit_tx.send(()).unwrap();
    t.join().unwrap();
    assert_eq!(exiting(&rec) - before, LATE);
    assert_eq!(
        rec.memory().stacks,
        stacks,
        "a dropped event interned a stack"
    );
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), LATE);
    let jdk = flightrec_testkit::summary(&path);
    assert_eq!(jdk.counts.get("test.LateTraced").copied(), Some(1));
}
