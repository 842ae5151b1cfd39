//! Only `recorder/src/base/sync.rs` names the synchronisation primitives.
//!
//! The runtime's atomics, locks, `Arc`s, init-once cells, thread-locals and
//! scheduler calls go through `crate::sync`, which swaps them for loom's twins
//! under `cfg(flightrec_loom)` (or through `crate::sync::global`, std's in
//! both builds, for statics and the features no model drives); a primitive
//! named anywhere else escapes the loom models. Clippy's `disallowed_types` cannot express "only in this
//! file": it resolves `crate::sync::AtomicU64` to the std type it re-exports
//! and would flag every use. So this test reads every file of `recorder/src`
//! as Rust tokens (comments and string literals are not code; formatting and
//! line breaks do not matter) and expands every path, including the nested
//! groups of `use` trees and the bodies of macros, then rejects:
//!
//! - any path through `std::sync`, `core::sync` or `alloc::sync` (atomics,
//!   `Mutex`, `Arc`, `Once`, `OnceLock`, `mpsc`, ... and the modules
//!   themselves, also as globs or renamed);
//! - any path rooted at `arc_swap`, `loom` or `parking_lot`;
//! - `thread_local`, `yield_now`, `available_parallelism`, `OnceLock`,
//!   `LazyLock`, `Once` and `ArcSwap` reached through any module but `sync`
//!   (`thread::yield_now()` after `use std::thread;` is caught), and
//!   `thread_local!` without a path (std's prelude macro): write
//!   `crate::sync::thread_local!`;
//! - `use std::thread::*`, and `std`, `core` or `alloc` renamed with `as`.
//!
//! The negative controls below show each of those forms is caught.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Names that only `sync` may hand out, wherever they come from.
const ONLY_THROUGH_SYNC: &[&str] = &[
    "thread_local",
    "yield_now",
    "available_parallelism",
    "OnceLock",
    "LazyLock",
    "Once",
    "ArcSwap",
];

/// The standard library's roots.
const STD_ROOTS: &[&str] = &["std", "core", "alloc"];

/// Crates only `sync` may name.
const CRATES_ONLY_IN_SYNC: &[&str] = &["arc_swap", "loom", "parking_lot"];

/// Keywords that may stand before a path (`use ::std::..`, `pub`, `static`)
/// but are never a segment of one.
const KEYWORDS: &[&str] = &[
    "use", "pub", "static", "const", "fn", "let", "mut", "ref", "struct", "enum", "union", "type",
    "trait", "impl", "for", "where", "mod", "extern", "unsafe", "as", "in", "dyn", "move",
    "return", "if", "else", "match", "while", "loop", "break", "continue", "async", "await",
];

/// One expanded path: its segments (`*` for a glob), whether it is renamed
/// with `as`, and its line.
#[derive(Debug)]
struct PathUse {
    segments: Vec<String>,
    renamed: bool,
    line: usize,
}

/// Whether `tokens[i]` and `tokens[i + 1]` are `::`.
fn is_path_sep(tokens: &[TokenTree], i: usize) -> bool {
    matches!(
        (tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// Whether `tokens[i]` is the identifier `word`.
fn is_ident(tokens: &[TokenTree], i: usize, word: &str) -> bool {
    matches!(tokens.get(i), Some(TokenTree::Ident(id)) if id == word)
}

/// Reads the path starting at `tokens[i]` (after an optional leading `::`)
/// with `prefix` before it; pushes every expanded path to `out` and returns
/// the index after it.
fn read_path(
    tokens: &[TokenTree],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<PathUse>,
) -> usize {
    let mut segments = prefix.to_vec();
    let mut line = 0;
    if is_path_sep(tokens, i) {
        i += 2;
    }
    loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(id)) => {
                line = id.span().start().line;
                segments.push(id.to_string());
                i += 1;
            }
            Some(TokenTree::Punct(p)) if p.as_char() == '*' => {
                line = p.span().start().line;
                segments.push("*".into());
                i += 1;
            }
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                // A `use` group: each comma-separated subtree under `segments`.
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let mut j = 0;
                while j < inner.len() {
                    if matches!(&inner[j], TokenTree::Punct(p) if p.as_char() == ',') {
                        j += 1;
                        continue;
                    }
                    let mut next = read_path(&inner, j, &segments, out);
                    if is_ident(&inner, next, "as") {
                        next += 2; // the new name is not a path
                    }
                    j = next.max(j + 1);
                }
                return i + 1;
            }
            _ => break,
        }
        if is_path_sep(tokens, i) {
            i += 2;
        } else {
            break;
        }
    }
    if segments.len() > prefix.len() {
        let renamed = is_ident(tokens, i, "as");
        out.push(PathUse {
            segments,
            renamed,
            line,
        });
    }
    i
}

