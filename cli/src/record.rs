//! `flightrec record [OPTIONS] -- CMD [ARGS...]`: records an unmodified,
//! dynamically linked program by running it with `libflightrec.so`
//! preloaded and a `FLIGHTREC` option string built from the flags.
//!
//! # The library
//!
//! `libflightrec.so` is looked for beside the `flightrec` binary (as cargo
//! builds both into `target/release`, and as an install puts them in one
//! `bin/`), then in `../lib/` from it (a `bin/` + `lib/` install). It is
//! not embedded: the binary would then need the C library built before it,
//! which cargo cannot order, and writing a copy to disk at every run
//! would leave copies behind when `flightrec` is killed.
//!
//! # The program
//!
//! `CMD` is found on `PATH` as a shell finds it. An ELF program without a
//! program interpreter (statically linked) is refused before it runs:
//! `LD_PRELOAD` cannot reach it (see [`crate::elf`]); such a program links
//! `libflightrec.a` and sets `FLIGHTREC` itself. The program gets
//! `LD_PRELOAD` (the library first, then any the caller had), `FLIGHTREC`
//! (replacing the caller's; `FLIGHTREC_ROOT_PID` is removed so the program
//! is the root of its own tree of recordings), and otherwise the
//! caller's environment, standard streams and working directory.
//!
//! # Which processes record
//!
//! The program records, and so does every image it `exec`s in place (it
//! keeps its pid; the last one writes the output file). The processes it
//! starts inherit both variables but run bare by default: their recorder
//! starts nothing (no thread, no repository, no file, no line on stderr),
//! so a launcher such as a pyenv shim or a shell script leaves one file,
//! the program's. With `--children` (`children=true`) every descendant
//! that loads the library records too, into the output's name with
//! `-<pid>` before the extension (`app-4212.jfr`); one that clears its
//! environment records nothing.
//!
//! # What was written
//!
//! `flightrec record` makes an empty report file in a `0700` directory of
//! its own and names it in `FLIGHTREC` (`report=PATH`); each recorder
//! appends what it did (see [`crate::verdict`]). "recording written to X"
//! is said only when the program's recorder reported X written: never for
//! a file already there. Otherwise the last line says why nothing was
//! recorded and what to do: the recorder refused the output (another
//! user's file or link), the program left by `_exit` (as dash does) or
//! `exec`ed a program that does not record (then the chunks it flushed
//! are in its repository, and the line gives the `flightrec assemble`
//! command that recovers them), or no recorder ran (a setuid, setgid or
//! file-capability program, which the loader starts in secure mode without
//! `LD_PRELOAD`).
//!
//! # Signals and status
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to `flightrec` are passed on
//! to the program; its recorder writes the file and then ends with the
//! signal, as it would have without recording. A signal the terminal sends
//! (Ctrl-C, Ctrl-\\) reaches the whole foreground process group, the
//! program included, and so is not sent a second time (a second SIGINT
//! would end the program before its file is written). `flightrec` exits
//! with the program's exit status, or 128 + the signal that killed it. Its
//! own failures (bad flags, no library, a program that cannot be run) are
//! one line on standard error and exit status 2.
//!
//! Invariant: the four signals are blocked in `flightrec` from before the
//! program is started (and unblocked in the child before `exec`) until it
//! is reaped, and are taken only by `sigtimedwait`, so none can end
//! `flightrec` and leave the program running unwatched.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::elf::{self, Linkage};
use crate::verdict::{self, Report, Verdict};

