//! One JFR event type per `tracing` callsite.
//!
//! Names and field types follow the rules in the crate docs.
//!
//! Invariant: a site's type, once built, never changes, and every value
//! written for it has the kind of the field it is written into.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use recorder::{EventType, EventTypeBuilder, FieldKind};
use tracing_core::Metadata;

/// The layer's own fields, before the callsite's.
pub(crate) const SPAN_ID: &str = "spanId";
pub(crate) const PARENT_ID: &str = "parentId";

/// Whether a callsite is a span (duration event) or an event (instant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SiteKind {
    Span,
    Event,
}

/// A callsite and its JFR type.
#[derive(Debug)]
pub(crate) struct Site {
    pub(crate) meta: &'static Metadata<'static>,
    /// The JFR type name.
    pub(crate) name: &'static str,
    pub(crate) kind: SiteKind,
    /// JFR field name per callsite field index.
    pub(crate) fields: Box<[String]>,
    /// Built at first use; `None` if the recorder rejected it.
    built: OnceLock<Option<Built>>,
    /// Before the type is built: whether its name records, as computed
    /// when the site was registered and at every interest (re)evaluation
    /// since, which follows every settings change.
    records: AtomicBool,
}

/// A site's JFR type and the kinds of the callsite's fields in it.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) ty: &'static EventType,
    pub(crate) kinds: Box<[FieldKind]>,
    /// `kinds` by field index, `None` past them: what an event's visitor
    /// reads per value with one load and no bounds check (see `direct`).
    pub(crate) plan: Plan,
}

/// Slots of a [`Plan`]: more than [`MAX_FIELDS`](crate::values::MAX_FIELDS),
/// a power of two, so `index & (PLAN - 1)` is always in range.
pub(crate) const PLAN: usize = 64;

/// Field kinds by callsite field index, `None` from the type's last field on.
pub(crate) type Plan = [Option<FieldKind>; PLAN];

fn plan(kinds: &[FieldKind]) -> Plan {
    let mut p = [None; PLAN];
    for (slot, k) in p.iter_mut().zip(kinds) {
        *slot = Some(*k);
    }
    p
}

impl Site {
    /// The type, if built (`Some(None)`: rejected).
    #[inline]
    pub(crate) fn built(&self) -> Option<Option<&Built>> {
        self.built.get().map(Option::as_ref)
    }

    /// True if events of this site are recorded now: one load.
    #[inline]
    pub(crate) fn records_now(&self) -> bool {
        match self.built.get() {
            Some(Some(b)) => b.ty.is_enabled(),
            Some(None) => false,
            None => self.records.load(Ordering::Relaxed),
        }
    }

    /// Re-evaluates [`records_now`](Self::records_now) against the settings
    /// in force (the interest computation; not on the event path).
    pub(crate) fn evaluate(&self) -> bool {
        if self.built.get().is_none() {
            let on = recorder::event::watch::would_record(self.name, true);
            self.records.store(on, Ordering::Relaxed);
        }
        self.records_now()
    }

