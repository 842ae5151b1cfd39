//! The Pyroscope uploader (issue 20) against testkit's receiver on
//! 127.0.0.1: the stored requests are decoded (query parameters,
//! multipart parts, gzip, the labels protobuf) and each uploaded JFR is
//! read by JDK 25; the uploads together hold exactly the samples of the
//! file written at the stop. The fault test turns the receiver to 500,
//! down and slow, and checks that uploads resume and that every chunk is
//! either uploaded or counted as dropped in the file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use flightrec::pyroscope::{PyroscopeConfig, UPLOAD_EVENT};
use flightrec::{EventTypeBuilder, FieldKind, Recording, RecordingConfig, Settings, Value};
use flightrec_testkit as testkit;
use flightrec_testkit::receiver::{Mode, Receiver, Request};

/// One recording per process at a time: a second would join the first
/// (and cut its chunks).
static ONE_RECORDING: Mutex<()> = Mutex::new(());

const SAMPLE: &str = "jdk.ExecutionSample";

/// The chunks of a JFR file: (start ns, duration ns) from each header.
fn chunk_spans(jfr: &[u8]) -> Vec<(i64, i64)> {
    let mut spans = Vec::new();
    let mut at = 0;
    while at < jfr.len() {
        assert_eq!(&jfr[at..at + 4], b"FLR\0", "a chunk starts at {at}");
        let word = |o: usize| i64::from_be_bytes(jfr[at + o..at + o + 8].try_into().unwrap());
        let size = word(8) as usize;
        spans.push((word(32), word(40)));
        at += size;
    }
    assert_eq!(at, jfr.len(), "the chunks fill the part exactly");
    spans
}

fn gunzip(data: &[u8]) -> Vec<u8> {
    assert_eq!(&data[..2], &[0x1f, 0x8b], "the jfr part is gzip");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(data)
        .read_to_end(&mut out)
        .expect("the jfr part inflates");
    out
}

/// Checks that `data` is a well-formed `LabelsSnapshot` protobuf (fields
/// 1 `contexts` and 2 `strings`, both length-delimited map entries) and
/// returns how many entries of each it holds.
fn labels_snapshot_entries(data: &[u8]) -> (usize, usize) {
    fn varint(d: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = d[*at];
            *at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
        }
        panic!("varint too long");
    }
    let (mut contexts, mut strings, mut at) = (0, 0, 0);
    while at < data.len() {
        let key = varint(data, &mut at);
        assert_eq!(key & 7, 2, "LabelsSnapshot fields are length-delimited");
        let len = varint(data, &mut at) as usize;
        at += len;
        assert!(at <= data.len(), "a field runs past the end");
        match key >> 3 {
            1 => contexts += 1,
            2 => strings += 1,
            f => panic!("unknown LabelsSnapshot field {f}"),
        }
    }
    (contexts, strings)
}

/// A request's uploaded JFR, checked for shape (path, parameters, parts).
fn decode(r: &Request, app: &str) -> (Vec<u8>, Vec<u8>, i64, i64) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.path(), "/ingest");
    let p = |k: &str| {
        r.param(k)
            .unwrap_or_else(|| panic!("no `{k}` in {}", r.target))
    };
    assert_eq!(p("name"), app);
    assert_eq!(p("format"), "jfr");
    assert_eq!(p("spyName"), "flightrec");
    assert_eq!(p("sampleRate"), "100", "10 ms wall-clock period");
    let (from, until): (i64, i64) = (p("from").parse().unwrap(), p("until").parse().unwrap());
    assert!(from <= until, "{from}..{until}");
    let parts = r.parts();
    let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["jfr", "labels"]);
    let jfr = gunzip(&parts[0].data);
    (jfr, parts[1].data.clone(), from, until)
}

/// Spins on two threads until `stop`, each "request" in a label scope:
/// thread 0 serves `endpoint=/a`, thread 1 `endpoint=/b`, tenants `t0`
/// and `t1` alternating.
fn workload(stop: &AtomicBool) {
    std::thread::scope(|s| {
        for (seed, endpoint) in [(3u64, "/a"), (5, "/b")] {
            s.spawn(move || {
                let mut x = seed;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let tenant = if n.is_multiple_of(2) { "t0" } else { "t1" };
                    let _labels =
                        flightrec::labels::scope(&[("endpoint", endpoint), ("tenant", tenant)]);
                    for _ in 0..200_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                    }
                    x = std::hint::black_box(x);
                }
            });
        }
    });
}

