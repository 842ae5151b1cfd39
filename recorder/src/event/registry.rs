//! The type registry (always present): which event types exist, their ids,
//! and the settings in force.
//!
//! Event types register themselves on first use (see
//! [`crate::event::descriptor`]). Registration assigns the next type id,
//! records the type for the metadata, and computes its settings word from the
//! active recording's settings (disabled when nothing records). Starting,
//! stopping and re-configuring a recording recompute every registered type's
//! word under the same lock, so a type registering concurrently with a start
//! cannot miss the start.
//!
//! Invariant: every type whose word has the enabled bit set is in
//! `Registry::types` with the id stored in its `type_id`, so its events can
//! always be described by the metadata of the chunk they land in.

use jfr_format::TypeId;
use jfr_format::write::metadata::{EncodedMetadata, Metadata};

use crate::base::clock;
use crate::base::enabled;
use crate::base::sync::{ArcSwap, AtomicUsize, Mutex, OnceLock, Ordering, StdArc, global};
use crate::config::settings::Settings;
use crate::event::descriptor::{EventKind, EventType};

/// The registered event types and the active settings.
#[derive(Debug)]
pub(crate) struct Registry {
    inner: Mutex<RegistryInner>,
    /// The active recording's settings (readable without the lock).
    pub(crate) settings: ArcSwap<Settings>,
    /// Number of registered types (read by the recorder without the lock).
    count: AtomicUsize,
}

#[derive(Debug)]
struct RegistryInner {
    types: Vec<&'static EventType>,
    next_id: u64,
    recording: bool,
    /// Each live recording's own settings, by recording id, in start
    /// order; [`Registry::settings`] holds their union.
    live: Vec<(u64, Settings)>,
    /// The metadata last encoded, and its id ([`metadata_id`]).
    encoded: Option<(u64, StdArc<EncodedMetadata>)>,
}

/// The global registry.
pub(crate) fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

impl Registry {
    /// An empty registry, not recording (the global one, or a loom model's).
    pub(crate) fn new() -> Self {
        Self {
            inner: Mutex::new(RegistryInner {
                types: Vec::new(),
                next_id: TypeId::FIRST_DYNAMIC.0,
                recording: false,
                live: Vec::new(),
                encoded: None,
            }),
            settings: ArcSwap::from_pointee(Settings::new()),
            count: AtomicUsize::new(0),
        }
    }

    /// Registers `ty` (once) and returns its settings word.
    #[cold]
    #[inline(never)]
    pub(crate) fn register(&self, ty: &'static EventType) -> u64 {
        let mut inner = self.inner.lock();
        let word = ty.word.load(Ordering::Acquire);
        if word != 0 {
            return word; // registered by another thread meanwhile
        }
        let id = inner.next_id;
        inner.next_id += 1;
        inner.types.push(ty);
        self.count.store(inner.types.len(), Ordering::Release);
        ty.type_id.store(id, Ordering::Relaxed);
        // Ids count up from a few hundred, one per registered type: 2^42
        // of them is beyond any process, and the commit path counts on a
        // pre-encoded header (`EventType::header`).
        let header = crate::event::sink::Packed::header(id).expect("a type id of at most 42 bits");
        ty.header.store(header.to_bits(), Ordering::Relaxed);
        // The union used the type's defaults as unknown: recompute it now
        // that they are known (only matters with several recordings).
        if inner.live.len() > 1
            && inner
                .live
                .iter()
                .any(|(_, s)| s.types.contains_key(ty.info.name))
        {
            self.settings.store(StdArc::new(union_of(&inner)));
        }
        let word = self.word_for(ty, inner.recording);
        ty.word.store(word, Ordering::Release);
        word
    }

    fn word_for(&self, ty: &EventType, recording: bool) -> u64 {
        let (enabled, stack, threshold) = self.in_force(ty);
        let enabled = recording && enabled;
        enabled::pack(
            enabled,
            stack,
            clock::duration_to_ticks(threshold.unwrap_or_default()) as u64,
            fixed_bits(ty, enabled),
        )
    }

    /// The settings `ty` records with while a recording runs: `enabled`,
    /// `stackTrace` and, for a duration type, `threshold`, as given (the
    /// recording's settings over the type's defaults). Unlike the word,
    /// this stays what was asked for after the stop turned events off, so
    /// the last chunk reports the settings its events were recorded with.
    pub(crate) fn in_force(&self, ty: &EventType) -> (bool, bool, Option<std::time::Duration>) {
        resolve(ty, &self.settings.load())
    }

    /// Installs `settings` and whether a recording runs, and recomputes every
    /// type's word.
    pub(crate) fn apply(&self, settings: Settings, recording: bool) {
        let mut inner = self.inner.lock();
        inner.recording = recording;
        self.install(inner, settings);
    }