/// The flags of `flightrec record`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The recording to write (default `flightrec-<pid>.jfr`, the program's
    /// pid, in the current directory).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Settings: `default`, `profile` (the default: CPU-time samples every
    /// 10 ms, system events) or a settings file (`.jfc` or flightrec's
    /// line format).
    #[arg(long)]
    pub settings: Option<String>,
    /// CPU-time samples (`jdk.CPUTimeSample`) at most this often per
    /// thread (e.g. `10ms`).
    #[arg(long, value_name = "PERIOD")]
    pub cpu_time: Option<String>,
    /// Wall-clock samples of every thread (`jdk.ExecutionSample`) this
    /// often (e.g. `20ms`).
    #[arg(long, value_name = "PERIOD")]
    pub wall: Option<String>,
    /// Allocation samples (`jdk.ObjectAllocationSample`), from programs
    /// whose allocator is flightrec's `SamplingAllocator` (a C program's
    /// `malloc` is not seen).
    #[arg(long)]
    pub alloc: bool,
    /// Lock waits (`jdk.JavaMonitorEnter`, `jdk.ThreadPark`), from
    /// programs that use flightrec's `lock` wrappers (a C program's
    /// `pthread_mutex` is not seen).
    #[arg(long)]
    pub lock: bool,
    /// Stop recording (and write the file) after this long (e.g. `30s`);
    /// the program runs on.
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Keep at most this much recorded data on disk (e.g. `100m`): older
    /// chunks are dropped.
    #[arg(long, value_name = "S")]
    pub max_size: Option<String>,
    /// Answer `jcmd` (`flightrec jcmd PID ...`) while the program runs.
    #[arg(long)]
    pub attach: bool,
    /// Record every descendant too, each into the output's name with
    /// `-<pid>` before the extension (`app-4212.jfr`). Without it only the
    /// program records (and what it `exec`s in place); the processes it
    /// starts run as they would unrecorded.
    #[arg(long)]
    pub children: bool,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

/// Why `flightrec record` did not run the program (exit status 2).
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "record: {}", self.0)
    }
}

impl std::error::Error for Error {}

fn fail<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// This signal killed it.
    Signaled(i32),
}

impl Ended {
    /// The status a shell reports: the exit status, or 128 + the signal.
    pub fn code(self) -> u8 {
        match self {
            Self::Exited(c) => c as u8,
            Self::Signaled(s) => (128 + s) as u8,
        }
    }
}

/// What [`run`] did: how the program ended and what its recorder (and
/// those of its descendants) reported.
#[derive(Debug)]
pub struct Outcome {
    /// How the program ended.
    pub ended: Ended,
    /// The recording file (absolute), if this run's recorder wrote it.
    pub file: Option<PathBuf>,
    /// The file that was asked for (absolute).
    pub asked: PathBuf,
    /// The lines to end with: what was written, or why nothing was, and
    /// what to do (the last is the program's).
    pub lines: Vec<String>,
}

/// The `FLIGHTREC` option string for `args`, writing to `output`
/// (absolute). Checked with the library's own parser, so a bad value is
/// refused here, naming the flag's option, before anything runs.
///
/// # Errors
///
/// A value holds a `,` (the grammar's separator) or the parser refuses it.
pub fn options(args: &Args, output: &Path) -> Result<String, Error> {
    let mut parts: Vec<String> = Vec::new();
    let mut push = |flag: &str, key: &str, value: &str| -> Result<(), Error> {
        if value.contains(',') {
            return fail(format!("{flag} '{value}': a value cannot hold ','"));
        }
        parts.push(format!("{key}={value}"));
        Ok(())
    };
    let Some(out) = output.to_str() else {
        return fail(format!("-o {}: the path is not UTF-8", output.display()));
    };
    push("-o", "filename", out)?;
    let settings = match args.settings.as_deref() {
        None => "profile".to_owned(),
        Some(s @ ("default" | "profile" | "none")) => s.to_owned(),
        Some(file) => std::path::absolute(file)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned))
            .unwrap_or_else(|| file.to_owned()),
    };
    push("--settings", "settings", &settings)?;
    if let Some(p) = &args.cpu_time {
        push("--cpu-time", "jdk.CPUTimeSample#enabled", "true")?;
        push("--cpu-time", "jdk.CPUTimeSample#stackTrace", "true")?;
        push("--cpu-time", "jdk.CPUTimeSample#throttle", p)?;
    }
    if let Some(p) = &args.wall {
        push("--wall", "jdk.ExecutionSample#enabled", "true")?;
        push("--wall", "jdk.ExecutionSample#period", p)?;
    }
    if args.alloc {
        push("--alloc", "jdk.ObjectAllocationSample#enabled", "true")?;
        push("--alloc", "jdk.ObjectAllocationSample#stackTrace", "true")?;
    }
    if args.lock {
        for e in ["jdk.JavaMonitorEnter", "jdk.ThreadPark"] {
            push("--lock", &format!("{e}#enabled"), "true")?;
            push("--lock", &format!("{e}#stackTrace"), "true")?;
        }
    }
    if let Some(d) = &args.duration {
        push("--duration", "duration", d)?;
    }
    if let Some(s) = &args.max_size {
        push("--max-size", "maxsize", s)?;
    }
    if args.attach {
        push("--attach", "attach", "true")?;
    }
    if args.children {
        push("--children", "children", "true")?;
    }
    let text = parts.join(",");
    if let Err(e) = recorder::options::parse(&text) {
        let why = e.to_string();
        return fail(why.trim_start_matches("FLIGHTREC: ").to_owned());
    }
    Ok(text)
}