/// Every path in `tokens`, recursing into groups (macro bodies included).
fn collect_paths(tokens: &[TokenTree], out: &mut Vec<PathUse>) {
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Ident(id) if KEYWORDS.contains(&id.to_string().as_str()) => i += 1,
            TokenTree::Ident(_) => i = read_path(tokens, i, &[], out),
            TokenTree::Punct(_) if is_path_sep(tokens, i) => i = read_path(tokens, i, &[], out),
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                collect_paths(&inner, out);
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// What is wrong with `path`, if anything.
fn violation(path: &PathUse) -> Option<String> {
    let s = &path.segments;
    let joined = s.join("::");
    for w in s.windows(2) {
        if STD_ROOTS.contains(&w[0].as_str()) && w[1] == "sync" {
            return Some(format!(
                "`{joined}`: {}::sync outside recorder/src/base/sync.rs",
                w[0]
            ));
        }
    }
    if CRATES_ONLY_IN_SYNC.contains(&s[0].as_str()) {
        return Some(format!(
            "`{joined}`: the `{}` crate outside recorder/src/base/sync.rs",
            s[0]
        ));
    }
    if s.len() == 1 && STD_ROOTS.contains(&s[0].as_str()) && path.renamed {
        return Some(format!("`{joined} as ..`: the standard library renamed"));
    }
    if s.len() >= 3 && STD_ROOTS.contains(&s[0].as_str()) && s[1] == "thread" && s[2] == "*" {
        return Some(format!(
            "`{joined}`: a glob of std::thread (yield_now, available_parallelism)"
        ));
    }
    for (k, seg) in s.iter().enumerate() {
        if !ONLY_THROUGH_SYNC.contains(&seg.as_str()) {
            continue;
        }
        match k.checked_sub(1).map(|p| s[p].as_str()) {
            Some("sync") => {}
            // `sync::global`: std's twins for statics and features.
            Some("global") if k >= 2 && s[k - 2] == "sync" => {}
            Some(module) => {
                return Some(format!(
                    "`{joined}`: `{seg}` through `{module}`, not `crate::sync`"
                ));
            }
            None if seg == "thread_local" => {
                return Some(format!(
                    "`{joined}`: std's prelude `thread_local!`; write `crate::sync::thread_local!`"
                ));
            }
            None => {}
        }
    }
    None
}

/// The violations in one file's text, as `line: message`.
fn check_source(text: &str) -> Result<Vec<String>, String> {
    let stream = TokenStream::from_str(text).map_err(|e| format!("not Rust tokens: {e}"))?;
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut paths = Vec::new();
    collect_paths(&tokens, &mut paths);
    Ok(paths
        .iter()
        .filter_map(|p| violation(p).map(|m| format!("{}: {m}", p.line)))
        .collect())
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_sync_names_the_primitives() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 50,
        "found only {} files under {}",
        files.len(),
        src.display()
    );
    let sync = src.join("base").join("sync.rs");
    assert!(
        files.contains(&sync),
        "recorder/src/base/sync.rs is missing"
    );
    let mut found = Vec::new();
    for file in files.iter().filter(|f| **f != sync) {
        let text = std::fs::read_to_string(file).expect("read a source file");
        let rel = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(file)
            .display()
            .to_string();
        match check_source(&text) {
            Ok(v) => found.extend(v.into_iter().map(|m| format!("recorder/{rel}:{m}"))),
            Err(e) => found.push(format!("recorder/{rel}: {e}")),
        }
    }
    assert!(
        found.is_empty(),
        "synchronisation named outside recorder/src/base/sync.rs (route it through crate::base::sync):\n  {}",
        found.join("\n  ")
    );
}

