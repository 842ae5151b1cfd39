//! Shared by the models: the loom runner with the suite's preemption bound,
//! negative-control plumbing, chunk bookkeeping, and one writer racing one
//! rotation.
// Each model uses part of it.
#![allow(dead_code, unreachable_pub, unused_imports)]

mod chunks;
mod race;
mod runner;

pub use chunks::*;
pub use race::*;
pub use runner::*;