    /// Adds recording `id`'s settings to the live ones and applies the
    /// union (see [`crate::config::union`]) with recording on.
    pub(crate) fn add_live(&self, id: u64, settings: Settings) {
        let mut inner = self.inner.lock();
        inner.live.retain(|(i, _)| *i != id);
        inner.live.push((id, settings));
        self.apply_union(inner);
    }

    /// Replaces recording `id`'s settings and applies the union; false if
    /// `id` is not live.
    pub(crate) fn set_live(&self, id: u64, settings: Settings) -> bool {
        let mut inner = self.inner.lock();
        let Some(slot) = inner.live.iter_mut().find(|(i, _)| *i == id) else {
            return false;
        };
        slot.1 = settings;
        self.apply_union(inner);
        true
    }

    /// Recording `id`'s own settings, if it is live.
    pub(crate) fn live_settings(&self, id: u64) -> Option<Settings> {
        let inner = self.inner.lock();
        inner
            .live
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, s)| s.clone())
    }

    /// Removes recording `id` from the live ones and applies the union of
    /// the others (recording stays on while one is left).
    pub(crate) fn remove_live(&self, id: u64) {
        let mut inner = self.inner.lock();
        inner.live.retain(|(i, _)| *i != id);
        if inner.live.is_empty() {
            return;
        }
        self.apply_union(inner);
    }

    /// Forgets every live recording's settings (the last one stopped).
    pub(crate) fn clear_live(&self) {
        self.inner.lock().live.clear();
    }

    /// Applies the union of the live settings (recording stays as it is:
    /// on since the first start's claim, off after a failure).
    fn apply_union(&self, inner: crate::base::sync::MutexGuard<'_, RegistryInner>) {
        let union = union_of(&inner);
        self.install(inner, union);
    }

    /// Publishes `settings` as the settings in force, recomputes every
    /// type's word under the lock, then (outside it) tells the watchers.
    fn install(&self, inner: crate::base::sync::MutexGuard<'_, RegistryInner>, settings: Settings) {
        let recording = inner.recording;
        crate::feature::each(|f| f.apply(&settings, recording));
        self.settings.store(StdArc::new(settings));
        for ty in &inner.types {
            ty.word
                .store(self.word_for(ty, recording), Ordering::Release);
        }
        drop(inner);
        notify();
    }

    /// Holds the registry's lock across a `fork()`.
    pub(crate) fn fork_lock(&'static self) {
        crate::base::sync::fork_lock(&self.inner);
    }

    /// Releases what [`fork_lock`](Self::fork_lock) holds.
    ///
    /// # Safety
    ///
    /// Called once after [`fork_lock`](Self::fork_lock) on the same thread.
    pub(crate) unsafe fn fork_unlock(&self) {
        // SAFETY: the caller's contract.
        unsafe { crate::base::sync::fork_unlock(&self.inner) }
    }

    /// In a forked child: nothing records (every type disabled), so the
    /// child can start a recording of its own.
    ///
    /// # Safety
    ///
    /// Called in the child between [`fork_lock`](Self::fork_lock) and
    /// [`fork_unlock`](Self::fork_unlock), with no other thread running.
    pub(crate) unsafe fn stop_in_child(&self) {
        // SAFETY: the caller's contract: the lock is held for us and we are
        // the only thread.
        let inner = unsafe { crate::base::sync::fork_data(&self.inner) };
        inner.recording = false;
        inner.live.clear();
        for ty in &inner.types {
            ty.word.store(self.word_for(ty, false), Ordering::Release);
        }
        crate::feature::each(|f| f.stop_in_child());
    }

    /// Number of registered types.
    pub(crate) fn type_count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// True while a recording runs.
    pub(crate) fn is_recording(&self) -> bool {
        self.inner.lock().recording
    }

    /// Marks a recording as running, failing if one already is.
    pub(crate) fn claim_recording(&self) -> bool {
        let mut inner = self.inner.lock();
        if inner.recording {
            return false;
        }
        inner.recording = true;
        true
    }

    /// The event names `settings` gives settings for that no registered
    /// type has (sorted).
    pub(crate) fn unregistered(&self, settings: &Settings) -> Vec<String> {
        let types = self.types();
        let mut names: Vec<String> = settings
            .types
            .keys()
            .filter(|name| !types.iter().any(|t| t.info.name == name.as_str()))
            .filter(|name| !crate::config::settings::is_builtin_event(name))
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// The registered types (id order).
    pub(crate) fn types(&self) -> Vec<&'static EventType> {
        self.inner.lock().types.clone()
    }

    /// [`metadata`](Self::metadata) encoded ([`Metadata::encode_body`]),
    /// and its id. Encoded again only when a type registered since the
    /// last call: every chunk needs the metadata, and encoding it costs
    /// some 0.5 ms, which at the default 12 MiB chunk of small events was
    /// about 1 ns per event of the recorder's time.
    pub(crate) fn encoded_metadata(&self) -> (StdArc<EncodedMetadata>, u64) {
        {
            let inner = self.inner.lock();
            if let Some((id, m)) = &inner.encoded
                && *id == metadata_id(inner.types.len(), context_ids())
            {
                return (m.clone(), *id);
            }
        }
        // Encoded outside the lock: registrations do not wait for it.
        let (metadata, id) = self.metadata();
        let encoded = StdArc::new(metadata.encode_body());
        self.inner.lock().encoded = Some((id, encoded.clone()));
        (encoded, id)
    }

    /// The metadata describing the built-in and every registered type, and
    /// the number of registered types (which identifies it).
    pub(crate) fn metadata(&self) -> (Metadata, u64) {
        let types = self.types();
        // The samples with `contextId` while the recorder writes it.
        let context_ids = context_ids();
        let mut m = Metadata::builtin_for(context_ids);
        for ty in &types {
            let desc = ty.describe(ty.id());
            if let Err(e) = m.add(desc) {
                // Types are validated when declared; this cannot happen for
                // a registered type.
                debug_assert!(false, "registered type rejected by metadata: {e}");
            }
        }
        (m, metadata_id(types.len(), context_ids))
    }
}

