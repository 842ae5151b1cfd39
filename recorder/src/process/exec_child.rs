//! Processes that inherit `FLIGHTREC` (children a program starts with its
//! environment, e.g. under `LD_PRELOAD=libflightrec.so`): by default they
//! run bare; with `children=true` each records into a file of its own
//! instead of overwriting its ancestor's.
//!
//! Policy: the process whose constructor first sees `FLIGHTREC` records
//! itself and is named in `FLIGHTREC_ROOT_PID` (its pid; the variable is
//! added to its environment before `main`, nothing else of it is changed).
//! A program that `exec`s keeps its pid, so every image the root process
//! `exec`s in place records too, and its last image writes the plain
//! `filename`. (A default repository an earlier image left at its `exec`
//! is removed by the next image: see `stale.rs`.) A process that finds that
//! variable naming another pid is a descendant:
//!
//! * without `children=true` (the default) its constructor starts nothing
//!   and prints nothing: no recorder thread, no repository, no file, no
//!   line on stderr. The library stays loaded (it is in the inherited
//!   `LD_PRELOAD`, which is left alone so that the root's own `exec`s
//!   still record), and its interposers pass every call through.
//! * with `children=true`, unless its `filename` already holds `%p`, `-%p`
//!   goes before the file's extension (`app.jfr` becomes `app-<pid>.jfr`),
//!   so each descendant writes its own file.
//!
//! Invariant: only the constructor, before `main` and so before any thread
//! of the host can read the environment, adds the variable; a descendant
//! records only if asked to, and then its file name holds its own pid.

use std::path::{Path, PathBuf};

/// The variable naming the process that first started recording from
/// `FLIGHTREC` in this process tree.
pub(crate) const ROOT_VAR: &str = "FLIGHTREC_ROOT_PID";

/// Names this process the root unless an ancestor already is.
///
/// # Safety
///
/// Must run before any other thread can read or write the environment
/// (the `.init_array` constructor, before `main`).
pub(crate) unsafe fn mark_root() {
    if std::env::var_os(ROOT_VAR).is_none() {
        // SAFETY: the caller guarantees no other thread touches the
        // environment now.
        unsafe { std::env::set_var(ROOT_VAR, std::process::id().to_string()) };
    }
}

/// Whether this process inherited `FLIGHTREC` from another (its root's
/// pid is in [`ROOT_VAR`] and is not its own).
pub(crate) fn descendant() -> bool {
    std::env::var(ROOT_VAR)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .is_some_and(|root| root != std::process::id())
}

/// `filename` for this process: with `-%p` before its extension when this
/// process is a descendant and the name has no `%p` of its own.
pub(crate) fn own_filename(filename: &Path) -> PathBuf {
    if descendant() {
        with_pid_marker(filename)
    } else {
        filename.to_owned()
    }
}

/// `a/app.jfr` to `a/app-%p.jfr` (`app` to `app-%p`); unchanged if the
/// name already holds `%p` or is not UTF-8.
fn with_pid_marker(filename: &Path) -> PathBuf {
    let Some(name) = filename.file_name().and_then(|n| n.to_str()) else {
        return filename.to_owned();
    };
    if filename.to_str().is_some_and(|f| f.contains("%p")) {
        return filename.to_owned();
    }
    let marked = match name.rfind('.').filter(|&i| i > 0) {
        Some(i) => format!("{}-%p{}", &name[..i], &name[i..]),
        None => format!("{name}-%p"),
    };
    filename.with_file_name(marked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descendant_gets_its_pid_before_the_extension() {
        let m = |p: &str| with_pid_marker(Path::new(p));
        assert_eq!(m("/tmp/app.jfr"), Path::new("/tmp/app-%p.jfr"));
        assert_eq!(m("app"), Path::new("app-%p"));
        assert_eq!(m("/t/.hidden"), Path::new("/t/.hidden-%p"));
        assert_eq!(m("/t/a.b.jfr"), Path::new("/t/a.b-%p.jfr"));
        assert_eq!(m("/t/x-%p.jfr"), Path::new("/t/x-%p.jfr"));
        assert_eq!(m("/t/%p/x.jfr"), Path::new("/t/%p/x.jfr"));
    }
}
