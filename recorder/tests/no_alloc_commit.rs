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

/// The same event with a stack trace on every commit.
struct Traced(u64);

static TRACED_INFO: EventTypeInfo = EventTypeInfo {
    name: "test.Traced",
    label: Some("Traced"),
    description: None,
    category: &[],
    experimental: false,
    kind: EventKind::Instant,
    defaults: DefaultSettings {
        enabled: true,
        threshold: Duration::ZERO,
        stack_trace: true,
    },
    fields: &[FieldInfo::new("n", FieldKind::U64)],
};
static TRACED: EventType = EventType::new(&TRACED_INFO);

impl Event for Traced {
    fn event_type() -> &'static EventType {
        &TRACED
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        self.0.write(w);
    }
}

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
        // One call site: the same stack every time, interned by the first
        // round.
        Traced(i).commit();
    }
}

#[test]
fn committing_allocates_nothing_once_the_buffer_exists() {
    let dir = std::env::temp_dir().join(format!("flightrec-noalloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = recorder::RecordingConfig::new(dir.join("a.jfr")).max_stack_depth(2);
    let rec = recorder::Recording::start(config).unwrap();
    // The first round attaches the thread, registers the types, interns the
    // traced event's stack and fills a dozen blocks; the flush drains them
    // back to the pool, so later rounds' block changes take pooled blocks
    // (the pool allocates a block only when it grows). The later rounds
    // together fill a fifth as many: enough blocks stay free even if the
    // recorder thread returns none of theirs in the meantime (on a busy
    // machine it may not run at all: with a first round three times a
    // later one, 11 of 40 runs beside four busy processes grew the pool by
    // a block in the third round). The compiler calls `commit_some` from a
    // separate instruction in each round, so stacks are captured two frames
    // deep (inside `commit_some`), where every round's are the same.
    let rounds = [10_000, 1000, 1000];
    let mut allocs = Vec::with_capacity(rounds.len());
    for (round, n) in rounds.into_iter().enumerate() {
        if round == 1 {
            rec.flush().unwrap();
        }
        let before = ALLOCS.with(Cell::get);
        commit_some(n);
        allocs.push(ALLOCS.with(Cell::get) - before);
    }
    assert!(
        allocs[0] > 0,
        "the first round allocates (a buffer, at least)"
    );
    assert_eq!(
        allocs[1..],
        [0, 0],
        "commit path allocated {:?} times",
        allocs
    );
    let summary = rec.stop().unwrap();
    assert_eq!(summary.losses.total_events(), 0);
}