/// The `contextId` of every `jdk.ExecutionSample` in `jfr`.
fn sample_contexts(jfr: &[u8]) -> Vec<u64> {
    use flightrec::jfr_format::read::{Value as V, read_recording};
    read_recording(jfr)
        .expect("an uploaded JFR reads")
        .events()
        .filter(|e| &*e.type_name == SAMPLE)
        .map(|e| match e.get("contextId") {
            Some(V::Long(id)) => *id as u64,
            other => panic!("contextId is {other:?}"),
        })
        .collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn each_upload_holds_its_period_and_together_they_hold_the_recording() {
    let _one = ONE_RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let rx = Receiver::start();
    let dir = testkit::temp_dir("pyroscope_push");
    let out = dir.join("local.jfr");
    let app = "svc.test{env=ci,region=eu-1}";
    let upload = PyroscopeConfig::new(&rx.url())
        .unwrap()
        .app(app)
        .unwrap()
        .period(Duration::from_millis(400))
        .unwrap()
        .auth_header("Bearer t0k3n")
        .unwrap();
    let mut settings = Settings::new();
    settings.set(SAMPLE, "enabled", "true").unwrap();
    settings.set(SAMPLE, "period", "10 ms").unwrap();
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .settings(settings)
            .pyroscope(upload),
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| workload(&stop));
        std::thread::sleep(Duration::from_millis(3000));
        stop.store(true, Ordering::Relaxed);
    });
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0, "{:?}", summary.losses);

    let requests = rx.requests();
    // At 400 ms: the first chunk ends late (its stacks are the first the
    // symbolizer sees), the others on time; the last at the stop.
    assert!(
        requests.len() >= 3,
        "{} uploads in 3 s at 400 ms",
        requests.len()
    );
    let mut files = Vec::new();
    let mut spans = Vec::new();
    let mut labelled = std::collections::BTreeMap::new();
    let mut last_until = None::<i64>;
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(r.status, 200);
        assert_eq!(r.header("authorization"), Some("Bearer t0k3n"));
        let (jfr, labels, from, until) = decode(r, app);
        // The labels part is a LabelsSnapshot that names every sample's
        // contextId with the labels of the request it was taken in.
        let (contexts, strings) = labels_snapshot_entries(&labels);
        assert!(
            contexts >= 1 && strings >= 3,
            "{contexts} contexts, {strings} strings"
        );
        let snap = flightrec::labels::LabelsSnapshot::decode(&labels).expect("labels decode");
        for id in sample_contexts(&jfr) {
            if id == 0 {
                continue; // between two requests
            }
            let l = snap
                .labels_of(id)
                .unwrap_or_else(|| panic!("upload {i}: contextId {id} not in the labels part"));
            let (endpoint, tenant) = (l[0], l[1]);
            assert!(
                endpoint.0 == "endpoint" && ["/a", "/b"].contains(&endpoint.1),
                "{l:?}"
            );
            assert!(
                tenant.0 == "tenant" && ["t0", "t1"].contains(&tenant.1),
                "{l:?}"
            );
            *labelled.entry(endpoint.1.to_owned()).or_insert(0u64) += 1;
        }
        for (start, dur) in chunk_spans(&jfr) {
            assert!(
                from * 1_000_000_000 <= start,
                "upload {i}: chunk starts before `from`"
            );
            assert!(
                start + dur <= until * 1_000_000_000,
                "upload {i}: chunk ends after `until`"
            );
            spans.push((start, dur));
        }
        // Rounded to seconds, consecutive spans share at most one second.
        assert!(
            last_until.is_none_or(|u| from >= u - 1),
            "upload {i} goes back in time"
        );
        last_until = Some(until);
        files.push(write(&dir, &format!("upload-{i}.jfr"), &jfr));
    }
    assert_eq!(
        labelled.len(),
        2,
        "samples of both endpoints labelled: {labelled:?}"
    );
    // The uploads' chunks follow each other without overlap.
    for w in spans.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "chunks overlap: {w:?}");
    }
    // JDK 25 reads every uploaded file; the samples add up exactly.
    let jdk = testkit::jfr();
    jdk.assert_prints(&files[0]);
    let per_upload = jdk.read_each_with_recording_file(&files);
    let uploaded: u64 = per_upload
        .iter()
        .map(|c| c.get(SAMPLE).copied().unwrap_or(0))
        .sum();
    let local = testkit::summary(&out);
    let recorded = local.counts.get(SAMPLE).copied().unwrap_or(0);
    assert!(
        recorded > 100,
        "{recorded} samples in 2.5 s of two busy threads"
    );
    assert_eq!(uploaded, recorded, "per upload: {per_upload:?}");
    assert_eq!(
        spans.len() as u64,
        local.chunks,
        "every chunk uploaded once"
    );
    // Nothing was dropped: no drop outcome in the file.
    let drops: Vec<_> = testkit::print_json(&out)
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == UPLOAD_EVENT)
        .filter(|e| e["values"]["outcome"] != "uploaded")
        .cloned()
        .collect();
    assert!(drops.is_empty(), "{drops:?}");
}

