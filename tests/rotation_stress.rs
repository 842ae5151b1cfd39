//! Runs the `rotation_stress` example and checks its file with JDK 25: the
//! chunk count and exact totals from `jfr summary`, and every chunk, split
//! out with `jfr disassemble`, read alone by the JDK's parser with the same
//! per-type counts our reader finds in it.

use jfr_format::read::read_recording;

use flightrec_testkit::run_example;

#[test]
fn every_chunk_alone_is_readable_and_totals_are_exact() {
    let dir = flightrec_testkit::temp_dir("rotation_stress");
    let out = dir.join("stress.jfr");
    let printed = run_example(
        "rotation_stress",
        &[
            "--out",
            out.to_str().unwrap(),
            "--threads",
            "8",
            "--events",
            "200000",
            "--rotate-ms",
            "5",
            // The writers wait for the rotator if a loaded machine runs it
            // late: five rotations fall between their events.
            "--min-rotations",
            "5",
        ],
    );
    let chunks = printed["chunks"].as_u64().expect("chunks");
    assert!(
        chunks >= 6,
        "expected several rotations, got {chunks} chunks"
    );

    let summary = flightrec_testkit::summary(&out);
    assert_eq!(summary.chunks, chunks);
    let mut total = 0;
    for (name, n) in printed["counts"].as_object().unwrap() {
        assert_eq!(summary.counts.get(name).copied(), n.as_u64(), "{name}");
        total += n.as_u64().unwrap();
    }
    assert_eq!(total, 200_000);

    let parts = flightrec_testkit::disassemble(&out, &dir.join("chunks"));
    assert_eq!(parts.len() as u64, chunks);
    let jdk_counts = flightrec_testkit::jfr().read_each_with_recording_file(&parts);
    for (part, jdk) in parts.iter().zip(&jdk_counts) {
        let ours = read_recording(&std::fs::read(part).unwrap()).expect("our reader");
        assert_eq!(ours.chunks.len(), 1);
        let mut mine = std::collections::BTreeMap::new();
        for e in &ours.chunks[0].events {
            *mine.entry(e.type_name.to_string()).or_insert(0u64) += 1;
        }
        assert_eq!(&mine, jdk, "{}", part.display());
    }
}
