//! `flightrec report`: one self-contained HTML page to look at a recording
//! (overview, heatmap, flame graph, thread lanes, findings, event browser).
//!
//! # Collect
//! Two passes over the file, each one chunk at a time: a scan of record
//! frames (events and bytes by type, as `summary` counts them), then one
//! decode of every event. Samples of the four profile kinds (CPU time,
//! wall clock, allocation, lock) are folded by [`Fold`] into interned
//! stacks and added into a map keyed by (time cell, stack, thread); the
//! cells divide the recording's span into at most [`MAX_CELLS`] equal
//! steps of a whole number of milliseconds, so a range of cells is a
//! `--from`/`--to` range of the other commands. Duration events (any type
//! with a `duration` and a thread) become lane entries; the first
//! [`BROWSER_ROWS`] events of each type become rows of the event browser;
//! CPU load and resident set size become series, one value per cell.
//!
//! # Bounds
//! What the page holds grows with what it shows, never with the file:
//! cells are at most [`MAX_CELLS`], sample entries at most
//! [`MAX_ENTRIES`] (past that, new (cell, stack, thread) keys count into an
//! `[other stacks]` frame of their cell, so totals stay exact), lanes keep
//! the [`LANE_EVENTS`] longest events of each of at most [`MAX_LANES`]
//! threads, the browser [`BROWSER_ROWS`] events per type.
//!
//! Invariant: the weight of every sample the page counts is in exactly
//! one entry, so a range's total in the page is the total the other
//! commands count for the same range.

mod findings;
mod page;
mod value;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

use jfr_format::read::{EventRecord, Value};
use serde_json::{Value as Json, json};

use crate::error::CliError;
use crate::profile::Fold;
use crate::recording::Recording;
use crate::stacks::Kind;
use crate::time::{Civil, Ticks};

/// Time cells of the heatmap, at most.
pub const MAX_CELLS: i64 = 600;
/// (cell, stack, thread) entries per kind, at most.
pub const MAX_ENTRIES: usize = 200_000;
/// Threads with a lane, at most (those with the most samples and events).
pub const MAX_LANES: usize = 200;
/// Duration events kept per lane (the longest).
pub const LANE_EVENTS: usize = 200;
/// Events per type in the event browser.
pub const BROWSER_ROWS: usize = 300;

/// The kinds of the heatmap, with their names in the page.
const KINDS: [(Kind, &str); 4] = [
    (Kind::CpuTime, "cpu"),
    (Kind::Wall, "wall"),
    (Kind::Alloc, "alloc"),
    (Kind::Lock, "lock"),
];

/// (cell, stack id, thread name id) → (weight, events).
pub(crate) type Entries = HashMap<(u32, u32, u32), (i64, u64)>;

/// One duration event of a lane.
struct LaneEvent {
    type_name: Arc<str>,
    start: i64,
    duration: i64,
    fields: Vec<(String, String)>,
}

/// The browser's rows of one type.
#[derive(Default)]
struct Browser {
    fields: Vec<String>,
    rows: Vec<Vec<String>>,
    total: u64,
}

/// Everything the page shows, collected in one decode pass.
#[derive(Default)]
pub(crate) struct Collected {
    fold: Fold,
    pub(crate) start: i64,
    pub(crate) span: i64,
    pub(crate) cell: i64,
    pub(crate) cells: i64,
    /// Per kind: (cell, stack, thread) → (weight, events).
    pub(crate) samples: [Entries; 4],
    /// Per kind: events folded.
    pub(crate) kind_events: [u64; 4],
    /// Per kind: events before the recording's start or past its end.
    outside: [u64; 4],
    /// Per thread name id: duration events.
    lanes: HashMap<u32, Vec<LaneEvent>>,
    lane_totals: HashMap<u32, u64>,
    browser: BTreeMap<Arc<str>, Browser>,
    /// Per cell: (jvm user + system, machine total) CPU load, RSS bytes.
    cpu_load: BTreeMap<i64, (f64, f64)>,
    rss: BTreeMap<i64, i64>,
    /// (what, events, bytes).
    pub(crate) losses: BTreeMap<String, (i64, i64)>,
    /// Lock waits per monitor name: total ns.
    pub(crate) monitors: HashMap<String, (i64, u64)>,
    /// Per thread: jdk.ThreadCPULoad (user + system) values.
    pub(crate) thread_load: HashMap<u32, (f64, u64)>,
    pub(crate) wall_states: HashMap<u32, (u64, u64)>,
}

