//! A [`tracing_subscriber::Layer`](https://docs.rs/tracing-subscriber/0.3/tracing_subscriber/layer/trait.Layer.html) that records `tracing` spans and events
//! as JFR events through flightrec: no new instrumentation, typed fields,
//! and per-type JFR settings.
//!
//! Users reach it as `flightrec::tracing`, with the facade's `tracing`
//! feature (`features = ["tracing"]` on the `flightrec` dependency).
//! A program with no subscriber of its own installs [`subscriber`]:
//!
//! ```no_run
//! # mod flightrec { pub use ::recorder::*; pub use ::flightrec_tracing as tracing; }
//! tracing::subscriber::set_global_default(flightrec::tracing::subscriber())?;
//! let recording = flightrec::Recording::start(flightrec::RecordingConfig::new("app.jfr"))?;
//! let span = tracing::info_span!("request", path = "/").entered();
//! tracing::info!(status = 200, "done");
//! drop(span);
//! recording.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One that has other layers (fmt, OpenTelemetry) adds [`layer`] to its
//! registry beside them:
//!
//! ```no_run
//! # mod flightrec { pub use ::recorder::*; pub use ::flightrec_tracing as tracing; }
//! use tracing_subscriber::prelude::*;
//!
//! tracing_subscriber::registry()
//!     .with(flightrec::tracing::layer())
//!     .init();
//! ```
//!
//! # What is recorded
//!
//! * Every callsite is one JFR event type, `tracing.<target>.<name>` (see
//!   *Naming* below), labelled with the callsite's name,
//!   described with its level, target and source line, in category
//!   `Tracing / <target>`.
//! * A **span** is a duration event per *entry*: from `enter` to `exit` on
//!   one thread (an async task's span polled three times gives three events
//!   with the same `spanId`). Fields: `spanId` (unique in the process, never
//!   reused, unlike `tracing`'s ids), `parentId` (the `spanId` of the
//!   nearest recorded ancestor, 0 at a root), then the span's fields. Entry
//!   start times are kept on a thread-local stack, not in span extensions;
//!   the span's field values are kept in its extensions, shared with that
//!   stack and a per-thread cache, so the layer looks nothing up in the
//!   registry to enter or exit a span (the per-layer filter of
//!   `tracing-subscriber` still does).
//! * An **event** is an instant event: `parentId` (its explicit parent,
//!   or else the innermost recorded span entered on this thread; 0 if
//!   none), then its fields (`message` included).
//! * Stack traces: with `stackTrace=true` the trace is captured inside the
//!   layer; the dispatch frames above the instrumented code (this crate's,
//!   `tracing`'s, `tracing-core`'s and `tracing-subscriber`'s, and the
//!   standard-library glue between them) are cut when the trace is written
//!   (see `flightrec::stack::trim_dispatch_frames`), so the top frame is the
//!   function that emitted the event or exited the span. No trace is
//!   captured for a type whose `stackTrace` is off.
//! * Field types are fixed at first use; names are sanitized into Java
//!   identifiers. Both rules are spelled out below.
//! * An event's values are encoded as `tracing` visits them, `Debug` ones
//!   formatted there, into the recorder's per-thread scratch before its
//!   write section: an event recorded from inside a `Debug` impl while it
//!   formats (one through this layer, or with a user field) is dropped,
//!   counted as a reentrant loss.
//!
//! # Settings
//!
//! Each type takes the JFR settings `enabled`, `stackTrace` and, for spans,
//! `threshold` (e.g. `tracing.app.request#threshold=10 ms`). The layer
//! carries its own per-layer [`Filter`]:
//! a type that is disabled, or every type while nothing records, gets
//! `Interest::never` for this layer, so when no other layer wants the
//! callsite it costs what `tracing` costs with no subscriber interest.
//! Whenever a recording starts, stops or changes settings, the interest
//! cache is rebuilt. Other layers in the same registry (fmt,
//! OpenTelemetry) are unaffected by this filter.
//!
//! # Naming
//!
//! A callsite becomes `tracing.<target>.<name>`: the target's `::` become
//! dots, and every character that may not appear in a Java identifier
//! (non-ASCII included) becomes `_`; a segment starting with a digit gets a
//! leading `_`. So target `my_crate::db` and span `"query users"` give
//! `tracing.my_crate.db.query_users`, and an event without a name (`tracing`
//! names it `event src/main.rs:42`) gives `tracing.<target>.event_src_main_rs_42`.
//! A second callsite whose name comes out the same gets `_2`, `_3`, ... in
//! the order callsites register; [`callsite_types`] lists the names given.
//! Field names are sanitized the same way (`r#type` is `type`); one that
//! would clash with an implicit field (`startTime`, `duration`,
//! `eventThread`, `stackTrace`) or with `spanId` / `parentId` gets a
//! trailing `_`.
//!
//! # Field types, fixed at first use
//!
//! A callsite's field names are static, their types are not: the JFR type is
//! built from the first values seen (an event's first occurrence, a span's
//! first creation). `i64` is `long`, `u64` is `long` with `@Unsigned`, `f64`
//! is `double`, `bool` is `boolean`; everything else (strings, `Debug`,
//! errors, 128-bit integers, and span fields still `Empty` at creation) is a
//! `String`. Later values are converted where nothing is lost (a
//! non-negative `i64` into an unsigned field, an integer into a `double`,
//! anything into a `String`); a value that cannot be is written as 0 /
//! false and counted in [`Stats::mismatched_values`].

