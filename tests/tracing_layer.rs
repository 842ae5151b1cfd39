//! Runs the `tracing_layer` example and checks its file with JDK 25's
//! `jfr`: exact per-type counts against `jfr summary`, field values and span
//! durations from `jfr print --json`, the span tree rebuilt from
//! `spanId`/`parentId`, a type disabled by its setting absent, stack traces
//! where `stackTrace` asks for them, and the fmt layer beside the flightrec
//! layer still seeing every event.

use std::collections::{BTreeMap, HashMap};

use flightrec_testkit::run_example;

const THREADS: u64 = 4;
const REQUESTS: u64 = 300;

/// Nanoseconds since the epoch of a `jfr print --json` timestamp
/// (`2026-12-01T17:11:22.523589853Z`).
fn instant_nanos(s: &str) -> i128 {
    let (date, time) = s.trim_end_matches('Z').split_once('T').expect("timestamp");
    let d: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
    let (y, m, day) = (d[0], d[1], d[2]);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let t: Vec<&str> = time.split(':').collect();
    let (h, min): (i128, i128) = (t[0].parse().unwrap(), t[1].parse().unwrap());
    (days as i128 * 86_400 + h * 3600 + min * 60) * 1_000_000_000
        + flightrec_testkit::json_seconds_nanos(t[2])
}

#[derive(Debug)]
struct Span {
    ty: String,
    parent: u64,
    start: i128,
    end: i128,
    thread: String,
}