/// Negative controls: each form the check exists for is caught.
#[test]
fn check_catches_each_form() {
    let bad = [
        "use std::sync::atomic::AtomicU64;",
        "static A: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);",
        "fn f() { let a = std::sync::atomic::AtomicBool::new(false); }",
        "use std::sync::{Arc, Mutex};",
        "use std::{\n    collections::HashMap,\n    sync::{\n        atomic::{AtomicU64, Ordering},\n    },\n};",
        "use std :: sync\n  :: Arc ;",
        "use ::std::sync::Mutex;",
        "use core::sync::atomic::AtomicU64;",
        "use alloc::sync::Arc;",
        "use std::sync::atomic::*;",
        "use std::sync;",
        "use std::sync as s;",
        "thread_local! { static A: u8 = 0; }",
        "std::thread_local! { static A: u8 = 0; }",
        "use std::thread_local;",
        "fn f() { std::thread::yield_now(); }",
        "use std::thread; fn f() { thread::yield_now(); }",
        "use std::thread::{self, yield_now};",
        "use std::thread::*;",
        "fn f() -> usize { std::thread::available_parallelism().map_or(1, |n| n.get()) }",
        "static C: std::sync::OnceLock<u8> = std::sync::OnceLock::new();",
        "static O: std::sync::Once = std::sync::Once::new();",
        "use arc_swap::ArcSwap;",
        "struct S { a: ::arc_swap::ArcSwap<u8> }",
        "use loom::sync::Arc;",
        "use std as s;",
        "extern crate std as s2;",
        "use ::arc_swap::ArcSwap;",
        "use ::{std::sync::Arc};",
        "use crate::sync::{yield_now as y, Arc}; use std::thread::{yield_now as z};",
        "macro_rules! m { () => { std::sync::Arc::new(1) } }",
        "fn f() { let (tx, rx) = std::sync::mpsc::channel::<()>(); }",
        "crate::other::global::thread_local! { static A: u8 = 0; }",
    ];
    for text in bad {
        let found = check_source(text).expect("test snippets are Rust tokens");
        assert!(!found.is_empty(), "not caught: {text}");
    }
    let good = [
        "use crate::sync::{Arc, AtomicU64, Mutex, OnceLock, Ordering};",
        "use crate::sync::{self, thread_local};",
        "crate::sync::thread_local! { static A: u8 = 0; }",
        "static O: crate::sync::Once = crate::sync::Once::new(); fn f() { sync::yield_now(); }",
        "use super::sync::AtomicBool; static B: AtomicBool = AtomicBool::new(false);",
        "use std::thread; fn f() { thread::spawn(|| ()); thread::sleep(D); }",
        "// std::sync::Arc in a comment\n/// and `std::thread::yield_now()` in a doc\nfn f() -> &'static str { \"std::sync::Mutex\" }",
        "use std::cell::Cell; use std::collections::HashMap;",
        "crate::base::sync::global::thread_local! { static A: u8 = 0; }",
        "use crate::base::sync::global::{AtomicU64, Mutex};",
    ];
    for text in good {
        let found = check_source(text).expect("test snippets are Rust tokens");
        assert!(found.is_empty(), "flagged wrongly: {text}: {found:?}");
    }
}

/// The reported line is the offending path's.
#[test]
fn check_names_the_line() {
    let found =
        check_source("use crate::sync::Arc;\n\nfn f() {\n    std::thread::yield_now();\n}\n")
            .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("4: "), "{found:?}");
}
