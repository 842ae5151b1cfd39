//! A recorder that cannot be turned against its host (issue 11): another
//! user cannot make it write through a planted repository or a planted
//! symbolic link, the files it creates are private, and `assemble` turns a
//! repository with a damaged chunk and foreign files into a file the JDK's
//! `jfr` reads, with exactly the events of the intact chunks.
//!
//! "Another user" is uid 65534 (`chown`, as CI runs as root); when the tests
//! do not run as root, `/` (owned by root) stands in for a foreign directory.
//!
//! One recording runs at a time per process, so the tests take [`ONE`].

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use flightrec_derive::Event;
use jfr_format::read::read_recording;
use recorder::{Event, Recording, RecordingConfig, RepositoryProblem, SkipReason, StartError};

static ONE: Mutex<()> = Mutex::new(());

#[derive(Event)]
#[event(crate = "recorder", name = "test.Tick")]
struct Tick {
    n: u64,
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn refusal(config: RecordingConfig) -> (PathBuf, RepositoryProblem, String) {
    match Recording::start(config) {
        Err(e @ StartError::UnsafeRepository { .. }) => {
            let text = e.to_string();
            let StartError::UnsafeRepository { path, problem } = e else {
                unreachable!()
            };
            (path, problem, text)
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("an unsafe repository was accepted"),
    }
}

#[test]
fn group_writable_and_foreign_repositories_are_refused() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("hostile_repo");
    let out = dir.join("out.jfr");

    let open = dir.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let (path, problem, text) = refusal(RecordingConfig::new(&out).repository(&open));
    assert_eq!(path, open);
    assert_eq!(problem, RepositoryProblem::Writable { mode: 0o777 });
    assert!(
        text.contains(&open.display().to_string()) && text.contains("0777"),
        "{text}"
    );
    assert_eq!(fs::read_dir(&open).unwrap().count(), 0, "wrote into it");

    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let foreign = if euid == 0 {
        let d = dir.join("foreign");
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        PathBuf::from("/")
    };
    let owner = fs::metadata(&foreign).unwrap().uid();
    let (path, problem, text) = refusal(RecordingConfig::new(&out).repository(&foreign));
    assert_eq!(path, foreign);
    assert_eq!(problem, RepositoryProblem::ForeignOwner { owner, euid });
    assert!(
        text.contains(&foreign.display().to_string()) && text.contains(&format!("uid {owner}")),
        "{text}"
    );
    if euid == 0 {
        assert_eq!(fs::read_dir(&foreign).unwrap().count(), 0, "wrote into it");
    }

    let link = dir.join("link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    let (_, problem, _) = refusal(RecordingConfig::new(&out).repository(&link));
    assert_eq!(problem, RepositoryProblem::SymbolicLink);
    assert!(!out.exists());

    // A refused start leaves nothing claimed: a private repository works.
    fs::set_permissions(&open, fs::Permissions::from_mode(0o700)).unwrap();
    let rec = Recording::start(RecordingConfig::new(&out).repository(&open)).unwrap();
    Tick { n: 1 }.commit();
    rec.stop().unwrap();
    assert_eq!(
        flightrec_testkit::summary(&out).counts.get("test.Tick"),
        Some(&1)
    );
}

#[test]
fn a_symlink_at_the_destination_is_replaced_and_created_files_are_private() {
    const N: u64 = 1000;
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("hostile_dest");
    let precious = dir.join("precious");
    fs::write(&precious, b"not yours to overwrite").unwrap();
    let dest = dir.join("out.jfr");
    let dump = dir.join("dump.jfr");
    std::os::unix::fs::symlink(&precious, &dest).unwrap();
    std::os::unix::fs::symlink(&precious, &dump).unwrap();

    let rec = Recording::start(RecordingConfig::new(&dest)).unwrap();
    let repo = rec.repository().to_path_buf();
    let name = repo.file_name().unwrap().to_str().unwrap().to_owned();
    let prefix = format!("flightrec-{}-", std::process::id());
    assert!(
        name.starts_with(&prefix) && name.len() == prefix.len() + 6,
        "default repository {name} is not mkdtemp-named"
    );
    assert_eq!(mode(&repo), 0o700);
    for n in 0..N {
        Tick { n }.commit();
    }
    rec.dump(&dump).unwrap();
    let chunks: Vec<PathBuf> = fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(chunks.len(), 2, "the dumped chunk and the current one");
    for c in &chunks {
        assert_eq!(mode(c), 0o600, "{}", c.display());
    }
    rec.stop().unwrap();

    assert_eq!(fs::read(&precious).unwrap(), b"not yours to overwrite");
    for f in [&dest, &dump] {
        let meta = fs::symlink_metadata(f).unwrap();
        assert!(
            meta.file_type().is_file(),
            "{} is not a regular file",
            f.display()
        );
        assert_eq!(mode(f), 0o600, "{}", f.display());
        let s = flightrec_testkit::summary(f);
        assert_eq!(s.counts.get("test.Tick"), Some(&N), "{}", f.display());
    }
    assert!(
        !repo.exists(),
        "a clean stop removes the default repository"
    );
}

/// Exact event counts per type, as `jfr summary` gives them.
fn counts(path: &Path) -> BTreeMap<String, u64> {
    flightrec_testkit::summary(path).nonzero_counts()
}

#[test]
fn assemble_skips_a_corrupt_chunk_and_ignores_foreign_files() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("hostile_assemble");
    let repo = dir.join("repo");
    let rec = Recording::start(RecordingConfig::repository_only().repository(&repo)).unwrap();
    let mut n = 0;
    for per_chunk in [100, 200, 300] {
        for _ in 0..per_chunk {
            Tick { n }.commit();
            n += 1;
        }
        if per_chunk != 300 {
            rec.rotate().unwrap();
        }
    }
    rec.stop().unwrap();
    let mut chunks: Vec<PathBuf> = fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    chunks.sort();
    assert_eq!(
        chunks.len(),
        3,
        "a repository-only recording keeps its chunks"
    );
    let per_chunk: Vec<_> = chunks.iter().map(|c| counts(c)).collect();
    let ticks: Vec<_> = per_chunk.iter().map(|c| c["test.Tick"]).collect();
    assert_eq!(ticks, [100, 200, 300]);

    // The middle chunk's first records are overwritten.
    let mut bytes = fs::read(&chunks[1]).unwrap();
    bytes[68..68 + 64].fill(0xff);
    fs::write(&chunks[1], &bytes).unwrap();
    assert!(read_recording(&bytes).is_err());
    // Foreign files: a valid recording under another name, a file with a
    // chunk's name that is no chunk, and a link to a chunk.
    let dropped = repo.join("dropped.jfr");
    fs::copy(&chunks[0], &dropped).unwrap();
    let impostor = repo.join("2020_01_01_00_00_00_000000000_1.jfr");
    fs::write(
        &impostor,
        b"this is not a chunk at all, but long enough to have a header; really",
    )
    .unwrap();
    let link = repo.join("2020_01_01_00_00_00_000000001_1.jfr");
    std::os::unix::fs::symlink(&chunks[2], &link).unwrap();

    let out = dir.join("assembled.jfr");
    let done = recorder::assemble(&repo, &out).unwrap();
    assert_eq!(done.chunks, 2);
    assert_eq!(done.skipped.len(), 1, "{:?}", done.skipped);
    assert_eq!(done.skipped[0].path, chunks[1]);
    assert!(
        matches!(done.skipped[0].reason, SkipReason::Corrupt(_)),
        "{}",
        done.skipped[0]
    );
    let mut ignored = done.ignored.clone();
    ignored.sort();
    let mut expected = vec![dropped, impostor, link];
    expected.sort();
    assert_eq!(ignored, expected);
    assert_eq!(mode(&out), 0o600);
    assert_eq!(done.bytes, fs::metadata(&out).unwrap().len());

    let jdk = flightrec_testkit::summary(&out);
    assert_eq!(jdk.chunks, 2);
    let mut want = per_chunk[0].clone();
    for (k, v) in &per_chunk[2] {
        *want.entry(k.clone()).or_default() += v;
    }
    assert_eq!(jdk.nonzero_counts(), want);
    assert_eq!(want["test.Tick"], 400);

    // A directory with no usable chunk gives an error and no file.
    let empty = dir.join("nothing");
    fs::create_dir(&empty).unwrap();
    fs::copy(&chunks[1], empty.join(chunks[1].file_name().unwrap())).unwrap();
    let none = dir.join("none.jfr");
    match recorder::assemble(&empty, &none) {
        Err(recorder::AssembleError::NoChunks { skipped, .. }) => assert_eq!(skipped.len(), 1),
        other => panic!("{other:?}"),
    }
    assert!(!none.exists());
}
