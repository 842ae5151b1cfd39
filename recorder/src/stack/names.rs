//! Mapping native symbol names onto JFR's class/method model.
//!
//! JFR tools show a frame as `package.Class.method()`, built from a class
//! name in internal form (`a/b/C`, shown as `a.b.C`), a method name and a
//! descriptor. Native code has no classes, so [`jfr_name`] derives them from
//! the demangled path:
//!
//! | symbol | class | method |
//! |---|---|---|
//! | `my_crate::module::Type::method` | `my_crate/module/Type` | `method` |
//! | `my_crate::work::burn_cpu` | `my_crate/work` | `burn_cpu` |
//! | `my_crate::main` | `my_crate` | `main` |
//! | `<my_crate::A as core::fmt::Debug>::fmt` | `my_crate/A` | `fmt` |
//! | `<&T as core::fmt::Display>::fmt` | `core/fmt/Display` | `fmt` |
//! | `my_crate::main::{{closure}}` | `my_crate` | `main::{{closure}}` |
//! | `memcpy` in `libc.so.6` | `libc.so.6` | `memcpy` |
//! | C++ `ns::Vec<int>::push(int const&)` | `ns/Vec` | `push` |
//!
//! # Mechanism
//!
//! The name is cut into path segments at the `::` separators that are not
//! nested inside brackets (`<>`, `()`, `[]`, `{}`; `->` and C++ `operator<`
//! do not count as brackets). All segments but the method form the class; the
//! method is the last named segment, followed by any anonymous segments
//! (`{{closure}}`, `{closure#0}`, `{shim:vtable#0}`). A leading qualified
//! segment `<Type as Trait>` contributes the path of `Type`, or of `Trait`
//! when `Type` is a generic parameter (`T`) or a reference to one; slices,
//! arrays and tuples become `slice`, `array` and `tuple`. Generic arguments
//! (`<..>`, `::<..>`), C++ parameter lists, return types and `[abi:..]` tags
//! are dropped. A name with no path at all takes as class the module path
//! guessed from its source file when that is a Rust file (inlined functions
//! of `line-tables-only` builds, see [`file_class`]), else the file name of
//! its object (a C function: async-profiler's convention, shown as
//! `libc.so.6.memcpy()`).
//!
//! The lexical part (brackets, separators, C++ signatures) is in
//! [`syntax`](super::syntax).
//!
//! Invariant: class names are non-empty `/`-separated path segments that
//! contain no `<`, `>`, `[`, `]`, `;`, `(`, `)` or whitespace, so the JDK's
//! array and descriptor decoding never fires on them and the package (every
//! segment but the last) is always a prefix of the class, as JMC requires.

/// A symbol mapped onto JFR's class/method model, names in internal form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JfrName {
    /// Every class segment but the last, `/`-separated; empty for none.
    pub(crate) package: String,
    /// The class, `/`-separated path segments, never empty.
    pub(crate) class: String,
    /// The method, never empty.
    pub(crate) method: String,
}

use super::syntax::{find_top_level, split_path, strip_cxx_signature, strip_generics};

/// The class of a frame whose module is unknown.
pub(crate) const UNKNOWN_CLASS: &str = "unknown";
/// The method of a frame whose symbol is unknown.
pub(crate) const UNKNOWN_METHOD: &str = "[unknown]";

impl JfrName {
    /// Builds a name from class segments (already sanitized, non-empty).
    fn new(class: &[String], method: String) -> Self {
        debug_assert!(!class.is_empty());
        let package = class[..class.len() - 1].join("/");
        Self {
            package,
            class: class.join("/"),
            method,
        }
    }

    /// The name of a frame that could not be symbolized, in `module` (a file
    /// name such as `libfoo.so`) if that is known.
    pub(crate) fn unknown(module: Option<&str>) -> Self {
        Self::new(&[module_class(module)], UNKNOWN_METHOD.to_owned())
    }
}

