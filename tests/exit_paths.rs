//! Exit paths and user closures (issue 30): `exit()` from a signal handler
//! that interrupted a commit, from a periodic closure and from an endChunk
//! closure ends a `FLIGHTREC` process within 2 s in every run, with its
//! file written; SIGTERM, SIGHUP and SIGINT write the file, remove the
//! attach socket and end the process with the signal; a periodic or
//! endChunk closure that blocks or forks holds up neither `rotate()`,
//! `dump()` nor `stop()`, nor the other periodic tasks, and is counted.
//!
//! The exit cases run as child processes of this test binary (see
//! `flightrec_testkit::child`), each [`RUNS`] times with a short recording;
//! their files are concatenated (a JFR file is a sequence of chunks) and
//! read by one `jfr summary`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use flightrec::settings::Period;
use flightrec::{Event, EventTypeBuilder, FieldKind, LossCause, Recording, RecordingConfig, Value};
use flightrec_testkit::child;

/// Runs of each exit case.
const RUNS: usize = 20;
/// The bound on every exit and every control call.
const BOUND: Duration = Duration::from_secs(2);

#[derive(Event)]
#[event(name = "test.exit.Work")]
struct Work {
    n: u64,
}

/// The children's `FLIGHTREC`: a small recording written to `file`.
fn options(file: &Path, extra: &str) -> String {
    format!(
        "filename={},settings=default,test.exit.Work#enabled=true{extra}",
        file.display()
    )
}

/// Spawns child test `name` under `FLIGHTREC` writing `file`, with its
/// repository beside it and its stderr piped.
fn spawn(name: &str, dir: &Path, file: &Path, extra: &str) -> Child {
    let repo = file.with_extension("repo");
    child::command(name, dir)
        .env(
            "FLIGHTREC",
            options(file, &format!(",repository={}{extra}", repo.display())),
        )
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the child")
}

/// The child's stdout as lines (taken from it, so the child can be reaped
/// while they are still held).
fn lines_of(c: &mut Child) -> impl Iterator<Item = String> + use<> {
    use std::io::BufRead;
    let out = c.stdout.take().expect("the child's stdout is piped");
    std::io::BufReader::new(out).lines().map_while(Result::ok)
}

/// Reads the child's lines until one holds `marker`: its numbers.
fn wait_for(lines: &mut dyn Iterator<Item = String>, marker: &str) -> Vec<u64> {
    for line in lines {
        if let Some(r) = child::report(&line, marker) {
            return child::numbers(r);
        }
    }
    panic!("the child ended before printing `{marker}`");
}

