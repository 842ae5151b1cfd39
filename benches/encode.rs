//! Placeholder replaced by the encode bench.
fn main() {}
