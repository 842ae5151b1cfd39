//! A profile: stacks with weights, folded from the events of one kind.
//!
//! Every output format (flame graph, collapsed stacks, pprof, Speedscope)
//! is made from this one fold, so they agree on what they count: the same
//! events, the same filters, the same frame names.
//!
//! Stacks are folded root first. A stack trace constant is shared by every
//! event that references it, so its frames are named once per chunk (keyed
//! by the constant's address) however many samples use it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use jfr_format::read::{EventRecord, Object, Value};
use regex::Regex;

use crate::error::CliError;
use crate::recording::Recording;
use crate::stacks::{self, Kind};
use crate::time::Ticks;

/// What to fold.
#[derive(Debug)]
pub struct Select {
    /// The kind of profile; `None`: CPU time if the file has CPU-time
    /// samples, else wall-clock samples, else allocations, else locks.
    pub kind: Option<Kind>,
    /// With [`Kind::Type`]: the event type.
    pub type_name: Option<String>,
    /// Wall-clock samples only in this thread state (e.g. `STATE_RUNNABLE`).
    pub state: Option<String>,
    /// Only events at or after this many nanoseconds since the epoch.
    pub from: Option<i64>,
    /// Only events before this.
    pub to: Option<i64>,
    /// Only stacks with a frame that matches.
    pub include: Option<Regex>,
    /// No stack with a frame that matches.
    pub exclude: Option<Regex>,
}

/// Folded stacks and their weights.
#[derive(Debug, Default)]
pub struct Profile {
    /// Per thread and stack (frame names, root first), the summed weight.
    pub stacks: HashMap<(Arc<str>, Vec<Arc<str>>), i64>,
    /// Events folded.
    pub events: u64,
    /// Sum of their weights.
    pub total: i64,
    /// The kind folded.
    pub kind: Option<Kind>,
}

impl Profile {
    /// The stacks in a fixed order (by frames), for outputs that must not
    /// depend on hashing; with `threads`, each under a root frame named
    /// after its thread, else the same stack of every thread merged.
    pub fn sorted(&self, threads: bool) -> Vec<(Vec<Arc<str>>, i64)> {
        let mut merged: HashMap<Vec<Arc<str>>, i64> = HashMap::new();
        for ((thread, frames), w) in &self.stacks {
            let mut key = Vec::with_capacity(frames.len() + 1);
            if threads {
                key.push(thread.clone());
            }
            key.extend(frames.iter().cloned());
            *merged.entry(key).or_default() += w;
        }
        let mut v: Vec<_> = merged.into_iter().collect();
        v.sort();
        v
    }
}

/// Picks the default kind from what the file holds.
fn default_kind(rec: &mut Recording) -> Result<Kind, CliError> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    rec.for_each_scan(|scan, _| {
        for class in scan.metadata.event_types() {
            let n = scan.records.get(&class.id.0).map_or(0, |r| r.count);
            *counts.entry(class.name.to_string()).or_default() += n;
        }
        Ok(())
    })?;
    let has = |t: &str| counts.get(t).copied().unwrap_or(0) > 0;
    Ok(if has("jdk.CPUTimeSample") {
        Kind::CpuTime
    } else if has("jdk.ExecutionSample") {
        Kind::Wall
    } else if has("jdk.ObjectAllocationSample") {
        Kind::Alloc
    } else if has("jdk.JavaMonitorEnter") || has("jdk.ThreadPark") {
        Kind::Lock
    } else {
        Kind::CpuTime
    })
}

