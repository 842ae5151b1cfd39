//! Threads that reach a new callsite together are all recorded.
//!
//! `tracing` registers a callsite once; a thread that finds another
//! thread registering it asks the filter straight away. The site's
//! "records now" answer must therefore be right from the moment the site
//! exists, not only after the registering thread has evaluated it: each
//! callsite below is hit for the first time by four threads released by
//! one barrier, and every span and event must be in the file.

use std::sync::{Arc, Barrier};

use recorder::{Recording, RecordingConfig};
use tracing_subscriber::prelude::*;

const THREADS: usize = 4;

macro_rules! sites {
    ($($name:ident)*) => {
        /// One span and one event callsite per name, each its own type.
        const SITES: &[(&str, fn())] = &[$((stringify!($name), {
            fn hit() {
                let _s = tracing::info_span!(target: "race", stringify!($name), n = 1u64).entered();
                tracing::info!(target: "race", n = 2u64, "{}", stringify!($name));
            }
            hit
        })),*];
    };
}

sites!(s00 s01 s02 s03 s04 s05 s06 s07 s08 s09 s10 s11 s12 s13 s14 s15
       s16 s17 s18 s19 s20 s21 s22 s23 s24 s25 s26 s27 s28 s29 s30 s31
       s32 s33 s34 s35 s36 s37 s38 s39 s40 s41 s42 s43 s44 s45 s46 s47
       s48 s49 s50 s51 s52 s53 s54 s55 s56 s57 s58 s59 s60 s61 s62 s63);

#[test]
fn threads_racing_on_a_new_callsite_are_all_recorded() {
    tracing_subscriber::registry()
        .with(flightrec_tracing::layer())
        .init();
    let dir = flightrec_testkit::temp_dir("tracing_first_use");
    let out = dir.join("race.jfr");
    let rec = Recording::start(RecordingConfig::new(&out)).expect("start");
    for (_, hit) in SITES {
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let hit = *hit;
                std::thread::spawn(move || {
                    barrier.wait();
                    hit();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
    rec.stop().expect("stop");

    let types = flightrec_tracing::callsite_types();
    assert_eq!(types.len(), 2 * SITES.len(), "{types:?}");
    let counts = flightrec_testkit::summary(&out).counts;
    let mut short = Vec::new();
    for t in &types {
        let n = counts.get(t.type_name).copied().unwrap_or(0);
        if n != THREADS as u64 {
            short.push(format!("{}: {n}", t.type_name));
        }
    }
    assert!(
        short.is_empty(),
        "callsites with other than {THREADS} events: {short:?}"
    );
}