/// `libflightrec.so` beside the running `flightrec`, or in `../lib/`.
///
/// # Errors
///
/// Neither exists; the message names both places and how to build it.
pub fn find_library() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Error(format!("cannot tell where flightrec is: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let beside = dir.join("libflightrec.so");
    let lib = dir.join("../lib/libflightrec.so");
    for p in [&beside, &lib] {
        if p.is_file() {
            return Ok(p.clone());
        }
    }
    fail(format!(
        "libflightrec.so is neither at {} nor at {}: build it with \
         `cargo build --release -p flightrec-capi` (it goes beside flightrec)",
        beside.display(),
        lib.display()
    ))
}

/// `name` as the shell finds it: as written if it holds a `/`, else the
/// first executable file of that name in `PATH`.
fn resolve(name: &OsStr) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let shown = name.to_string_lossy();
    if name.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        {
            return Ok(candidate);
        }
    }
    fail(format!("{shown}: command not found"))
}

/// Runs the program recorded, forwarding signals, and waits for it.
///
/// # Errors
///
/// The flags are invalid, the library is missing, the program cannot be
/// found, is statically linked, or cannot be started.
pub fn run(args: &Args) -> Result<Outcome, Error> {
    let Some((program, program_args)) = args.command.split_first() else {
        return fail("which program? (flightrec record -- CMD [ARGS...])");
    };
    let exe = resolve(program)?;
    match elf::inspect(&exe) {
        Ok(Linkage::Dynamic | Linkage::NotElf) => {}
        Ok(Linkage::Static) => {
            return fail(format!(
                "{} is statically linked, so no library can be preloaded into it: \
                 link libflightrec.a into it and set FLIGHTREC instead",
                exe.display()
            ));
        }
        Err(e) => return fail(format!("cannot read {}: {e}", exe.display())),
    }
    if std::env::var_os(recorder::options::ENV_VAR).is_some_and(|v| !v.is_empty()) {
        return fail(
            "FLIGHTREC is set here: flightrec record gives the program its own from the flags; \
             unset FLIGHTREC (its options have flags, or use --settings FILE)",
        );
    }
    let library = find_library()?;
    // The pid is the program's: known once it runs. `%p` is expanded by the
    // program's recorder; the name shown at the end is built the same way.
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from("flightrec-%p.jfr"));
    let output =
        std::path::absolute(&output).map_err(|e| Error(format!("-o {}: {e}", output.display())))?;
    let report = ReportFile::create()?;
    let flightrec = format!("{},report={}", options(args, &output)?, report.path_text()?);
    let mut preload = OsString::from(library.as_os_str());
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let mut cmd = Command::new(&exe);
    cmd.arg0(program)
        .args(program_args)
        .env("LD_PRELOAD", preload)
        .env(recorder::options::ENV_VAR, &flightrec)
        .env_remove("FLIGHTREC_ROOT_PID");
    let forwarded = Forwarded::block();
    let unblock = forwarded.set;
    // SAFETY: the closure runs in the forked child before `exec` and only
    // calls `pthread_sigmask`, which is async-signal-safe; `unblock` is a
    // plain copy of the set.
    unsafe {
        cmd.pre_exec(move || {
            // The program starts with the mask `flightrec` had before.
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &unblock, std::ptr::null_mut());
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| Error(format!("cannot run {}: {e}", exe.display())))?;
    let pid = child.id() as libc::pid_t;
    let ended = forwarded.wait_forwarding(pid);
    drop(child);
    let asked = PathBuf::from(output.to_string_lossy().replace("%p", &pid.to_string()));
    // What this run's recorders reported, never what lies at `asked`.
    let report = Report::parse(&report.read());
    let root = pid as u32;
    let file = match report.of(root) {
        Verdict::Written(f) => Some(f),
        _ => None,
    };
    let lines = verdict::lines(&report, root, ended, &exe, &asked, args.children);
    Ok(Outcome {
        ended,
        file,
        asked,
        lines,
    })
}

