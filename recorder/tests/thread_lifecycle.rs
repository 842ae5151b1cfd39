//! Events from threads that start before and after the recording, and from
//! threads that exit while it runs, are all in the file, exactly.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use chunk_writer::reader::read_recording;
use flightrec_derive::Event;
use recorder::Event;

#[derive(Event)]
#[event(crate = "recorder", name = "test.Beat", label = "Beat")]
struct Beat {
    n: u64,
}

#[test]
fn threads_starting_before_after_and_exiting_during_the_recording_all_count() {
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
                go.wait();
                for n in 0..5000 {
                    Beat { n }.commit();
                }
                go.wait(); // stay alive until the recording stopped
            })
            .unwrap()
    };
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

/// A thread starts under its creator's name and names itself a little
/// later (as `std::thread::Builder::name` does, from inside the new
/// thread): its `jdk.ThreadStart` and its thread constant carry the name
/// it gave itself, not its creator's.
#[test]
fn a_thread_that_names_itself_late_is_recorded_under_its_own_name() {
    let dir = std::env::temp_dir().join(format!("flightrec-late-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("late-name.jfr");
    let go = Arc::new(Barrier::new(2));
    // The creator lives before the recording starts: it has no ThreadStart.
    let creator = {
        let go = go.clone();
        std::thread::Builder::new()
            .name("late-creator".into())
            .spawn(move || {
                go.wait();
                for round in 0..3 {
                    // Unnamed: the kernel gives it the creator's name.
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(60));
                        std::fs::write("/proc/thread-self/comm", format!("late-named-{round}"))
                            .unwrap();
                        Beat { n: round }.commit();
                        std::thread::sleep(Duration::from_millis(300));
                    })
                    .join()
                    .unwrap();
                }
            })
            .unwrap()
    };
    let rec = recorder::Recording::start(recorder::RecordingConfig::new(&path)).unwrap();
    go.wait();
    creator.join().unwrap();
    rec.stop().unwrap();

    let all = flightrec_testkit::print_json(&path);
    let starts: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.ThreadStart")
        .map(|e| {
            let t = &e["values"]["thread"];
            t["javaName"]
                .as_str()
                .or_else(|| t["osName"].as_str())
                .unwrap_or("?")
                .to_owned()
        })
        .filter(|n| n.starts_with("late-"))
        .collect();
    let mut starts = starts;
    starts.sort();
    assert_eq!(
        starts,
        ["late-named-0", "late-named-1", "late-named-2"],
        "ThreadStart names"
    );
}
