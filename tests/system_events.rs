//! Runs the `system_events` example and checks, with JDK 25's `jfr`, what
//! a recording says about the process and the machine without a line of
//! the program's own events (issue 14): thread starts and ends with their
//! names, panics at their site, CPU and memory figures against `/proc`,
//! the container configuration against the cgroup files, and the JDK's
//! views over all of it.

use std::collections::BTreeMap;

use flightrec_testkit::run_example;
use serde_json::Value;

fn events<'a>(all: &'a Value, ty: &str) -> Vec<&'a Value> {
    all.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| &e["values"])
        .collect()
}

fn thread_name(t: &Value) -> String {
    t["javaName"]
        .as_str()
        .or_else(|| t["osName"].as_str())
        .unwrap_or("?")
        .to_owned()
}

fn example_thread(name: &str) -> bool {
    matches!(name, "burn-heavy" | "burn-light" | "sleeper" | "panicker")
        || name.starts_with("wave-")
}

/// `processor` entries and distinct (physical id, core id) pairs.
fn cpuinfo_counts() -> (i64, i64) {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let mut hw = 0;
    let mut cores = std::collections::BTreeSet::new();
    let mut phys = String::new();
    for l in text.lines() {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => hw += 1,
            "physical id" => phys = v.trim().to_owned(),
            "core id" => {
                cores.insert((phys.clone(), v.trim().to_owned()));
            }
            _ => {}
        }
    }
    let cores = if cores.is_empty() {
        hw
    } else {
        cores.len() as i64
    };
    (cores, hw)
}

/// The memory limit the cgroup files give (`-1`: none), if the process is
/// in a cgroup with a memory controller.
fn cgroup_memory_limit() -> Option<i64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let parse = |t: String| -> i64 {
        let t = t.trim();
        if t == "max" {
            return -1;
        }
        let v: u64 = t.parse().unwrap();
        if v >= 1 << 62 { -1 } else { v as i64 }
    };
    for l in own.lines() {
        let mut f = l.splitn(3, ':');
        let (_, ctrl, path) = (f.next()?, f.next()?, f.next()?);
        if ctrl.split(',').any(|c| c == "memory") {
            let p = format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes");
            return std::fs::read_to_string(p).ok().map(parse);
        }
    }
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    std::fs::read_to_string(format!("/sys/fs/cgroup{path}/memory.max"))
        .ok()
        .map(parse)
}

