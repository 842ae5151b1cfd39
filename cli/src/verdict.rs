//! What `flightrec record`'s run recorded, read from the recorder's own
//! report (`report=PATH` in `FLIGHTREC`, a file in a private directory
//! made for this run), never from what lies at the output path: a file
//! there may be an earlier run's, or another user's that the recorder
//! refused.
//!
//! # The report
//!
//! Each recorder that starts appends `started`, then `written` once its
//! file is renamed into place, or `failed` with its reason (the lines are
//! described in the recorder's `process/report.rs`). The program's pid
//! keeps every image it `exec`s in place, so the last of that pid's
//! lines says how it ended: `written` (the file is this run's), `failed`,
//! `started` (the image never finished: it called `_exit` or was replaced
//! by one that does not record), or no line at all (no recorder ran in
//! it). Lines of other pids are descendants' (with `--children`).
//!
//! Invariant: [`Verdict::Written`] is given only for a file a recorder of
//! this run reported written.

use std::path::{Path, PathBuf};

use crate::elf::{self, Linkage};
use crate::record::Ended;

/// How one process's recording ended, by its report lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// This run's recorder wrote the file.
    Written(PathBuf),
    /// The recorder refused the destination at its start.
    Refused(String),
    /// The recorder failed to start, or to write the file at the stop.
    Failed(String),
    /// The recorder started, keeping chunks in the repository, and never
    /// wrote the file.
    Unfinished {
        /// Where its chunks are.
        repository: PathBuf,
    },
    /// No recorder ever ran in the process.
    NeverStarted,
}

/// The report of one run: each pid's verdict, in the order first seen.
#[derive(Debug, Default)]
pub struct Report {
    by_pid: Vec<(u32, Verdict)>,
}

impl Report {
    /// Parses the report's text; lines it does not know are skipped.
    pub fn parse(text: &str) -> Self {
        let mut report = Self::default();
        for line in text.lines() {
            let mut f = line.splitn(4, '\t');
            let (Some(kind), Some(pid)) = (f.next(), f.next().and_then(|p| p.parse().ok())) else {
                continue;
            };
            let verdict = match (kind, f.next(), f.next()) {
                ("started", Some(repository), _) => Verdict::Unfinished {
                    repository: repository.into(),
                },
                ("written", Some(file), None) => Verdict::Written(file.into()),
                // A path holding a tab was split: join it back.
                ("written", Some(a), Some(b)) => Verdict::Written(format!("{a}\t{b}").into()),
                ("failed", Some("destination"), Some(m)) => Verdict::Refused(m.to_owned()),
                ("failed", Some(_), Some(m)) => Verdict::Failed(m.to_owned()),
                _ => continue,
            };
            match report.by_pid.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, v)) => *v = verdict,
                None => report.by_pid.push((pid, verdict)),
            }
        }
        report
    }

    /// How the recording of process `pid` ended.
    pub fn of(&self, pid: u32) -> Verdict {
        self.by_pid
            .iter()
            .find(|(p, _)| *p == pid)
            .map_or(Verdict::NeverStarted, |(_, v)| v.clone())
    }

    /// The verdicts of every process but `root`, in the order first seen.
    pub fn others(&self, root: u32) -> impl Iterator<Item = &Verdict> {
        self.by_pid
            .iter()
            .filter(move |(p, _)| *p != root)
            .map(|(_, v)| v)
    }
}

/// Why the loader would run `exe` in secure mode (`AT_SECURE`), which
/// drops `LD_PRELOAD`: a set-user-ID or set-group-ID bit that changes this
/// process's ids, or file capabilities (for a user other than root). For
/// a script, its interpreter is inspected too (the kernel ignores those
/// bits on scripts), and a statically linked interpreter is named.
pub fn why_not_loaded(exe: &Path) -> Option<String> {
    if let Some(why) = secure_mode(exe) {
        return Some(format!("{} {why}", exe.display()));
    }
    let interp = interpreter(exe)?;
    if let Some(why) = secure_mode(&interp) {
        return Some(format!("its interpreter {} {why}", interp.display()));
    }
    match elf::inspect(&interp) {
        Ok(Linkage::Static) => Some(format!(
            "its interpreter {} is statically linked, so no library can be preloaded into it",
            interp.display()
        )),
        _ => None,
    }
}

