//! Every kind of bad argument through the exported functions, called as C
//! would call them: each gets its code and a message, and nothing crashes
//! (a crash kills the test binary and fails the run). Plus: committing
//! allocates nothing after a thread's first event.

use std::cell::Cell;
use std::ffi::{CStr, c_char};
use std::ptr;
use std::sync::Mutex;

use crate::commit::*;
use crate::error::*;
use crate::recording::*;
use crate::types::*;

// === a counting allocator ===

/// Counts the allocations of each thread, so the commit test is not
/// disturbed by the harness's other threads.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a plain
// thread-local `Cell` that itself never allocates.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// The tests that start a recording run one at a time (one per process).
static RECORDING: Mutex<()> = Mutex::new(());

fn c(s: &CStr) -> *const c_char {
    s.as_ptr()
}

fn last_error() -> String {
    // SAFETY: flightrec_last_error returns a NUL-terminated string valid
    // until the next failing call on this thread.
    unsafe { CStr::from_ptr(flightrec_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Asserts `code` is `expected` and the message mentions `needle`.
#[track_caller]
fn expect(code: i32, expected: i32, needle: &str) {
    let msg = last_error();
    assert_eq!(code, expected, "message: {msg}");
    assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
}

fn field(name: &CStr, kind: u32) -> flightrec_field {
    flightrec_field {
        name: c(name),
        kind,
        content: FLIGHTREC_CONTENT_NONE,
        label: ptr::null(),
    }
}

fn desc(name: &CStr, fields: &[flightrec_field], flags: u32) -> flightrec_event_desc {
    flightrec_event_desc {
        name: c(name),
        label: ptr::null(),
        description: ptr::null(),
        category: ptr::null(),
        flags,
        threshold_ns: 0,
        fields: fields.as_ptr(),
        field_count: fields.len(),
    }
}

fn register(d: &flightrec_event_desc) -> Result<flightrec_event_type, i32> {
    let mut h = 0;
    // SAFETY: `d` and its strings/fields are valid for the call.
    match unsafe { flightrec_register(d, &mut h) } {
        FLIGHTREC_OK => Ok(h),
        code => Err(code),
    }
}

fn int(i: i64) -> flightrec_value {
    flightrec_value {
        tag: FLIGHTREC_VALUE_INT,
        v: flightrec_payload { i },
    }
}

fn uint(u: u64) -> flightrec_value {
    flightrec_value {
        tag: FLIGHTREC_VALUE_UINT,
        v: flightrec_payload { u },
    }
}

fn string(ptr: *const c_char, len: usize) -> flightrec_value {
    flightrec_value {
        tag: FLIGHTREC_VALUE_STRING,
        v: flightrec_payload {
            s: flightrec_str { ptr, len },
        },
    }
}

fn commit(h: flightrec_event_type, values: &[flightrec_value]) -> i32 {
    // SAFETY: `values` is a valid slice for the call.
    unsafe { flightrec_commit(h, values.as_ptr(), values.len()) }
}

/// A type with an `int` (I32), an unsigned byte and a string field.
fn three_fields(name: &CStr) -> flightrec_event_type {
    let fields = [
        field(c"a", FLIGHTREC_KIND_I32),
        field(c"b", FLIGHTREC_KIND_U8),
        field(c"s", FLIGHTREC_KIND_STRING),
    ];
    register(&desc(name, &fields, 0)).expect("register")
}

#[test]
fn version_is_the_headers() {
    assert_eq!(
        crate::flightrec_version() >> 16,
        crate::FLIGHTREC_VERSION_MAJOR
    );
    // SAFETY: a static NUL-terminated string.
    let v = unsafe { CStr::from_ptr(crate::flightrec_version_string()) };
    assert_eq!(v.to_str(), Ok(env!("CARGO_PKG_VERSION")));
}

#[test]
fn status_names_cover_every_code() {
    for code in -15..=0 {
        // SAFETY: static NUL-terminated strings.
        let name = unsafe { CStr::from_ptr(flightrec_status_name(code)) };
        assert_ne!(name.to_str(), Ok("FLIGHTREC_ERR_UNKNOWN_CODE"), "{code}");
    }
    // SAFETY: as above.
    let name = unsafe { CStr::from_ptr(flightrec_status_name(7)) };
    assert_eq!(name.to_str(), Ok("FLIGHTREC_ERR_UNKNOWN_CODE"));
}

#[test]
fn bad_registrations_are_rejected() {
    let ok_fields = [field(c"x", FLIGHTREC_KIND_I64)];
    // SAFETY: every argument is valid or null, as each case needs.
    unsafe {
        let mut h = 0;
        expect(
            flightrec_register(ptr::null(), &mut h),
            FLIGHTREC_ERR_NULL,
            "desc",
        );
        let d = desc(c"test.NullOut", &ok_fields, 0);
        expect(
            flightrec_register(&d, ptr::null_mut()),
            FLIGHTREC_ERR_NULL,
            "out",
        );
    }
    let mut d = desc(c"x", &ok_fields, 0);
    d.name = ptr::null();
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_NULL, "desc->name");

    let bad_utf8 = c"test.\xff\xfe";
    let d = desc(bad_utf8, &ok_fields, 0);
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_UTF8, "desc->name");

    let mut d = desc(c"test.BadLabel", &ok_fields, 0);
    d.label = c(c"\xc3");
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_UTF8, "desc->label");

    let d = desc(c"test.Flags", &ok_fields, 0x80);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_INVALID_ARGUMENT,
        "flags",
    );

    let mut d = desc(c"test.Threshold", &ok_fields, FLIGHTREC_EVENT_DURATION);
    d.threshold_ns = -1;
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_INVALID_ARGUMENT,
        "threshold_ns",
    );

    let mut d = desc(c"test.NullFields", &ok_fields, 0);
    d.fields = ptr::null();
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_NULL, "fields");

    let bad_kind = [field(c"x", 99)];
    let d = desc(c"test.Kind", &bad_kind, 0);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_INVALID_ARGUMENT,
        "kind 99",
    );

    let mut bad_content = [field(c"x", FLIGHTREC_KIND_I64)];
    bad_content[0].content = 77;
    let d = desc(c"test.Content", &bad_content, 0);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_INVALID_ARGUMENT,
        "content 77",
    );

    let mut unfit = [field(c"x", FLIGHTREC_KIND_STRING)];
    unfit[0].content = FLIGHTREC_CONTENT_BYTES;
    let d = desc(c"test.Unfit", &unfit, 0);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_SCHEMA,
        "content type",
    );

    let implicit = [field(c"startTime", FLIGHTREC_KIND_I64)];
    let d = desc(c"test.Implicit", &implicit, 0);
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_SCHEMA, "implicit");

    let null_field_name = [flightrec_field {
        name: ptr::null(),
        ..field(c"x", FLIGHTREC_KIND_I64)
    }];
    let d = desc(c"test.NullFieldName", &null_field_name, 0);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_NULL,
        "desc->fields[0].name",
    );

    let d = desc(c"not a java name", &ok_fields, 0);
    expect(register(&d).unwrap_err(), FLIGHTREC_ERR_SCHEMA, "");

    let d = desc(c"test.Twice", &ok_fields, 0);
    let h = register(&d).expect("first registration");
    assert_ne!(h, 0);
    expect(
        register(&d).unwrap_err(),
        FLIGHTREC_ERR_SCHEMA,
        "already registered",
    );
}