#[test]
fn tracing_layer_counts_fields_durations_and_tree_match_jfr() {
    let dir = flightrec_testkit::temp_dir("tracing_layer");
    let out = dir.join("tracing.jfr");
    let printed = run_example(
        "tracing_layer",
        &[
            "--out",
            out.to_str().unwrap(),
            "--threads",
            &THREADS.to_string(),
            "--requests",
            &REQUESTS.to_string(),
            "--fmt",
            "--set",
            "tracing.tracing_layer.cache_probe#enabled=false",
            "--set",
            "tracing.tracing_layer.slow_request#stackTrace=true",
        ],
    );
    let counts = printed["counts"].as_object().expect("counts object");
    let n = THREADS * REQUESTS;
    let slow = THREADS * (REQUESTS / 10);
    let expected: BTreeMap<&str, u64> = [
        ("tracing.tracing_layer.worker", THREADS),
        ("tracing.tracing_layer.request", n),
        ("tracing.tracing_layer.store.db_query", 2 * n),
        ("tracing.tracing_layer.cache_probe", 0),
        ("tracing.tracing_layer.request_done", n),
        ("tracing.tracing_layer.slow_request", slow),
    ]
    .into();
    let got: BTreeMap<&str, u64> = counts
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(got, expected, "printed counts");
    // The fmt layer beside it saw every event, the disabled type's too.
    assert_eq!(printed["fmt_lines"].as_u64(), Some(2 * n + slow));
    assert_eq!(printed["mismatched_values"].as_u64(), Some(0));
    assert_eq!(printed["rejected_types"].as_u64(), Some(0));

    let summary = flightrec_testkit::summary(&out);
    for (name, want) in &expected {
        assert_eq!(
            summary.counts.get(*name).copied().unwrap_or(0),
            *want,
            "jfr summary count of {name}"
        );
    }

    let json = flightrec_testkit::print_json(&out);
    let events = json.as_array().expect("events");
    let mut spans: HashMap<u64, Span> = HashMap::new();
    let mut children: HashMap<u64, Vec<String>> = HashMap::new();
    let mut slow_with_stack = 0;
    for e in events {
        let ty = e["type"].as_str().unwrap();
        if !ty.starts_with("tracing.") {
            continue;
        }
        let v = &e["values"];
        let parent = v["parentId"].as_u64().expect("parentId");
        let thread = v["eventThread"]["javaName"].as_str().unwrap().to_owned();
        let start = instant_nanos(v["startTime"].as_str().unwrap());
        children.entry(parent).or_default().push(ty.to_owned());
        match ty {
            "tracing.tracing_layer.request_done" => {
                assert_eq!(v["status"].as_u64(), Some(200));
                assert_eq!(v["ok"].as_bool(), Some(true));
                let latency = v["latency_us"].as_u64().unwrap();
                assert!((50..450).contains(&latency), "latency_us {latency}");
                let msg = v["message"].as_str().unwrap();
                assert!(msg == "served /users" || msg == "served /items", "{msg}");
                assert!(v["rows"].as_u64().unwrap() <= 12);
            }
            "tracing.tracing_layer.slow_request" => {
                let latency = v["latency_us"].as_u64().unwrap() as f64;
                assert_eq!(v["ratio"].as_f64(), Some(latency / 50.0));
                let frames = v["stackTrace"]["frames"].as_array().expect("stack trace");
                // The dispatch frames are cut: the top frame is the
                // function that emitted the event.
                let top = &frames[0]["method"];
                assert_eq!(
                    (top["name"].as_str(), top["type"]["name"].as_str()),
                    (Some("serve"), Some("tracing_layer")),
                    "top frames: {:?}",
                    frames
                        .iter()
                        .take(4)
                        .map(|f| format!("{}.{}", f["method"]["type"]["name"], f["method"]["name"]))
                        .collect::<Vec<_>>()
                );
                slow_with_stack += 1;
            }
            _ => {
                let id = v["spanId"].as_u64().expect("spanId");
                assert!(id > 0);
                let dur = flightrec_testkit::json_duration_nanos(v["duration"].as_str().unwrap());
                assert!(dur > 0, "{ty} duration {dur}");
                assert!(v["stackTrace"].is_null());
                match ty {
                    "tracing.tracing_layer.store.db_query" => {
                        let table = v["table"].as_str().unwrap();
                        assert!(table == "users" || table == "items", "{table}");
                        assert_eq!(v["rows"].as_u64(), Some(v["key"].as_u64().unwrap() % 7));
                    }
                    "tracing.tracing_layer.request" => {
                        assert_eq!(v["method"].as_str(), Some("GET"));
                        let seq = v["seq"].as_u64().unwrap();
                        let path = if seq % 3 == 0 { "/users" } else { "/items" };
                        assert_eq!(v["path"].as_str(), Some(path));
                        assert_eq!(thread, format!("worker-{}", v["worker"].as_u64().unwrap()));
                    }
                    _ => {}
                }
                let old = spans.insert(
                    id,
                    Span {
                        ty: ty.to_owned(),
                        parent,
                        start,
                        end: start + dur,
                        thread: thread.clone(),
                    },
                );
                assert!(old.is_none(), "spanId {id} written twice");
            }
        }
    }
    assert_eq!(
        slow_with_stack, slow,
        "slow_request stack traces topped by serve()"
    );

    // The tree: workers at the root, requests under workers, two queries and
    // one request_done (and the slow warnings) under each request.
    let mut shape: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (parent, kids) in &children {
        let parent_ty = if *parent == 0 {
            "root".to_owned()
        } else {
            spans
                .get(parent)
                .unwrap_or_else(|| panic!("parentId {parent} is no recorded span"))
                .ty
                .clone()
        };
        for k in kids {
            *shape.entry((parent_ty.clone(), k.clone())).or_default() += 1;
        }
    }
    let want: BTreeMap<(String, String), u64> = [
        (("root", "worker"), THREADS),
        (("worker", "request"), n),
        (("request", "store.db_query"), 2 * n),
        (("request", "request_done"), n),
        (("request", "slow_request"), slow),
    ]
    .into_iter()
    .map(|((p, c), k)| {
        let full = |s: &str| {
            if s == "root" {
                s.to_owned()
            } else {
                format!("tracing.tracing_layer.{s}")
            }
        };
        ((full(p), full(c)), k)
    })
    .collect();
    assert_eq!(shape, want, "span tree rebuilt from parentId");

    // Each request span holds exactly two queries, and a child span's time
    // lies within its parent's, on the same thread.
    let mut per_request: HashMap<u64, u32> = HashMap::new();
    for s in spans.values() {
        if s.parent == 0 {
            continue;
        }
        let p = &spans[&s.parent];
        assert_eq!(
            s.thread, p.thread,
            "{} on another thread than its parent",
            s.ty
        );
        assert!(
            p.start <= s.start && s.end <= p.end,
            "{} [{}, {}] outside parent {} [{}, {}]",
            s.ty,
            s.start,
            s.end,
            p.ty,
            p.start,
            p.end
        );
        if s.ty.ends_with("db_query") {
            *per_request.entry(s.parent).or_default() += 1;
        }
    }
    assert_eq!(per_request.len() as u64, n);
    assert!(per_request.values().all(|&k| k == 2));
}

/// README's "From `tracing`" example builds in a crate whose only
/// dependencies are the ones README's manifest names, `flightrec` (with
/// its `tracing` feature) and `tracing`, and records what it says: the
/// blocks are taken from README.md, compiled by `rustc` against this
/// build's `flightrec` and `tracing` libraries with no other crate in
/// reach (as rustdoc compiles a doctest), and the program run.
///
/// Not `cargo build` of a crate of its own: with the workspace's
/// dev-dependencies, this build's dependency graph has other features
/// (`libc/extra_traits`, the recorder's `pyroscope`, ...) than a user's, so
/// cargo would rebuild some 50 crates, minutes on this project's CI, where
/// this costs the compile and link of one small file (about 2 s).
/// README's "From `tracing`" section: its manifest's dependency lines
/// (checked to be exactly `flightrec` with the `tracing` feature, and
/// `tracing`) and its program.
fn readme_tracing_example() -> (Vec<String>, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    const HEADING: &str = "### From `tracing`";
    let section = &readme[readme.find(HEADING).expect("README has the section")..];
    let section = &section[HEADING.len()..];
    let section = &section[..section.find("\n#").unwrap_or(section.len())];
    let block = |info: &str| -> String {
        let fence = format!("```{info}\n");
        let mut found = section.split(fence.as_str()).skip(1);
        let block = found.next().expect("the block");
        assert!(found.next().is_none(), "one {info} block");
        block[..block.find("```").expect("closed")].to_owned()
    };
    // The manifest: exactly these two dependencies, the facade with the
    // feature that gates `flightrec::tracing`.
    let manifest = block("toml");
    let deps: Vec<&str> = manifest
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('['))
        .collect();
    assert_eq!(
        deps,
        [
            r#"flightrec = { path = "../flightrec", features = ["tracing"] }"#,
            r#"tracing = "0.1""#
        ],
        "README's manifest"
    );
    (deps.iter().map(|d| d.to_string()).collect(), block("rust"))
}

