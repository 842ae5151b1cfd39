//! From captured stacks to JFR's class/method model: symbolization and the
//! symbol, package, class, method and stack-trace pools.
//!
//! Owned by the recorder thread; nothing here is on an emitting thread's
//! path. Every name gets a key the first time it is seen and keeps it for the
//! life of the process, so a constant written in two chunks of one file means
//! the same thing in both (the JDK reuses a previous chunk's value for a key
//! it has seen).
//!
//! # Release
//!
//! When the stack repository releases stacks (see [`super::stacks`]), their
//! resolved frames go too ([`FrameTables::release`]), and the methods,
//! classes, packages and symbols no remaining stack uses are dropped. A name
//! seen again later gets a new key (keys are never reused, so a key means
//! one thing in every chunk of a file). The tables' size counts against the
//! constant pools' share of `max_memory`.
//!
//! Invariant: the pools written for a set of stack-trace keys contain every
//! method, class, package and symbol those stacks reference, and every
//! reference points at a defined constant (a null method or class makes
//! `jfr print` throw); a key the repository no longer knows is written as an
//! empty, truncated stack trace rather than left undefined.

use std::collections::{BTreeSet, HashMap};

use jfr_format::types::ACC_NATIVE;
use jfr_format::write::constants::{
    ClassValue, FrameValue, MethodValue, frame_type, write_class, write_class_loader, write_method,
    write_package, write_stack_trace, write_symbol,
};
use jfr_format::{Checkpoint, TypeId};

use super::stacks::StackRepository;
use crate::feature::TopCut;
use crate::stack::{ResolvedFrame, Symbolizer};

/// Classes of the recorder's own functions (`recorder::event::commit`, …).
const RECORDER_CLASS_PREFIX: &str = "recorder/";

/// The first feature whose marker `frame` is, and what it cuts.
fn stack_marker(frame: u64) -> Option<TopCut> {
    crate::feature::all()
        .iter()
        .find_map(|f| f.stack_marker(frame))
}

/// The class loader of the program's own classes (`jdk.types.ClassLoader`
/// named `app`), its name symbol at `+1`. The JDK's views take a frame
/// whose class has a loader other than `bootstrap` for an application
/// frame (`stackTrace.topApplicationFrame`, as `memory-leaks-by-site`
/// groups by): the classes of Rust's standard library, of shared
/// objects and unknown frames have none.
const APP_LOADER: u64 = super::keys::APP_LOADER;

/// True if frames of `class` are the program's (see [`APP_LOADER`]).
fn is_application_class(class: &str) -> bool {
    const RUNTIME: [&str; 5] = ["std/", "core/", "alloc/", "hashbrown/", "recorder/"];
    !(RUNTIME.iter().any(|p| class.starts_with(p))
        || ["std", "core", "alloc"].contains(&class)
        || class.contains(".so")
        || class == crate::stack::names::UNKNOWN_CLASS)
}

/// The descriptor every native method gets.
const DESCRIPTOR: &str = "()V";

#[derive(Debug, Clone, Copy)]
struct ClassEntry {
    key: u64,
    name: u64,
    package: u64,
}

#[derive(Debug, Clone, Copy)]
struct MethodEntry {
    key: u64,
    class: u64,
    name: u64,
}

/// Symbolized frames and the name tables behind them.
#[derive(Debug, Default)]
pub(crate) struct FrameTables {
    symbolizer: Symbolizer,
    next_key: u64,
    symbols: HashMap<String, u64>,
    /// Package name → (key, name symbol).
    packages: HashMap<String, (u64, u64)>,
    classes: HashMap<String, ClassEntry>,
    methods: HashMap<(u64, String), MethodEntry>,
    /// Resolved frames per stack key.
    stacks: HashMap<u64, (bool, Vec<FrameValue>)>,
    /// Estimated bytes of the name tables (the resolved stacks are
    /// charged to their entries in the stack repository).
    bytes: usize,
}

/// Estimated bytes of a map entry besides its key and value's heap parts.
const MAP_SLOT: usize = 48;

/// The constants one chunk needs for its stack traces.
#[derive(Debug, Default)]
struct Used {
    methods: BTreeSet<u64>,
    classes: BTreeSet<u64>,
    packages: BTreeSet<u64>,
    symbols: BTreeSet<u64>,
}

impl FrameTables {
    pub(crate) fn new() -> Self {
        Self {
            next_key: 1,
            ..Self::default()
        }
    }

    fn key(&mut self) -> u64 {
        let k = self.next_key;
        self.next_key += 1;
        debug_assert!(
            k < super::keys::FRAME_KEYS_END,
            "frame table key {k} out of range"
        );
        k
    }

    fn symbol(&mut self, s: &str) -> u64 {
        if let Some(&k) = self.symbols.get(s) {
            return k;
        }
        let k = self.key();
        self.bytes += MAP_SLOT + s.len();
        self.symbols.insert(s.to_owned(), k);
        k
    }

