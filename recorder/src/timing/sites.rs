//! The process-wide site registry: every registered site's names, the
//! filters in force, and the computation of each site's word.
//!
//! Registration (a site's first call) and every change of the filters or
//! of the recording's state take the registry's lock and store the words
//! under it (Release), so a site registering during a change cannot miss
//! it. A filter part that matches no site registered by the end of a chunk
//! is named once on stderr (sites register on their first call, so at the
//! start nothing is registered yet); a site registered later that it matches
//! is selected then.
//!
//! The filters here are those of the settings in force: the union over
//! the live recordings (see `crate::config::union`) of the filters each was given
//! (`method-timing=`/`method-trace=` and `jdk.MethodTiming#filter`/
//! `jdk.MethodTrace#filter` in `FLIGHTREC` and in every settings file,
//! joined); `Recording::set` replaces one recording's filter (which is how
//! a site is deselected, once no other recording selects it).
//!
//! Invariant: `Sites::entries[i].site` is the site whose word holds index
//! `i`, and a word has the timing or tracing bit only while `recording`.

use super::filter::{Filter, Part, SiteName};
use super::site::{
    CLOCK_TSC, GEN_SHIFT, INDEX_MASK, INDEX_SHIFT, Site, SitePath, TIMING, TRACE, TRACE_STACK,
    UNREGISTERED,
};
use crate::base::sync::global::{AtomicU64, Mutex, Ordering};
use crate::config::settings::Settings;
use crate::stack::names::jfr_name;

/// A registered site's names.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) site: &'static Site,
    /// `krate::module::Type::method`.
    pub(crate) path: String,
    /// `krate::module::Type`.
    pub(crate) class: String,
    /// `method`.
    pub(crate) method: String,
    /// The JFR class name (`krate/module/Type`) and package.
    pub(crate) jfr_class: String,
    pub(crate) jfr_package: String,
    /// Timing generation: bumped each time timing is switched on.
    pub(crate) generation: u64,
    /// Selected for timing by the recording's settings (kept after the
    /// stop, for the last chunk's batch).
    pub(crate) timing_in_force: bool,
}

impl Entry {
    fn name(&self) -> SiteName<'_> {
        SiteName {
            path: &self.path,
            class: &self.class,
            method: &self.method,
            tags: self.site.tags,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Sites {
    pub(crate) entries: Vec<Entry>,
    timing: Filter,
    trace: Filter,
    timing_enabled: bool,
    trace_enabled: bool,
    trace_stack: bool,
    recording: bool,
    warned: Vec<Part>,
}

/// The registry.
pub(crate) static SITES: Mutex<Sites> = Mutex::new(Sites {
    entries: Vec::new(),
    timing: Filter { parts: Vec::new() },
    trace: Filter { parts: Vec::new() },
    timing_enabled: false,
    trace_enabled: false,
    trace_stack: true,
    recording: false,
    warned: Vec::new(),
});

/// The `jdk.MethodTrace` threshold, in ticks.
pub(crate) static TRACE_THRESHOLD: AtomicU64 = AtomicU64::new(0);

/// The most sites the accumulators can index.
pub(crate) const MAX_SITES: usize = super::accum::MAX_SITES;

/// A registered site, as [`sites`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteInfo {
    /// `krate::module::Type::method`, the name filters match.
    pub path: String,
    /// Source file and line of the attribute.
    pub file: &'static str,
    /// Line.
    pub line: u32,
    /// Tags given in the attribute.
    pub tags: &'static [&'static str],
    /// Selected for timing now.
    pub timing: bool,
    /// Selected for tracing now.
    pub tracing: bool,
}

/// Every registered site (registered: called at least once).
pub fn sites() -> Vec<SiteInfo> {
    let s = SITES.lock();
    s.entries
        .iter()
        .map(|e| {
            let w = e.site.word.load(Ordering::Relaxed);
            SiteInfo {
                path: e.path.clone(),
                file: e.site.file,
                line: e.site.line,
                tags: e.site.tags,
                timing: w & TIMING != 0,
                tracing: w & TRACE != 0,
            }
        })
        .collect()
}

/// The site's path: the compiler's `type_name` of an item nested in the
/// function, without that item's segment and any trailing closure segment
/// (an `async fn`'s body), mapped through the sampler's class/method model.
fn names(site: &Site) -> (String, String, String, String, String) {
    let raw = match site.path {
        SitePath::Named(p) => p.to_owned(),
        SitePath::Nested(f) => {
            let mut p = f();
            if let Some(at) = p.rfind("::") {
                p = &p[..at];
            }
            while let Some(rest) = p
                .strip_suffix("::{{closure}}")
                .or_else(|| p.strip_suffix("::{closure}"))
            {
                p = rest;
            }
            p.to_owned()
        }
    };
    let n = jfr_name(&raw, None, None);
    let class = n.class.replace('/', "::");
    let path = format!("{class}::{}", n.method);
    (path, class, n.method, n.class, n.package)
}

