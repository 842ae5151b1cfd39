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