    /// Builds the type with the callsite's fields of `kinds` (one per
    /// callsite field), once; a concurrent or later call returns the first.
    pub(crate) fn build(&'static self, kinds: &[FieldKind]) -> Option<&'static Built> {
        self.built
            .get_or_init(|| {
                let m = self.meta;
                let what = match self.kind {
                    SiteKind::Span => "span",
                    SiteKind::Event => "event",
                };
                let mut b = EventTypeBuilder::new(self.name)
                    .label(m.name())
                    .description(format!(
                        "tracing {what} at level {} in target {}{}",
                        m.level(),
                        m.target(),
                        match (m.file(), m.line()) {
                            (Some(f), Some(l)) => format!(" ({f}:{l})"),
                            _ => String::new(),
                        }
                    ))
                    .category(["Tracing".to_owned(), m.target().to_owned()]);
                if self.kind == SiteKind::Span {
                    b = b
                        .duration()
                        .field_with(SPAN_ID, FieldKind::U64, Some("Span Id"), None);
                }
                b = b.field_with(PARENT_ID, FieldKind::U64, Some("Parent Span Id"), None);
                for (name, kind) in self.fields.iter().zip(kinds) {
                    b = b.field(name.clone(), *kind);
                }
                match b.build() {
                    Ok(ty) => Some(Built {
                        ty,
                        kinds: kinds[..self.fields.len()].into(),
                        plan: plan(&kinds[..self.fields.len()]),
                    }),
                    Err(e) => {
                        STATS.rejected_types.fetch_add(1, Ordering::Relaxed);
                        eprintln!("flightrec-tracing: type `{}` not recorded: {e}", self.name);
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// Counters of what the layer could not record as given.
#[derive(Debug, Default)]
pub(crate) struct StatsCells {
    pub(crate) mismatched_values: AtomicU64,
    pub(crate) rejected_types: AtomicU64,
}

pub(crate) static STATS: StatsCells = StatsCells {
    mismatched_values: AtomicU64::new(0),
    rejected_types: AtomicU64::new(0),
};

/// A hasher for metadata addresses (already unique; mix and use).
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(26);
    }
}

pub(crate) type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

struct Sites {
    by_meta: AddrMap<&'static Site>,
    names: HashSet<&'static str>,
}

fn sites() -> &'static Mutex<Sites> {
    static SITES: OnceLock<Mutex<Sites>> = OnceLock::new();
    SITES.get_or_init(|| {
        Mutex::new(Sites {
            by_meta: AddrMap::default(),
            names: HashSet::new(),
        })
    })
}

/// Ways of the per-thread direct-mapped site cache.
const WAYS: usize = 64;

/// One way: a callsite address and its site.
type Way = Cell<(usize, Option<&'static Site>)>;

thread_local! {
    /// The first level of this thread's lookups: one compare, no hashing,
    /// no borrow flag, no lazy initialisation.
    static FAST: [Way; WAYS] = const { [const { Cell::new((0, None)) }; WAYS] };
    /// The second level: every lookup this thread made (no lock).
    static CACHE: RefCell<AddrMap<&'static Site>> = RefCell::new(AddrMap::default());
}

fn addr(meta: &'static Metadata<'static>) -> usize {
    meta as *const Metadata<'static> as usize
}

/// The address of `meta`'s callsite: a field read, unlike the dynamic
/// call that would give the `'static` metadata.
#[inline(always)]
fn callsite_addr(meta: &Metadata<'_>) -> usize {
    meta.callsite().0 as *const dyn tracing_core::Callsite as *const () as usize
}

/// The site of `meta`'s callsite, registering it on first sight: on the
/// event path one thread-local load and a compare.
#[inline]
pub(crate) fn site(meta: &Metadata<'_>) -> &'static Site {
    let key = callsite_addr(meta);
    let way = (key >> 4 ^ key >> 10) & (WAYS - 1);
    FAST.try_with(|fast| match fast[way].get() {
        (k, Some(s)) if k == key => s,
        _ => {
            let s = site_slow(meta, key);
            fast[way].set((key, Some(s)));
            s
        }
    })
    .unwrap_or_else(|_| register(meta.callsite().0.metadata()))
}

#[cold]
#[inline(never)]
fn site_slow(meta: &Metadata<'_>, key: usize) -> &'static Site {
    CACHE
        .try_with(|c| {
            if let Some(s) = c.borrow().get(&key) {
                return *s;
            }
            let s = register(meta.callsite().0.metadata());
            c.borrow_mut().insert(key, s);
            s
        })
        .unwrap_or_else(|_| register(meta.callsite().0.metadata()))
}

#[cold]
#[inline(never)]
fn register(meta: &'static Metadata<'static>) -> &'static Site {
    let mut sites = sites().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = sites.by_meta.get(&addr(meta)) {
        return s;
    }
    let base = type_name(meta.target(), meta.name());
    let mut name = base.clone();
    let mut n = 1;
    while sites.names.contains(name.as_str()) {
        n += 1;
        name = format!("{base}_{n}");
    }
    let name: &'static str = Box::leak(name.into_boxed_str());
    sites.names.insert(name);
    let kind = if meta.is_span() {
        SiteKind::Span
    } else {
        SiteKind::Event
    };
    let site: &'static Site = Box::leak(Box::new(Site {
        meta,
        name,
        kind,
        fields: field_names(meta, kind),
        built: OnceLock::new(),
        // Right from the start: a thread that finds `tracing` registering
        // this callsite on another thread asks the filter before that
        // thread has evaluated the site.
        records: AtomicBool::new(recorder::event::watch::would_record(name, true)),
    }));
    sites.by_meta.insert(addr(meta), site);
    site
}

/// The sites registered so far, in no particular order.
pub(crate) fn all() -> Vec<&'static Site> {
    let sites = sites().lock().unwrap_or_else(|e| e.into_inner());
    sites.by_meta.values().copied().collect()
}

/// `tracing.<target>.<name>`, sanitized (see the module doc).
pub(crate) fn type_name(target: &str, name: &str) -> String {
    let mut out = String::from("tracing");
    for seg in target.split("::").flat_map(|s| s.split('.')) {
        out.push('.');
        push_ident(&mut out, seg);
    }
    out.push('.');
    push_ident(&mut out, name);
    out.truncate(1000);
    out
}

/// Appends `s` as one Java identifier segment.
fn push_ident(out: &mut String, s: &str) {
    let start = out.len();
    for c in s.chars() {
        out.push(if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
            c
        } else {
            '_'
        });
    }
    if out.len() == start || out.as_bytes()[start].is_ascii_digit() {
        out.insert(start, '_');
    }
}

fn field_names(meta: &'static Metadata<'static>, kind: SiteKind) -> Box<[String]> {
    let mut taken: Vec<String> = vec![PARENT_ID.to_owned()];
    if kind == SiteKind::Span {
        taken.push(SPAN_ID.to_owned());
    }
    let reserved = ["startTime", "duration", "eventThread", "stackTrace"];
    meta.fields()
        .iter()
        .take(crate::values::MAX_FIELDS)
        .map(|f| {
            let raw = f.name().strip_prefix("r#").unwrap_or(f.name());
            let mut n = String::new();
            push_ident(&mut n, raw);
            while reserved.contains(&n.as_str()) || taken.contains(&n) {
                n.push('_');
            }
            taken.push(n.clone());
            n
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_java_identifiers() {
        assert_eq!(
            type_name("my_crate::db", "query users"),
            "tracing.my_crate.db.query_users"
        );
        assert_eq!(
            type_name("app", "event src/main.rs:42"),
            "tracing.app.event_src_main_rs_42"
        );
        assert_eq!(type_name("9lives::", "x-y"), "tracing._9lives._.x_y");
        assert_eq!(type_name("a.b", "é"), "tracing.a.b._");
        for n in [
            type_name("my_crate::db", "query users"),
            type_name("9lives::", "x-y"),
            type_name("", ""),
        ] {
            jfr_format_check(&n);
        }
    }

    fn jfr_format_check(n: &str) {
        // The builder validates names exactly as the metadata will.
        EventTypeBuilder::new(n).build().expect(n);
    }
}