#[test]
fn bad_commits_are_rejected() {
    let h = three_fields(c"test.BadCommits");
    let good = [int(1), uint(2), string(c(c"ok"), FLIGHTREC_NUL_TERMINATED)];
    assert_eq!(commit(h, &good), FLIGHTREC_OK);

    for unknown in [0, h + 1000, u32::MAX, FLIGHTREC_MAX_EVENT_TYPES + 1] {
        expect(
            commit(unknown, &good),
            FLIGHTREC_ERR_UNKNOWN_TYPE,
            &unknown.to_string(),
        );
    }
    expect(commit(h, &good[..2]), FLIGHTREC_ERR_FIELD_COUNT, "3 fields");
    // SAFETY: a null array with a non-zero count must be rejected unread.
    let code = unsafe { flightrec_commit(h, ptr::null(), 3) };
    expect(code, FLIGHTREC_ERR_NULL, "values is NULL");

    let mut wrong_tag = good;
    wrong_tag[0] = uint(1);
    expect(commit(h, &wrong_tag), FLIGHTREC_ERR_FIELD_TYPE, "`a`");
    let mut too_big = good;
    too_big[0] = int(i64::from(i32::MAX) + 1);
    expect(commit(h, &too_big), FLIGHTREC_ERR_FIELD_TYPE, "`a`");
    let mut byte_overflow = good;
    byte_overflow[1] = uint(256);
    expect(commit(h, &byte_overflow), FLIGHTREC_ERR_FIELD_TYPE, "`b`");
    let mut unknown_tag = good;
    unknown_tag[2].tag = 42;
    expect(
        commit(h, &unknown_tag),
        FLIGHTREC_ERR_INVALID_ARGUMENT,
        "tag 42",
    );
    let mut null_str = good;
    null_str[2] = string(ptr::null(), 5);
    expect(commit(h, &null_str), FLIGHTREC_ERR_NULL, "ptr is NULL");
    let mut bad_utf8 = good;
    bad_utf8[2] = string(c"\xff".as_ptr(), 1);
    expect(commit(h, &bad_utf8), FLIGHTREC_ERR_UTF8, "UTF-8");
    let mut thread_in_int = good;
    thread_in_int[0].tag = FLIGHTREC_VALUE_CURRENT_THREAD;
    expect(commit(h, &thread_in_int), FLIGHTREC_ERR_FIELD_TYPE, "`a`");

    // Null and empty strings are fine.
    let mut null_ok = good;
    null_ok[2].tag = FLIGHTREC_VALUE_NULL;
    assert_eq!(commit(h, &null_ok), FLIGHTREC_OK, "{}", last_error());
    let mut empty = good;
    empty[2] = string(ptr::null(), 0);
    assert_eq!(commit(h, &empty), FLIGHTREC_OK, "{}", last_error());

    // A span on an instant type.
    // SAFETY: valid values for the call.
    let code = unsafe { flightrec_commit_span(h, 0, 1, good.as_ptr(), 3) };
    expect(code, FLIGHTREC_ERR_INVALID_ARGUMENT, "instant");
    assert_eq!(flightrec_is_enabled(0), 0);
    assert_eq!(flightrec_is_enabled(u32::MAX), 0);
}