#[test]
fn the_recording_says_what_the_process_and_machine_did() {
    let dir = flightrec_testkit::temp_dir("system_events");
    let out = dir.join("system.jfr");
    let printed = run_example(
        "system_events",
        &[
            "--out",
            out.to_str().unwrap(),
            "--seconds",
            "4",
            "--panics",
            "7",
        ],
    );
    let started = printed["threads_started"].as_u64().unwrap();
    let ended = printed["threads_ended"].as_u64().unwrap();
    let panics = printed["panics"].as_u64().unwrap();
    assert_eq!(panics, 7, "{printed}");
    flightrec_testkit::assert_prints(&out);
    let all = flightrec_testkit::print_json(&out);

    // Every thread the example started and ended, by name, exactly once.
    let names = |ty: &str, field: &str| -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for v in events(&all, ty) {
            let n = thread_name(&v[field]);
            if example_thread(&n) {
                *m.entry(n).or_default() += 1;
            }
        }
        m
    };
    let starts = names("jdk.ThreadStart", "thread");
    let ends = names("jdk.ThreadEnd", "thread");
    assert_eq!(starts.values().sum::<u64>(), started, "{starts:?}");
    assert_eq!(ends.values().sum::<u64>(), ended, "{ends:?}");
    assert!(starts.values().all(|&n| n == 1), "{starts:?}");
    assert_eq!(
        starts.keys().collect::<Vec<_>>(),
        ends.keys().collect::<Vec<_>>()
    );
    for name in [
        "burn-heavy",
        "burn-light",
        "sleeper",
        "panicker",
        "wave-0-0",
    ] {
        assert!(
            starts.contains_key(name),
            "no jdk.ThreadStart for {name}: {starts:?}"
        );
    }

    // Panics: P errors, each at `panic_site`, on the panicking thread, with
    // the panic's message; the statistics count them.
    let throws = events(&all, "jdk.JavaErrorThrow");
    assert_eq!(throws.len() as u64, panics);
    for t in &throws {
        let top = &t["stackTrace"]["frames"][0]["method"];
        assert_eq!(top["name"], "panic_site", "{t}");
        assert_eq!(thread_name(&t["eventThread"]), "panicker");
        let msg = t["message"].as_str().unwrap();
        assert!(
            msg.starts_with("panicked at examples/system_events.rs:")
                && msg.contains(": planned panic "),
            "{msg}"
        );
    }
    let counts: Vec<i64> = events(&all, "jdk.ExceptionStatistics")
        .iter()
        .map(|v| v["throwables"].as_i64().unwrap())
        .collect();
    assert_eq!(
        counts.iter().max().unwrap() - counts.iter().min().unwrap(),
        panics as i64
    );

    // Machine facts against /proc.
    let (cores, hw) = cpuinfo_counts();
    let cpu = events(&all, "jdk.CPUInformation");
    assert_eq!(cpu.len(), 1);
    assert_eq!(cpu[0]["cores"].as_i64(), Some(cores));
    assert_eq!(cpu[0]["hwThreads"].as_i64(), Some(hw));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let total_kb: i64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mem = events(&all, "jdk.PhysicalMemory");
    assert!(mem.len() >= 2, "everyChunk: at the start and the end");
    for m in &mem {
        assert_eq!(m["totalSize"].as_i64(), Some(total_kb * 1024));
        let used = m["usedSize"].as_i64().unwrap();
        assert!(used > 0 && used <= total_kb * 1024);
    }
    // Secrets stay out under the default settings.
    assert!(events(&all, "jdk.InitialEnvironmentVariable").is_empty());
    assert!(events(&all, "flightrec.ProcessInformation").is_empty());
    let libs = events(&all, "jdk.NativeLibrary");
    assert!(
        libs.iter()
            .any(|l| l["name"].as_str().unwrap().contains("system_events"))
    );
    assert!(
        libs.iter()
            .all(|l| l["baseAddress"].as_u64() < l["topAddress"].as_u64())
    );
    let shutdown = events(&all, "jdk.Shutdown");
    assert_eq!(shutdown.len(), 1);
    assert_eq!(shutdown[0]["reason"], "Recording stopped");

    // Container limits against the cgroup files.
    if let Some(limit) = cgroup_memory_limit() {
        let c = events(&all, "jdk.ContainerConfiguration");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0]["memoryLimit"].as_i64(), Some(limit), "{}", c[0]);
        assert_eq!(c[0]["hostTotalMemory"].as_i64(), Some(total_kb * 1024));
        let view = flightrec_testkit::view("container-configuration", &out);
        assert!(view.contains("Container Type: cgroupv"), "{view}");
    }

    // The views: non-empty, and the burners on top in the right order.
    for (name, expect) in [
        ("system-information", "Number of Hardware Threads"),
        ("cpu-load", "JVM User (Average)"),
        ("cpu-load-samples", "%"),
        ("thread-cpu-load", "burn-heavy"),
        ("thread-start", "wave-0-0"),
        ("recording", "Dump Reason: Recording stopped"),
        ("active-recordings", "system.jfr"),
        ("exception-by-site", "panic_site"),
        ("exception-count", &format!("Exceptions Thrown: {panics}")),
    ] {
        let v = flightrec_testkit::view(name, &out);
        assert!(
            v.contains(expect),
            "`jfr view {name}` lacks `{expect}`:\n{v}"
        );
    }
    let load = flightrec_testkit::view("thread-cpu-load", &out);
    let heavy = load.find("burn-heavy").unwrap();
    let light = load
        .find("burn-light")
        .expect("burn-light in thread-cpu-load");
    // In the order of the CPU time the burners measured (3:1 on a quiet
    // machine; about even when both always wait for a core, and then
    // either order is right).
    let share = |t: &str| printed["cpu_share"][t].as_f64().expect("cpu_share");
    if share("burn-heavy") > 1.5 * share("burn-light") {
        assert!(heavy < light, "burn-heavy below burn-light:\n{load}");
    }
    let by_site = flightrec_testkit::view("exception-by-site", &out);
    let row = by_site.lines().find(|l| l.contains("panic_site")).unwrap();
    assert!(row.trim_end().ends_with(&format!(" {panics}")), "{row}");
    // The thrown class is the panic's location: one type, all P panics.
    let by_type = flightrec_testkit::view("exception-by-type", &out);
    let row = by_type
        .lines()
        .find(|l| l.contains("system_events.rs:"))
        .unwrap_or_else(|| panic!("no panic class in exception-by-type:\n{by_type}"));
    assert!(row.trim_end().ends_with(&format!(" {panics}")), "{row}");
    let starts_view = flightrec_testkit::view("thread-start", &out);
    let rows = starts_view
        .lines()
        .filter(|l| l.split_whitespace().any(example_thread))
        .count() as u64;
    assert!(rows >= started, "{rows} rows < {started}:\n{starts_view}");
}
