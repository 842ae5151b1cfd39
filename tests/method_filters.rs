//! Method filters end to end, in process: each filter form, `;` lists, the
//! union of filters given in several places, a change while recording,
//! malformed filters, recursion, a panic through a timed function and an
//! `async fn`. Counts are read back from the file with JDK 25's `jfr`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use flightrec::{Recording, RecordingConfig, SettingError, Settings};

/// One recording at a time in this process.
static SERIAL: Mutex<()> = Mutex::new(());

mod a {
    #[flightrec::timed(tag = "red")]
    pub(crate) fn alpha() -> u32 {
        std::hint::black_box(1)
    }

    #[flightrec::timed(tags = ["blue", "red"])]
    pub(crate) fn beta() -> u32 {
        std::hint::black_box(2)
    }

    pub(crate) struct Thing;

    #[flightrec::timed]
    impl Thing {
        pub(crate) fn one(&self) -> u32 {
            std::hint::black_box(3)
        }
        pub(crate) fn two() -> u32 {
            std::hint::black_box(4)
        }
    }

    #[flightrec::timed]
    pub(crate) fn recurse(n: u32) -> u32 {
        if n == 0 { 0 } else { 1 + recurse(n - 1) }
    }

    #[flightrec::timed]
    pub(crate) fn explode(boom: bool) -> u32 {
        if boom {
            panic!("boom");
        }
        5
    }

    #[flightrec::timed]
    pub(crate) async fn waits(ready: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u32 {
        YieldUntil(ready).await;
        6
    }

    pub(crate) fn scoped() -> u32 {
        let _t = flightrec::timed_scope!("block", "green");
        std::hint::black_box(7)
    }

    /// Pending until the flag is set.
    struct YieldUntil(std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl std::future::Future for YieldUntil {
        type Output = ();
        fn poll(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            if self.0.load(std::sync::atomic::Ordering::SeqCst) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        }
    }
}

/// Calls every function `n` times (`recurse(3)`: 4 calls each).
fn workload(n: u32) {
    for _ in 0..n {
        a::alpha();
        a::beta();
        a::Thing.one();
        a::Thing::two();
        a::recurse(3);
        a::scoped();
    }
}

fn out(name: &str) -> PathBuf {
    flightrec_testkit::temp_dir(&format!("method_filters_{name}")).join("t.jfr")
}

fn start(path: &Path, timing: &str) -> Recording {
    let mut s = Settings::new();
    s.method_filter("jdk.MethodTiming", timing).unwrap();
    Recording::start(RecordingConfig::new(path).settings(s)).unwrap()
}

/// `jdk.MethodTiming` per chunk (in file order): method path → invocations.
fn batches(path: &Path) -> Vec<BTreeMap<String, u64>> {
    let events = flightrec_testkit::print_json(path);
    let mut by_time: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in events.as_array().unwrap() {
        if e["type"] != "jdk.MethodTiming" {
            continue;
        }
        let v = &e["values"];
        let m = &v["method"];
        let name = format!(
            "{}::{}",
            m["type"]["name"].as_str().unwrap().replace('/', "::"),
            m["name"].as_str().unwrap()
        );
        by_time
            .entry(v["startTime"].as_str().unwrap().to_owned())
            .or_default()
            .insert(name, v["invocations"].as_u64().unwrap());
    }
    by_time.into_values().collect()
}

fn last_batch(path: &Path) -> BTreeMap<String, u64> {
    batches(path).pop().unwrap_or_default()
}

fn expect(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs
        .iter()
        .map(|(k, n)| (format!("method_filters::a::{k}"), *n))
        .collect()
}

fn run(name: &str, timing: &str, n: u32) -> BTreeMap<String, u64> {
    let path = out(name);
    let r = start(&path, timing);
    workload(n);
    r.stop().unwrap();
    last_batch(&path)
}

#[test]
fn each_filter_form_selects_what_it_names() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    workload(1); // registers every site before some recordings, not others
    assert_eq!(
        run("path", "method_filters::a::alpha", 10),
        expect(&[("alpha", 10)])
    );
    assert_eq!(
        run("type", "method_filters::a::Thing", 11),
        expect(&[("Thing::one", 11), ("Thing::two", 11)])
    );
    assert_eq!(run("name", "::beta", 12), expect(&[("beta", 12)]));
    assert_eq!(
        run("tag", "@red", 13),
        expect(&[("alpha", 13), ("beta", 13)])
    );
    assert_eq!(
        run("list", "::two; method_filters::a::recurse;@green", 14),
        expect(&[("Thing::two", 14), ("recurse", 14 * 4), ("block", 14)])
    );
    assert_eq!(run("none", "::nothing_has_this_name", 3), expect(&[]));
}

#[test]
fn filters_from_several_places_are_joined() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = out("union");
    let o = flightrec::options::parse(
        "method-timing=::alpha,jdk.MethodTiming#filter=method_filters::a::Thing::one",
    )
    .unwrap();
    assert_eq!(
        o.settings.get_method_filter("jdk.MethodTiming").as_deref(),
        Some("method_filters::a::Thing::one;::alpha")
    );
    let r = Recording::start(RecordingConfig::new(&path).settings(o.settings)).unwrap();
    workload(6);
    r.stop().unwrap();
    assert_eq!(
        last_batch(&path),
        expect(&[("alpha", 6), ("Thing::one", 6)])
    );
}

