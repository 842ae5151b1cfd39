//! Watching the settings in force, for adapters that decide once per call
//! site whether to call into the recorder at all (the `tracing` layer's
//! `Interest`).
//!
//! # Mechanism
//!
//! [`would_record`] answers, by name and without registering anything,
//! what a type's `enabled` setting is now: a recording runs and its
//! settings (over the type's default) enable the type. [`on_settings_change`]
//! adds a plain `fn()` that the registry calls after every start, stop and
//! re-configuration, once the registry lock is released, so the callback may
//! register types or read settings.
//!
//! Invariant: every change of the settings in force is followed by one call
//! of every hook added before it, made after the new words are published.

use super::registry::{self, HOOKS};

/// Calls `hook` after every change of the settings in force (a recording
/// starts, stops, or is given new settings). Hooks are never removed; add
/// each once.
pub fn on_settings_change(hook: fn()) {
    HOOKS.lock().push(hook);
}

/// True if an event type called `name` whose default `enabled` is
/// `default_enabled` would record now: a recording runs and its settings
/// enable the name.
pub fn would_record(name: &str, default_enabled: bool) -> bool {
    let reg = registry::registry();
    if !reg.is_recording() {
        return false;
    }
    reg.settings
        .load()
        .get(name)
        .and_then(|s| s.enabled)
        .unwrap_or(default_enabled)
}