/// Registers `site` (once) and returns its word.
#[cold]
#[inline(never)]
pub(super) fn register(site: &'static Site) -> u64 {
    let mut s = SITES.lock();
    let w = site.word.load(Ordering::Acquire);
    if w & UNREGISTERED == 0 {
        return w; // registered by another thread meanwhile
    }
    let index = s.entries.len();
    let (path, class, method, jfr_class, jfr_package) = names(site);
    s.entries.push(Entry {
        site,
        path,
        class,
        method,
        jfr_class,
        jfr_package,
        generation: 0,
        timing_in_force: false,
    });
    if index >= MAX_SITES {
        // Never selected: the accumulators cannot index it.
        let w = (index as u64 & INDEX_MASK) << INDEX_SHIFT;
        site.word.store(w, Ordering::Release);
        return w;
    }
    s.update(index)
}

impl Sites {
    /// Recomputes and stores the word of entry `i`; returns it.
    fn update(&mut self, i: usize) -> u64 {
        let e = &self.entries[i];
        let old = e.site.word.load(Ordering::Relaxed);
        let name = e.name();
        let timing_sel = self.timing_enabled && self.timing.matches(&name);
        let trace_sel = self.trace_enabled && self.trace.matches(&name);
        let timing = self.recording && timing_sel;
        let trace = self.recording && trace_sel;
        let e = &mut self.entries[i];
        if timing && old & TIMING == 0 {
            e.generation += 1;
        }
        e.timing_in_force = timing_sel;
        let mut w = ((i as u64) & INDEX_MASK) << INDEX_SHIFT | e.generation << GEN_SHIFT;
        if timing {
            w |= TIMING;
        }
        if trace {
            w |= TRACE;
            if self.trace_stack {
                w |= TRACE_STACK;
            }
        }
        if (timing || trace) && crate::base::clock::reads_tsc() {
            w |= CLOCK_TSC;
        }
        e.site.word.store(w, Ordering::Release);
        w
    }

    fn update_all(&mut self) {
        for i in 0..self.entries.len().min(MAX_SITES) {
            self.update(i);
        }
    }

    /// Names, once each, the filter parts that match no registered site.
    pub(crate) fn warn_unmatched(&mut self) {
        let parts: Vec<(&'static str, Part)> =
            (self.timing.parts.iter().map(|p| ("method-timing", p)))
                .chain(self.trace.parts.iter().map(|p| ("method-trace", p)))
                .map(|(k, p)| (k, p.clone()))
                .collect();
        for (kind, p) in parts {
            let hit = self.entries.iter().any(|e| p.matches(&e.name()));
            if !hit && !self.warned.contains(&p) {
                self.warned.push(p.clone());
                eprintln!(
                    "flightrec: {kind} filter `{p}` matches no instrumented function called by the end of a chunk \
                     (a function registers on its first call; it is selected then)"
                );
            }
        }
    }
}

/// Installs the filters and trace settings of `settings`, and whether a
/// recording runs, and recomputes every site's word. Called by the event
/// registry whenever it applies settings.
pub(crate) fn apply(settings: &Settings, recording: bool) {
    let mut s = SITES.lock();
    apply_locked(&mut s, settings, recording);
}

fn apply_locked(s: &mut Sites, settings: &Settings, recording: bool) {
    let [timing, trace] = &settings.method_filters;
    s.timing = timing.clone().unwrap_or_default();
    s.trace = trace.clone().unwrap_or_default();
    let timing_set = settings.get("jdk.MethodTiming");
    let trace_set = settings.get("jdk.MethodTrace");
    s.timing_enabled = timing_set.and_then(|t| t.enabled).unwrap_or(true);
    s.trace_enabled = trace_set.and_then(|t| t.enabled).unwrap_or(true);
    s.trace_stack = trace_set.and_then(|t| t.stack_trace).unwrap_or(true);
    let threshold = trace_set.and_then(|t| t.threshold).unwrap_or_default();
    TRACE_THRESHOLD.store(
        crate::base::clock::duration_to_ticks(threshold).max(0) as u64,
        Ordering::Relaxed,
    );
    s.recording = recording;
    s.update_all();
}

/// In a forked child: nothing is timed. `try_lock`: a lock another parent
/// thread held at the fork is never released in the child; the words then
/// stay as they were, and the child's recording (if it starts one) sets
/// them again.
pub(crate) fn stop_in_child() {
    if let Some(mut s) = SITES.try_lock() {
        s.recording = false;
        s.update_all();
    }
}

/// The JFR method name of site `index`, for the stack-trace resolver.
pub(crate) fn site_method(index: usize) -> Option<String> {
    SITES.lock().entries.get(index).map(|e| e.method.clone())
}