/// The cell width: the span in [`MAX_CELLS`] steps, rounded up to 1, 2 or
/// 5 times a power of ten milliseconds.
fn cell_nanos(span: i64) -> i64 {
    let want = (span / MAX_CELLS).max(1);
    let mut step = 1_000_000i64;
    loop {
        for m in [1, 2, 5] {
            if step * m >= want {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// Writes the report of `rec` as one HTML page.
pub fn write(rec: &mut Recording, title: &str, out: &mut dyn Write) -> Result<(), CliError> {
    let mut types: HashMap<u64, (String, u64, u64)> = HashMap::new();
    types.insert(0, ("jdk.Metadata".into(), 0, 0));
    types.insert(1, ("jdk.Checkpoint".into(), 0, 0));
    let mut chunks = 0u64;
    rec.for_each_scan(|scan, _| {
        for class in scan.metadata.event_types() {
            types
                .entry(class.id.0)
                .or_insert_with(|| (class.name.to_string(), 0, 0));
        }
        for (id, n) in &scan.records {
            let t = types.entry(*id).or_insert_with(|| (format!("{id}"), 0, 0));
            t.1 += n.count;
            t.2 += n.bytes;
        }
        chunks += 1;
        Ok(())
    })?;
    let start = rec.first_header()?.start_nanos;
    let span = rec.duration_nanos()?.max(1);
    let cell = cell_nanos(span);
    let mut c = Collected {
        start,
        span,
        cell,
        cells: (span + cell - 1) / cell,
        ..Default::default()
    };
    let mut first: Option<Ticks> = None;
    rec.for_each_event(
        |_| true,
        |at, ctx, ev| {
            if c.fold.chunk != Some(at) {
                c.fold.new_chunk(at);
            }
            let ticks = *first.get_or_insert_with(|| Ticks::new(&ctx.header));
            c.event(ev, &ticks);
        },
    )?;
    let mut types: Vec<_> = types.into_values().filter(|t| t.1 > 0).collect();
    types.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let data = c.page_data(title, chunks, &types, rec.path());
    page::write(title, &data, out).map_err(|source| CliError::Output {
        path: "-".into(),
        source,
    })
}

impl Collected {
    fn event(&mut self, ev: &EventRecord, ticks: &Ticks) {
        let name = &*ev.type_name;
        let at = ev.start_ticks().map(|t| ticks.instant(t));
        let rel = at.map(|t| t - self.start);
        for (k, (kind, _)) in KINDS.iter().enumerate() {
            if !kind.accepts(name, None) {
                continue;
            }
            let Some(w) = kind.weight(ev, None, |t| ticks.span(t)) else {
                continue;
            };
            self.sample(k, ev, rel, w);
        }
        let thread = (ev.get("eventThread").is_some() || ev.get("sampledThread").is_some())
            .then(|| self.fold.thread_of(ev));
        if let Some(t) = thread {
            *self.lane_totals.entry(t).or_default() += 1;
        }
        match name {
            "jdk.CPULoad" => {
                let f = |n| ev.get(n).and_then(Value::as_f64).unwrap_or(0.0);
                if let Some(r) = rel {
                    self.cpu_load.insert(
                        r.clamp(0, self.span) / self.cell,
                        (f("jvmUser") + f("jvmSystem"), f("machineTotal")),
                    );
                }
            }
            "jdk.ResidentSetSize" => {
                if let (Some(r), Some(s)) = (rel, ev.get("size").and_then(Value::as_i64)) {
                    self.rss.insert(r.clamp(0, self.span) / self.cell, s);
                }
            }
            "flightrec.EventsLost" => {
                let cause = ev.get("cause").and_then(Value::as_str).unwrap_or("unknown");
                let l = self.losses.entry(cause.to_owned()).or_default();
                l.0 += ev.get("events").and_then(Value::as_i64).unwrap_or(0);
                l.1 += ev.get("bytes").and_then(Value::as_i64).unwrap_or(0);
            }
            "jdk.DataLoss" => {
                let l = self
                    .losses
                    .entry("data loss (jdk.DataLoss)".into())
                    .or_default();
                l.1 += ev.get("amount").and_then(Value::as_i64).unwrap_or(0);
            }
            "jdk.CPUTimeSamplesLost" => {
                let l = self
                    .losses
                    .entry("CPU-time samples lost (jdk.CPUTimeSamplesLost)".into())
                    .or_default();
                l.0 += ev.get("lostSamples").and_then(Value::as_i64).unwrap_or(0);
            }
            "jdk.ThreadCPULoad" => {
                if let Some(t) = thread {
                    let f = |n| ev.get(n).and_then(Value::as_f64).unwrap_or(0.0);
                    let e = self.thread_load.entry(t).or_default();
                    e.0 = e.0.max(f("user") + f("system"));
                    e.1 += 1;
                }
            }
            _ => {}
        }
        // Every event with a duration is a lane's (lock waits too, which
        // are samples of the lock kind as well).
        if let (Some(t), Some(r), Some(d)) = (thread, rel, ev.duration_ticks()) {
            let d = ticks.span(d);
            if d > 0 {
                self.lane_event(t, ev, r, d);
            }
        }
        self.browse(ev, ticks);
    }

    fn sample(&mut self, k: usize, ev: &EventRecord, rel: Option<i64>, w: i64) {
        let Some(r) = rel.filter(|r| (0..self.cells * self.cell).contains(r)) else {
            self.outside[k] += 1;
            return;
        };
        let cell = (r / self.cell) as u32;
        let stack = self.fold.stack_of(ev);
        let thread = self.fold.thread_of(ev);
        if k == 1 {
            let runnable = ev
                .get("state")
                .and_then(Value::as_str)
                .is_some_and(|s| s.ends_with("RUNNABLE"));
            let e = self.wall_states.entry(thread).or_default();
            e.0 += 1;
            e.1 += u64::from(runnable);
        }
        if k == 3 {
            let monitor = ev
                .get_path("monitorClass.name")
                .or_else(|| ev.get_path("parkedClass.name"))
                .and_then(Value::as_str)
                .unwrap_or("(unknown)")
                .replace('/', ".");
            let m = self.monitors.entry(monitor).or_default();
            m.0 += w;
            m.1 += 1;
        }
        let map = &mut self.samples[k];
        let mut key = (cell, stack, thread);
        if map.len() >= MAX_ENTRIES && !map.contains_key(&key) {
            key = (cell, u32::MAX, u32::MAX);
        }
        let e = map.entry(key).or_default();
        e.0 += w;
        e.1 += 1;
        self.kind_events[k] += 1;
    }

    fn lane_event(&mut self, thread: u32, ev: &EventRecord, start: i64, duration: i64) {
        let lane = self.lanes.entry(thread).or_default();
        lane.push(LaneEvent {
            type_name: ev.type_name.clone(),
            start,
            duration,
            fields: ev
                .fields
                .iter()
                .filter(|(n, _)| !matches!(&**n, "startTime" | "duration" | "eventThread"))
                .take(12)
                .map(|(n, v)| (n.to_string(), value::text(v)))
                .collect(),
        });
        if lane.len() >= 2 * LANE_EVENTS {
            lane.sort_by_key(|e| std::cmp::Reverse(e.duration));
            lane.truncate(LANE_EVENTS);
        }
    }

    fn browse(&mut self, ev: &EventRecord, ticks: &Ticks) {
        let b = self.browser.entry(ev.type_name.clone()).or_default();
        b.total += 1;
        if b.rows.len() >= BROWSER_ROWS {
            return;
        }
        if b.fields.is_empty() {
            b.fields = ev.fields.iter().map(|(n, _)| n.to_string()).collect();
        }
        let start = self.start;
        b.rows.push(
            ev.fields
                .iter()
                .map(|(n, v)| match (&**n, v.as_i64()) {
                    ("startTime", Some(t)) => {
                        format!("{:.3} s", (ticks.instant(t) - start) as f64 / 1e9)
                    }
                    ("duration", Some(d)) => value::nanos(ticks.span(d)),
                    _ => value::text(v),
                })
                .collect(),
        );
    }

    fn page_data(
        &mut self,
        title: &str,
        chunks: u64,
        types: &[(String, u64, u64)],
        path: &std::path::Path,
    ) -> Json {
        // The frame tree: node 0 is the root, a parent's id is below its
        // children's.
        let other = self
            .fold
            .intern("[other stacks: the page's bound was reached]");
        let mut parent = vec![-1i64];
        let mut frame = vec![-1i64];
        let mut children: HashMap<(u32, u32), u32> = HashMap::new();
        let mut node_of: HashMap<u32, u32> = HashMap::new();
        let mut used: Vec<u32> = self
            .samples
            .iter()
            .flat_map(|m| m.keys().map(|k| k.1))
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut frame_ids: HashMap<u32, u32> = HashMap::new();
        let mut frames: Vec<Arc<str>> = Vec::new();
        let mut frame_id = |f: u32, names: &Vec<Arc<str>>| {
            *frame_ids.entry(f).or_insert_with(|| {
                frames.push(names[f as usize].clone());
                (frames.len() - 1) as u32
            })
        };
        for s in used {
            let path: Vec<u32> = if s == u32::MAX {
                vec![other]
            } else {
                self.fold.stacks[s as usize].iter().rev().copied().collect()
            };
            let mut node = 0u32;
            for f in path {
                let fid = frame_id(f, &self.fold.names);
                node = *children.entry((node, fid)).or_insert_with(|| {
                    parent.push(i64::from(node));
                    frame.push(i64::from(fid));
                    (parent.len() - 1) as u32
                });
            }
            node_of.insert(s, node);
        }
        // Threads: those with samples or events, most first.
        let mut thread_w: HashMap<u32, u64> = self.lane_totals.clone();
        let mut thread_ids: HashMap<u32, u32> = HashMap::new();
        let mut threads: Vec<Arc<str>> = Vec::new();
        let mut ranked: Vec<(u32, u64)> = thread_w.drain().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for (t, _) in &ranked {
            thread_ids.insert(*t, threads.len() as u32);
            threads.push(self.fold.names[*t as usize].clone());
        }
        let unknown = threads.len() as u32;
        threads.push("[other threads]".into());
        let mut kinds = serde_json::Map::new();
        for (k, (kind, name)) in KINDS.iter().enumerate() {
            if self.kind_events[k] == 0 {
                continue;
            }
            let mut entries: Vec<_> = self.samples[k].iter().collect();
            entries.sort_unstable_by_key(|(key, _)| **key);
            let mut flat = Vec::with_capacity(entries.len() * 4);
            for ((cell, stack, thread), (w, _)) in entries {
                flat.push(Json::from(*cell));
                flat.push(Json::from(node_of[stack]));
                flat.push(Json::from(
                    thread_ids.get(thread).copied().unwrap_or(unknown),
                ));
                flat.push(Json::from(*w));
            }
            kinds.insert(
                (*name).into(),
                json!({
                    "unit": kind.unit().1,
                    "events": self.kind_events[k],
                    "outside": self.outside[k],
                    "entries": flat,
                }),
            );
        }
        let mut lanes = Vec::new();
        for (t, _) in ranked.iter().take(MAX_LANES) {
            let mut evs = self.lanes.remove(t).unwrap_or_default();
            evs.sort_by_key(|e| std::cmp::Reverse(e.duration));
            evs.truncate(LANE_EVENTS);
            evs.sort_by_key(|e| e.start);
            lanes.push(json!({
                "thread": thread_ids[t],
                "events": evs.iter().map(|e| json!([
                    &*e.type_name, e.start, e.duration,
                    e.fields.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
                ])).collect::<Vec<_>>(),
            }));
        }
        let findings = findings::all(self, &thread_ids);
        let browser: serde_json::Map<String, Json> = self
            .browser
            .iter()
            .map(|(t, b)| {
                (
                    t.to_string(),
                    json!({"fields": b.fields, "rows": b.rows, "total": b.total}),
                )
            })
            .collect();
        json!({
            "title": title,
            "file": path.file_name().map(|n| n.to_string_lossy().into_owned()),
            "start": Civil::at(self.start, 0).date_time(),
            "span": self.span,
            "chunks": chunks,
            "cell": self.cell,
            "cells": self.cells,
            "types": types.iter().map(|(n, c, b)| json!([n, c, b])).collect::<Vec<_>>(),
            "losses": self.losses.iter().map(|(w, (e, b))| json!([w, e, b])).collect::<Vec<_>>(),
            "cpuLoad": self.cpu_load.iter().map(|(c, (j, m))| json!([c, j, m])).collect::<Vec<_>>(),
            "rss": self.rss.iter().map(|(c, s)| json!([c, s])).collect::<Vec<_>>(),
            "frames": frames.iter().map(|f| &**f).collect::<Vec<&str>>(),
            "parent": parent,
            "frame": frame,
            "threads": threads.iter().map(|f| &**f).collect::<Vec<&str>>(),
            "kinds": kinds,
            "lanes": lanes,
            "findings": findings,
            "browser": browser,
        })
    }
}

impl Collected {
    /// Per kind, the weight of each stack's top frame (name id).
    pub(crate) fn top_frames(&self, k: usize) -> HashMap<u32, i64> {
        let mut m = HashMap::new();
        for ((_, stack, _), (w, _)) in &self.samples[k] {
            if *stack == u32::MAX {
                continue;
            }
            if let Some(&top) = self.fold.stacks[*stack as usize].first() {
                *m.entry(top).or_default() += w;
            }
        }
        m
    }

    /// Per kind, the weight and cells of each thread (name id).
    pub(crate) fn thread_cells(&self, k: usize) -> HashMap<u32, (i64, Vec<u32>)> {
        let mut m: HashMap<u32, (i64, Vec<u32>)> = HashMap::new();
        for ((cell, _, thread), (w, _)) in &self.samples[k] {
            let e = m.entry(*thread).or_default();
            e.0 += w;
            e.1.push(*cell);
        }
        for e in m.values_mut() {
            e.1.sort_unstable();
            e.1.dedup();
        }
        m
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.fold
            .names
            .get(id as usize)
            .map_or("[other threads]", |n| n)
    }
}