mod direct;
mod site;
mod spans;
mod values;

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

use recorder::clock;
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::subscriber::Interest;
use tracing_core::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::{Context, Filter, Layer, Layered, SubscriberExt};
use tracing_subscriber::registry::{LookupSpan, Registry};

use direct::Direct;
use site::{SiteKind, site};
use spans::{Entry, SpanCache, SpanData, SpanShared};
use values::{Slot, Slots};

/// The layer with its filter, as [`layer`] returns it.
pub type FlightrecLayer<S> = Filtered<JfrLayer, JfrFilter, S>;

/// The flightrec layer, filtered by the JFR settings in force: add it to
/// a [`tracing_subscriber::registry()`](https://docs.rs/tracing-subscriber/0.3/tracing_subscriber/registry/fn.registry.html).
pub fn layer<S>() -> FlightrecLayer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    JfrLayer::new().with_filter(JfrFilter::new())
}

/// A [`Registry`](https://docs.rs/tracing-subscriber/0.3/tracing_subscriber/registry/struct.Registry.html) with only the flightrec layer, for a program that has no
/// subscriber of its own: `tracing::subscriber::set_global_default(subscriber())`
/// (or `tracing::subscriber::with_default` for a scope). A program with
/// other layers adds [`layer`] to its registry instead.
pub fn subscriber() -> Layered<FlightrecLayer<Registry>, Registry> {
    tracing_subscriber::registry().with(layer())
}

/// Records spans and events (use it through [`layer`], which adds the
/// filter that honours the JFR settings).
#[derive(Debug, Clone, Default)]
pub struct JfrLayer {
    _private: (),
}

impl JfrLayer {
    /// The layer alone.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The per-layer filter: enabled exactly when the callsite's JFR type
/// records now.
#[derive(Debug, Clone)]
pub struct JfrFilter {
    _private: (),
}

impl JfrFilter {
    /// The filter; the first one asks the recorder to rebuild `tracing`'s
    /// interest cache whenever the settings in force change.
    pub fn new() -> Self {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            recorder::event::watch::on_settings_change(
                tracing_core::callsite::rebuild_interest_cache,
            );
            for krate in [
                "flightrec_tracing",
                // This crate's inlined frames, named after its directory.
                "tracing",
                "tracing_core",
                "tracing_subscriber",
            ] {
                recorder::stack::trim_dispatch_frames(krate);
            }
        });
        Self { _private: () }
    }
}

impl Default for JfrFilter {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Filter<S> for JfrFilter {
    fn enabled(&self, meta: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        site(meta).records_now()
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        if site(meta).evaluate() {
            Interest::always()
        } else {
            Interest::never()
        }
    }
}

/// What the layer could not record as given (process-wide).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Field values that did not fit their field's type (fixed at first
    /// use) and were written as 0 / false / null.
    pub mismatched_values: u64,
    /// Callsites whose type the recorder refused (reported on stderr once).
    pub rejected_types: u64,
}