/// Maps a demangled symbol to a JFR class and method.
///
/// A name without path takes its class from `file`, the source file of the
/// frame, when that is a Rust file (see [`file_class`]), else from `module`,
/// the file name of the object that holds the symbol (for example
/// `libc.so.6`). Never panics, whatever the input.
pub(crate) fn jfr_name(symbol: &str, module: Option<&str>, file: Option<&str>) -> JfrName {
    let symbol = strip_cxx_signature(symbol.trim());
    let mut segments = split_path(symbol);
    segments.retain(|s| !s.is_empty());
    if segments.len() > 1 && segments.last().is_some_and(|s| is_legacy_hash(s)) {
        segments.pop();
    }

    let mut class = Vec::new();
    let mut rest = &segments[..];
    if let Some(first) = rest
        .first()
        .filter(|s| s.starts_with('<') && s.ends_with('>'))
    {
        class = qualified_class(&first[1..first.len() - 1]).unwrap_or_default();
        rest = &rest[1..];
    }
    // `::<T>` turbofish segments carry generic arguments only.
    let rest: Vec<&str> = rest
        .iter()
        .copied()
        .filter(|s| !s.starts_with('<'))
        .collect();

    let method = match rest.iter().rposition(|s| !is_anonymous(s)) {
        Some(at) => {
            class.extend(rest[..at].iter().filter_map(|s| sanitize_segment(s)));
            let mut method = strip_generics(rest[at]);
            for anon in &rest[at + 1..] {
                method.push_str("::");
                method.push_str(anon);
            }
            method
        }
        None => rest.join("::"),
    };
    let method = match method.trim() {
        "" => UNKNOWN_METHOD.to_owned(),
        m => m.to_owned(),
    };
    if class.is_empty() {
        class = file
            .and_then(file_class)
            .unwrap_or_else(|| vec![module_class(module)]);
    }
    JfrName::new(&class, method)
}

/// Whether a demangled name carries a path (`a::b`, `<T as U>::m`). Names
/// that DWARF gives without a linkage name, as in `line-tables-only` builds,
/// do not: `inner`, `push<u8>`, `{closure#0}`.
pub(crate) fn has_path(symbol: &str) -> bool {
    let symbol = strip_cxx_signature(symbol.trim());
    symbol.starts_with('<') || split_path(symbol).len() > 1
}

/// A class guessed from a Rust source file, for names without path:
/// `<crate>/src/a/b.rs` gives `<crate>/a/b` (`lib.rs`, `main.rs` and `mod.rs`
/// add no segment, a `-<version>` suffix on the crate directory is dropped),
/// `tests/x.rs` (also `examples/`, `benches/`) gives `x`. The crate
/// directory usually carries the crate's name, and the module path usually
/// follows the file path: a guess, only used when debug info has no path.
fn file_class(file: &str) -> Option<Vec<String>> {
    let stem = file.strip_suffix(".rs")?;
    let parts: Vec<&str> = stem
        .split(['/', '\\'])
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let src = parts.iter().rposition(|p| *p == "src").filter(|&at| at > 0);
    let target = parts
        .iter()
        .rposition(|p| matches!(*p, "tests" | "examples" | "benches"));
    let path: Vec<&str> = match (src, target) {
        (Some(src), target) if target.is_none_or(|t| t < src) => {
            let dir = parts[src - 1];
            // `tokio-1.40.0` → `tokio`.
            let krate = dir
                .match_indices('-')
                .find(|&(at, _)| dir[at + 1..].starts_with(|c: char| c.is_ascii_digit()))
                .map_or(dir, |(at, _)| &dir[..at]);
            let mut modules = &parts[src + 1..];
            if let [first, rest @ ..] = modules
                && *first == "bin"
                && !rest.is_empty()
            {
                // A binary is its own crate: `src/bin/x.rs` is `x`.
                return Some(vec![sanitize_segment(&rest[0].replace('-', "_"))?]);
            }
            if let [.., last] = modules
                && matches!(*last, "lib" | "main" | "mod")
            {
                modules = &modules[..modules.len() - 1];
            }
            std::iter::once(krate)
                .chain(modules.iter().copied())
                .collect()
        }
        (_, Some(target)) if target + 1 < parts.len() => vec![parts[target + 1]],
        _ => vec![*parts.last()?],
    };
    let class: Vec<String> = path
        .iter()
        .filter_map(|p| sanitize_segment(&p.replace('-', "_")))
        .collect();
    (!class.is_empty()).then_some(class)
}

