//! The tour's constants: threads, classes, methods, stack traces and pooled
//! strings, each with a key that keeps its meaning for the whole file (the
//! JDK reuses a key's value from the previous chunk, §6.4 rule 5).
//!
//! A chunk writes exactly the constants its events reach, closed over
//! references (a stack trace pulls in its methods, their classes, the
//! classes' packages and loaders, and all their symbols).

use std::collections::{BTreeMap, BTreeSet};

use flightrec::jfr_format::Checkpoint;
use flightrec::jfr_format::TypeId;
use flightrec::jfr_format::types::{ACC_NATIVE, ACC_PUBLIC};
use flightrec::jfr_format::write::constants::{
    self as cv, ClassValue, FrameValue, MethodValue, ThreadValue, frame_type,
};

/// A `java.lang.Thread` constant.
#[derive(Debug, Clone)]
pub(crate) struct ThreadSpec {
    pub(crate) os_name: &'static str,
    pub(crate) os_thread_id: i64,
    pub(crate) java_name: Option<&'static str>,
    pub(crate) java_thread_id: i64,
    pub(crate) group: u64,
}

/// A `java.lang.Class` constant; `name` in internal form (`a/b/C`).
#[derive(Debug, Clone)]
pub(crate) struct ClassSpec {
    pub(crate) name: &'static str,
    pub(crate) loader: u64,
    pub(crate) package: u64,
    pub(crate) modifiers: i32,
}

/// A `jdk.types.Method` constant.
#[derive(Debug, Clone)]
pub(crate) struct MethodSpec {
    pub(crate) class: u64,
    pub(crate) name: &'static str,
    pub(crate) descriptor: &'static str,
    pub(crate) modifiers: i32,
}

/// One frame of a stack trace; frame 0 is the innermost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameSpec {
    pub(crate) method: u64,
    pub(crate) line: i32,
    pub(crate) bytecode_index: i32,
    pub(crate) frame_type: (u64, &'static str),
}

/// A `jdk.types.StackTrace` constant.
#[derive(Debug, Clone)]
pub(crate) struct TraceSpec {
    pub(crate) truncated: bool,
    pub(crate) frames: Vec<FrameSpec>,
}

