//! A live recording is followed by the JDK's own streaming reader
//! (`jdk.jfr.consumer.EventStream.openRepository`): it sees the events while
//! the recording runs, across a rotation, before the recording stops.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use flightrec_derive::Event;
use recorder::{Event, Recording, RecordingConfig};

#[derive(Event)]
#[event(crate = "recorder", name = "test.Live", label = "Live")]
struct Live {
    n: u64,
}

const FOLLOW_JAVA: &str = r#"
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.consumer.EventStream;

public class Follow {
    public static void main(String[] args) throws Exception {
        long want = Long.parseLong(args[1]);
        AtomicLong n = new AtomicLong();
        AtomicLong sum = new AtomicLong();
        try (EventStream es = EventStream.openRepository(Path.of(args[0]))) {
            es.setStartTime(Instant.EPOCH);
            es.onEvent("test.Live", e -> {
                sum.addAndGet(e.getLong("n"));
                if (n.incrementAndGet() == want) {
                    System.out.println("got " + n.get() + " sum " + sum.get());
                    System.out.flush();
                    es.close();
                }
            });
            System.out.println("following");
            System.out.flush();
            es.start();
        }
    }
}
"#;

#[test]
fn the_jdk_streaming_reader_follows_a_live_recording() {
    const N: u64 = 3000;
    let dir = flightrec_testkit::temp_dir("live_stream");
    let repo = dir.join("repo");
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(&repo)
            .flush_interval(Duration::from_millis(50)),
    )
    .unwrap();
    let src = dir.join("Follow.java");
    std::fs::write(&src, FOLLOW_JAVA).unwrap();
    let mut java = Command::new(flightrec_testkit::jfr().java_path())
        .args(std::env::var("FOLLOW_JAVA_OPTS").ok())
        .arg(&src)
        .arg(&repo)
        .arg(N.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = java.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with('[') {
                eprintln!("{line}");
                continue;
            }
            let _ = tx.send(line);
        }
    });
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(60)).as_deref(),
        Ok("following")
    );
    for n in 0..N {
        Live { n }.commit();
        if n == N / 2 {
            rec.rotate().unwrap();
        }
        if n % 100 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    // The recording keeps running: only periodic flushes make the events
    // visible to the reader.
    let line = rx.recv_timeout(Duration::from_secs(60));
    let _ = java.kill();
    let _ = java.wait();
    assert_eq!(
        line.as_deref(),
        Ok(format!("got {N} sum {}", N * (N - 1) / 2).as_str())
    );
    rec.stop().unwrap();
}
