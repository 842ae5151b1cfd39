//! Every built-in `jdk.*` type flightrec declares is JDK 25's, field for
//! field: `jfr metadata FILE` prints the same fields (name, type, order,
//! and the annotations readers interpret values by) as `jfr metadata`
//! with no file, which prints the JDK's own definitions.
//!
//! Readers that know the JDK's types read them by position (async-profiler's
//! converter reads `jdk.ExecutionSample` as start time, thread, stack,
//! state, then the next record): a field added, dropped or moved misreads
//! every record after it. The one exception is `contextId`, appended to the
//! two sample types only while labels are in the samples (Pyroscope), see
//! docs/pyroscope-events.md.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;

use jfr_format::{Checkpoint, ChunkEnd, ChunkStart, ChunkWriter, Metadata};

/// Annotations by which readers interpret a field's value (units, kinds of
/// number); labels and descriptions are for people and are not compared.
const VALUE_ANNOTATIONS: [&str; 8] = [
    "@Timestamp",
    "@Timespan",
    "@DataAmount",
    "@Unsigned",
    "@Percentage",
    "@Frequency",
    "@MemoryAddress",
    "@BooleanFlag",
];

/// `jdk.X` → its fields as `[annotations…] type name`, from `jfr metadata`
/// text.
fn types(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut name: Option<String> = None;
    let mut current: Option<(String, Vec<String>)> = None;
    let mut annotations: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some((n, fields)) = &mut current {
            if t == "}" {
                out.insert(n.clone(), std::mem::take(fields));
                current = None;
            } else if t.starts_with('@') {
                if VALUE_ANNOTATIONS.iter().any(|a| t.starts_with(a)) {
                    annotations.push(t.to_owned());
                }
            } else if let Some(decl) = t.strip_suffix(';') {
                annotations.sort();
                fields.push(
                    format!("{} {decl}", annotations.join(" "))
                        .trim()
                        .to_owned(),
                );
                annotations.clear();
            }
            continue;
        }
        if let Some(n) = t
            .strip_prefix("@Name(\"")
            .and_then(|r| r.strip_suffix("\")"))
        {
            name = Some(n.to_owned());
        } else if t.starts_with("class ") && t.ends_with('{') {
            if let Some(n) = name.take() {
                current = Some((n, Vec::new()));
            }
            annotations.clear();
        }
    }
    out
}

/// A chunk holding `metadata` and nothing else.
fn write(path: &Path, metadata: &Metadata) {
    let start = ChunkStart {
        start_nanos: 1_750_000_000_000_000_000,
        start_ticks: 0,
        ticks_per_second: 1_000_000_000,
    };
    let out = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = ChunkWriter::begin(out, start).unwrap();
    w.write_metadata(metadata, 1, 0).unwrap();
    w.write_checkpoint(&Checkpoint::new(0), 1, 0).unwrap();
    let end = ChunkEnd {
        duration_nanos: 1,
        ticks_per_second: None,
        last: true,
    };
    w.finish(end).unwrap().into_inner().unwrap();
}

/// The `jdk.*` types of `metadata` as `jfr metadata FILE` prints them.
fn declared(metadata: &Metadata, name: &str) -> BTreeMap<String, Vec<String>> {
    let path = flightrec_testkit::temp_dir("jdk-types").join(name);
    write(&path, metadata);
    let mut t = types(&flightrec_testkit::metadata(&path));
    t.retain(|n, _| n.starts_with("jdk."));
    t
}

fn jdk() -> BTreeMap<String, Vec<String>> {
    let t = types(&flightrec_testkit::jfr().run_text(&["metadata"]));
    assert!(t.len() > 150, "too few JDK types parsed: {}", t.len());
    t
}

/// Differences between `ours` and the JDK's, one line per type.
fn differences(
    ours: &BTreeMap<String, Vec<String>>,
    jdk: &BTreeMap<String, Vec<String>>,
) -> Vec<String> {
    ours.iter()
        .filter_map(|(name, fields)| match jdk.get(name) {
            None => Some(format!("{name}: not a JDK 25 type")),
            Some(j) if j != fields => Some(format!("{name}:\n  ours {fields:?}\n  JDK  {j:?}")),
            Some(_) => None,
        })
        .collect()
}

#[test]
fn every_builtin_jdk_type_is_the_jdks_field_for_field() {
    let jdk = jdk();
    let ours = declared(&Metadata::builtin(), "builtin.jfr");
    // The types flightrec writes: the samples, allocations, locks, thread
    // and system events, the settings and recordings.
    for must in [
        "jdk.ExecutionSample",
        "jdk.CPUTimeSample",
        "jdk.ObjectAllocationSample",
        "jdk.JavaMonitorEnter",
        "jdk.ThreadPark",
        "jdk.ThreadStart",
        "jdk.ThreadEnd",
        "jdk.ActiveSetting",
        "jdk.MethodTrace",
    ] {
        assert!(ours.contains_key(must), "{must} not declared");
    }
    let diff = differences(&ours, &jdk);
    assert!(
        diff.is_empty(),
        "{} of {} jdk.* types differ from JDK 25's:\n{}",
        diff.len(),
        ours.len(),
        diff.join("\n")
    );
}

#[test]
fn with_labels_in_samples_only_the_samples_gain_context_id_last() {
    let jdk = jdk();
    let mut ours = declared(&Metadata::builtin_for(true), "labels.jfr");
    for sample in ["jdk.ExecutionSample", "jdk.CPUTimeSample"] {
        let fields = ours.get_mut(sample).unwrap();
        assert_eq!(fields.pop().as_deref(), Some("long contextId"), "{sample}");
    }
    let diff = differences(&ours, &jdk);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

#[test]
fn the_comparison_sees_a_difference() {
    // Negative control: the JDK's ExecutionSample against itself with a
    // field moved.
    let jdk = jdk();
    let mut ours = BTreeMap::new();
    let mut moved = jdk["jdk.ExecutionSample"].clone();
    moved.swap(1, 2);
    ours.insert("jdk.ExecutionSample".to_owned(), moved);
    assert_eq!(differences(&ours, &jdk).len(), 1);
    assert!(jdk["jdk.ExecutionSample"][0].contains("@Timestamp(\"TICKS\") long startTime"));
}
