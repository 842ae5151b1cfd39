//! A program that knows nothing about recordings: it only declares and
//! commits events. Run it with `FLIGHTREC` set and a recording starts before
//! `main` and is written when the program exits:
//!
//! ```text
//! FLIGHTREC='filename=/tmp/env.jfr,settings=profile' cargo run --release --example env_start -- 1000
//! jfr summary /tmp/env.jfr
//! ```

use flightrec::Event;

#[derive(Event)]
#[event(name = "com.example.Work", label = "Work")]
struct Work {
    #[event(label = "Item")]
    item: u64,
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    for item in 0..n {
        Work { item }.commit();
    }
    println!("committed {n}");
}
