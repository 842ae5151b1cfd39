//! Issue 12: every loss is in the file. Each flush reports the drops since
//! the previous report, so a file recovered after SIGKILL holds every loss
//! up to its last flush, and the per-chunk reports of a recording that
//! rotates while dropping add up to its total exactly.
//!
//! Both recordings run with a pool of a few 1 KiB blocks, so emitting
//! threads outrun the recorder thread and drop events; how many depends on
//! scheduling, the accounting must not.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use flightrec_derive::Event;
use flightrec_testkit::child;
use recorder::{Event, LossCause, Recording, RecordingConfig, Settings};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Tick")]
struct Tick {
    n: u64,
    text: &'static str,
}

fn tick(n: u64) -> Tick {
    Tick {
        n,
        text: "a payload so that a few ticks fill a block",
    }
}

/// A pool of three 1 KiB blocks (and a quarter for constants): a burst of
/// ticks overflows it. The recorder's own system events are off, so the
/// ticks are all that competes for it and every loss is a tick's.
fn tiny(config: RecordingConfig) -> RecordingConfig {
    let mut settings = Settings::new();
    for name in recorder::periodic::system_event_names() {
        settings.enable(name, false);
    }
    config
        .thread_buffer_size(1024)
        .max_memory(4 << 10)
        .settings(settings)
}

/// `(events, DataLoss bytes)` the JDK reads from the file's loss events.
fn losses_in(file: &Path) -> (u64, u64) {
    let text = flightrec_testkit::jfr().run_text(&[
        "print",
        "--json",
        "--events",
        "flightrec.EventsLost,jdk.DataLoss",
        file.to_str().unwrap(),
    ]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut events = 0;
    let mut bytes = 0;
    for e in doc["recording"]["events"].as_array().unwrap() {
        match e["type"].as_str().unwrap() {
            "flightrec.EventsLost" => events += e["values"]["events"].as_u64().unwrap(),
            "jdk.DataLoss" => bytes += e["values"]["amount"].as_u64().unwrap(),
            other => panic!("{other}"),
        }
    }
    (events, bytes)
}

/// Child: commits bursts of ticks into a tiny pool, flushes after each and
/// prints what it committed and lost so far; rotates once; then waits to be
/// killed.
#[test]
fn dropping_child() {
    let Some(dir) = child::dir("dropping_child") else {
        return;
    };
    let rec = Recording::start(tiny(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            // Only the explicit flushes below: the last one is the state
            // the parent checks.
            .flush_interval(Duration::from_secs(3600)),
    ))
    .unwrap();
    let mut n = 0;
    for round in 0..4 {
        for _ in 0..20_000 {
            tick(n).commit();
            n += 1;
        }
        if round == 1 {
            rec.rotate().unwrap();
        }
        rec.flush().unwrap();
        // Nothing commits between the flush and this read: it is the count
        // the flush reported.
        let lost = rec.losses();
        println!(
            "flushed committed={n} lost={} exhausted={}",
            lost.total_events(),
            lost.events(LossCause::PoolExhausted)
        );
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn a_killed_process_leaves_its_losses_up_to_the_last_flush() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("loss_sigkill");
    let reports = child::kill_when("dropping_child", &dir, "flushed ", |r| r.len() == 4);
    let last = reports.get(3).map(|n| (n[0], n[1], n[2]));
    let (committed, lost, exhausted) = last.expect("the child reported fewer than 4 flushes");
    assert_eq!(committed, 80_000);
    assert!(exhausted > 0, "the tiny pool dropped nothing");
    assert_eq!(lost, exhausted, "only the pool dropped events");

    let out = dir.join("recovered.jfr");
    let done = recorder::assemble(&dir.join("repo"), &out).unwrap();
    assert_eq!(done.chunks, 2, "one finished chunk and the one in progress");
    assert!(done.skipped.is_empty(), "{:?}", done.skipped);
    let jdk = flightrec_testkit::summary(&out);
    let ticks = jdk.counts.get("test.Tick").copied().unwrap_or(0);
    let (in_file, bytes) = losses_in(&out);
    assert_eq!(in_file, lost, "losses in the recovered file");
    assert_eq!(ticks + in_file, committed, "ticks written plus lost");
    assert!(
        bytes >= exhausted,
        "pool exhaustion is a data loss with a byte estimate: {bytes} bytes"
    );
}

/// Child: four threads commit bursts into a tiny pool while the main thread
/// rotates 24 times; prints the totals after the stop.
#[test]
fn rotating_child() {
    let Some(dir) = child::dir("rotating_child") else {
        return;
    };
    let out = dir.join("rotating.jfr");
    let rec = Recording::start(tiny(RecordingConfig::new(&out))).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..500 {
                        tick(n).commit();
                        n += 1;
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
                n
            })
        })
        .collect();
    for _ in 0..24 {
        std::thread::sleep(Duration::from_millis(5));
        rec.rotate().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let committed: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let summary = rec.stop().unwrap();
    println!(
        "committed={committed} lost={} chunks={}",
        summary.losses.total_events(),
        summary.chunks
    );
}

#[test]
fn chunk_reports_add_up_to_the_total_across_rotations() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("loss_rotations");
    let run = child::command("rotating_child", &dir).output().unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{text}");
    let line =
        child::find_report(&text, "committed=").unwrap_or_else(|| panic!("no report:\n{text}"));
    let nums = child::numbers(line);
    let (committed, lost, chunks) = (nums[0], nums[1], nums[2]);
    assert_eq!(chunks, 25, "24 rotations and the stop");
    assert!(lost > 0, "nothing was dropped: {line}");

    let out = dir.join("rotating.jfr");
    let jdk = flightrec_testkit::summary(&out);
    assert_eq!(jdk.chunks, 25);
    let (in_file, _) = losses_in(&out);
    assert_eq!(in_file, lost, "sum of the chunks' loss events");
    let ticks = jdk.counts.get("test.Tick").copied().unwrap_or(0);
    assert_eq!(ticks + lost, committed, "ticks written plus lost");
}
