//! Once a thread's buffer exists, committing an event allocates nothing
//! (instant and duration events, and stack-traced events whose stack was seen
//! before).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use recorder::{
    DefaultSettings, Event, EventKind, EventType, EventTypeInfo, FieldInfo, FieldKind, FieldValue,
    FieldWriter,
};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a const-initialised
// thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Sample<'a> {
    n: u64,
    name: &'a str,
    ratio: f64,
}

static INFO: EventTypeInfo = EventTypeInfo {
    name: "test.Sample",
    label: Some("Sample"),
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Duration,
    defaults: DefaultSettings {
        enabled: true,
        threshold: Duration::ZERO,
        stack_trace: false,
    },
    fields: &[
        FieldInfo::new("n", FieldKind::U64),
        FieldInfo::new("name", FieldKind::String),
        FieldInfo::new("ratio", FieldKind::F64),
    ],
};
static TYPE: EventType = EventType::new(&INFO);

impl Event for Sample<'_> {
    fn event_type() -> &'static EventType {
        &TYPE
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        self.n.write(w);
        self.name.write(w);
        self.ratio.write(w);
    }
}

#[inline(never)]
fn commit_some(n: u64) {
    for i in 0..n {
        Sample {
            n: i,
            name: "steady",
            ratio: 0.5,
        }
        .commit();
        let t = Sample::begin();
        t.commit(&Sample {
            n: i,
            name: "timed",
            ratio: 1.5,
        });
    }
}

#[test]
fn committing_allocates_nothing_once_the_buffer_exists() {
    let dir = std::env::temp_dir().join(format!("flightrec-noalloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec =
        recorder::Recording::start(recorder::RecordingConfig::new(dir.join("a.jfr"))).unwrap();
    commit_some(10); // attaches the thread, takes a buffer, registers the type
    let before = ALLOCS.with(Cell::get);
    commit_some(1000);
    let after = ALLOCS.with(Cell::get);
    assert_eq!(
        after - before,
        0,
        "commit path allocated {} times",
        after - before
    );
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0);
}