/// The `flightrec.PyroscopeUpload` events of `path`.
fn outcomes(path: &Path) -> Vec<serde_json::Value> {
    testkit::print_json(path)
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == UPLOAD_EVENT)
        .map(|e| e["values"].clone())
        .collect()
}

#[test]
fn failures_are_retried_dropped_and_counted_and_uploads_resume() {
    let _one = ONE_RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let rx = Receiver::start();
    rx.set_mode(Mode::Status(500));
    let dir = testkit::temp_dir("pyroscope_faults");
    let out = dir.join("local.jfr");
    let upload = PyroscopeConfig::new(&rx.url())
        .unwrap()
        .app("faulty")
        .unwrap()
        .period(Duration::from_millis(200))
        .unwrap()
        .queue_limits(2, 64 << 20)
        .unwrap()
        .retries(2, Duration::from_millis(150))
        .unwrap()
        .timeout(Duration::from_secs(3))
        .unwrap()
        .stop_timeout(Duration::from_secs(10));
    // A program thread commits events all along, sampling off: its events
    // are all in the file whatever the receiver does.
    let tick = EventTypeBuilder::new("test.Tick")
        .field("n", FieldKind::I64)
        .build()
        .unwrap();
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .settings(Settings::new())
            .pyroscope(upload),
    )
    .unwrap();
    let committed = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let mut progress = Vec::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let n = committed.fetch_add(1, Ordering::Relaxed);
                tick.commit_values(&[Value::Int(n as i64)]);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        for mode in [
            Mode::Status(500),
            Mode::Down,
            Mode::Slow(Duration::from_millis(600)),
            Mode::Ok,
        ] {
            rx.set_mode(mode);
            std::thread::sleep(Duration::from_millis(1500));
            progress.push(committed.load(Ordering::Relaxed));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let totals = rec.pyroscope_totals().unwrap();
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0, "{:?}", summary.losses);
    // The program thread went on in every phase.
    assert!(progress.windows(2).all(|w| w[1] > w[0]), "{progress:?}");

    let local = testkit::summary(&out);
    assert_eq!(
        local.counts.get("test.Tick").copied(),
        Some(committed.load(Ordering::Relaxed)),
        "every committed event is in the file"
    );
    let requests = rx.requests();
    assert!(
        requests.iter().any(|r| r.status == 500),
        "the 500s were seen"
    );
    let accepted = rx.accepted();
    let slow_or_later = accepted.iter().filter(|r| r.at > requests[0].at).count();
    assert!(
        slow_or_later >= 2,
        "uploads resumed: {} accepted",
        accepted.len()
    );
    let uploaded_chunks: u64 = accepted
        .iter()
        .map(|r| chunk_spans(&decode(r, "faulty").0).len() as u64)
        .sum();
    // Every drop before the last chunk is counted in the file; the receiver
    // was answering at the stop, so nothing was dropped after it.
    let outcomes = outcomes(&out);
    let dropped: u64 = outcomes
        .iter()
        .filter(|o| o["outcome"].as_str().unwrap().starts_with("dropped"))
        .map(|o| o["chunks"].as_u64().unwrap())
        .sum();
    assert!(
        outcomes
            .iter()
            .any(|o| o["outcome"] == "dropped: failed" && o["tries"] == 2),
        "{outcomes:?}"
    );
    assert!(
        totals.chunks_dropped >= 1 && totals.failed_requests >= 2,
        "{totals:?}"
    );
    assert_eq!(
        uploaded_chunks + dropped,
        local.chunks,
        "each chunk uploaded or counted dropped: {outcomes:?}"
    );
}