/// Every constant of the tour, by key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Constants {
    pub(crate) threads: BTreeMap<u64, ThreadSpec>,
    /// Thread groups: key → (parent key, name).
    pub(crate) thread_groups: BTreeMap<u64, (u64, &'static str)>,
    pub(crate) classes: BTreeMap<u64, ClassSpec>,
    /// Class loaders: key → (class key of the loader, name).
    pub(crate) loaders: BTreeMap<u64, (u64, &'static str)>,
    /// Packages: key → name in internal form.
    pub(crate) packages: BTreeMap<u64, &'static str>,
    pub(crate) methods: BTreeMap<u64, MethodSpec>,
    pub(crate) traces: BTreeMap<u64, TraceSpec>,
    /// The `java.lang.String` pool: key → text.
    pub(crate) strings: BTreeMap<u64, String>,
    /// Symbols, keyed by text; keys in HotSpot's style (`0x2000000 + n`).
    symbols: BTreeMap<&'static str, u64>,
}

/// Thread keys.
pub(crate) const MAIN_THREAD: u64 = 1;
pub(crate) const WORKER_THREAD: u64 = 2;
pub(crate) const NATIVE_THREAD: u64 = 3;
/// Class keys.
pub(crate) const WIDGET_CLASS: u64 = 1;
pub(crate) const BYTE_ARRAY_CLASS: u64 = 2;
pub(crate) const LIST_CLASS: u64 = 3;
pub(crate) const LIBC_CLASS: u64 = 4;
pub(crate) const LOADER_CLASS: u64 = 5;
/// Stack-trace keys.
pub(crate) const TRACE_RENDER: u64 = 1;
pub(crate) const TRACE_NATIVE: u64 = 2;
pub(crate) const TRACE_TRUNCATED: u64 = 3;
/// `java.lang.String` pool keys.
pub(crate) const POOLED_GREETING: u64 = 7;
pub(crate) const POOLED_LONG: u64 = 8;

impl Constants {
    /// The tour's constants.
    pub(crate) fn new() -> Self {
        let mut c = Constants::default();
        let public = ACC_PUBLIC;
        c.thread_groups.insert(1, (0, "main"));
        c.thread_groups.insert(2, (1, "workers"));
        c.threads.insert(
            MAIN_THREAD,
            ThreadSpec {
                os_name: "main",
                os_thread_id: 4242,
                java_name: Some("main"),
                java_thread_id: 1,
                group: 1,
            },
        );
        c.threads.insert(
            WORKER_THREAD,
            ThreadSpec {
                os_name: "worker-日本-🦀",
                os_thread_id: 4243,
                java_name: Some("worker-日本-🦀"),
                java_thread_id: 2,
                group: 2,
            },
        );
        c.threads.insert(
            NATIVE_THREAD,
            ThreadSpec {
                os_name: "io-uring-sq",
                os_thread_id: i64::from(i32::MAX) + 7,
                java_name: None,
                java_thread_id: 0,
                group: 0,
            },
        );
        c.packages.insert(1, "flightrec/tour");
        c.packages.insert(2, "java/util");
        c.packages.insert(3, "jdk/internal/loader");
        c.loaders.insert(1, (LOADER_CLASS, "app"));
        let class = |name, loader, package, modifiers| ClassSpec {
            name,
            loader,
            package,
            modifiers,
        };
        c.classes
            .insert(WIDGET_CLASS, class("flightrec/tour/Widget", 1, 1, public));
        c.classes
            .insert(BYTE_ARRAY_CLASS, class("[B", 0, 0, public));
        c.classes
            .insert(LIST_CLASS, class("java/util/ArrayList", 0, 2, public));
        c.classes.insert(LIBC_CLASS, class("libc.so.6", 0, 0, 0));
        c.classes.insert(
            LOADER_CLASS,
            class("jdk/internal/loader/ClassLoaders$AppClassLoader", 0, 3, 0),
        );
        let method = |class, name, descriptor, modifiers| MethodSpec {
            class,
            name,
            descriptor,
            modifiers,
        };
        c.methods.insert(
            1,
            method(WIDGET_CLASS, "render", "(IJLjava/lang/String;)V", public),
        );
        c.methods
            .insert(2, method(WIDGET_CLASS, "layout", "([BZ)I", public));
        c.methods.insert(
            3,
            method(
                LIST_CLASS,
                "forEach",
                "(Ljava/util/function/Consumer;)V",
                public,
            ),
        );
        c.methods.insert(
            4,
            method(WIDGET_CLASS, "main", "([Ljava/lang/String;)V", public | 0x8),
        );
        c.methods
            .insert(5, method(LIBC_CLASS, "memcpy", "()L;", ACC_NATIVE));
        c.methods.insert(
            6,
            method(LIBC_CLASS, "__libc_start_main", "()L;", ACC_NATIVE),
        );
        let frame = |method, line, bytecode_index, frame_type| FrameSpec {
            method,
            line,
            bytecode_index,
            frame_type,
        };
        c.traces.insert(
            TRACE_RENDER,
            TraceSpec {
                truncated: false,
                frames: vec![
                    frame(1, 42, 7, frame_type::JIT_COMPILED),
                    frame(2, 108, 19, frame_type::INLINED),
                    frame(3, 1596, 0, frame_type::INTERPRETED),
                    frame(4, 12, 3, frame_type::INTERPRETED),
                ],
            },
        );
        c.traces.insert(
            TRACE_NATIVE,
            TraceSpec {
                truncated: false,
                frames: vec![
                    frame(5, -1, 0, frame_type::NATIVE),
                    frame(1, 43, 11, frame_type::JIT_COMPILED),
                    frame(4, 12, 3, frame_type::INTERPRETED),
                    frame(6, -1, 0, frame_type::NATIVE),
                ],
            },
        );
        c.traces.insert(
            TRACE_TRUNCATED,
            TraceSpec {
                truncated: true,
                frames: (0..40)
                    .map(|i| {
                        frame(
                            if i % 2 == 0 { 1 } else { 2 },
                            100 + i,
                            i,
                            frame_type::JIT_COMPILED,
                        )
                    })
                    .collect(),
            },
        );
        c.strings
            .insert(POOLED_GREETING, "pooled: 你好, wêreld 👋".to_owned());
        c.strings.insert(POOLED_LONG, "pooled ".repeat(3000));
        let mut symbols: Vec<&'static str> = Vec::new();
        symbols.extend(c.classes.values().map(|k| k.name));
        symbols.extend(c.packages.values().copied());
        symbols.extend(c.loaders.values().map(|l| l.1));
        symbols.extend(c.methods.values().flat_map(|m| [m.name, m.descriptor]));
        for s in symbols {
            let next = 0x200_0000 + c.symbols.len() as u64 + 1;
            c.symbols.entry(s).or_insert(next);
        }
        c
    }

    /// The key of symbol `text` (which must be one of the tour's).
    pub(crate) fn symbol(&self, text: &str) -> u64 {
        self.symbols[text]
    }
}

/// The constants one chunk references directly; [`Used::close`] adds what
/// they reference in turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Used {
    pub(crate) threads: BTreeSet<u64>,
    pub(crate) classes: BTreeSet<u64>,
    pub(crate) traces: BTreeSet<u64>,
    pub(crate) strings: BTreeSet<u64>,
    /// Methods and frame types of frames written outside a stack trace.
    pub(crate) methods: BTreeSet<u64>,
    pub(crate) frame_types: BTreeSet<(u64, &'static str)>,
}

/// Everything a chunk must define, closed over references.
#[derive(Debug, Clone, Default)]
pub(crate) struct Closure {
    threads: BTreeSet<u64>,
    thread_groups: BTreeSet<u64>,
    classes: BTreeSet<u64>,
    loaders: BTreeSet<u64>,
    packages: BTreeSet<u64>,
    methods: BTreeSet<u64>,
    traces: BTreeSet<u64>,
    frame_types: BTreeSet<(u64, &'static str)>,
    symbols: BTreeSet<u64>,
    strings: BTreeSet<u64>,
}

impl Used {
    /// Adds every constant the used ones reach.
    pub(crate) fn close(&self, c: &Constants) -> Closure {
        let mut k = Closure {
            threads: self.threads.clone(),
            classes: self.classes.clone(),
            traces: self.traces.clone(),
            strings: self.strings.clone(),
            methods: self.methods.clone(),
            frame_types: self.frame_types.clone(),
            ..Closure::default()
        };
        for t in &k.threads {
            let mut group = c.threads[t].group;
            while group != 0 && k.thread_groups.insert(group) {
                group = c.thread_groups[&group].0;
            }
        }
        for t in &k.traces {
            for f in &c.traces[t].frames {
                k.methods.insert(f.method);
                k.frame_types.insert(f.frame_type);
            }
        }
        for m in &k.methods {
            let m = &c.methods[m];
            k.classes.insert(m.class);
            k.symbols.extend([c.symbol(m.name), c.symbol(m.descriptor)]);
        }
        // Loaders name a class, which may have a loader in turn: iterate.
        loop {
            let before = (k.classes.len(), k.loaders.len());
            for class in k.classes.clone() {
                let spec = &c.classes[&class];
                k.symbols.insert(c.symbol(spec.name));
                if spec.package != 0 {
                    k.packages.insert(spec.package);
                }
                if spec.loader != 0 && k.loaders.insert(spec.loader) {
                    let (loader_class, name) = c.loaders[&spec.loader];
                    k.classes.insert(loader_class);
                    k.symbols.insert(c.symbol(name));
                }
            }
            if before == (k.classes.len(), k.loaders.len()) {
                break;
            }
        }
        for p in &k.packages {
            k.symbols.insert(c.symbol(c.packages[p]));
        }
        k
    }
}

/// Which pools a checkpoint carries (chunk 2 splits them over two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pools {
    /// Every pool.
    All,
    /// Threads, thread groups and strings.
    ThreadsAndStrings,
    /// Everything else.
    Rest,
}

/// Adds the pools selected by `which` for `k` to `cp`. Pools with no entry
/// remove themselves (an empty pool is fatal to the JDK).
pub(crate) fn write_pools(cp: &mut Checkpoint, c: &Constants, k: &Closure, which: Pools) {
    let first = matches!(which, Pools::All | Pools::ThreadsAndStrings);
    let rest = matches!(which, Pools::All | Pools::Rest);
    if first {
        let mut p = cp.pool(TypeId::THREAD);
        for key in &k.threads {
            let t = &c.threads[key];
            let v = ThreadValue {
                os_name: t.os_name,
                os_thread_id: t.os_thread_id,
                java_name: t.java_name,
                java_thread_id: t.java_thread_id,
                group: t.group,
            };
            cv::write_thread(p.entry(*key), &v);
        }
        drop(p);
        let mut p = cp.pool(TypeId::THREAD_GROUP);
        for key in &k.thread_groups {
            let (parent, name) = c.thread_groups[key];
            cv::write_thread_group(p.entry(*key), parent, name);
        }
        drop(p);
        let mut p = cp.pool(TypeId::STRING);
        for key in &k.strings {
            flightrec::jfr_format::write::encode::Sink::put_str(p.entry(*key), &c.strings[key]);
        }
    }
    if rest {
        write_type_set(cp, c, k);
    }
}

/// Classes, loaders, packages, methods, stack traces, frame types, symbols.
fn write_type_set(cp: &mut Checkpoint, c: &Constants, k: &Closure) {
    let mut p = cp.pool(TypeId::CLASS);
    for key in &k.classes {
        let s = &c.classes[key];
        let v = ClassValue {
            class_loader: s.loader,
            name: c.symbol(s.name),
            package: s.package,
            modifiers: s.modifiers,
            hidden: false,
        };
        cv::write_class(p.entry(*key), &v);
    }
    drop(p);
    let mut p = cp.pool(TypeId::CLASS_LOADER);
    for key in &k.loaders {
        let (class, name) = c.loaders[key];
        cv::write_class_loader(p.entry(*key), class, c.symbol(name));
    }
    drop(p);
    let mut p = cp.pool(TypeId::PACKAGE);
    for key in &k.packages {
        cv::write_package(p.entry(*key), c.symbol(c.packages[key]), 0, true);
    }
    drop(p);
    let mut p = cp.pool(TypeId::METHOD);
    for key in &k.methods {
        let m = &c.methods[key];
        let v = MethodValue {
            class: m.class,
            name: c.symbol(m.name),
            descriptor: c.symbol(m.descriptor),
            modifiers: m.modifiers,
            hidden: false,
        };
        cv::write_method(p.entry(*key), &v);
    }
    drop(p);
    let mut p = cp.pool(TypeId::STACK_TRACE);
    for key in &k.traces {
        let t = &c.traces[key];
        let frames: Vec<FrameValue> = t
            .frames
            .iter()
            .map(|f| FrameValue {
                method: f.method,
                line: f.line,
                bytecode_index: f.bytecode_index,
                frame_type: f.frame_type.0,
            })
            .collect();
        cv::write_stack_trace(p.entry(*key), t.truncated, &frames);
    }
    drop(p);
    let mut p = cp.pool(TypeId::FRAME_TYPE);
    for (key, name) in &k.frame_types {
        cv::write_simple_string(p.entry(*key), name);
    }
    drop(p);
    let mut p = cp.pool(TypeId::SYMBOL);
    let by_key: BTreeMap<u64, &str> = c.symbols.iter().map(|(s, k)| (*k, *s)).collect();
    for key in &k.symbols {
        cv::write_symbol(p.entry(*key), by_key[key]);
    }
}