#[test]
fn a_change_while_recording_turns_one_site_on_and_another_off() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = out("change");
    let r = start(&path, "::alpha");
    workload(5);
    r.rotate().unwrap();
    r.set("jdk.MethodTiming", "filter", "::beta").unwrap();
    workload(7);
    r.stop().unwrap();
    let b = batches(&path);
    assert_eq!(b.len(), 2, "{b:?}");
    assert_eq!(b[0], expect(&[("alpha", 5)]));
    assert_eq!(
        b[1],
        expect(&[("beta", 7)]),
        "alpha deselected, beta since selection"
    );
}

#[test]
fn malformed_filters_are_errors_naming_the_part() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = Settings::new();
    match s.method_filter("jdk.MethodTiming", "::alpha;a::::b") {
        Err(SettingError::InvalidFilter { part, .. }) => assert_eq!(part, "a::::b"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.method_filter("jdk.ExecutionSample", "::alpha"),
        Err(SettingError::Unsupported { .. })
    ));
    let e = flightrec::options::parse("method-trace=ok::path;@").unwrap_err();
    assert!(e.to_string().contains("`@`"), "{e}");
    let e = flightrec::options::parse("jdk.MethodTiming#filter=x<y>").unwrap_err();
    assert!(e.to_string().contains("`x<y>`"), "{e}");

    // A bad change leaves the filter in force.
    let path = out("malformed");
    let r = start(&path, "::alpha");
    let e = r.set("jdk.MethodTiming", "filter", ";;").unwrap_err();
    assert!(matches!(e, SettingError::InvalidFilter { .. }), "{e:?}");
    workload(4);
    r.stop().unwrap();
    assert_eq!(last_batch(&path), expect(&[("alpha", 4)]));
}

#[test]
fn recursion_and_panics_count_every_call() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = out("panic");
    let r = start(&path, "::recurse;::explode");
    for _ in 0..9 {
        a::recurse(10);
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..20 {
        let res = std::panic::catch_unwind(|| a::explode(i % 2 == 0));
        assert_eq!(res.is_err(), i % 2 == 0);
    }
    std::panic::set_hook(hook);
    r.stop().unwrap();
    assert_eq!(
        last_batch(&path),
        expect(&[("recurse", 9 * 11), ("explode", 20)])
    );
}

