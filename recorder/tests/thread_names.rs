//! A thread starts under its creator's name and names itself a little
//! later (as `std::thread::Builder::name` does, from inside the new
//! thread): its `jdk.ThreadStart` and its thread constant carry the name it
//! gave itself, not its creator's. Its own test binary: another test's
//! recording in the same process would share the periodic thread.

use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

#[test]
fn a_thread_that_names_itself_late_is_recorded_under_its_own_name() {
    let dir = std::env::temp_dir().join(format!("flightrec-late-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("late-name.jfr");
    let go = Arc::new(Barrier::new(2));
    let (tids_tx, tids) = mpsc::channel::<(i64, String)>();
    // The creator lives before the recording starts: it has no ThreadStart.
    let creator = {
        let go = go.clone();
        std::thread::Builder::new()
            .name("late-creator".into())
            .spawn(move || {
                go.wait();
                for round in 0..3 {
                    let tids_tx = tids_tx.clone();
                    // Unnamed: the kernel gives it the creator's name.
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(60));
                        let name = format!("late-named-{round}");
                        std::fs::write("/proc/thread-self/comm", &name).unwrap();
                        // SAFETY: gettid has no preconditions.
                        let tid = unsafe { libc::gettid() };
                        tids_tx.send((i64::from(tid), name)).unwrap();
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
    let children: Vec<(i64, String)> = tids.try_iter().collect();
    assert_eq!(children.len(), 3);

    let all = flightrec_testkit::print_json(&path);
    let starts: Vec<(i64, String)> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "jdk.ThreadStart")
        .map(|e| {
            let t = &e["values"]["thread"];
            let name = t["javaName"].as_str().or_else(|| t["osName"].as_str());
            (
                t["osThreadId"].as_i64().unwrap_or(-1),
                name.unwrap_or("?").to_owned(),
            )
        })
        .collect();
    for (tid, name) in &children {
        let got: Vec<&String> = starts
            .iter()
            .filter(|(t, _)| t == tid)
            .map(|(_, n)| n)
            .collect();
        assert_eq!(got, [name], "ThreadStart of thread {tid}: {starts:?}");
    }
}