/// Folds the events `select` asks for.
///
/// Only events of the kind's types are decoded (the rest of each chunk is
/// skipped by record frames). Frame names, thread names and stacks are
/// interned: a stack is named once per chunk and becomes a small id, so a
/// sample costs a few pointer-keyed look-ups and one count, never a string.
pub fn collect(rec: &mut Recording, select: &Select) -> Result<Profile, CliError> {
    let kind = match select.kind {
        Some(k) => k,
        None => default_kind(rec)?,
    };
    let type_name = select.type_name.as_deref();
    let mut fold = Fold::default();
    // Every chunk's ticks with the first chunk's header, as the JDK does
    // (see `print::run`), so `--from`/`--to` select what `jfr` shows.
    let mut first_chunk: Option<Ticks> = None;
    rec.for_each_event(
        |class| kind.accepts(&class.name, type_name),
        |at, ctx, ev| {
            if fold.chunk != Some(at) {
                fold.new_chunk(at);
            }
            let ticks = *first_chunk.get_or_insert_with(|| Ticks::new(&ctx.header));
            let Some(w) = kind.weight(ev, type_name, |t| ticks.span(t)) else {
                return;
            };
            if !in_window(ev, &ticks, select) || !in_state(ev, select) {
                return;
            }
            let stack = fold.stack_of(ev);
            if !fold.passes(stack, select) {
                return;
            }
            let thread = fold.thread_of(ev);
            *fold.counts.entry((thread, stack)).or_default() += w;
            fold.events += 1;
            fold.total += w;
        },
    )?;
    Ok(fold.into_profile(kind))
}

/// Interned names and stacks, and the weights per (thread, stack) id.
/// (`report` folds with it too.)
#[derive(Default)]
pub(crate) struct Fold {
    /// Frame and thread names, by id.
    pub(crate) names: Vec<Arc<str>>,
    name_ids: HashMap<Arc<str>, u32>,
    /// Stacks (frame name ids, top first), by id.
    pub(crate) stacks: Vec<Box<[u32]>>,
    stack_ids: HashMap<Box<[u32]>, u32>,
    /// Per stack id, whether it passes `--include` / `--exclude`.
    passes: Vec<Option<bool>>,
    /// The chunk (file offset) the per-chunk maps below are about.
    pub(crate) chunk: Option<u64>,
    /// Per stack-trace value of the chunk (by address), its stack id. Each
    /// entry holds the value, so its address cannot be reused by another
    /// while the entry exists (a stack written inline, not as a constant,
    /// dies with its event otherwise).
    chunk_stacks: Ids<*const (), (Arc<Object>, u32)>,
    /// Per method value of the chunk, its name id.
    chunk_methods: Ids<*const (), (Arc<Object>, u32)>,
    /// Per thread value of the chunk, its name id.
    chunk_threads: Ids<*const (), (Arc<Object>, u32)>,
    counts: Ids<(u32, u32), i64>,
    events: u64,
    total: i64,
}

