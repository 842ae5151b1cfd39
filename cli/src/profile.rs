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
use std::sync::Arc;

use chunk_writer::reader::{EventRecord, Value, read_chunk, scan_chunk};
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
    let path = rec.path().to_owned();
    rec.for_each_chunk(|bytes, at| {
        let scan = scan_chunk(bytes).map_err(|source| CliError::Damaged {
            path: path.clone(),
            chunk_at: Some(at),
            source,
        })?;
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
pub fn collect(rec: &mut Recording, select: &Select) -> Result<Profile, CliError> {
    let kind = match select.kind {
        Some(k) => k,
        None => default_kind(rec)?,
    };
    let mut profile = Profile {
        kind: Some(kind),
        ..Profile::default()
    };
    let mut names: HashMap<String, Arc<str>> = HashMap::new();
    let path = rec.path().to_owned();
    rec.for_each_chunk(|bytes, at| {
        let chunk = read_chunk(bytes).map_err(|source| CliError::Damaged {
            path: path.clone(),
            chunk_at: Some(at),
            source,
        })?;
        let ticks = Ticks::new(&chunk.header);
        // Frames of each stack-trace constant, named once per chunk.
        let mut named: HashMap<*const (), Arc<[Arc<str>]>> = HashMap::new();
        for ev in &chunk.events {
            let Some(w) = kind.weight(ev, select.type_name.as_deref(), |t| ticks.span(t)) else {
                continue;
            };
            if !in_window(ev, &ticks, select) || !in_state(ev, select) {
                continue;
            }
            let frames = stack_of(ev, &mut named, &mut names);
            if !passes(&frames, select) {
                continue;
            }
            let thread = stacks::thread_name(ev).unwrap_or_else(|| "<unknown thread>".into());
            let key = (
                intern(&mut names, &thread),
                frames.iter().rev().cloned().collect(),
            );
            *profile.stacks.entry(key).or_default() += w;
            profile.events += 1;
            profile.total += w;
        }
        Ok(())
    })?;
    Ok(profile)
}

fn intern(names: &mut HashMap<String, Arc<str>>, s: &str) -> Arc<str> {
    if let Some(a) = names.get(s) {
        return a.clone();
    }
    let a: Arc<str> = Arc::from(s);
    names.insert(s.to_owned(), a.clone());
    a
}

/// The frames of `ev`'s stack, top first, named once per stack constant.
fn stack_of(
    ev: &EventRecord,
    named: &mut HashMap<*const (), Arc<[Arc<str>]>>,
    names: &mut HashMap<String, Arc<str>>,
) -> Arc<[Arc<str>]> {
    let Some(Value::Object(st)) = ev.get("stackTrace") else {
        return Arc::from([]);
    };
    let key = Arc::as_ptr(st).cast::<()>();
    if let Some(f) = named.get(&key) {
        return f.clone();
    }
    let frames: Arc<[Arc<str>]> = stacks::frames(ev)
        .iter()
        .map(|f| intern(names, &f.method))
        .collect();
    named.insert(key, frames.clone());
    frames
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

fn passes(frames: &[Arc<str>], s: &Select) -> bool {
    let any = |re: &Regex| frames.iter().any(|f| re.is_match(f));
    s.include.as_ref().is_none_or(any) && !s.exclude.as_ref().is_some_and(any)
}
