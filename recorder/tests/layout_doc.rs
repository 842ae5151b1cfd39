//! `docs/architecture.md`'s folder table matches `recorder/src`: every
//! folder that holds source files has a row, every row names a folder that
//! exists, and each row's file list is exactly the folder's files (without
//! `mod.rs`). A file added, moved or removed without the table fails here.
//!
//! The rows are the lines `| folder | files | what it holds |` between the
//! table's header and the next blank line; the folder is written
//! `` `name/` `` (or `crate root`) and the files as a comma-separated list of
//! names without `.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Folder (relative to `recorder/src`, `""` for the root) → its files.
type Layout = BTreeMap<String, BTreeSet<String>>;

fn tree(src: &Path) -> Layout {
    let mut out = Layout::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                let rel = dir
                    .strip_prefix(src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let files = out.entry(rel).or_default();
                if stem != "mod" {
                    files.insert(stem);
                }
            }
        }
    }
    out
}

/// The table's rows, or why they cannot be read.
fn table(doc: &str) -> Result<Layout, String> {
    let start = doc
        .lines()
        .position(|l| l.starts_with("| folder | files |"))
        .ok_or("no `| folder | files |` table")?;
    let mut out = Layout::new();
    for line in doc.lines().skip(start + 2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (folder, files) = match cells.as_slice() {
            ["", folder, files, _, ""] => (*folder, *files),
            _ => return Err(format!("a row without three cells: {line}")),
        };
        let folder = if folder == "crate root" {
            String::new()
        } else {
            folder
                .strip_prefix('`')
                .and_then(|f| f.strip_suffix("/`"))
                .ok_or_else(|| format!("a folder not written `name/`: {folder}"))?
                .to_owned()
        };
        let names: BTreeSet<String> = files.split(',').map(|f| f.trim().to_owned()).collect();
        if out.insert(folder.clone(), names).is_some() {
            return Err(format!("two rows for `{folder}/`"));
        }
    }
    Ok(out)
}

/// What differs between the table and the tree, one line per difference.
fn differences(doc: &Layout, tree: &Layout) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, files) in tree {
        let Some(listed) = doc.get(folder) else {
            out.push(format!("`{folder}/` has no row"));
            continue;
        };
        for f in files.difference(listed) {
            out.push(format!("`{folder}/{f}.rs` is not in its row"));
        }
        for f in listed.difference(files) {
            out.push(format!("`{folder}/` row names `{f}`, which is not there"));
        }
    }
    for folder in doc.keys().filter(|f| !tree.contains_key(*f)) {
        out.push(format!(
            "the row `{folder}/` names no folder with source files"
        ));
    }
    out
}

#[test]
fn the_architecture_table_matches_the_source_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../docs/architecture.md")).unwrap();
    let listed = table(&doc).unwrap();
    let found = tree(&root.join("src"));
    assert!(found.len() > 20, "found only {} folders", found.len());
    let diff = differences(&listed, &found);
    assert!(
        diff.is_empty(),
        "docs/architecture.md's folder table and recorder/src differ:\n  {}",
        diff.join("\n  ")
    );
}

#[test]
fn a_missing_file_a_stale_name_and_a_missing_folder_are_each_reported() {
    let doc = "| folder | files | what |\n|---|---|---|\n\
               | crate root | lib | x |\n| `a/` | one, gone | y |\n\n| other | table |\n";
    let listed = table(doc).unwrap();
    let mut found = Layout::new();
    found.insert(String::new(), ["lib".to_owned()].into());
    found.insert("a".into(), ["one".to_owned(), "two".to_owned()].into());
    found.insert("b".into(), ["three".to_owned()].into());
    let diff = differences(&listed, &found);
    assert_eq!(
        diff,
        [
            "`a/two.rs` is not in its row",
            "`a/` row names `gone`, which is not there",
            "`b/` has no row",
        ]
    );
    assert!(table("| folder | files | what |\n|---|---|---|\n| a/ | x | y |\n").is_err());
}

/// The features' module names, as a path segment (`timing::`, `crate::alloc`).
const FEATURES: [&str; 6] = [
    "timing",
    "lock",
    "alloc",
    "pyroscope",
    "periodic",
    "sampler",
];

/// The paths in `text` that name a feature module: `crate::<feature>` or
/// `<feature>::` (not `std::alloc::`, nor a path inside another module
/// such as `sync::lock`).
fn feature_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for f in FEATURES {
            let mut from = 0;
            while let Some(i) = line[from..].find(f).map(|i| i + from) {
                from = i + f.len();
                let before = &line[..i];
                let after = &line[i + f.len()..];
                let word_start = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
                let word_end = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
                if !word_start || !word_end {
                    continue;
                }
                let crate_path = before.ends_with("crate::");
                let other_parent = before.ends_with("::") && !crate_path;
                if crate_path || (after.starts_with("::") && !other_parent) {
                    out.push(format!("{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    out
}

#[test]
fn the_core_names_no_feature() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let core = ["base", "buffer", "epoch", "event", "cpool", "lifecycle"];
    let mut found = Vec::new();
    let mut files = 0;
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let top = rel.split('/').next().unwrap_or("");
            if path.is_dir() {
                if core.contains(&top) {
                    dirs.push(path);
                }
                continue;
            }
            if !(core.contains(&top) || rel == "feature.rs" || rel == "runtime.rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            for hit in feature_paths(&text) {
                found.push(format!("{rel}: {hit}"));
            }
        }
    }
    assert!(files > 40, "only {files} core files found");
    assert!(
        found.is_empty(),
        "core files name a feature:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn feature_paths_are_found_and_std_paths_are_not() {
    let hits = feature_paths(
        "crate::timing::apply();\nuse crate::alloc;\nlet x = sampler::run();\n\
         std::alloc::Layout;\nsync::lock::x;\nlet timing = 3;\n// periodic flush",
    );
    assert_eq!(hits.len(), 3, "{hits:?}");
}

/// Every `mod.rs` under `dir` (not under `target/` or `.git/`) with more
/// than `max` lines, as `path: lines`.
fn long_mod_files(dir: &Path, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                    dirs.push(path);
                }
            } else if name == "mod.rs" {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                if lines > max {
                    out.push(format!("{}: {lines}", path.display()));
                }
            }
        }
    }
    out.sort();
    out
}

/// A `mod.rs` only declares and re-exports (with its folder's docs): none
/// in the workspace is longer than 80 lines.
#[test]
fn no_mod_rs_is_over_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let long = long_mod_files(&root, 80);
    assert!(
        long.is_empty(),
        "mod.rs files over 80 lines:\n  {}",
        long.join("\n  ")
    );
    // The walk sees them: recorder/src alone has more than 15.
    assert!(long_mod_files(&root.join("recorder/src"), 0).len() > 15);
}