/// The report file the recorders append to (see [`crate::verdict`]): in
/// a `0700` directory made for this run (`mkdtemp`), created `0600` and
/// empty; both are removed when this is dropped.
struct ReportFile {
    dir: PathBuf,
    file: PathBuf,
}

impl ReportFile {
    fn create() -> Result<Self, Error> {
        use std::os::unix::ffi::OsStringExt;
        use std::os::unix::fs::OpenOptionsExt;
        let mut base = std::env::temp_dir();
        if base.to_str().is_none_or(|b| b.contains(',')) {
            // FLIGHTREC's values cannot hold `,`.
            base = PathBuf::from("/tmp");
        }
        let template = base.join("flightrec-record-XXXXXX");
        let mut bytes = template.into_os_string().into_vec();
        bytes.push(0);
        // SAFETY: `bytes` is a writable NUL-terminated template ending in
        // six `X`s, which mkdtemp replaces in place.
        let made = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if made.is_null() {
            return fail(format!(
                "cannot make a directory in {} for the recorder's report: {}",
                base.display(),
                std::io::Error::last_os_error()
            ));
        }
        bytes.pop();
        let dir = PathBuf::from(OsString::from_vec(bytes));
        let file = dir.join("report");
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file);
        let this = Self { dir, file };
        if let Err(e) = made {
            return fail(format!("cannot create {}: {e}", this.file.display()));
        }
        Ok(this)
    }

    fn path_text(&self) -> Result<&str, Error> {
        match self.file.to_str() {
            Some(p) if !p.contains(',') => Ok(p),
            _ => fail(format!(
                "the report path {} is not UTF-8 or holds ','",
                self.file.display()
            )),
        }
    }

    fn read(&self) -> String {
        std::fs::read(&self.file)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The signals passed on to the program.
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The forwarded signals and SIGCHLD, blocked in this thread (and so in
/// the process: `flightrec` runs no other thread meanwhile) while the
/// program runs.
struct Forwarded {
    set: libc::sigset_t,
}

impl Forwarded {
    fn block() -> Self {
        // SAFETY: an all-zero sigset_t is a valid value to initialize.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t owned by this frame; the calls
        // only write it and this thread's mask.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in FORWARDED {
                libc::sigaddset(&mut set, s);
            }
            libc::sigaddset(&mut set, libc::SIGCHLD);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        }
        Self { set }
    }

    /// Takes the blocked signals until `pid` ends: a forwarded signal sent
    /// by a process (not the terminal, which signalled the program too) is
    /// sent on to `pid`, marked with its sender (see the recorder's
    /// `process::forwarded`: the program receives it once, whether it was
    /// sent to `flightrec` alone or to the whole process group). Returns
    /// how it ended.
    fn wait_forwarding(&self, pid: libc::pid_t) -> Ended {
        let tick = libc::timespec {
            tv_sec: 0,
            tv_nsec: Duration::from_millis(200).as_nanos() as libc::c_long,
        };
        loop {
            if let Some(ended) = reap(pid, libc::WNOHANG) {
                return ended;
            }
            // SAFETY: an all-zero siginfo_t is a valid value to be written.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `self.set` was built in `block`; `info` and `tick` are
            // valid for the call. The timeout bounds the wait, so a SIGCHLD
            // that raced the WNOHANG above costs at most one tick.
            let sig = unsafe { libc::sigtimedwait(&self.set, &mut info, &tick) };
            if FORWARDED.contains(&sig)
                && info.si_code != libc::SI_KERNEL
                // `pid` is our unreaped child: the pid cannot have been
                // reused. Marked, so the program's recorder drops this copy
                // if the sender reached it too (a group kill).
                && recorder::__signal_hook::forward(pid, &info).is_err()
            {
                // Not marked (the kernel refused the queued form): a plain
                // copy, which the program sees twice if it got one itself.
                // SAFETY: as above, `pid` is our unreaped child.
                unsafe { libc::kill(pid, sig) };
            }
        }
    }
}