#[test]
fn redirects_are_not_followed() {
    let _one = ONE_RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let rx = Receiver::start();
    rx.set_mode(Mode::Status(302));
    let dir = testkit::temp_dir("pyroscope_redirect");
    let out = dir.join("local.jfr");
    let upload = PyroscopeConfig::new(&rx.url())
        .unwrap()
        .period(Duration::from_millis(200))
        .unwrap()
        .stop_timeout(Duration::from_secs(2));
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .settings(Settings::new())
            .pyroscope(upload),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    rec.stop().unwrap();
    let requests = rx.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|r| r.status == 302 && r.path() == "/ingest")
    );
    let refused: Vec<_> = outcomes(&out)
        .into_iter()
        .filter(|o| o["outcome"] == "dropped: refused")
        .collect();
    assert!(!refused.is_empty());
    for o in &refused {
        assert_eq!(
            (o["tries"].as_u64(), o["httpStatus"].as_u64()),
            (Some(1), Some(302)),
            "{o}"
        );
        assert_eq!(o["error"], "a redirect (not followed)");
    }
    // One request per batch: a redirect is not retried either.
    assert!(requests.len() as u64 >= refused.len() as u64);
}

/// Issue 31: a server that accepts and never answers (a TCP listener on
/// 127.0.0.1 that holds every connection). No chunk reaches it; every one
/// closed is counted dropped, in the totals and, with its reason, in the
/// file's `flightrec.PyroscopeUpload` events.
#[test]
fn a_server_that_never_answers_has_every_chunk_counted_dropped() {
    let _one = ONE_RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s); // never read, never answered
        }
    });
    let dir = testkit::temp_dir("pyroscope_hung");
    let out = dir.join("local.jfr");
    let upload = PyroscopeConfig::new(&url)
        .unwrap()
        .app("hung")
        .unwrap()
        .period(Duration::from_millis(200))
        .unwrap()
        .queue_limits(3, 64 << 20)
        .unwrap()
        .retries(1, Duration::from_millis(100))
        .unwrap()
        // Longer than the test: the request in flight never ends by itself.
        .timeout(Duration::from_secs(60))
        .unwrap()
        .stop_timeout(Duration::from_millis(500));
    let tick = EventTypeBuilder::new("test.HungTick")
        .field("n", FieldKind::I64)
        .build()
        .unwrap();
    let rec = Recording::start(
        RecordingConfig::new(&out)
            .settings(Settings::new())
            .pyroscope(upload),
    )
    .unwrap();
    let id = rec.id();
    for n in 0..2000 {
        tick.commit_values(&[Value::Int(n)]);
        std::thread::sleep(Duration::from_millis(1));
    }
    let t = std::time::Instant::now();
    rec.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let totals = flightrec::pyroscope::finished_totals(id).unwrap();
    let local = testkit::summary(&out);
    assert!(local.chunks >= 5, "{} chunks", local.chunks);
    assert_eq!(local.counts.get("test.HungTick").copied(), Some(2000));
    assert_eq!(
        (totals.uploads, totals.chunks_uploaded),
        (0, 0),
        "{totals:?}"
    );
    assert_eq!(totals.chunks_dropped, local.chunks, "{totals:?}");
    let outcomes = outcomes(&out);
    let in_file: u64 = outcomes
        .iter()
        .map(|o| {
            let outcome = o["outcome"].as_str().unwrap();
            assert!(outcome.starts_with("dropped: "), "{o}");
            if outcome == "dropped: stop deadline" {
                assert!(
                    o["error"].as_str().unwrap().contains("did not answer"),
                    "{o}"
                );
            }
            o["chunks"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(in_file, local.chunks, "{outcomes:?}");
}