/// The layer's counters.
pub fn stats() -> Stats {
    Stats {
        mismatched_values: site::STATS.mismatched_values.load(Ordering::Relaxed),
        rejected_types: site::STATS.rejected_types.load(Ordering::Relaxed),
    }
}

/// A callsite the layer has seen, and its JFR event type name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallsiteType {
    /// The JFR event type name (`tracing.<target>.<name>`).
    pub type_name: &'static str,
    /// The callsite's `target`.
    pub target: &'static str,
    /// The callsite's name.
    pub name: &'static str,
    /// True for a span (a duration event), false for an event.
    pub is_span: bool,
}

/// The callsites seen so far and their type names, sorted by type name.
pub fn callsite_types() -> Vec<CallsiteType> {
    let mut v: Vec<CallsiteType> = site::all()
        .into_iter()
        .map(|s| CallsiteType {
            type_name: s.name,
            target: s.meta.target(),
            name: s.meta.name(),
            is_span: s.kind == SiteKind::Span,
        })
        .collect();
    v.sort_by_key(|c| c.type_name);
    v
}

/// The JFR type name of the callsite `meta` (registering it if new).
pub fn type_name(meta: &'static Metadata<'static>) -> &'static str {
    site(meta).name
}

/// Unique span ids, never reused (0 means "no span").
static NEXT_SPAN_ID: AtomicU64 = AtomicU64::new(1);

/// Everything the layer keeps per thread, behind one thread-local access.
struct Local {
    /// Open entries, innermost last: their start times, and the current
    /// recorded span an event belongs to.
    entries: Vec<Entry>,
    /// Scratch values for events that are not encoded as visited (a
    /// type's first event, values out of order).
    scratch: Slots,
    /// States of spans this thread created or entered.
    spans: SpanCache,
}