#[test]
fn an_async_fn_is_timed_from_first_poll_to_completion() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = out("async");
    let mut s = Settings::new();
    s.method_filter("jdk.MethodTiming", "::waits").unwrap();
    s.method_filter("jdk.MethodTrace", "::waits").unwrap();
    s.set("jdk.MethodTrace", "threshold", "2 ms").unwrap();
    let r = Recording::start(RecordingConfig::new(&path).settings(s)).unwrap();
    let waker = Waker::noop();
    let mut cx = Context::from_waker(waker);
    for _ in 0..5 {
        let ready = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut f = std::pin::pin!(a::waits(ready.clone()));
        assert!(f.as_mut().poll(&mut cx).is_pending());
        std::thread::sleep(Duration::from_millis(3));
        ready.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(f.as_mut().poll(&mut cx), Poll::Ready(6));
    }
    r.stop().unwrap();
    assert_eq!(last_batch(&path), expect(&[("waits", 5)]));
    // Each call spans the 3 ms suspension: all five pass a 2 ms threshold.
    let summary = flightrec_testkit::summary(&path);
    assert_eq!(summary.counts.get("jdk.MethodTrace").copied(), Some(5));
}

mod late {
    /// Called only by the child of the test below, after its first chunk.
    #[flightrec::timed]
    pub(crate) fn gamma() -> u32 {
        std::hint::black_box(8)
    }
}

/// Set in the child of the test below: where it records.
const CHILD_ENV: &str = "METHOD_FILTERS_UNMATCHED_CHILD";
const UNMATCHED: &str = "method_filters::nowhere::ghost; method_filters::late::gamma";

/// The child's part (a no-op in a normal run): three chunks; `gamma` is
/// first called in the second.
#[test]
fn unmatched_filter_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let r = start(Path::new(&path), UNMATCHED);
    workload(2);
    r.rotate().unwrap();
    for _ in 0..9 {
        late::gamma();
    }
    r.rotate().unwrap();
    for _ in 0..5 {
        late::gamma();
    }
    r.stop().unwrap();
}

#[test]
fn a_filter_matching_nothing_is_named_once_and_a_later_site_is_then_timed() {
    // A child process: this process's sites and warnings are shared by
    // the other tests.
    let path = out("unmatched");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "unmatched_filter_child", "--nocapture"])
        .env(CHILD_ENV, &path)
        .env_remove("FLIGHTREC")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "child failed:\n{stderr}");
    let named = |part: &str| {
        let line = format!(
            "flightrec: method-timing filter `{part}` matches no instrumented function called \
             by the end of a chunk (a function registers on its first call; it is selected then)"
        );
        stderr.lines().filter(|l| *l == line).count()
    };
    // Three chunk ends; each unmatched part is named once, at the first:
    // `gamma` had not been called yet then.
    assert_eq!(
        named("method_filters::nowhere::ghost"),
        1,
        "stderr:\n{stderr}"
    );
    assert_eq!(named("method_filters::late::gamma"), 1, "stderr:\n{stderr}");
    assert_eq!(
        stderr.matches("matches no instrumented function").count(),
        2,
        "stderr:\n{stderr}"
    );
    // Registered in the second chunk, `gamma` is timed from its first call.
    let b = batches(&path);
    let gamma = "method_filters::late::gamma".to_owned();
    let counts: Vec<Option<u64>> = b.iter().map(|m| m.get(&gamma).copied()).collect();
    assert_eq!(counts, [Some(9), Some(14)], "{b:?}");
    assert!(b.iter().all(|m| m.keys().all(|k| *k == gamma)), "{b:?}");
}

#[test]
fn two_recordings_time_the_union_of_their_filters() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (pa, pb) = (out("two_a"), out("two_b"));
    let a = start(&pa, "::alpha");
    let b = start(&pb, "method_filters::a::Thing::two");
    workload(4); // both run: alpha and Thing::two timed
    a.stop().unwrap();
    workload(5); // only b's filter applies
    b.stop().unwrap();
    // a's last batch: its own sites and its partner's, while both ran.
    assert_eq!(last_batch(&pa), expect(&[("alpha", 4), ("Thing::two", 4)]));
    // b's last batch: cumulative since selection; alpha deselected at a's
    // stop, so only Thing::two goes on (4 + 5).
    assert_eq!(last_batch(&pb), expect(&[("Thing::two", 9)]));
}