#[test]
fn bad_recording_calls_are_rejected() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: every argument is valid or null, as each case needs.
    unsafe {
        expect(flightrec_start(ptr::null()), FLIGHTREC_ERR_NULL, "options");
        expect(flightrec_start(c(c"\xff")), FLIGHTREC_ERR_UTF8, "options");
        expect(
            flightrec_start(c(c"nosuchoption=1")),
            FLIGHTREC_ERR_OPTIONS,
            "nosuchoption",
        );
        expect(
            flightrec_start(c(c"duration=ten")),
            FLIGHTREC_ERR_OPTIONS,
            "duration",
        );
        expect(
            flightrec_start(c(c"filename=/nonexistent-dir/x.jfr")),
            FLIGHTREC_ERR_START,
            "/nonexistent-dir",
        );
        expect(
            flightrec_stop(),
            FLIGHTREC_ERR_NOT_RECORDING,
            "no recording",
        );
        expect(
            flightrec_flush(),
            FLIGHTREC_ERR_NOT_RECORDING,
            "no recording",
        );
        expect(flightrec_dump(ptr::null()), FLIGHTREC_ERR_NULL, "path");
        expect(
            flightrec_dump(c(c"/tmp/x.jfr")),
            FLIGHTREC_ERR_NOT_RECORDING,
            "no recording",
        );
        expect(
            flightrec_set(c(c"a.B"), ptr::null(), c(c"true")),
            FLIGHTREC_ERR_NULL,
            "setting",
        );
        assert_eq!(flightrec_is_recording(), 0);

        let dir = std::env::temp_dir().join(format!("flightrec-capi-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = std::ffi::CString::new(format!(
            "filename={}/bad-calls.jfr,settings=none",
            dir.display()
        ))
        .unwrap();
        assert_eq!(
            flightrec_start(opts.as_ptr()),
            FLIGHTREC_OK,
            "{}",
            last_error()
        );
        assert_eq!(flightrec_is_recording(), 1);
        expect(
            flightrec_start(opts.as_ptr()),
            FLIGHTREC_ERR_ALREADY_RECORDING,
            "already",
        );
        expect(
            flightrec_set(c(c"a.B"), c(c"threshold"), c(c"soon")),
            FLIGHTREC_ERR_SETTING,
            "soon",
        );
        expect(
            flightrec_set(c(c"a.B"), c(c"colour"), c(c"red")),
            FLIGHTREC_ERR_SETTING,
            "colour",
        );
        assert_eq!(
            flightrec_set(c(c"a.B"), c(c"enabled"), c(c"false")),
            FLIGHTREC_OK
        );
        expect(
            flightrec_dump(c(c"/nonexistent-dir/dump.jfr")),
            FLIGHTREC_ERR_IO,
            "/nonexistent-dir",
        );
        assert_eq!(flightrec_stop(), FLIGHTREC_OK, "{}", last_error());
        assert!(dir.join("bad-calls.jfr").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn errors_are_per_thread() {
    let h = three_fields(c"test.PerThread");
    expect(commit(h, &[]), FLIGHTREC_ERR_FIELD_COUNT, "0 values");
    std::thread::spawn(|| assert_eq!(last_error(), ""))
        .join()
        .unwrap();
    assert!(last_error().contains("0 values"));
}

#[test]
fn commits_allocate_nothing_after_the_first() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let h = three_fields(c"test.NoAlloc");
    let fields = [field(c"n", FLIGHTREC_KIND_I64)];
    let span = register(&desc(
        c"test.NoAllocSpan",
        &fields,
        FLIGHTREC_EVENT_DURATION,
    ))
    .unwrap();
    let dir = std::env::temp_dir().join(format!("flightrec-capi-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opts = std::ffi::CString::new(format!(
        "filename={}/alloc.jfr,settings=none",
        dir.display()
    ))
    .unwrap();
    // SAFETY: a valid option string.
    let started = unsafe { flightrec_start(opts.as_ptr()) };
    assert_eq!(started, FLIGHTREC_OK, "{}", last_error());
    std::thread::spawn(move || {
        let text = c"a string field";
        let values = [
            int(-7),
            uint(200),
            string(c(text), FLIGHTREC_NUL_TERMINATED),
        ];
        // The thread's first event of each type registers the thread and
        // the type (allocating), and the buffer pool grows to what the
        // event rate needs (buffers are then reused: the pool is bounded
        // by max_memory). After that the commit path must not allocate.
        let round = |n: i64| {
            for i in 0..n {
                assert_eq!(commit(h, &values), FLIGHTREC_OK);
                let start = flightrec_ticks();
                // SAFETY: one valid value for the call.
                let code = unsafe { flightrec_commit_span(span, start, start + i, &int(i), 1) };
                assert_eq!(code, FLIGHTREC_OK);
            }
        };
        let before = allocations();
        round(1);
        assert!(allocations() > before, "the counter counts nothing");
        round(20_000);
        assert_eq!(flightrec_flush(), FLIGHTREC_OK);
        let before = allocations();
        round(10_000);
        assert_eq!(allocations() - before, 0, "commits allocated");
    })
    .join()
    .unwrap();
    assert_eq!(flightrec_stop(), FLIGHTREC_OK, "{}", last_error());
    // The commits were real: all of them are in the file.
    let summary = flightrec_testkit::summary(&dir.join("alloc.jfr"));
    assert_eq!(summary.counts.get("test.NoAlloc"), Some(&30_001));
    assert_eq!(summary.counts.get("test.NoAllocSpan"), Some(&30_001));
    let _ = std::fs::remove_dir_all(&dir);
}

fn value(tag: u32, v: flightrec_payload) -> flightrec_value {
    flightrec_value { tag, v }
}

/// A type of every scalar kind, in `FLIGHTREC_KIND_*` order.
fn all_scalars(name: &CStr) -> flightrec_event_type {
    let fields = [
        field(c"z", FLIGHTREC_KIND_BOOL),
        field(c"c", FLIGHTREC_KIND_CHAR),
        field(c"i8", FLIGHTREC_KIND_I8),
        field(c"i16", FLIGHTREC_KIND_I16),
        field(c"i32", FLIGHTREC_KIND_I32),
        field(c"i64", FLIGHTREC_KIND_I64),
        field(c"u8", FLIGHTREC_KIND_U8),
        field(c"u16", FLIGHTREC_KIND_U16),
        field(c"u32", FLIGHTREC_KIND_U32),
        field(c"u64", FLIGHTREC_KIND_U64),
        field(c"f32", FLIGHTREC_KIND_F32),
        field(c"f64", FLIGHTREC_KIND_F64),
    ];
    register(&desc(name, &fields, 0)).expect("register")
}

/// `all_scalars` values: each integer at the low (`high == false`) or
/// high end of its kind's range.
fn edge_values(high: bool) -> [flightrec_value; 12] {
    let (i, u) = (
        |lo: i64, hi: i64| int(if high { hi } else { lo }),
        |hi: u64| uint(if high { hi } else { 0 }),
    );
    [
        value(
            FLIGHTREC_VALUE_BOOL,
            flightrec_payload { b: u8::from(high) },
        ),
        value(FLIGHTREC_VALUE_CHAR, flightrec_payload { c: 0x263A }),
        i(i8::MIN.into(), i8::MAX.into()),
        i(i16::MIN.into(), i16::MAX.into()),
        i(i32::MIN.into(), i32::MAX.into()),
        i(i64::MIN, i64::MAX),
        u(u8::MAX.into()),
        u(u16::MAX.into()),
        u(u32::MAX.into()),
        u(1 << 40),
        value(FLIGHTREC_VALUE_F32, flightrec_payload { f32: -1.5 }),
        value(FLIGHTREC_VALUE_F64, flightrec_payload { f64: 0.25 }),
    ]
}

/// Every kind's edges and one past them, through both paths of a scalar
/// type: the one-pass commit while recording, the full check while not.
#[test]
fn scalar_ranges_are_exact_recording_or_not() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let h = all_scalars(c"test.Ranges");
    let past: [(usize, flightrec_value); 10] = [
        (2, int(i64::from(i8::MIN) - 1)),
        (2, int(i64::from(i8::MAX) + 1)),
        (3, int(i64::from(i16::MAX) + 1)),
        (4, int(i64::from(i32::MIN) - 1)),
        (6, uint(u64::from(u8::MAX) + 1)),
        (7, uint(u64::from(u16::MAX) + 1)),
        (8, uint(u64::from(u32::MAX) + 1)),
        (9, int(0)),
        (0, uint(1)),
        (
            11,
            value(FLIGHTREC_VALUE_F32, flightrec_payload { f32: 1.0 }),
        ),
    ];
    let run = || {
        for high in [false, true] {
            assert_eq!(
                commit(h, &edge_values(high)),
                FLIGHTREC_OK,
                "{}",
                last_error()
            );
        }
        for (i, bad) in past {
            let mut values = edge_values(true);
            values[i] = bad;
            let needle = format!("values[{i}]");
            expect(commit(h, &values), FLIGHTREC_ERR_FIELD_TYPE, &needle);
        }
    };
    run();
    let dir = flightrec_testkit::temp_dir("capi_ranges");
    let opts = std::ffi::CString::new(format!(
        "filename={}/ranges.jfr,settings=none",
        dir.display()
    ))
    .unwrap();
    // SAFETY: a valid option string.
    assert_eq!(unsafe { flightrec_start(opts.as_ptr()) }, FLIGHTREC_OK);
    assert_eq!(flightrec_is_enabled(h), 1);
    run();
    assert_eq!(flightrec_stop(), FLIGHTREC_OK, "{}", last_error());
    // Only the good commits of the recorded run; the refused ones left no
    // trace and broke nothing after them.
    let summary = flightrec_testkit::summary(&dir.join("ranges.jfr"));
    assert_eq!(summary.counts.get("test.Ranges"), Some(&2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every kind, written through the C ABI, as `jfr print --json` reads it.
#[test]
fn every_kind_prints_as_committed() {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let scalars = all_scalars(c"test.AllScalars");
    let mixed_fields = [
        field(c"s", FLIGHTREC_KIND_STRING),
        field(c"empty", FLIGHTREC_KIND_STRING),
        field(c"none", FLIGHTREC_KIND_STRING),
        field(c"me", FLIGHTREC_KIND_THREAD),
        field(c"nobody", FLIGHTREC_KIND_THREAD),
        field(c"stack", FLIGHTREC_KIND_STACK_TRACE),
        field(c"n", FLIGHTREC_KIND_I16),
    ];
    let mixed = register(&desc(c"test.AllKinds", &mixed_fields, 0)).unwrap();
    let dir = flightrec_testkit::temp_dir("capi_kinds");
    let file = dir.join("kinds.jfr");
    let opts =
        std::ffi::CString::new(format!("filename={},settings=none", file.display())).unwrap();
    // SAFETY: a valid option string.
    assert_eq!(unsafe { flightrec_start(opts.as_ptr()) }, FLIGHTREC_OK);
    for high in [false, true] {
        assert_eq!(commit(scalars, &edge_values(high)), FLIGHTREC_OK);
    }
    let text = "héllo";
    let null = value(FLIGHTREC_VALUE_NULL, flightrec_payload { u: 0 });
    let mixed_values = [
        string(text.as_ptr().cast(), text.len()),
        string(ptr::null(), 0),
        null,
        value(FLIGHTREC_VALUE_CURRENT_THREAD, flightrec_payload { u: 0 }),
        null,
        value(FLIGHTREC_VALUE_STACK_TRACE, flightrec_payload { u: 0 }),
        int(-300),
    ];
    assert_eq!(
        commit(mixed, &mixed_values),
        FLIGHTREC_OK,
        "{}",
        last_error()
    );
    assert_eq!(flightrec_stop(), FLIGHTREC_OK, "{}", last_error());

    let events = flightrec_testkit::print_json(&file);
    let of = |ty: &str| -> Vec<serde_json::Value> {
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == ty)
            .map(|e| e["values"].clone())
            .collect()
    };
    let scalar_events = of("test.AllScalars");
    let expected = [
        serde_json::json!({
            "z": false, "c": "\u{263A}", "i8": -128, "i16": -32768,
            "i32": -2147483648i64, "i64": i64::MIN, "u8": 0, "u16": 0, "u32": 0,
            "u64": 0, "f32": -1.5, "f64": 0.25,
        }),
        serde_json::json!({
            "z": true, "c": "\u{263A}", "i8": 127, "i16": 32767, "i32": 2147483647,
            "i64": i64::MAX, "u8": 255, "u16": 65535, "u32": 4294967295u64,
            "u64": 1u64 << 40, "f32": -1.5, "f64": 0.25,
        }),
    ];
    assert_eq!(scalar_events.len(), expected.len());
    for (got, want) in scalar_events.iter().zip(&expected) {
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&got[k], v, "field {k} of {got:#}");
        }
    }
    let m = of("test.AllKinds");
    assert_eq!(m.len(), 1);
    let m = &m[0];
    assert_eq!(m["s"], "h\u{e9}llo");
    assert_eq!(m["empty"], "");
    assert!(m["none"].is_null() && m["nobody"].is_null(), "{m:#}");
    assert_eq!(m["n"], -300);
    assert_eq!(m["me"], m["eventThread"], "the committing thread");
    assert!(m["me"]["javaName"].is_string(), "{m:#}");
    let frames = m["stack"]["frames"].as_array().expect("a stack trace");
    assert!(
        frames
            .iter()
            .any(|f| f["method"]["name"] == "every_kind_prints_as_committed"),
        "the committing function is on the stack: {m:#}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A type is scalar exactly when it has no string, thread or stack-trace
/// field; scalar types take the one-pass commit.
#[test]
fn layouts_are_scalar_unless_a_string_thread_or_stack_field() {
    use crate::layout::Layout;
    use recorder::{EventTypeBuilder, FieldKind};
    let numbers = EventTypeBuilder::new("test.layout.Numbers")
        .field("a", FieldKind::U64)
        .field("b", FieldKind::Bool)
        .field("c", FieldKind::Char)
        .build()
        .unwrap();
    let l = Layout::leak(numbers);
    assert!(l.scalar);
    assert_eq!(l.kinds, [FieldKind::U64, FieldKind::Bool, FieldKind::Char]);
    for (i, other) in [FieldKind::String, FieldKind::Thread, FieldKind::StackTrace]
        .into_iter()
        .enumerate()
    {
        let ty = EventTypeBuilder::new(format!("test.layout.Mixed{i}"))
            .field("a", FieldKind::I8)
            .field("b", other)
            .build()
            .unwrap();
        assert!(!Layout::leak(ty).scalar, "{other:?}");
    }
}