    fn class(&mut self, f: &ResolvedFrame) -> ClassEntry {
        if let Some(&c) = self.classes.get(&f.class) {
            return c;
        }
        let package = if f.package.is_empty() {
            0
        } else if let Some(&(k, _)) = self.packages.get(&f.package) {
            k
        } else {
            let (k, name) = (self.key(), self.symbol(&f.package));
            self.bytes += MAP_SLOT + f.package.len();
            self.packages.insert(f.package.clone(), (k, name));
            k
        };
        let c = ClassEntry {
            key: self.key(),
            name: self.symbol(&f.class),
            package,
        };
        self.bytes += MAP_SLOT + f.class.len();
        self.classes.insert(f.class.clone(), c);
        c
    }

    fn method(&mut self, f: &ResolvedFrame) -> MethodEntry {
        let class = self.class(f);
        if let Some(&m) = self.methods.get(&(class.key, f.method.clone())) {
            return m;
        }
        let m = MethodEntry {
            key: self.key(),
            class: class.key,
            name: self.symbol(&f.method),
        };
        self.bytes += MAP_SLOT + f.method.len();
        self.methods.insert((class.key, f.method.clone()), m);
        m
    }

    /// Resolves the stack under `key` (once per key).
    fn resolve_stack(&mut self, repo: &StackRepository, key: u64) -> bool {
        if self.stacks.contains_key(&key) {
            return true;
        }
        let Some(entry) = repo.get(key) else {
            return false;
        };
        // A stack may start with a feature's marker (a `jdk.MethodTrace`
        // stack's names its timed site; an allocation stack's says its top
        // frames are the allocator's): the marker goes, and after the
        // frames are resolved the feature's cut applies.
        let (cut, addrs) = match entry.frames.split_first() {
            Some((&first, rest)) => match stack_marker(first) {
                Some(cut) => (cut, rest),
                None => (TopCut::Nothing, &entry.frames[..]),
            },
            None => (TopCut::Nothing, &entry.frames[..]),
        };
        self.symbolizer.prefetch(addrs);
        let mut resolved: Vec<ResolvedFrame> = Vec::new();
        for &addr in addrs {
            resolved.extend_from_slice(self.symbolizer.resolve(addr));
        }
        // The recorder's own commit path (inlined into the caller, so the
        // capture cannot skip it by frame count) is not the user's code, nor
        // are the registered dispatch frames above it (`crate::stack::dispatch`).
        let own = crate::stack::leading_cut(&resolved, RECORDER_CLASS_PREFIX);
        if own < resolved.len() {
            resolved.drain(..own);
        }
        match cut {
            TopCut::Nothing => {}
            TopCut::While(machinery) => {
                let n = resolved.iter().take_while(|f| machinery(f)).count();
                if n < resolved.len() {
                    resolved.drain(..n);
                }
            }
            TopCut::Through(callee) => {
                // The timed function's own frame (and any inlined glue of
                // its guard above it) goes: its caller is the top frame.
                if let Some(at) = resolved.iter().take(8).position(|f| f.method == callee)
                    && at + 1 < resolved.len()
                {
                    resolved.drain(..=at);
                }
            }
        }
        let frames: Vec<FrameValue> = resolved
            .iter()
            .map(|f| FrameValue {
                method: self.method(f).key,
                line: f.line.map_or(-1, |l| l.min(i32::MAX as u32) as i32),
                bytecode_index: 0,
                frame_type: if f.inlined {
                    frame_type::INLINED.0
                } else {
                    frame_type::NATIVE.0
                },
            })
            .collect();
        // The resolved frames were charged to the stack when it was interned.
        self.stacks.insert(key, (entry.truncated, frames));
        true
    }

    /// Estimated bytes of the name tables and the symbolizer's per-address
    /// cache (the debug info it holds has its own allowance).
    pub(crate) fn bytes(&self) -> usize {
        self.bytes + self.symbolizer.cache_bytes()
    }