/// `waitpid(pid)`; `None` while it runs (with `WNOHANG`).
fn reap(pid: libc::pid_t, flags: libc::c_int) -> Option<Ended> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is valid for the call.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == pid {
            break;
        }
        if r == 0 {
            return None;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // Reaped elsewhere: nothing left to learn.
            return Some(Ended::Exited(2));
        }
    }
    if libc::WIFEXITED(status) {
        Some(Ended::Exited(libc::WEXITSTATUS(status)))
    } else if libc::WIFSIGNALED(status) {
        Some(Ended::Signaled(libc::WTERMSIG(status)))
    } else {
        None
    }
}

impl Drop for Forwarded {
    fn drop(&mut self) {
        // SAFETY: unblocks exactly the set `block` blocked.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &self.set, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(flags: &[&str]) -> Args {
        use clap::{Command, FromArgMatches};
        let cmd = <Args as clap::Args>::augment_args(Command::new("record"));
        let m = cmd
            .try_get_matches_from(
                std::iter::once("record")
                    .chain(flags.iter().copied())
                    .chain(["--", "prog"]),
            )
            .unwrap();
        Args::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn flags_become_a_flightrec_string() {
        let out = Path::new("/tmp/a.jfr");
        assert_eq!(
            options(&args(&[]), out).unwrap(),
            "filename=/tmp/a.jfr,settings=profile"
        );
        assert_eq!(
            options(
                &args(&[
                    "--settings",
                    "default",
                    "--cpu-time",
                    "5ms",
                    "--wall",
                    "20ms",
                    "--duration",
                    "30s",
                    "--max-size",
                    "100m",
                    "--attach"
                ]),
                out
            )
            .unwrap(),
            "filename=/tmp/a.jfr,settings=default,jdk.CPUTimeSample#enabled=true,\
             jdk.CPUTimeSample#stackTrace=true,jdk.CPUTimeSample#throttle=5ms,\
             jdk.ExecutionSample#enabled=true,jdk.ExecutionSample#period=20ms,\
             duration=30s,maxsize=100m,attach=true"
        );
        let lock = options(&args(&["--alloc", "--lock"]), out).unwrap();
        assert!(
            lock.contains("jdk.ObjectAllocationSample#enabled=true"),
            "{lock}"
        );
        assert!(lock.contains("jdk.ThreadPark#enabled=true"), "{lock}");
    }

    #[test]
    fn bad_values_are_refused_naming_them() {
        let out = Path::new("/tmp/a.jfr");
        let e = options(&args(&["--duration", "soon"]), out).unwrap_err();
        assert!(e.to_string().contains("soon"), "{e}");
        let e = options(&args(&["--cpu-time", "1ms,attach=true"]), out).unwrap_err();
        assert!(e.to_string().contains("','"), "{e}");
        let e = options(&args(&["--settings", "/no/such.jfc"]), out).unwrap_err();
        assert!(e.to_string().contains("/no/such.jfc"), "{e}");
    }
}