fn secure_mode(exe: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(exe).ok()?;
    // SAFETY: getuid and getgid have no preconditions and cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let mode = meta.mode();
    if mode & libc::S_ISUID != 0 && meta.uid() != uid {
        return Some(format!(
            "is setuid (it runs as uid {}, you are uid {uid}), so the loader starts it in \
             secure mode and drops LD_PRELOAD",
            meta.uid()
        ));
    }
    if mode & libc::S_ISGID != 0 && meta.gid() != gid {
        return Some(format!(
            "is setgid (it runs as gid {}, yours is {gid}), so the loader starts it in secure \
             mode and drops LD_PRELOAD",
            meta.gid()
        ));
    }
    if uid != 0 && has_capabilities(exe) {
        return Some(
            "has file capabilities (security.capability), so the loader starts it in secure \
             mode and drops LD_PRELOAD"
                .to_owned(),
        );
    }
    None
}

fn has_capabilities(exe: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(exe.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: both strings are NUL-terminated and outlive the call; a
    // zero-sized query writes nothing.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            c"security.capability".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n > 0
}

/// The interpreter a `#!` script names.
fn interpreter(exe: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(exe).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let text = std::str::from_utf8(line).ok()?;
    text.split_whitespace().next().map(PathBuf::from)
}

/// The lines `flightrec record` ends with: one per group of descendants
/// (with `--children`), then one for the program, last.
pub fn lines(
    report: &Report,
    root: u32,
    ended: Ended,
    exe: &Path,
    asked: &Path,
    children: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    if children {
        out.extend(descendant_lines(report, root));
    }
    out.push(match report.of(root) {
        Verdict::Written(file) => format!("recording written to {}", file.display()),
        Verdict::Refused(why) => format!(
            "nothing recorded: the recorder refused the output: {}; choose another -o \
             (a new file, or one of yours)",
            why.trim_start_matches("FLIGHTREC: ")
        ),
        Verdict::Failed(why) => format!(
            "nothing recorded: {}",
            why.trim_start_matches("FLIGHTREC: ")
        ),
        Verdict::Unfinished { repository } => unfinished(ended, &repository, asked),
        Verdict::NeverStarted => match why_not_loaded(exe) {
            Some(why) => format!(
                "nothing recorded: {why}: run it as the user it runs as, or link \
                 libflightrec.a into it and set FLIGHTREC"
            ),
            None => format!(
                "nothing recorded: no recorder ran in {}: libflightrec.so was not loaded into it",
                exe.display()
            ),
        },
    });
    out
}

fn unfinished(ended: Ended, repository: &Path, asked: &Path) -> String {
    let why = match ended {
        Ended::Signaled(s) => format!("the program was killed by signal {s} before its recorder"),
        Ended::Exited(_) => "the program left without running its exit handlers (it called \
             `_exit`, as /bin/sh (dash) does when a script ends) or replaced itself by `exec` \
             with a program that does not record (its environment cleared, statically linked, \
             setuid), before its recorder"
            .to_owned(),
    };
    format!(
        "nothing recorded at {}: {why} wrote the file; the chunks it flushed are kept in {}: \
         `flightrec assemble {} -o {}` recovers them",
        asked.display(),
        repository.display(),
        repository.display(),
        asked.display()
    )
}

/// With `--children`: how many descendants wrote their files, and how
/// many did not.
fn descendant_lines(report: &Report, root: u32) -> Vec<String> {
    let (mut written, mut not) = (Vec::new(), 0usize);
    for v in report.others(root) {
        match v {
            Verdict::Written(f) => written.push(f.clone()),
            _ => not += 1,
        }
    }
    let mut out = Vec::new();
    if let Some(first) = written.first() {
        out.push(format!(
            "{} recordings of descendants written beside it (the first: {})",
            written.len(),
            first.display()
        ));
    }
    if not > 0 {
        out.push(format!(
            "{not} descendants started recording and wrote no file (they called `_exit`, were \
             killed or replaced by a program that does not record)"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_a_pid_is_its_verdict() {
        let r = Report::parse(
            "started\t7\t/t/r1\t/o/a.jfr\n\
             started\t7\t/t/r2\t/o/a.jfr\n\
             written\t7\t/o/a.jfr\n\
             started\t9\t/t/r3\t/o/a-9.jfr\n\
             failed\t11\tdestination\tnot yours\n\
             nonsense\n",
        );
        assert_eq!(r.of(7), Verdict::Written("/o/a.jfr".into()));
        assert_eq!(
            r.of(9),
            Verdict::Unfinished {
                repository: "/t/r3".into()
            }
        );
        assert_eq!(r.of(11), Verdict::Refused("not yours".into()));
        assert_eq!(r.of(12), Verdict::NeverStarted);
        assert_eq!(r.others(7).count(), 2);
        let again = Report::parse("written\t7\t/o/a.jfr\nstarted\t7\t/t/r\t/o/a.jfr\n");
        assert!(matches!(again.of(7), Verdict::Unfinished { .. }));
    }
}