/// Reaps `c` (killing it if it outlives [`BOUND`] by far, so a hang fails
/// the test instead of stalling it): its status and the time it took.
fn reap(c: &mut Child, from: Instant) -> (std::process::ExitStatus, Duration) {
    loop {
        if let Some(status) = c.try_wait().expect("wait for the child") {
            return (status, from.elapsed());
        }
        if from.elapsed() > Duration::from_secs(15) {
            let _ = c.kill();
            let status = c.wait().expect("reap the child");
            return (status, from.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Concatenates `files` into one (chunks in sequence) for one
/// `jfr summary`.
fn concatenated(files: &[PathBuf], out: &Path) -> PathBuf {
    let mut all = std::fs::File::create(out).unwrap();
    for f in files {
        all.write_all(&std::fs::read(f).unwrap()).unwrap();
    }
    out.to_owned()
}

/// Children run at once in an exit case (the runs are independent; a
/// few at a time keep the case short on a small machine).
const AT_ONCE: usize = 4;

/// Runs exit case `name` [`RUNS`] times, [`AT_ONCE`] at a time:
/// `trigger` gets each child's lines and pid, does what makes it exit, and
/// returns when it did. Asserts each exit code and time; returns the files
/// written.
fn exit_case(
    name: &str,
    code: i32,
    extra: &str,
    trigger: impl Fn(&mut dyn Iterator<Item = String>, u32) -> Instant + Sync,
) -> Vec<PathBuf> {
    let dir = flightrec_testkit::temp_dir(name);
    let run = |run: usize| {
        let file = dir.join(format!("run{run}.jfr"));
        let mut c = spawn(name, &dir, &file, extra);
        let pid = c.id();
        let mut lines = lines_of(&mut c);
        let from = trigger(&mut lines, pid);
        let (status, took) = reap(&mut c, from);
        drop(lines);
        let mut err = String::new();
        std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(
            status.code(),
            Some(code),
            "{name} run {run}: {status:?} {err}"
        );
        assert!(took < BOUND, "{name} run {run}: exit took {took:?}");
        // No file only where the recording could not be finished (the
        // exiting thread held what the stop needs), and said so.
        let written = file.exists();
        assert!(
            written || err.contains("could not be finished at exit"),
            "{name} run {run}: no file and no word why: {err}"
        );
        (written.then_some(file), took)
    };
    let mut results = Vec::new();
    for batch in (0..RUNS).collect::<Vec<_>>().chunks(AT_ONCE) {
        std::thread::scope(|s| {
            let handles: Vec<_> = batch.iter().map(|&r| s.spawn(move || run(r))).collect();
            results.extend(handles.into_iter().map(|h| h.join().unwrap()));
        });
    }
    let mut times: Vec<Duration> = results.iter().map(|r| r.1).collect();
    times.sort();
    let files: Vec<PathBuf> = results.into_iter().filter_map(|r| r.0).collect();
    eprintln!(
        "{name}: {RUNS} runs, {} files, exit times {:?} .. {:?} (median {:?})",
        files.len(),
        times[0],
        times[RUNS - 1],
        times[RUNS / 2]
    );
    files
}

/// Checks that `jfr summary` reads every file written (`at_least` of the
/// runs wrote one) and, with `shutdowns`, that each holds its run's
/// `jdk.Shutdown`; returns the summary of the whole.
fn all_read(
    name: &str,
    files: &[PathBuf],
    at_least: usize,
    shutdowns: bool,
) -> flightrec_testkit::Summary {
    assert!(
        files.len() >= at_least,
        "{name}: {} of {RUNS} runs wrote their file",
        files.len()
    );
    let dir = flightrec_testkit::temp_dir(name);
    let s = flightrec_testkit::summary(&concatenated(files, &dir.join("all.jfr")));
    if shutdowns {
        assert_eq!(
            s.counts.get("jdk.Shutdown").copied(),
            Some(files.len() as u64),
            "{name}: one jdk.Shutdown per file"
        );
    }
    s
}

extern "C" fn exit_3(_: libc::c_int) {
    // SAFETY: the test's point: exit from a handler that interrupted a
    // commit.
    unsafe { libc::exit(3) }
}

/// Child: three threads commit without pause; the program's own SIGTERM
/// handler calls `exit(3)`.
#[test]
fn exit_in_handler_child() {
    let Some(_) = child::dir("exit_in_handler_child") else {
        return;
    };
    // SAFETY: installs a plain handler for SIGTERM.
    unsafe { libc::signal(libc::SIGTERM, exit_3 as *const () as libc::sighandler_t) };
    let (tx, rx) = std::sync::mpsc::channel();
    for t in 0..3 {
        let tx = tx.clone();
        std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() }).unwrap();
            for n in 0.. {
                Work { n: n * 4 + t }.commit();
                if n % 256 == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
    }
    let tid = rx.recv().unwrap();
    println!("ready tid={tid}");
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn exit_from_a_signal_handler_during_commits() {
    if child::is_child() {
        return;
    }
    // Small chunks and a size limit keep the files small: the committers
    // go on while the stop runs.
    let small = ",maxchunksize=1m,maxsize=2m";
    let files = exit_case("exit_in_handler_child", 3, small, |lines, pid| {
        let tid = wait_for(lines, "ready ")[0];
        std::thread::sleep(Duration::from_millis(30));
        // To a committing thread: the handler interrupts its commits.
        // SAFETY: tgkill sends a signal; both ids are the child's.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                pid as libc::c_long,
                tid as libc::c_long,
                libc::SIGTERM as libc::c_long,
            )
        };
        assert_eq!(rc, 0);
        Instant::now()
    });
    // The handler may interrupt a commit inside the buffer pool's lock,
    // which the stop needs: that run ends in time without its file.
    // The committers fill the buffers faster than a small chunk drains:
    // any event may be dropped for want of a buffer (counted), the last
    // jdk.Shutdown too.
    let s = all_read("exit_in_handler", &files, RUNS / 2, false);
    assert!(s.counts.get("test.exit.Work").copied().unwrap_or(0) > 0);
}

/// The periodic types the children's closures commit.
fn tick_type() -> &'static flightrec::EventType {
    EventTypeBuilder::new("test.exit.Tick")
        .enabled(true)
        .field("n", FieldKind::I64)
        .build()
        .unwrap()
}

/// Child: a periodic closure (every 20 ms) calls `exit(4)` at its third
/// call.
#[test]
fn exit_in_periodic_child() {
    let Some(_) = child::dir("exit_in_periodic_child") else {
        return;
    };
    // First: the closure's exit must not cut them short.
    for n in 0..1000 {
        Work { n }.commit();
    }
    let ty = tick_type();
    static CALLS: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(ty, Period::Interval(Duration::from_millis(20)), move || {
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        ty.commit_values(&[Value::Int(n as i64)]);
        if n == 2 {
            println!("exiting");
            // SAFETY: the test's point: exit from a periodic closure.
            unsafe { libc::exit(4) };
        }
    });
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn exit_from_a_periodic_closure() {
    if child::is_child() {
        return;
    }
    let files = exit_case("exit_in_periodic_child", 4, "", |lines, _| {
        wait_for(lines, "exiting");
        Instant::now()
    });
    let s = all_read("exit_in_periodic", &files, RUNS, true);
    assert_eq!(
        s.counts.get("test.exit.Work").copied(),
        Some(1000 * RUNS as u64)
    );
    assert_eq!(
        s.counts.get("test.exit.Tick").copied(),
        Some(3 * RUNS as u64)
    );
}

/// Child: an endChunk closure calls `exit(5)` at its second call; the
/// program rotates the automatic recording in a loop.
#[test]
fn exit_in_end_chunk_child() {
    let Some(_) = child::dir("exit_in_end_chunk_child") else {
        return;
    };
    let ty = tick_type();
    static CALLS: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(ty, Period::EndChunk, move || {
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        ty.commit_values(&[Value::Int(n as i64)]);
        if n == 1 {
            println!("exiting");
            // SAFETY: the test's point: exit from an endChunk closure.
            unsafe { libc::exit(5) };
        }
    });
    for n in 0..1000 {
        Work { n }.commit();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let _ = flightrec::autostart::with_auto(|r| r.rotate());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn exit_from_an_end_chunk_closure() {
    if child::is_child() {
        return;
    }
    let files = exit_case("exit_in_end_chunk_child", 5, "", |lines, _| {
        wait_for(lines, "exiting");
        Instant::now()
    });
    let s = all_read("exit_in_end_chunk", &files, RUNS, true);
    assert_eq!(
        s.counts.get("test.exit.Work").copied(),
        Some(1000 * RUNS as u64)
    );
    assert_eq!(
        s.counts.get("test.exit.Tick").copied(),
        Some(2 * RUNS as u64)
    );
}

/// Child: commits 1000 events, then waits to be signalled.
#[test]
fn signalled_child() {
    let Some(_) = child::dir("signalled_child") else {
        return;
    };
    for n in 0..1000 {
        Work { n }.commit();
    }
    println!("committed 1000");
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn sigterm_sighup_and_sigint_write_the_file_and_end_the_process() {
    if child::is_child() {
        return;
    }
    let dir = flightrec_testkit::temp_dir("signalled");
    let mut files = Vec::new();
    for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let file = dir.join(format!("sig{sig}.jfr"));
        let mut c = spawn("signalled_child", &dir, &file, ",attach=true");
        let pid = c.id();
        let mut lines = lines_of(&mut c);
        wait_for(&mut lines, "committed ");
        let socket = PathBuf::from(format!("/tmp/.java_pid{pid}"));
        assert!(socket.exists(), "attach=true made {}", socket.display());
        // SAFETY: sends a signal to our child.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
        let (status, took) = reap(&mut c, Instant::now());
        drop(lines);
        drop(c.stderr.take());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(sig), "ended by signal {sig}");
        assert!(took < BOUND, "signal {sig}: took {took:?}");
        assert!(!socket.exists(), "signal {sig}: the socket is removed");
        assert!(file.exists(), "signal {sig}: the file is written");
        eprintln!("signal {sig}: ended in {took:?}");
        files.push(file);
    }
    let s = flightrec_testkit::summary(&concatenated(&files, &dir.join("all.jfr")));
    assert_eq!(s.counts.get("test.exit.Work").copied(), Some(3000));
    assert_eq!(s.counts.get("jdk.Shutdown").copied(), Some(3));
}

/// One in-process recording at a time (the periodic closures are global).
static ALONE: Mutex<()> = Mutex::new(());

/// A gate the blocking closures wait at until it opens.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// Times `f`, asserting it returns `Ok` within [`BOUND`].
fn bounded<E: std::fmt::Debug>(what: &str, f: impl FnOnce() -> Result<(), E>) -> Duration {
    let t = Instant::now();
    f().unwrap_or_else(|e| panic!("{what}: {e:?}"));
    let took = t.elapsed();
    assert!(took < BOUND, "{what} took {took:?}");
    eprintln!("{what}: {took:?}");
    took
}

#[test]
fn blocking_closures_hold_up_neither_the_recorder_nor_other_tasks() {
    if child::is_child() {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("blocking_closures");
    let out = dir.join("blocking.jfr");
    let build = |name: &str| {
        EventTypeBuilder::new(name)
            .enabled(true)
            .field("n", FieldKind::I64)
            .build()
            .unwrap()
    };
    let (stuck_end, stuck_tick, steady) = (
        build("test.exit.StuckEnd"),
        build("test.exit.StuckTick"),
        build("test.exit.Steady"),
    );
    let gate = Arc::new(Gate::default());
    let g = gate.clone();
    flightrec::add_periodic_event(stuck_end, Period::EndChunk, move || {
        stuck_end.commit_values(&[Value::Int(0)]);
        g.wait();
    });
    let g = gate.clone();
    flightrec::add_periodic_event(
        stuck_tick,
        Period::Interval(Duration::from_millis(10)),
        move || {
            stuck_tick.commit_values(&[Value::Int(0)]);
            g.wait();
        },
    );
    static STEADY: AtomicU64 = AtomicU64::new(0);
    flightrec::add_periodic_event(
        steady,
        Period::Interval(Duration::from_millis(20)),
        move || {
            let n = STEADY.fetch_add(1, Ordering::Relaxed);
            steady.commit_values(&[Value::Int(n as i64)]);
        },
    );
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo"))).unwrap();
    const THREADS: u64 = 4;
    const EACH: u64 = 20_000;
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("writer-{t}"))
                .spawn(move || {
                    for n in 0..EACH {
                        Work { n }.commit();
                        if n % 1000 == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                })
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let steady_before = STEADY.load(Ordering::Relaxed);
    bounded("rotate", || rec.rotate());
    bounded("dump", || rec.dump(dir.join("dump.jfr")));
    bounded("rotate again", || rec.rotate());
    let steady_during = STEADY.load(Ordering::Relaxed) - steady_before;
    for w in writers {
        w.join().unwrap();
    }
    let mut summary = None;
    bounded("stop", || {
        rec.stop().map(|s| {
            summary = Some(s);
        })
    });
    gate.open();
    for ty in [stuck_end, stuck_tick, steady] {
        assert!(flightrec::remove_periodic_event(ty));
    }
    let summary = summary.unwrap();
    // The first end call was abandoned, the later ones (two rotations,
    // the stop) skipped; the interval task was skipped every 10 ms.
    let overdue = summary.losses.events(LossCause::CallbackOverdue);
    assert!(overdue >= 4, "{overdue} calls counted overdue");
    // Not starved: the steady task ran every 20 ms while the others hung
    // (rotate, dump and rotate took at least one wait of 500 ms).
    assert!(steady_during >= 10, "{steady_during} steady calls");
    let s = flightrec_testkit::summary(&out);
    assert_eq!(
        s.counts.get("test.exit.Work").copied(),
        Some(THREADS * EACH)
    );
    assert_eq!(s.counts.get("test.exit.StuckEnd").copied(), Some(1));
    assert_eq!(s.counts.get("test.exit.StuckTick").copied(), Some(1));
    assert_eq!(
        s.counts.get("test.exit.Steady").copied(),
        Some(STEADY.load(Ordering::Relaxed)),
        "every steady call is in the file"
    );
    let lost = flightrec_testkit::print_json(&out);
    let reported: i64 = lost
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "flightrec.EventsLost")
        .filter(|e| {
            e["values"]["cause"]
                .as_str()
                .is_some_and(|c| c.starts_with("periodic callback overdue"))
        })
        .map(|e| e["values"]["events"].as_i64().unwrap())
        .sum();
    assert_eq!(
        reported, overdue as i64,
        "the file counts every overdue call"
    );
}

#[test]
fn fork_in_an_end_chunk_closure_does_not_hold_up_the_stop() {
    if child::is_child() {
        return;
    }
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = flightrec_testkit::temp_dir("fork_in_closure");
    let out = dir.join("fork.jfr");
    let ty = EventTypeBuilder::new("test.exit.Forked")
        .enabled(true)
        .field("child", FieldKind::I64)
        .build()
        .unwrap();
    flightrec::add_periodic_event(ty, Period::EndChunk, move || {
        // SAFETY: the child only calls `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        ty.commit_values(&[Value::Int(i64::from(pid > 0))]);
    });
    let rec = Recording::start(RecordingConfig::new(&out).repository(dir.join("repo"))).unwrap();
    for n in 0..1000 {
        Work { n }.commit();
    }
    bounded("rotate", || rec.rotate());
    bounded("stop", || rec.stop().map(drop));
    assert!(flightrec::remove_periodic_event(ty));
    let s = flightrec_testkit::summary(&out);
    assert_eq!(s.counts.get("test.exit.Work").copied(), Some(1000));
    assert!(s.counts.get("test.exit.Forked").copied().unwrap_or(0) >= 1);
}
