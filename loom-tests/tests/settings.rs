//! Model 5: settings swapped while events commit.
//!
//! A type is registered with the real `Registry` (not the global one); the
//! control thread swaps the recording's settings with `Registry::apply`
//! (new `Settings` in the `ArcSwap`, every type's packed word rewritten)
//! while an emitting thread reads the word twice through the hot path's
//! `EventType::word`, as two commits would.
//!
//! Invariant: each read is exactly the old word or exactly the new word
//! (never the new `enabled` with the old threshold), and once a commit saw
//! the new settings, later ones on that thread never see the old.
#![cfg(flightrec_loom)]

mod common;

use std::time::Duration;

use common::model;
use loom::sync::Arc;
use loom::thread;
use recorder::loom_api::{Registry, duration_to_ticks, pack, unpack, word};
use recorder::{DefaultSettings, EventKind, EventType, EventTypeInfo, Settings};

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is unset.
const BOUND: usize = 3;

const NAME: &str = "com.example.Model";

static INFO: EventTypeInfo = EventTypeInfo {
    name: NAME,
    label: None,
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Duration,
    defaults: DefaultSettings::DEFAULT,
    fields: &[],
};

fn swap_while_committing() {
    // Loom atomics are not const: a type per execution, leaked as real
    // descriptors are 'static.
    let ty: &'static EventType = Box::leak(Box::new(EventType::new(&INFO)));
    let reg = Arc::new(Registry::new());
    reg.register(ty);
    reg.apply(Settings::new(), true);
    let old = pack(EventKind::Duration, true, false, 0);
    assert_eq!(word(ty), old);

    let mut new_settings = Settings::new();
    new_settings
        .enable(NAME, true)
        .stack_trace(NAME, true)
        .threshold(NAME, Duration::from_millis(10));
    let new = pack(
        EventKind::Duration,
        true,
        true,
        duration_to_ticks(Duration::from_millis(10)),
    );

    let control = {
        let reg = reg.clone();
        thread::spawn(move || reg.apply(new_settings, true))
    };
    let committer = thread::spawn(move || [word(ty), word(ty)]);
    let seen = committer.join().unwrap();
    control.join().unwrap();

    for w in seen {
        assert!(
            w == old || w == new,
            "a commit saw a mixed settings word {:?} (old {:?}, new {:?})",
            unpack(w),
            unpack(old),
            unpack(new)
        );
    }
    assert!(
        !(seen[0] == new && seen[1] == old),
        "a commit saw the old settings after the new"
    );
    assert_eq!(word(ty), new, "the swap is visible after it returned");
}

#[test]
fn settings_swapped_while_committing() {
    model(BOUND, swap_while_committing);
}
