//! Where the C ABI's libraries and headers are.

use std::path::{Path, PathBuf};

/// `target/<profile>`: the test binary is `target/<profile>/deps/NAME-HASH`,
/// and cargo builds this package's `cdylib` and `staticlib` there before
/// running its tests.
pub(crate) fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .to_owned();
    for lib in ["libflightrec.so", "libflightrec.a"] {
        assert!(
            dir.join(lib).exists(),
            "{} not built: run `cargo test -p flightrec-capi`",
            dir.join(lib).display()
        );
    }
    dir
}

/// The package directory (`capi/`).
pub(crate) fn capi_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
