//! Runs the `alloc_lock` example (built by `cargo test` beside this test)
//! and checks its allocation samples with JDK 25's `jfr` (issue 19):
//! `jfr view allocation-by-site` ranks the example's sites in the order of
//! the bytes it printed, the summed `weight` of each site's
//! `jdk.ObjectAllocationSample`s is within ±15 % of those bytes, and `jfr
//! view memory-leaks-by-site` shows the leaking site, whose
//! `jdk.OldObjectSample`s (at the last chunk's end) are the only ones of
//! the example's sites, their sizes that site's.

use std::collections::BTreeMap;

use flightrec_testkit::run_example;

/// The view's rows: method text → percentage, in the view's order.
fn view_shares(view: &str) -> Vec<(String, f64)> {
    view.lines()
        .filter_map(|line| {
            let mut cols: Vec<&str> = line.split_whitespace().collect();
            let pct = cols.pop()?.strip_suffix('%')?.parse().ok()?;
            Some((cols.join(" "), pct))
        })
        .collect()
}

/// The top frame of an event's stack as the views print it:
/// `package.Class.method()`.
fn top_frame(v: &serde_json::Value) -> Option<String> {
    let f = v["stackTrace"]["frames"].as_array()?.first()?;
    let m = &f["method"];
    let class = m["type"]["name"].as_str()?.replace('/', ".");
    Some(format!("{class}.{}()", m["name"].as_str()?))
}

fn bytes_by_site(printed: &serde_json::Value, key: &str) -> BTreeMap<String, u64> {
    printed[key]
        .as_object()
        .unwrap_or_else(|| panic!("{key} object in {printed}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().expect("bytes")))
        .collect()
}

#[test]
fn allocation_sites_rank_and_weigh_as_allocated_and_the_leak_is_found() {
    let dir = flightrec_testkit::temp_dir("alloc_lock");
    let out = dir.join("alloc.jfr");
    let printed = run_example(
        "alloc_lock",
        &["--out", out.to_str().unwrap(), "--seconds", "5"],
    );
    let allocated = bytes_by_site(&printed, "allocated");
    let leaked = bytes_by_site(&printed, "leaked");
    assert_eq!(allocated.len(), 4, "{printed}");
    assert_eq!(leaked.len(), 1, "{printed}");
    assert!(printed["contended"].is_object(), "{printed}");

    // Ranking: the view's order of the example's sites is the order of
    // their printed bytes.
    let view = flightrec_testkit::view("allocation-by-site", &out);
    let rows = view_shares(&view);
    let ranked: Vec<&String> = rows
        .iter()
        .map(|(m, _)| m)
        .filter(|m| allocated.contains_key(*m))
        .collect();
    let mut truth: Vec<(&String, &u64)> = allocated.iter().collect();
    truth.sort_by(|a, b| b.1.cmp(a.1));
    let truth: Vec<&String> = truth.into_iter().map(|(m, _)| m).collect();
    assert_eq!(ranked, truth, "allocation-by-site:\n{view}");

    // Weights: per site, within ±15 % of the bytes allocated.
    let events = flightrec_testkit::print_json(&out);
    let mut weight: BTreeMap<String, u64> = BTreeMap::new();
    let mut old: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for e in events.as_array().expect("events") {
        let v = &e["values"];
        match e["type"].as_str() {
            Some("jdk.ObjectAllocationSample") => {
                if let Some(site) = top_frame(v) {
                    *weight.entry(site).or_default() += v["weight"].as_u64().expect("weight");
                }
            }
            Some("jdk.OldObjectSample") => {
                if let Some(site) = top_frame(v) {
                    let o = old.entry(site).or_default();
                    o.0 += 1;
                    o.1 = v["objectSize"].as_u64().expect("objectSize");
                }
            }
            _ => {}
        }
    }
    let mut report = String::new();
    for (site, &bytes) in &allocated {
        let w = weight.get(site).copied().unwrap_or(0);
        let rel = w as f64 / bytes as f64 - 1.0;
        report += &format!(
            "{site}: allocated {bytes}, weights {w} ({:+.1}%)\n",
            100.0 * rel
        );
    }
    eprint!("{report}");
    for (site, &bytes) in &allocated {
        let w = weight.get(site).copied().unwrap_or(0);
        assert!(
            (w as f64 / bytes as f64 - 1.0).abs() <= 0.15,
            "{site} off by more than 15%:\n{report}"
        );
    }

    // Leaks: the view names the leaking site; of the example's sites only
    // it has old-object samples, of its block size.
    let leaks = flightrec_testkit::view("memory-leaks-by-site", &out);
    let (leak_site, &leak_bytes) = leaked.iter().next().unwrap();
    assert!(leak_bytes > 0);
    assert!(
        leaks.contains(leak_site.as_str()),
        "{leak_site} missing from memory-leaks-by-site:\n{leaks}"
    );
    let ours: Vec<(&String, &(u64, u64))> = old
        .iter()
        .filter(|(s, _)| allocated.contains_key(*s))
        .collect();
    assert_eq!(ours.len(), 1, "old-object samples of other sites: {ours:?}");
    let (site, &(n, size)) = ours[0];
    assert_eq!(site, leak_site);
    assert_eq!(size, 1024, "the leaking site's block size");
    // Each leaked 1 KiB block is sampled with probability 1 - e^(-1/16)
    // (the example's mean interval is 16 KiB): expect ~6 % of them.
    let blocks = leak_bytes / 1024;
    let expected = blocks as f64 * (1.0 - (-1.0f64 / 16.0).exp());
    assert!(
        (n as f64 - expected).abs() <= 0.25 * expected,
        "{n} old-object samples of {blocks} leaked blocks, expected about {expected:.0}"
    );
}
