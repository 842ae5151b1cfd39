//! The C ABI's commit against the Rust derive path (issue 15's target:
//! at most 1.3x): the same 3-field event (`u64`, `i32`, `f64`), committed
//! through `flightrec_commit` called by a function pointer the optimiser
//! cannot see through (as C calls into `libflightrec.so`), and through
//! `#[derive(Event)]`'s `commit()`. Both into one recording, in paired
//! rounds; the last line, `c_commit summary`, gives the median ratio.
//!
//! `--only=c` or `--only=rust` with `--iters=N` runs one path only, N
//! times after the warm-up, for `valgrind --tool=callgrind`: the
//! difference between two runs' instruction counts divided by the
//! difference in N is one commit's count (see `scripts/callgrind-commit.sh`).
//!
//! The crate has no `rlib` (see Cargo.toml), so the modules the commit
//! needs are included here, at the crate root where their `crate::` paths
//! point.

#[allow(dead_code, unreachable_pub)]
#[path = "../src/commit.rs"]
mod commit;
#[allow(dead_code, unreachable_pub)]
#[path = "../src/error.rs"]
mod error;
#[allow(dead_code, unreachable_pub)]
#[path = "../src/layout.rs"]
mod layout;
#[allow(dead_code, unreachable_pub)]
#[path = "../src/types.rs"]
mod types;

use std::hint::black_box;

use commit::{
    FLIGHTREC_VALUE_F64, FLIGHTREC_VALUE_INT, FLIGHTREC_VALUE_UINT, flightrec_commit,
    flightrec_payload, flightrec_value,
};
use flightrec_derive::Event;
use flightrec_testkit::measure::{median, thread_cpu_ns};
use recorder::{Event, Recording, RecordingConfig};
use types::{
    FLIGHTREC_CONTENT_NONE, FLIGHTREC_KIND_F64, FLIGHTREC_KIND_I32, FLIGHTREC_KIND_U64,
    flightrec_event_desc, flightrec_event_type, flightrec_field, flightrec_register,
};

#[derive(Event)]
#[event(crate = "recorder", name = "bench.RustEmit")]
struct RustEmit {
    a: u64,
    b: i32,
    c: f64,
}

type CommitFn = unsafe extern "C" fn(flightrec_event_type, *const flightrec_value, usize) -> i32;

fn register_c() -> flightrec_event_type {
    let field = |name: &'static std::ffi::CStr, kind| flightrec_field {
        name: name.as_ptr(),
        kind,
        content: FLIGHTREC_CONTENT_NONE,
        label: std::ptr::null(),
    };
    let fields = [
        field(c"a", FLIGHTREC_KIND_U64),
        field(c"b", FLIGHTREC_KIND_I32),
        field(c"c", FLIGHTREC_KIND_F64),
    ];
    let desc = flightrec_event_desc {
        name: c"bench.CEmit".as_ptr(),
        label: std::ptr::null(),
        description: std::ptr::null(),
        category: std::ptr::null(),
        flags: 0,
        threshold_ns: 0,
        fields: fields.as_ptr(),
        field_count: 3,
    };
    let mut h = 0;
    // SAFETY: `desc` and everything it points to are valid for the call.
    assert_eq!(unsafe { flightrec_register(&desc, &mut h) }, 0);
    h
}

/// Thread CPU time per call of `f`, ns.
fn time(n: u64, mut f: impl FnMut(u64)) -> f64 {
    let c0 = thread_cpu_ns();
    for i in 0..n {
        f(i);
    }
    (thread_cpu_ns() - c0) as f64 / n as f64
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, n) = if full { (31, 200_000) } else { (3, 10_000) };
    let arg = |name: &str| std::env::args().find_map(|a| a.strip_prefix(name).map(str::to_owned));
    let only = arg("--only=");
    let iters = arg("--iters=").map_or(100_000, |s| s.parse().expect("--iters=N"));
    let dir = std::env::temp_dir().join(format!("flightrec-c-commit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = Recording::start(
        RecordingConfig::repository_only()
            .repository(dir.join("repo"))
            .max_memory(1 << 30)
            .max_size(Some(256 << 20)),
    )
    .expect("start recording");
    let h = register_c();
    let commit: CommitFn = black_box(flightrec_commit);
    let c_commit = |i: u64| {
        let values = [
            flightrec_value {
                tag: FLIGHTREC_VALUE_UINT,
                v: flightrec_payload { u: i },
            },
            flightrec_value {
                tag: FLIGHTREC_VALUE_INT,
                v: flightrec_payload { i: 7 },
            },
            flightrec_value {
                tag: FLIGHTREC_VALUE_F64,
                v: flightrec_payload { f64: 0.5 },
            },
        ];
        // SAFETY: three valid values for the call.
        let code = unsafe { commit(black_box(h), values.as_ptr(), 3) };
        debug_assert_eq!(code, 0);
    };
    let rust_commit = |i: u64| {
        // Each field through `black_box`, as the C path's values come
        // through memory: constants would be encoded at compile time.
        RustEmit {
            a: black_box(i),
            b: black_box(7),
            c: black_box(0.5),
        }
        .commit()
    };
    // Warm up: thread registration, type registration, pool growth.
    time(n, c_commit);
    time(n, rust_commit);
    if let Some(only) = only {
        // For an instruction count (`valgrind --tool=callgrind`): one path,
        // `iters` more times; two runs' difference divided by the
        // difference in `iters` is the cost of one commit.
        match only.as_str() {
            "c" => time(iters, c_commit),
            "rust" => time(iters, rust_commit),
            other => panic!("--only={other}: c or rust"),
        };
        drop(rec);
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let (mut c, mut rust, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let r = time(n, rust_commit);
        let cc = time(n, c_commit);
        rec.flush().expect("flush");
        ratios.push(cc / r);
        c.push(cc);
        rust.push(r);
    }
    let (c, rust, ratio) = (median(&mut c), median(&mut rust), median(&mut ratios));
    println!("rust derive commit: {rust:.1} ns (thread CPU, median of {rounds} rounds)");
    println!("C ABI commit:       {c:.1} ns");
    println!(
        "c_commit summary: {{\"rust_ns\": {rust:.2}, \"c_ns\": {c:.2}, \"c_over_rust\": {ratio:.3}}}"
    );
    let losses = rec.stop().expect("stop").losses;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(losses.total_events(), 0, "events lost: {losses:?}");
}