/// Whether the samples carry `contextId` ([`crate::labels`]): never in the
/// loom models, which use no labels (a std static, false there).
fn context_ids() -> bool {
    crate::labels::latch::in_samples()
}

/// The id of the metadata describing the built-in types (the samples with
/// `contextId` if `context_ids`) and the first `types` registered ones:
/// types are only ever added, so their count identifies the metadata.
fn metadata_id(types: usize, context_ids: bool) -> u64 {
    types as u64 + 1 + (u64::from(context_ids) << 32)
}

/// `ty`'s `enabled`, `stackTrace` and, for a duration type, `threshold`
/// under `s` (its values over the type's defaults).
pub(crate) fn resolve(ty: &EventType, s: &Settings) -> (bool, bool, Option<std::time::Duration>) {
    let d = ty.info.defaults;
    let o = s.get(ty.info.name);
    let enabled = o.and_then(|o| o.enabled).unwrap_or(d.enabled);
    let stack = o.and_then(|o| o.stack_trace).unwrap_or(d.stack_trace);
    let threshold = match ty.info.kind {
        EventKind::Duration => Some(o.and_then(|o| o.threshold).unwrap_or(d.threshold)),
        EventKind::Instant => None,
    };
    (enabled, stack, threshold)
}

/// The union of the live recordings' settings, with the registered types'
/// defaults and the built-in types' taking part.
fn union_of(inner: &RegistryInner) -> Settings {
    let live: Vec<&Settings> = inner.live.iter().map(|(_, s)| s).collect();
    crate::config::union::union(&live, |name| {
        if let Some(ty) = inner.types.iter().find(|t| t.info.name == name) {
            let d = ty.info.defaults;
            return crate::config::settings::TypeSettings {
                enabled: Some(d.enabled),
                stack_trace: Some(d.stack_trace),
                threshold: (ty.info.kind == EventKind::Duration).then_some(d.threshold),
                ..Default::default()
            };
        }
        crate::config::union::builtin_default(name)
    })
}

/// The word bits the hot path branches on instead of loading them: the
/// type's kind, and, in an enabled word, whether the clock is the TSC (an
/// enabled word exists only after `Recording::start` calibrated the clock,
/// so computing it never calibrates on a registering thread).
fn fixed_bits(ty: &EventType, enabled: bool) -> u64 {
    let kind = match ty.info.kind {
        EventKind::Duration => enabled::DURATION,
        EventKind::Instant => 0,
    };
    let tsc = if enabled && clock::reads_tsc() {
        enabled::CLOCK_TSC
    } else {
        0
    };
    kind | tsc
}

/// The global registry's registration entry point (for descriptors).
pub(crate) fn global() -> &'static Registry {
    registry()
}

/// The hooks [`crate::event::watch::on_settings_change`] adds.
pub(crate) static HOOKS: global::Mutex<Vec<fn()>> = global::Mutex::new(Vec::new());

/// Calls the hooks; the registry calls this after applying settings,
/// outside its lock.
pub(crate) fn notify() {
    // Copy out so a hook that adds a hook does not deadlock.
    let hooks: Vec<fn()> = HOOKS.lock().clone();
    for hook in hooks {
        hook();
    }
}
