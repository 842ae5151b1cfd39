//! Compiling C and C++ programs against the C ABI's libraries with the
//! system compiler, and running them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::paths::{capi_dir, lib_dir};

/// How a test program links flightrec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    /// `-lflightrec` with an rpath to `target/<profile>`.
    Shared,
    /// `libflightrec.a` and the native libraries it needs
    /// (`cargo rustc -- --print native-static-libs`).
    Static,
    /// Not at all.
    None,
    /// Not at all, but with `-lpthread` (a program that links the C
    /// library's thread library itself).
    PthreadOnly,
}

/// Compiles `source` (C, or C++17 for `.cpp`) into `out` and returns it.
pub(crate) fn compile(source: &Path, out: &Path, link: Link) -> PathBuf {
    let cpp = source.extension().is_some_and(|e| e == "cpp");
    let lib = lib_dir();
    let mut cmd = Command::new(if cpp { "c++" } else { "cc" });
    if cpp {
        cmd.arg("-std=c++17");
    }
    cmd.args(["-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(capi_dir().join("include"))
        .arg(source)
        .arg("-o")
        .arg(out);
    match link {
        Link::Shared => {
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lflightrec")
                .arg(format!("-Wl,-rpath,{}", lib.display()))
                .arg("-lpthread");
        }
        Link::Static => {
            cmd.arg(lib.join("libflightrec.a")).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
        Link::None => {}
        Link::PthreadOnly => {
            cmd.arg("-lpthread");
        }
    }
    let run = cmd.output().expect("run the system compiler");
    assert!(
        run.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out.to_owned()
}

/// Runs `cmd`, asserting it succeeded.
pub(crate) fn run_ok(cmd: &mut Command) -> Output {
    let run = cmd.output().expect("run the program");
    assert!(
        run.status.success(),
        "{cmd:?} failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    run
}

/// The samples per method of `jfr view cpu-time-hot-methods`, in order.
#[allow(unused_imports)] // not every test binary reads a view
pub(crate) use flightrec_testkit::view_rows as hot_methods;