impl Fold {
    /// Forgets the constants of the previous chunk: addresses are only
    /// unique while a chunk's constants are alive.
    pub(crate) fn new_chunk(&mut self, at: u64) {
        self.chunk = Some(at);
        self.chunk_stacks.clear();
        self.chunk_methods.clear();
        self.chunk_threads.clear();
    }

    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(s) {
            return id;
        }
        let a: Arc<str> = Arc::from(s);
        let id = self.names.len() as u32;
        self.names.push(a.clone());
        self.name_ids.insert(a, id);
        id
    }

    /// The stack id of `ev`'s stack trace (the empty stack if it has none).
    pub(crate) fn stack_of(&mut self, ev: &EventRecord) -> u32 {
        let st = match ev.get("stackTrace") {
            Some(Value::Object(st)) => Some(st),
            _ => None,
        };
        if let Some((_, id)) = st.and_then(|st| self.chunk_stacks.get(&addr(st))) {
            return *id;
        }
        let frames: Box<[u32]> = match st.and_then(|st| st.get("frames")).and_then(Value::as_array)
        {
            Some(frames) => frames.iter().map(|f| self.frame_name(f)).collect(),
            None => Box::new([]),
        };
        let id = match self.stack_ids.get(&frames) {
            Some(&id) => id,
            None => {
                let id = self.stacks.len() as u32;
                self.stacks.push(frames.clone());
                self.stack_ids.insert(frames, id);
                self.passes.push(None);
                id
            }
        };
        if let Some(st) = st {
            self.chunk_stacks.insert(addr(st), (st.clone(), id));
        }
        id
    }

    /// The name id of one frame's method, named once per method constant.
    fn frame_name(&mut self, frame: &Value) -> u32 {
        let method = frame.get("method");
        let obj = match method {
            Some(Value::Object(m)) => Some(m),
            _ => None,
        };
        if let Some((_, id)) = obj.and_then(|m| self.chunk_methods.get(&addr(m))) {
            return *id;
        }
        let name = method
            .map(stacks::method_name)
            .unwrap_or_else(|| "<unknown>".into());
        let id = self.intern(&name);
        if let Some(m) = obj {
            self.chunk_methods.insert(addr(m), (m.clone(), id));
        }
        id
    }

    /// The name id of the thread `ev` is about.
    pub(crate) fn thread_of(&mut self, ev: &EventRecord) -> u32 {
        let t = ev.get("sampledThread").or_else(|| ev.get("eventThread"));
        let obj = match t {
            Some(Value::Object(t)) => Some(t),
            _ => None,
        };
        if let Some((_, id)) = obj.and_then(|t| self.chunk_threads.get(&addr(t))) {
            return *id;
        }
        let name = stacks::thread_name(ev).unwrap_or_else(|| "<unknown thread>".into());
        let id = self.intern(&name);
        if let Some(t) = obj {
            self.chunk_threads.insert(addr(t), (t.clone(), id));
        }
        id
    }

    /// Whether stack `id` passes the frame filters, decided once per stack.
    fn passes(&mut self, id: u32, s: &Select) -> bool {
        if s.include.is_none() && s.exclude.is_none() {
            return true;
        }
        if let Some(p) = self.passes[id as usize] {
            return p;
        }
        let names = &self.names;
        let any = |re: &Regex| {
            self.stacks[id as usize]
                .iter()
                .any(|&f| re.is_match(&names[f as usize]))
        };
        let p = s.include.as_ref().is_none_or(any) && !s.exclude.as_ref().is_some_and(any);
        self.passes[id as usize] = Some(p);
        p
    }

    fn into_profile(self, kind: Kind) -> Profile {
        let mut stacks = HashMap::with_capacity(self.counts.len());
        for ((thread, stack), w) in self.counts {
            let frames = self.stacks[stack as usize]
                .iter()
                .rev()
                .map(|&f| self.names[f as usize].clone())
                .collect();
            let key = (self.names[thread as usize].clone(), frames);
            *stacks.entry(key).or_default() += w;
        }
        Profile {
            stacks,
            events: self.events,
            total: self.total,
            kind: Some(kind),
        }
    }
}

/// A map keyed by what no file chooses (addresses, ids the fold hands
/// out), so a one-multiply hash serves; file-chosen keys (names) keep the
/// standard hasher.
type Ids<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Fx-style hashing: rotate, xor, multiply per word.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(n.into());
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// The address of a value, its key while the chunk's constants live.
fn addr(o: &Arc<Object>) -> *const () {
    Arc::as_ptr(o).cast()
}

fn in_window(ev: &EventRecord, ticks: &Ticks, s: &Select) -> bool {
    if s.from.is_none() && s.to.is_none() {
        return true;
    }
    let Some(t) = ev.start_ticks().map(|t| ticks.instant(t)) else {
        return false;
    };
    s.from.is_none_or(|f| t >= f) && s.to.is_none_or(|to| t < to)
}

fn in_state(ev: &EventRecord, s: &Select) -> bool {
    match &s.state {
        None => true,
        Some(want) => ev.get("state").and_then(Value::as_str).is_some_and(|st| {
            st.eq_ignore_ascii_case(want) || st.ends_with(&want.to_ascii_uppercase())
        }),
    }
}