    /// A chunk is finished: the symbolizer lets go of its parsed objects
    /// if it needed none during the chunk (see
    /// [`Symbolizer::release_idle_objects`]); then the resolved frames of
    /// `released` stacks go, and every name no remaining stack uses (see
    /// the module docs).
    pub(crate) fn release(&mut self, released: &[u64]) {
        self.symbolizer.release_idle_objects();
        if released.is_empty() {
            return;
        }
        for k in released {
            self.stacks.remove(k);
        }
        let methods: BTreeSet<u64> = self
            .stacks
            .values()
            .flat_map(|(_, frames)| frames.iter().map(|f| f.method))
            .collect();
        self.methods.retain(|_, m| methods.contains(&m.key));
        let classes: BTreeSet<u64> = self.methods.values().map(|m| m.class).collect();
        self.classes.retain(|_, c| classes.contains(&c.key));
        let packages: BTreeSet<u64> = self.classes.values().map(|c| c.package).collect();
        self.packages.retain(|_, (k, _)| packages.contains(k));
        let mut symbols: BTreeSet<u64> = self.methods.values().map(|m| m.name).collect();
        symbols.extend(self.classes.values().map(|c| c.name));
        symbols.extend(self.packages.values().map(|(_, name)| *name));
        self.symbols
            .retain(|text, k| symbols.contains(k) || text == DESCRIPTOR);
        self.bytes = (self.symbols.keys().map(|s| MAP_SLOT + s.len()))
            .chain(self.packages.keys().map(|s| MAP_SLOT + s.len()))
            .chain(self.classes.keys().map(|s| MAP_SLOT + s.len()))
            .chain(self.methods.keys().map(|(_, s)| MAP_SLOT + s.len()))
            .sum();
    }

    /// Writes the stack-trace pool for `keys` and every pool it depends on.
    /// Returns how many of the keys were no longer known (written empty).
    pub(crate) fn write_pools(
        &mut self,
        cp: &mut Checkpoint,
        repo: &StackRepository,
        keys: &[u64],
    ) -> usize {
        // The symbolizer's cache counts with the tables; past a quarter
        // of the limit it starts again (addresses cost a lookup again).
        self.symbolizer.trim_cache(repo.limit() / 4);
        // Debug info has an allowance of its own, as large as `max_memory`
        // (four times the pools' share): see `docs/memory.md`.
        self.symbolizer
            .set_debug_info_limit(repo.limit().saturating_mul(4));
        let (keys, gone): (Vec<u64>, Vec<u64>) =
            keys.iter().partition(|&&k| self.resolve_stack(repo, k));
        if !gone.is_empty() {
            // Released while an event that uses it was still unwritten (its
            // thread stalled between capture and commit): defined as an
            // empty stack, so the reference resolves.
            let mut pool = cp.pool(TypeId::STACK_TRACE);
            for k in &gone {
                write_stack_trace(pool.entry(*k), true, &[]);
            }
        }
        if keys.is_empty() {
            return gone.len();
        }
        let descriptor = self.symbol(DESCRIPTOR);
        let mut used = Used::default();
        used.symbols.insert(descriptor);
        {
            let mut pool = cp.pool(TypeId::STACK_TRACE);
            for k in &keys {
                let (truncated, frames) = &self.stacks[k];
                used.methods.extend(frames.iter().map(|f| f.method));
                write_stack_trace(pool.entry(*k), *truncated, frames);
            }
        }
        let methods: HashMap<u64, MethodEntry> =
            self.methods.values().map(|m| (m.key, *m)).collect();
        {
            let mut pool = cp.pool(TypeId::METHOD);
            for k in &used.methods {
                let m = methods[k];
                used.classes.insert(m.class);
                used.symbols.insert(m.name);
                let value = MethodValue {
                    class: m.class,
                    name: m.name,
                    descriptor,
                    modifiers: ACC_NATIVE,
                    hidden: false,
                };
                write_method(pool.entry(m.key), &value);
            }
        }
        let classes: HashMap<u64, ClassEntry> =
            self.classes.values().map(|c| (c.key, *c)).collect();
        let application: std::collections::HashSet<u64> = self
            .classes
            .iter()
            .filter(|(name, c)| used.classes.contains(&c.key) && is_application_class(name))
            .map(|(_, c)| c.key)
            .collect();
        {
            let mut pool = cp.pool(TypeId::CLASS);
            for k in &used.classes {
                let c = classes[k];
                used.symbols.insert(c.name);
                if c.package != 0 {
                    used.packages.insert(c.package);
                }
                let value = ClassValue {
                    class_loader: if application.contains(k) {
                        APP_LOADER
                    } else {
                        0
                    },
                    name: c.name,
                    package: c.package,
                    modifiers: 1,
                    hidden: false,
                };
                write_class(pool.entry(c.key), &value);
            }
        }
        {
            let mut pool = cp.pool(TypeId::PACKAGE);
            for (k, name) in self
                .packages
                .values()
                .filter(|(k, _)| used.packages.contains(k))
            {
                used.symbols.insert(*name);
                write_package(pool.entry(*k), *name, 0, true);
            }
        }
        {
            let mut pool = cp.pool(TypeId::SYMBOL);
            for (text, k) in self
                .symbols
                .iter()
                .filter(|(_, k)| used.symbols.contains(k))
            {
                write_symbol(pool.entry(*k), text);
            }
            if !application.is_empty() {
                write_symbol(pool.entry(APP_LOADER + 1), "app");
            }
        }
        if !application.is_empty() {
            let mut pool = cp.pool(TypeId::CLASS_LOADER);
            write_class_loader(pool.entry(APP_LOADER), 0, APP_LOADER + 1);
        }
        gone.len()
    }
}
