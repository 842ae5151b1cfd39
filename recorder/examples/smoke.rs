//! Quick manual check of the write path.
use recorder::*;

struct Req<'a> {
    path: &'a str,
    status: u16,
}

static INFO: EventTypeInfo = EventTypeInfo {
    name: "com.example.Request",
    label: Some("Request"),
    description: None,
    category: &["Example"],
    experimental: false,
    kind: EventKind::Duration,
    defaults: DefaultSettings {
        enabled: true,
        threshold: std::time::Duration::ZERO,
        stack_trace: true,
    },
    fields: &[
        FieldInfo::new("path", FieldKind::String),
        FieldInfo::new("status", FieldKind::U16),
    ],
};
static TYPE: EventType = EventType::new(&INFO);

impl Event for Req<'_> {
    fn event_type() -> &'static EventType {
        &TYPE
    }
    fn write_fields(&self, w: &mut FieldWriter<'_>) {
        self.path.write(w);
        self.status.write(w);
    }
}

#[inline(never)]
fn handle(i: u32) {
    let t = Req::begin();
    std::hint::black_box(i * 3);
    t.commit(&Req {
        path: "/index",
        status: 200,
    });
}

fn main() {
    let out = std::env::args().nth(1).unwrap();
    let rec = Recording::start(RecordingConfig::new(&out)).unwrap();
    let hs: Vec<_> = (0..4)
        .map(|t| {
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn(move || {
                    for i in 0..1000 {
                        handle(i)
                    }
                })
                .unwrap()
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    rec.rotate().unwrap();
    handle(1);
    let s = rec.stop().unwrap();
    println!("{s:?}");
}