#[test]
fn readme_tracing_example_builds_with_flightrec_and_tracing_alone() {
    let (_, program) = readme_tracing_example();
    let dir = flightrec_testkit::temp_dir("readme-tracing");
    std::fs::write(dir.join("main.rs"), program).unwrap();

    // This build's libraries, in its deps folder (cargo puts this test
    // there too). A folder that other profiles built into as well (`cargo
    // bench` writes its own builds of the same crates beside these) holds
    // several of each; the example must build with one pair that belongs
    // together, tried newest first.
    let deps_dir = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();
    let candidates = |krate: &str| {
        let prefix = format!("lib{krate}-");
        let mut found: Vec<_> = std::fs::read_dir(&deps_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_str().unwrap();
                name.starts_with(&prefix) && name.ends_with(".rlib")
            })
            .collect();
        assert!(
            !found.is_empty(),
            "no lib{krate}-*.rlib in {}",
            deps_dir.display()
        );
        found.sort_by_key(|p| std::cmp::Reverse(p.metadata().unwrap().modified().unwrap()));
        found
    };
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut built = false;
    'pairs: for flightrec in candidates("flightrec") {
        for tracing in candidates("tracing") {
            let externs = [
                "--extern".to_owned(),
                format!("flightrec={}", flightrec.display()),
                "--extern".to_owned(),
                format!("tracing={}", tracing.display()),
            ];
            let rustc =
                std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
                    .args([
                        "--edition",
                        "2024",
                        "--crate-type",
                        "bin",
                        "--crate-name",
                        "readme_tracing",
                    ])
                    .arg("-L")
                    .arg(format!("dependency={}", deps_dir.display()))
                    .args(&externs)
                    .arg("-o")
                    .arg(dir.join("readme_tracing"))
                    .arg(dir.join("main.rs"))
                    .output()
                    .unwrap();
            if rustc.status.success() {
                built = true;
                break 'pairs;
            }
            failures.push(format!(
                "with {externs:?}:\n{}",
                String::from_utf8_lossy(&rustc.stderr)
            ));
        }
    }
    assert!(
        built,
        "README's tracing example does not build {}",
        failures.join("\n")
    );
    eprintln!("README's tracing example built in {:?}", started.elapsed());
    let run = std::process::Command::new(dir.join("readme_tracing"))
        .current_dir(&dir)
        .env_remove("FLIGHTREC")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = flightrec_testkit::Summary::parse(&flightrec_testkit::jfr().run_text(&[
        std::ffi::OsStr::new("summary"),
        dir.join("app.jfr").as_os_str(),
    ]));
    assert_eq!(
        summary.counts.get("tracing.readme_tracing.request"),
        Some(&1),
        "{:?}",
        summary.counts
    );
}

/// README's tracing example as a user writes it: a crate of its own whose
/// manifest is README's (the path pointing at this checkout), checked by
/// cargo, offline, with this workspace's lock file so the versions are the
/// ones the workspace builds. Its own target directory (`target/readme-crate`,
/// kept between runs): the features a user's crate resolves differ from the
/// workspace's, so it cannot share the workspace's artifacts.
#[test]
fn readme_tracing_example_is_a_crate_that_cargo_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (deps, program) = readme_tracing_example();
    let krate = root.join("target/readme-crate");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    let deps: Vec<String> = deps
        .iter()
        .map(|d| {
            d.replace(
                r#"path = "../flightrec""#,
                &format!("path = {:?}", root.display().to_string()),
            )
        })
        .collect();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"readme-tracing\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[workspace]\n\n[dependencies]\n{}\n",
            deps.join("\n")
        ),
    )
    .unwrap();
    std::fs::write(krate.join("src/main.rs"), program).unwrap();
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let started = std::time::Instant::now();
    let check = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args(["check", "--offline", "--quiet", "--manifest-path"])
        .arg(krate.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", krate.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "cargo check of README's tracing crate failed:\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    eprintln!("README's tracing crate checked in {:?}", started.elapsed());
}
