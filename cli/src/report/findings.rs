//! The report's findings: rules in the spirit of JDK Mission Control's
//! automated analysis, each a severity (`error`, `warning`, `info`, `ok`),
//! one sentence and a link to the flame graph (kind and search) or the
//! lane it is about.
//!
//! Rules: a method dominating CPU time (the top frame with the largest
//! share of CPU-time samples); lock contention (time blocked per lock, and
//! its share of the waiting threads' time); allocation pressure by site
//! (bytes per second of the top allocating frame); lost events and data
//! loss (any `flightrec.EventsLost`, `jdk.DataLoss`,
//! `jdk.CPUTimeSamplesLost`); samples lost to a blocked or taken sampling
//! signal; a thread pegged (CPU-time samples in nearly every cell of its
//! life) or starved (runnable in wall-clock samples, rarely on a CPU).

use std::collections::HashMap;

use serde_json::{Value as Json, json};

use super::Collected;
use super::value::nanos;

/// Shares at or over these are warnings.
const HOT_METHOD: f64 = 0.25;
const LOCK_SHARE: f64 = 0.05;
const ALLOC_RATE: f64 = 100e6;

fn finding(severity: &str, text: String, link: Json) -> Json {
    json!({"severity": severity, "text": text, "link": link})
}

/// A regular expression matching `s` literally.
fn literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Every rule's findings, most severe first.
pub(super) fn all(c: &Collected, threads: &HashMap<u32, u32>) -> Vec<Json> {
    let mut out = Vec::new();
    let secs = c.span as f64 / 1e9;
    // Lost events.
    for (what, (events, bytes)) in &c.losses {
        if *events == 0 && *bytes == 0 {
            continue;
        }
        let signal = what.contains("sampling signal");
        out.push(finding(
            if signal { "warning" } else { "error" },
            if signal {
                format!("{events} samples were lost: {what}. The profile under-counts those threads.")
            } else {
                format!("Data was lost: {what} ({events} events, {bytes} bytes). What the report shows is incomplete.")
            },
            json!({"section": "overview"}),
        ));
    }
    if c.losses.values().all(|(e, b)| *e == 0 && *b == 0) {
        out.push(finding(
            "ok",
            "No events were lost.".into(),
            json!({"section": "overview"}),
        ));
    }
    // A method dominating CPU.
    for (k, kind, what) in [(0, "cpu", "CPU-time"), (1, "wall", "wall-clock")] {
        let top = c.top_frames(k);
        let total: i64 = top.values().sum();
        if let Some((f, w)) = top.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
            let name = c.name(*f);
            let share = *w as f64 / total.max(1) as f64;
            let method = name.split('(').next().unwrap_or(name);
            out.push(finding(
                if share >= HOT_METHOD {
                    "warning"
                } else {
                    "info"
                },
                format!(
                    "{name} is the top frame of {:.2}% of the {what} samples: the hottest method.",
                    100.0 * share
                ),
                json!({"flame": kind, "search": literal(method)}),
            ));
            // Only the CPU rule when there are CPU-time samples.
            break;
        }
    }
    // Lock contention.
    let mut monitors: Vec<_> = c.monitors.iter().collect();
    monitors.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    let waiters = c.thread_cells(3);
    let blocked: i64 = monitors.iter().map(|m| m.1.0).sum();
    if let Some((lock, (ns, n))) = monitors.first() {
        let share = blocked as f64 / (c.span as f64 * waiters.len().max(1) as f64);
        let worst = waiters
            .iter()
            .max_by_key(|(t, (w, _))| (*w, std::cmp::Reverse(**t)));
        out.push(finding(
            if share >= LOCK_SHARE { "warning" } else { "info" },
            format!(
                "Lock contention: threads waited {} in {n} waits for lock {lock} ({:.1}% of the waiting threads' time is spent blocked on locks).",
                nanos(*ns),
                100.0 * share
            ),
            match worst {
                Some((t, _)) => json!({"flame": "lock", "lane": threads.get(t)}),
                None => json!({"flame": "lock"}),
            },
        ));
    }
    // Allocation pressure by site.
    let sites = c.top_frames(2);
    let total: i64 = sites.values().sum();
    if let Some((f, w)) = sites.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) {
        let name = c.name(*f);
        let rate = total as f64 / secs.max(1e-9);
        let method = name.split('(').next().unwrap_or(name);
        out.push(finding(
            if rate >= ALLOC_RATE { "warning" } else { "info" },
            format!(
                "Allocation pressure: {:.1} MB/s allocated; the top site, {name}, allocates {:.1}% of it.",
                rate / 1e6,
                100.0 * *w as f64 / total.max(1) as f64
            ),
            json!({"flame": "alloc", "search": literal(method)}),
        ));
    }
    // Threads pegged or starved.
    for (t, (_, cells)) in c.thread_cells(0) {
        let (first, last) = (cells[0], cells[cells.len() - 1]);
        let life = last - first + 1;
        if life >= 10 && cells.len() as f64 >= 0.9 * f64::from(life) {
            out.push(finding(
                "info",
                format!(
                    "Thread {} is pegged: it was on a CPU in {} of the {life} time cells of its life.",
                    c.name(t),
                    cells.len()
                ),
                json!({"lane": threads.get(&t)}),
            ));
        }
    }
    for (t, (n, runnable)) in &c.wall_states {
        let load = c.thread_load.get(t).map(|l| l.0);
        if *n >= 20 && *runnable as f64 >= 0.8 * *n as f64 && load.is_some_and(|l| l < 0.2) {
            out.push(finding(
                "warning",
                format!(
                    "Thread {} is starved: runnable in {runnable} of {n} wall-clock samples but using under 20% of a CPU.",
                    c.name(*t)
                ),
                json!({"lane": threads.get(t)}),
            ));
        }
    }
    let rank = |s: &Json| match s["severity"].as_str() {
        Some("error") => 0,
        Some("warning") => 1,
        Some("info") => 2,
        _ => 3,
    };
    out.sort_by_key(rank);
    out
}