/// The class for a name without path: the sanitized module file name.
fn module_class(module: Option<&str>) -> String {
    // `[vdso]` is a name, not a tag: keep its text.
    module
        .map(|m| m.replace(['[', ']'], ""))
        .and_then(|m| sanitize_segment(&m))
        .unwrap_or_else(|| UNKNOWN_CLASS.to_owned())
}

/// Whether a segment is an anonymous item such as `{{closure}}`.
fn is_anonymous(segment: &str) -> bool {
    segment.starts_with('{')
}

/// Whether a segment is a legacy-mangling hash (`h` + 16 hex digits).
fn is_legacy_hash(segment: &str) -> bool {
    segment.len() == 17
        && segment.starts_with('h')
        && segment[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The class path of a qualified segment's inside: `Type as Trait`,
/// `impl Trait for Type` or just `Type`.
fn qualified_class(inner: &str) -> Option<Vec<String>> {
    let (ty, tr) = if let Some(imp) = inner.strip_prefix("impl ") {
        match find_top_level(imp, " for ") {
            Some(at) => (&imp[at + 5..], Some(&imp[..at])),
            None => (imp, None),
        }
    } else {
        match find_top_level(inner, " as ") {
            Some(at) => (&inner[..at], Some(&inner[at + 4..])),
            None => (inner, None),
        }
    };
    type_path(ty).or_else(|| tr.and_then(type_path))
}

/// The class path of a type, or `None` for a generic parameter.
fn type_path(ty: &str) -> Option<Vec<String>> {
    let mut ty = ty.trim();
    loop {
        let before = ty;
        for prefix in [
            "&", "mut ", "*const ", "*mut ", "dyn ", "impl ", "unsafe ", "const ",
        ] {
            ty = ty.strip_prefix(prefix).unwrap_or(ty).trim_start();
        }
        if let Some(lifetime) = ty.strip_prefix('\'') {
            ty = lifetime.split_once(' ').map_or("", |(_, t)| t).trim_start();
        }
        if ty == before {
            break;
        }
    }
    if let Some(at) = find_top_level(ty, " + ") {
        ty = &ty[..at];
    }
    let word = if ty.starts_with('[') {
        if ty.contains(';') { "array" } else { "slice" }
    } else if ty == "()" {
        "unit"
    } else if ty.starts_with('(') {
        "tuple"
    } else if ty.starts_with("fn(") || ty.starts_with("extern ") {
        "fn"
    } else if let Some(inner) = ty.strip_prefix('<').filter(|_| ty.ends_with('>')) {
        return qualified_class(&inner[..inner.len() - 1]);
    } else {
        let path: Vec<String> = split_path(ty)
            .into_iter()
            .filter_map(sanitize_segment)
            .collect();
        return match path.len() {
            0 => None,
            1 if !is_primitive(&path[0]) => None,
            _ => Some(path),
        };
    };
    Some(vec![word.to_owned()])
}

/// Whether a single-segment type is a Rust primitive rather than a generic
/// parameter.
fn is_primitive(ty: &str) -> bool {
    matches!(
        ty,
        "bool"
            | "char"
            | "str"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "usize"
            | "f16"
            | "f32"
            | "f64"
            | "f128"
    )
}

/// Generic arguments and tags dropped, characters outside the safe set
/// replaced; `None` if nothing is left.
fn sanitize_segment(segment: &str) -> Option<String> {
    let cleaned: String = strip_generics(segment)
        .chars()
        .filter(|c| !matches!(c, '(' | ')' | '[' | ']' | '<' | '>' | ';'))
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '_' | '$' | '-' | '.' | '{' | '}' | '#') {
                c
            } else {
                '_'
            }
        })
        .collect();
    (!cleaned.is_empty()).then_some(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(package, class, method)` of a symbol found in `module`.
    fn map(symbol: &str, module: Option<&str>) -> (String, String, String) {
        let name = jfr_name(symbol, module, None);
        (name.package, name.class, name.method)
    }

    /// Asserts the class and method of a Rust symbol in the main binary.
    #[track_caller]
    fn check(symbol: &str, class: &str, method: &str) {
        let name = jfr_name(symbol, Some("app"), None);
        assert_eq!(
            (name.class.as_str(), name.method.as_str()),
            (class, method),
            "{symbol}"
        );
        assert!(name.class.starts_with(&name.package), "{name:?}");
        assert_class_is_safe(&name.class);
    }

    #[track_caller]
    fn assert_class_is_safe(class: &str) {
        assert!(!class.is_empty());
        assert!(
            !class.contains(|c: char| "<>[];()".contains(c) || c.is_whitespace()),
            "unsafe class name {class:?}"
        );
        assert!(
            !class.split('/').any(str::is_empty),
            "empty segment in {class:?}"
        );
    }

    #[test]
    fn packages_are_class_prefixes() {
        assert_eq!(
            map("my_crate::module::Type::method", None),
            (
                "my_crate/module".into(),
                "my_crate/module/Type".into(),
                "method".into()
            )
        );
        assert_eq!(
            map("my_crate::work::burn_cpu", None),
            ("my_crate".into(), "my_crate/work".into(), "burn_cpu".into())
        );
        assert_eq!(
            map("my_crate::main", None),
            ("".into(), "my_crate".into(), "main".into())
        );
    }

    #[test]
    fn plain_paths() {
        check(
            "std::rt::lang_start_internal",
            "std/rt",
            "lang_start_internal",
        );
        check(
            "std::sys::backtrace::__rust_begin_short_backtrace",
            "std/sys/backtrace",
            "__rust_begin_short_backtrace",
        );
        check(
            "std::panicking::try::do_call",
            "std/panicking/try",
            "do_call",
        );
        check(
            "std::thread::Builder::spawn_unchecked_",
            "std/thread/Builder",
            "spawn_unchecked_",
        );
        check(
            "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
            "tokio/runtime/scheduler/multi_thread/worker/Context",
            "run_task",
        );
        check(
            "tokio::runtime::context::runtime::enter_runtime",
            "tokio/runtime/context/runtime",
            "enter_runtime",
        );
        check("serde_json::de::from_str", "serde_json/de", "from_str");
        check(
            "alloc::raw_vec::RawVec<T,A>::grow_one",
            "alloc/raw_vec/RawVec",
            "grow_one",
        );
    }

    #[test]
    fn trait_impls_use_the_self_type() {
        check(
            "<my_crate::A as core::fmt::Debug>::fmt",
            "my_crate/A",
            "fmt",
        );
        check(
            "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
            "alloc/vec/Vec",
            "drop",
        );
        check(
            "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold",
            "core/iter/adapters/map/Map",
            "fold",
        );
        check(
            "<tokio::runtime::blocking::task::BlockingTask<T> as core::future::future::Future>::poll",
            "tokio/runtime/blocking/task/BlockingTask",
            "poll",
        );
        check(
            "<&mut serde_json::de::Deserializer<R> as serde::de::Deserializer>::deserialize_struct",
            "serde_json/de/Deserializer",
            "deserialize_struct",
        );
        check(
            "<serde_json::ser::Compound<W,F> as serde::ser::SerializeMap>::serialize_entry",
            "serde_json/ser/Compound",
            "serialize_entry",
        );
        check(
            "<alloc::boxed::Box<F,A> as core::ops::function::FnOnce<Args>>::call_once",
            "alloc/boxed/Box",
            "call_once",
        );
        check(
            "<core::pin::Pin<P> as core::future::future::Future>::poll",
            "core/pin/Pin",
            "poll",
        );
        check("<i32 as core::fmt::Display>::fmt", "i32", "fmt");
        check(
            "<impl core::fmt::Debug for my_crate::A>::fmt",
            "my_crate/A",
            "fmt",
        );
    }

    #[test]
    fn generic_self_types_fall_back_to_the_trait() {
        check("<&T as core::fmt::Display>::fmt", "core/fmt/Display", "fmt");
        check(
            "<F as core::future::future::Future>::poll",
            "core/future/future/Future",
            "poll",
        );
        check(
            "<&mut W as core::fmt::Write>::write_str",
            "core/fmt/Write",
            "write_str",
        );
        check("<[T] as core::fmt::Debug>::fmt", "slice", "fmt");
        check("<[u8; 4] as core::fmt::Debug>::fmt", "array", "fmt");
        check("<(A, B) as core::hash::Hash>::hash", "tuple", "hash");
        check("<() as core::fmt::Debug>::fmt", "unit", "fmt");
        check(
            "<dyn core::any::Any + core::marker::Send>::type_id",
            "core/any/Any",
            "type_id",
        );
        check(
            "<fn() -> u8 as core::ops::function::Fn<()>>::call",
            "fn",
            "call",
        );
        check("<T>::method", "app", "method");
    }

    #[test]
    fn v0_inherent_impls_and_turbofish() {
        check("<alloc::vec::Vec<u8>>::push", "alloc/vec/Vec", "push");
        check(
            "<serde_json::de::Deserializer<serde_json::read::StrRead>>::parse_whitespace",
            "serde_json/de/Deserializer",
            "parse_whitespace",
        );
        check(
            "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>",
            "core/ptr",
            "drop_in_place",
        );
        check(
            "core::ptr::drop_in_place<alloc::string::String>",
            "core/ptr",
            "drop_in_place",
        );
        check(
            "std::rt::lang_start::<()>::{closure#0}",
            "std/rt",
            "lang_start::{closure#0}",
        );
        check(
            "std[a1b2c3d4e5f60718]::rt::lang_start_internal",
            "std/rt",
            "lang_start_internal",
        );
    }

    #[test]
    fn closures_and_shims_stay_in_the_method() {
        check(
            "my_crate::main::{{closure}}",
            "my_crate",
            "main::{{closure}}",
        );
        check(
            "std::thread::Builder::spawn_unchecked_::{{closure}}::{{closure}}",
            "std/thread/Builder",
            "spawn_unchecked_::{{closure}}::{{closure}}",
        );
        check(
            "tokio::runtime::task::harness::poll_future::{{closure}}",
            "tokio/runtime/task/harness",
            "poll_future::{{closure}}",
        );
        check(
            "core::ops::function::FnOnce::call_once{{vtable.shim}}",
            "core/ops/function/FnOnce",
            "call_once{{vtable.shim}}",
        );
        check(
            "<my_crate::A as core::fmt::Debug>::fmt::{{closure}}",
            "my_crate/A",
            "fmt::{{closure}}",
        );
        check(
            "<std::thread::Builder>::spawn_unchecked_::<F, T>::{closure#1}",
            "std/thread/Builder",
            "spawn_unchecked_::{closure#1}",
        );
        check(
            "core::ops::function::FnOnce::call_once::{shim:vtable#0}",
            "core/ops/function/FnOnce",
            "call_once::{shim:vtable#0}",
        );
    }

    #[test]
    fn legacy_hash_is_dropped() {
        check(
            "my_crate::work::burn_cpu::h0123456789abcdef",
            "my_crate/work",
            "burn_cpu",
        );
    }

    #[test]
    fn c_symbols_take_the_module_name() {
        assert_eq!(
            map("memcpy", Some("libc.so.6")),
            ("".into(), "libc.so.6".into(), "memcpy".into())
        );
        assert_eq!(
            map("__libc_start_call_main", Some("libc.so.6")).1,
            "libc.so.6"
        );
        assert_eq!(map("main", Some("my-app")).1, "my-app");
        assert_eq!(map("__vdso_clock_gettime", Some("[vdso]")).1, "vdso");
        assert_eq!(
            map("_start", None),
            ("".into(), "unknown".into(), "_start".into())
        );
    }

    #[test]
    fn cxx_signatures() {
        check(
            "std::vector<int, std::allocator<int> >::push_back(int const&)",
            "std/vector",
            "push_back",
        );
        check(
            "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
            "std/vector",
            "_M_realloc_insert",
        );
        check("ns::Foo::bar(int) const", "ns/Foo", "bar");
        check(
            "(anonymous namespace)::Worker::run()",
            "anonymous_namespace/Worker",
            "run",
        );
        check(
            "void (anonymous namespace)::helper<int>(int)",
            "anonymous_namespace",
            "helper",
        );
        check(
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create[abi:cxx11](unsigned long&, unsigned long)",
            "std/__cxx11/basic_string",
            "_M_create",
        );
        check("ns::Foo::operator()(int)", "ns/Foo", "operator()");
        check("ns::Foo::operator<<(int)", "ns/Foo", "operator<<");
        check(
            "ns::Foo::operator new(unsigned long)",
            "ns/Foo",
            "operator new",
        );
        check("std::ostream::operator<<(int)", "std/ostream", "operator<<");
        check(
            "std::function<void ()>::operator()() const",
            "std/function",
            "operator()",
        );
    }

    #[test]
    fn pathless_rust_names_take_the_class_of_their_file() {
        let class = |file: &str| jfr_name("push<u8>", Some("app"), Some(file)).class;
        assert_eq!(
            class("/rustc/0123abc/library/core/src/option.rs"),
            "core/option"
        );
        assert_eq!(
            class("/rustc/0123abc/library/alloc/src/vec/mod.rs"),
            "alloc/vec"
        );
        assert_eq!(
            class(
                "/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.40.0/src/runtime/task/harness.rs"
            ),
            "tokio/runtime/task/harness"
        );
        assert_eq!(class("/work/main/my-app/src/main.rs"), "my_app");
        assert_eq!(class("/r/my-crate-0.3.1/src/a.rs"), "my_crate/a");
        assert_eq!(class("/work/main/my-app/src/lib.rs"), "my_app");
        assert_eq!(class("/work/main/my-app/src/bin/tool-x.rs"), "tool_x");
        assert_eq!(
            class("/work/main/recorder/tests/stack_symbolize.rs"),
            "stack_symbolize"
        );
        assert_eq!(class("/work/main/src/examples/demo.rs"), "demo");
        assert_eq!(class("lonely.rs"), "lonely");
        assert_eq!(class("./nptl/pthread_create.c"), "app");
        assert_eq!(class("src/x.rs"), "x");
        let name = jfr_name("{closure#0}", Some("app"), Some("/w/tests/t.rs"));
        assert_eq!(
            (name.class.as_str(), name.method.as_str()),
            ("t", "{closure#0}")
        );
        // Names with a path ignore the file.
        assert_eq!(jfr_name("a::b::c", None, Some("/x/src/y.rs")).class, "a/b");
    }

    #[test]
    fn paths_are_detected() {
        for with_path in [
            "a::b",
            "<T as x::Y>::f",
            "<a::B>::f",
            "ns::f(int)",
            "a::{{closure}}",
        ] {
            assert!(has_path(with_path), "{with_path}");
        }
        for without in [
            "inner",
            "push<u8>",
            "unwrap<core::option::Option<u8>>",
            "{closure#0}",
            "memcpy",
            "",
        ] {
            assert!(!has_path(without), "{without}");
        }
    }

    #[test]
    fn unknown_frames() {
        let name = JfrName::unknown(None);
        assert_eq!(
            (name.class.as_str(), name.method.as_str()),
            ("unknown", "[unknown]")
        );
        assert_eq!(JfrName::unknown(Some("libfoo.so")).class, "libfoo.so");
    }

    #[test]
    fn odd_input_never_panics_and_stays_safe() {
        let inputs = [
            "",
            " ",
            "::",
            "::::",
            "<",
            ">",
            "<<>>",
            "a::",
            "::b",
            "<a as>",
            "<as b>::c",
            "{{closure}}",
            "a::{{closure}}",
            "operator",
            "operator<",
            "a::operator",
            "((((",
            "))))",
            "<a::b as c::d",
            "a<b::c",
            "a>b::c",
            "a->b::c",
            "é::ü::ß",
            "<impl>::x",
            "<impl for>::x",
            "a:b:c",
            "a:::b",
            "[u8]",
            "<[u8]>::len",
            "'a",
            "<&'a T as x::Y>::z",
            "h0123456789abcdef",
        ];
        for input in inputs {
            for module in [None, Some("libx.so"), Some("[vdso]"), Some("")] {
                let name = jfr_name(input, module, Some(input));
                assert_class_is_safe(&name.class);
                assert!(!name.method.is_empty(), "{input:?}");
                assert!(name.class.starts_with(&name.package), "{input:?}");
            }
        }
        check("<&'a my::T as x::Y>::z", "my/T", "z");
    }
}