thread_local! {
    static LOCAL: RefCell<Local> = RefCell::new(Local {
        entries: Vec::with_capacity(64),
        scratch: Slots::new(),
        spans: SpanCache::new(),
    });
    /// The `spanId` of the innermost entry on this thread (0: none): what
    /// an event reads, without borrowing [`LOCAL`].
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Records `event` through the slots: its type's first event (which
/// fixes the field types), or one whose values came out of field order.
/// Returns the count of values that did not fit their field.
#[cold]
#[inline(never)]
fn record_sorted(
    s: &'static site::Site,
    event: &Event<'_>,
    scratch: &mut Slots,
    parent: u64,
) -> u32 {
    let n = s.fields.len();
    scratch.clear(n);
    event.record(scratch);
    let built = match s.built() {
        Some(b) => b,
        None => {
            let kinds: Vec<_> = scratch.slots[..n].iter().map(|v| v.kind()).collect();
            s.build(&kinds)
        }
    };
    let Some(built) = built else { return 0 };
    // The writer may run twice (a full block): the count of the last run
    // is kept.
    let bad = Cell::new(0);
    built.ty.commit_fields(|w| {
        w.uint(parent);
        bad.set(scratch.write_fields(&built.kinds, w));
        true
    });
    bad.get()
}

fn span_id<S>(span: Option<tracing_subscriber::registry::SpanRef<'_, S>>) -> u64
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    span.and_then(|s| s.extensions().get::<SpanData>().map(|d| d.0.id))
        .unwrap_or(0)
}

impl<S> Layer<S> for JfrLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let s = site(span.metadata());
        let mut values = Slots::new();
        attrs.record(&mut values);
        let n = s.fields.len();
        let built = match s.built() {
            Some(b) => b,
            None => {
                let kinds: Vec<_> = values.slots[..n].iter().map(|v: &Slot| v.kind()).collect();
                Some(s.build(&kinds)).flatten()
            }
        };
        let Some(built) = built else { return };
        values.fix(&built.kinds);
        let parent = span_id(span.parent());
        let data = Arc::new(SpanShared::new(
            id.into_u64(),
            NEXT_SPAN_ID.fetch_add(1, Ordering::Relaxed),
            parent,
            built,
            values,
        ));
        let _ = LOCAL.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                l.spans.insert(&data);
            }
        });
        span.extensions_mut().insert(SpanData(data));
    }

    fn on_record(&self, id: &Id, record: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let ext = span.extensions();
        let Some(SpanData(data)) = ext.get::<SpanData>() else {
            return;
        };
        // New text is appended; compact() drops what no field uses any more.
        let mut values = data.values();
        record.record(&mut *values);
        values.fix(&data.built.kinds);
        values.compact();
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let key = id.into_u64();
        let _ = LOCAL.try_with(|l| {
            let Ok(mut l) = l.try_borrow_mut() else {
                return;
            };
            let span = match l.spans.get(key) {
                Some(s) => Some(s.clone()),
                None => {
                    // Created on another thread, or pushed out of the
                    // cache: looked up once, then cached.
                    let span = ctx
                        .span(id)
                        .and_then(|s| s.extensions().get::<SpanData>().map(|d| d.0.clone()));
                    if let Some(s) = &span {
                        l.spans.insert(s);
                    }
                    span
                }
            };
            let id = span.as_ref().map_or(0, |s| s.id);
            l.entries.push(Entry {
                key,
                id,
                span,
                start: clock::ticks(),
            });
            CURRENT.set(id);
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let ext = span.extensions();
        let Some(SpanData(data)) = ext.get::<SpanData>() else {
            return;
        };
        data.close();
        let _ = LOCAL.try_with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                l.spans.remove(data);
            }
        });
    }

    fn on_exit(&self, id: &Id, _: Context<'_, S>) {
        let end = clock::ticks();
        let key = id.into_u64();
        let entry = LOCAL.try_with(|l| {
            let mut l = l.try_borrow_mut().ok()?;
            // The innermost entry, unless spans exit out of order.
            let at = l.entries.iter().rposition(|e| e.key == key)?;
            let entry = l.entries.remove(at);
            CURRENT.set(l.entries.last().map_or(0, |e| e.id));
            Some(entry)
        });
        let Ok(Some(Entry {
            span: Some(span),
            start,
            ..
        })) = entry
        else {
            return;
        };
        let values = span.values();
        // The values were converted when recorded: nothing is counted here.
        span.built.ty.commit_span_fields(start, end, |w| {
            w.uint(span.id);
            w.uint(span.parent);
            values.write_fields(&span.built.kinds, w);
            true
        });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        // An explicit parent is looked up; a contextual event belongs to
        // the innermost recorded span entered on this thread.
        let s = site(event.metadata());
        let parent = match event.parent() {
            Some(id) => span_id(ctx.span(id)),
            None if event.is_contextual() => CURRENT.try_with(Cell::get).unwrap_or(0),
            None => 0,
        };
        // Values that did not fit their field; `None` if the event is to be
        // recorded through the slots.
        let bad = match s.built() {
            Some(Some(built)) => {
                // Encoded as visited (see `direct`); the writer may run
                // twice (a full block), so the outcome of the last run is
                // kept.
                let done = Cell::new(Some(0));
                // Inlined into the commit: a call would save and restore
                // six registers and spill the visitor's state around it.
                built.ty.commit_fields(
                    #[inline(always)]
                    |w| {
                        w.uint(parent);
                        let mut d = Direct::new(w, built);
                        event.record(&mut d);
                        done.set(d.finish());
                        done.get().is_some()
                    },
                );
                done.get()
            }
            Some(None) => Some(0), // rejected type
            None => None,
        };
        let bad = bad.unwrap_or_else(|| {
            LOCAL
                .try_with(|l| {
                    // Not if recorded while formatting one of ours.
                    l.try_borrow_mut()
                        .map_or(0, |mut l| record_sorted(s, event, &mut l.scratch, parent))
                })
                .unwrap_or(0)
        });
        if bad > 0 {
            site::STATS
                .mismatched_values
                .fetch_add(u64::from(bad), Ordering::Relaxed);
        }
    }
}
