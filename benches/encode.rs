//! Encoding one event record with [`EventEncoder`] into a reused buffer: the
//! recorder's hot path. One iteration encodes one event, so criterion's time
//! is ns/event, and its throughput (set to the record length) is bytes/s.
//!
//! * `encode_event/3_fields`: `startTime`, `eventThread`, `stackTrace`, the
//!   shape of a CPU sample;
//! * `encode_event/10_fields`: a duration event with a thread and a stack
//!   trace plus `int`, `long`, `float`, `double`, `boolean` and a short
//!   string.
//!
//! Run with `cargo bench --bench encode`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_main};
use flightrec::jfr_format::write::encode::Sink;
use flightrec::jfr_format::{EventEncoder, TypeId};

const EVENT: TypeId = TypeId(1000);

/// The values of the 10-field event.
struct Request {
    start: i64,
    duration: i64,
    thread: u64,
    stack_trace: u64,
    status: i32,
    bytes: i64,
    load: f32,
    ratio: f64,
    cached: bool,
    path: &'static str,
}

fn encode_3(buf: &mut [u8], start: i64, thread: u64, stack_trace: u64) -> usize {
    let mut e = EventEncoder::begin(buf, EVENT);
    e.put_i64(start);
    e.put_varint(thread);
    e.put_varint(stack_trace);
    e.finish().expect("fits")
}

fn encode_10(buf: &mut [u8], r: &Request) -> usize {
    let mut e = EventEncoder::begin(buf, EVENT);
    e.put_i64(r.start);
    e.put_i64(r.duration);
    e.put_varint(r.thread);
    e.put_varint(r.stack_trace);
    e.put_i32(r.status);
    e.put_i64(r.bytes);
    e.put_f32(r.load);
    e.put_f64(r.ratio);
    e.put_bool(r.cached);
    e.put_str(r.path);
    e.finish().expect("fits")
}

fn encode_event(c: &mut Criterion) {
    let mut buf = vec![0u8; 4096];
    let mut group = c.benchmark_group("encode_event");

    // Realistic magnitudes: ticks of a ns clock a few hours after boot,
    // small pool keys, a stack-trace key from a hash table.
    let (start, thread, trace) = (12_345_678_901_234i64, 17u64, 0x2f_4a1cu64);
    let len = encode_3(&mut buf, start, thread, trace);
    group.throughput(Throughput::Bytes(len as u64));
    group.bench_function("3_fields", |b| {
        b.iter(|| {
            encode_3(
                black_box(&mut buf),
                black_box(start),
                black_box(thread),
                black_box(trace),
            )
        })
    });

    let request = Request {
        start,
        duration: 48_213,
        thread,
        stack_trace: trace,
        status: 200,
        bytes: 18_432,
        load: 0.37,
        ratio: 0.125,
        cached: true,
        path: "/api/v1/items",
    };
    let len = encode_10(&mut buf, &request);
    group.throughput(Throughput::Bytes(len as u64));
    group.bench_function("10_fields", |b| {
        b.iter(|| encode_10(black_box(&mut buf), black_box(&request)))
    });
    group.finish();
}

/// `criterion_group!` generates an undocumented `pub fn`; it lives here.
mod group {
    #![allow(missing_docs, unreachable_pub)]
    criterion::criterion_group!(benches, super::encode_event);
}

criterion_main!(group::benches);
