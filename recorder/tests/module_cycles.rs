//! No import loop of more than two files inside `recorder/src`.
//!
//! `scripts/module-cycles.py` reads every file of a source tree, follows
//! each path (`crate::`, `super::`, `self::`, and relative ones through a
//! child module or a `use`d module) to the file of the module it names, and
//! prints the strongly connected components of that graph; with `--max 2`
//! it exits 1 when one has more than two files. This test runs it on
//! `recorder/src`, and (negative controls) on small synthetic trees: a
//! three-file loop must fail, also when it goes through a `mod.rs`
//! re-export (`pub(crate) use inner::X;`) in any of the forms a path to a
//! child module takes; a two-file loop must pass, and a test module's
//! `use super::*` names its own file, not the parent module.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/module-cycles.py")
}

/// Runs the checker with `--max 2` on `src`.
fn check(src: &Path) -> Output {
    Command::new("python3")
        .arg(script())
        .args(["--max", "2"])
        .arg(src)
        .output()
        .expect("python3 runs scripts/module-cycles.py")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A tree under a fresh directory: `(path, contents)` pairs.
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "flightrec-module-cycles-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, body) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
    dir
}

#[test]
fn recorder_src_has_no_import_loop_of_more_than_two_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let out = check(&src);
    assert!(out.status.success(), "{}", text(&out));
    let printed = text(&out);
    assert!(printed.contains("(largest "), "{printed}");
}

#[test]
fn a_three_file_loop_fails() {
    let dir = tree(
        "three",
        &[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "pub struct B(crate::c::C);\n"),
            (
                "c/mod.rs",
                "pub struct C;\nfn f() { let _ = super::a::A; }\n",
            ),
        ],
    );
    let out = check(&dir);
    let printed = text(&out);
    assert_eq!(out.status.code(), Some(1), "{printed}");
    assert!(printed.contains("cycle of 3 files"), "{printed}");
    for f in ["a.rs", "b.rs", "c/mod.rs"] {
        assert!(printed.contains(f), "{f} missing: {printed}");
    }
    assert!(printed.contains("FAIL"), "{printed}");
    let _ = std::fs::remove_dir_all(dir);
}

/// a.rs uses `crate::m::X`; m/mod.rs re-exports (or names) `X` of its
/// child m/inner.rs; m/inner.rs uses `crate::a::A`: a loop of three files
/// that the checker saw as none while it stopped at m/mod.rs. Each form of
/// m/mod.rs's path to its child must close the loop.
#[test]
fn a_three_file_loop_through_a_mod_rs_reexport_fails() {
    let forms = [
        "pub(crate) use inner::X;\n",
        "pub(crate) use self::inner::X;\n",
        "pub(crate) use {inner::X};\n",
        "pub(crate) type X = inner::X;\n",
        "use inner as i;\npub(crate) type X = i::X;\n",
        "use self::inner::{self};\npub(crate) fn x() -> inner::X {\n    inner::X(crate::a::A)\n}\n",
    ];
    for (k, reexport) in forms.iter().enumerate() {
        let body = format!("mod inner;\n{reexport}");
        let dir = tree(
            &format!("reexport{k}"),
            &[
                ("lib.rs", "mod a;\nmod m;\n"),
                ("a.rs", "use crate::m::X;\npub struct A;\n"),
                ("m/mod.rs", &body),
                ("m/inner.rs", "use crate::a::A;\npub struct X(pub A);\n"),
            ],
        );
        let out = check(&dir);
        let printed = text(&out);
        assert_eq!(out.status.code(), Some(1), "{reexport}: {printed}");
        assert!(
            printed.contains("cycle of 3 files"),
            "{reexport}: {printed}"
        );
        for f in ["a.rs", "m/mod.rs", "m/inner.rs"] {
            assert!(printed.contains(f), "{reexport}: {f} missing: {printed}");
        }
        assert!(printed.contains("FAIL"), "{reexport}: {printed}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The same three files where m/mod.rs names nothing of m/inner.rs (it
/// only declares it): no loop, so the checker passes; and a name that is
/// no child module (`std::x`, a local `inner` type's path) adds no edge.
#[test]
fn a_mod_rs_that_only_declares_its_child_closes_no_loop() {
    let dir = tree(
        "declares",
        &[
            ("lib.rs", "mod a;\nmod m;\n"),
            ("a.rs", "use crate::m::X;\npub struct A;\n"),
            (
                "m/mod.rs",
                "mod inner;\npub(crate) struct X;\nfn f() { let _ = std::inner::g(); let _ = v.inner::<u8>(); }\n",
            ),
            ("m/inner.rs", "use crate::a::A;\npub struct Y(pub A);\n"),
        ],
    );
    let out = check(&dir);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains(", 0 import cycles"), "{printed}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_two_file_loop_passes_and_test_modules_name_their_own_file() {
    let dir = tree(
        "two",
        &[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            (
                "a.rs",
                "use crate::b::B;\npub struct A;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            ),
            ("b.rs", "pub struct B(crate::a::A);\n"),
        ],
    );
    let out = check(&dir);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("cycle of 2 files"), "{printed}");
    // `use super::*` inside `mod tests` in a.rs is a.rs itself: lib.rs is
    // in no loop (it would be, a -> lib -> a, if read from a.rs's level).
    assert!(!printed.contains("lib.rs"), "{printed}");
    let _ = std::fs::remove_dir_all(dir);
}
