//! Capture a stack three functions deep and symbolize it: the frames must
//! come back innermost first with exact class and method names, the test
//! file and plausible lines. Runs in debug and in release
//! (`debug = "line-tables-only"`).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::hint::black_box;

use recorder::stack::{ResolvedFrame, Symbolizer, capture};

/// Line of the `fn inner` item below (checked against the resolved lines).
const INNER_LINE: u32 = line!() + 4;

/// Captures the stack (slot 0 is this function).
#[inline(never)]
fn inner(seed: u64, out: &mut [u64]) -> usize {
    let mixed = black_box(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let captured = capture(0, out);
    assert!(!captured.truncated);
    black_box(mixed);
    captured.len
}

#[inline(never)]
fn middle(seed: u64, out: &mut [u64]) -> usize {
    let seed = black_box(seed.rotate_left(7));
    let len = inner(seed, out);
    black_box(len)
}

#[inline(never)]
fn outer(seed: u64, out: &mut [u64]) -> usize {
    let seed = black_box(seed ^ 0x5555);
    let len = middle(seed, out);
    black_box(len)
}

/// Line of this function's end: all three functions lie in between.
const OUTER_END_LINE: u32 = line!();

fn describe(frames: &[ResolvedFrame]) -> String {
    frames
        .iter()
        .map(|f| {
            format!(
                "{}.{}() {}:{}{}\n",
                f.class,
                f.method,
                f.file.as_deref().unwrap_or("?"),
                f.line.map_or(-1, i64::from),
                if f.inlined { " [inlined]" } else { "" }
            )
        })
        .collect()
}

#[test]
fn nested_functions_resolve_in_order() {
    let mut ips = [0u64; 128];
    let len = outer(42, &mut ips);
    let mut symbolizer = Symbolizer::new();
    symbolizer.prefetch(&ips[..len]);
    let frames: Vec<ResolvedFrame> = ips[..len]
        .iter()
        .flat_map(|&ip| symbolizer.resolve(ip).to_vec())
        .collect();
    let dump = describe(&frames);
    eprintln!("{dump}");

    let names: Vec<(&str, &str)> = frames
        .iter()
        .take(3)
        .map(|f| (f.class.as_str(), f.method.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("stack_symbolize", "inner"),
            ("stack_symbolize", "middle"),
            ("stack_symbolize", "outer")
        ],
        "\n{dump}"
    );
    for frame in &frames[..3] {
        assert_eq!(frame.package, "");
        assert!(!frame.inlined, "{frame:?}");
        let file = frame.file.as_deref().unwrap_or_default();
        assert!(file.ends_with("tests/stack_symbolize.rs"), "{frame:?}");
        let line = frame.line.expect("line");
        assert!((INNER_LINE..=OUTER_END_LINE).contains(&line), "{frame:?}");
    }
    // Each frame's line is the call in that function, so they increase
    // from inner to outer (the functions are defined in that order).
    assert!(
        frames[0].line < frames[1].line && frames[1].line < frames[2].line,
        "\n{dump}"
    );
    // The test function called `outer`.
    assert!(
        frames
            .iter()
            .any(|f| f.method == "nested_functions_resolve_in_order"),
        "\n{dump}"
    );
}

#[test]
fn cache_returns_the_same_frames() {
    let mut ips = [0u64; 128];
    let len = outer(7, &mut ips);
    let mut symbolizer = Symbolizer::new();
    let first: Vec<Vec<ResolvedFrame>> = ips[..len]
        .iter()
        .map(|&ip| symbolizer.resolve(ip).to_vec())
        .collect();
    let again: Vec<Vec<ResolvedFrame>> = ips[..len]
        .iter()
        .map(|&ip| symbolizer.resolve(ip).to_vec())
        .collect();
    assert_eq!(first, again);
    assert!(
        first
            .iter()
            .all(|frames| !frames.is_empty() && !frames.last().unwrap().inlined)
    );
}

#[test]
fn unmapped_address_is_unknown() {
    let mut symbolizer = Symbolizer::new();
    let frames = symbolizer.resolve(8);
    assert_eq!(frames.len(), 1);
    assert_eq!(
        (frames[0].class.as_str(), frames[0].method.as_str()),
        ("unknown", "[unknown]")
    );
}

unsafe extern "C" {
    fn getpid() -> c_int;
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;

#[test]
fn shared_library_symbols_take_the_library_name() {
    let mut symbolizer = Symbolizer::new();
    let frames = symbolizer.resolve(getpid as *const () as u64);
    let frame = frames.last().unwrap();
    assert_eq!(frame.class, "libc.so.6", "{frame:?}");
    assert!(frame.method.contains("getpid"), "{frame:?}");
}

#[test]
fn libraries_loaded_later_resolve() {
    let mut symbolizer = Symbolizer::new();
    // Resolve something first, so the symbolizer has read the maps once.
    assert_eq!(
        symbolizer
            .resolve(getpid as *const () as u64)
            .last()
            .unwrap()
            .class,
        "libc.so.6"
    );

    let lib = c"libm.so.6";
    // SAFETY: `lib` is a NUL-terminated string; libm has no initialisers
    // that could interfere with the test.
    let handle = unsafe { dlopen(lib.as_ptr(), RTLD_NOW) };
    assert!(!handle.is_null(), "dlopen {}", lib.to_string_lossy());
    let name: &CStr = c"cos";
    // SAFETY: `handle` is a live handle from `dlopen` (never closed) and
    // `name` is NUL-terminated.
    let cos = unsafe { dlsym(handle, name.as_ptr()) };
    assert!(!cos.is_null());

    let frame = symbolizer.resolve(cos as u64).last().unwrap().clone();
    assert_eq!(frame.class, "libm.so.6", "{frame:?}");
    assert!(frame.method.contains("cos"), "{frame:?}");
}

#[test]
fn symbolizer_moves_to_another_thread() {
    let mut ips = [0u64; 128];
    let len = outer(3, &mut ips);
    let mut symbolizer = Symbolizer::new();
    symbolizer.prefetch(&ips[..len]);
    let methods = std::thread::spawn(move || {
        // Cached and fresh lookups both work after the move.
        let inner = symbolizer.resolve(ips[0])[0].method.clone();
        let getpid = symbolizer
            .resolve(getpid as *const () as u64)
            .last()
            .unwrap()
            .class
            .clone();
        (inner, getpid)
    })
    .join()
    .unwrap();
    assert_eq!(methods, ("inner".to_owned(), "libc.so.6".to_owned()));
}

/// With no room for debug info, frames are named from symbol tables: the
/// test's own functions by their full paths (no lines), and libc's
/// internal `start_thread`, which only its separate debug file's symbol
/// table names, when that file is installed.
#[test]
fn without_debug_info_frames_keep_their_names() {
    let stack = std::thread::spawn(|| {
        let mut out = [0u64; 64];
        let len = outer(3, &mut out);
        out[..len].to_vec()
    })
    .join()
    .unwrap();
    let mut symbolizer = Symbolizer::new();
    symbolizer.set_debug_info_limit(0);
    symbolizer.prefetch(&stack);
    let frames: Vec<ResolvedFrame> = stack
        .iter()
        .flat_map(|&a| symbolizer.resolve(a).to_vec())
        .collect();
    let methods: Vec<&str> = frames.iter().map(|f| f.method.as_str()).collect();
    for name in ["inner", "middle", "outer"] {
        assert!(methods.contains(&name), "{name} in {frames:#?}");
    }
    assert!(
        frames.iter().all(|f| f.line.is_none() && !f.inlined),
        "{frames:#?}"
    );
    assert_eq!(symbolizer.debug_info_bytes(), 0);
    assert!(symbolizer.objects_without_debug_info() >= 1);
    let libc_debug = std::path::Path::new("/usr/lib/debug/.build-id").is_dir();
    if libc_debug {
        assert!(methods.contains(&"start_thread"), "{frames:#?}");
    }
}
