//! Sampled allocation and leak profiling: a global-allocator wrapper,
//! [`SamplingAllocator`], that samples allocations by bytes and writes
//! `jdk.ObjectAllocationSample`, `jdk.ThreadAllocationStatistics` and, at
//! the end of every chunk, `jdk.OldObjectSample` for the sampled
//! allocations not freed yet.
//!
//! # Sampling
//!
//! The sampling points are a Poisson process over the bytes each thread
//! allocates: a thread-local countdown is armed with an exponential draw of
//! mean `M` bytes (a per-thread xorshift generator, seeded without
//! allocating), every allocation subtracts its size, and the allocation
//! that takes it below zero is a sample; the countdown is then armed
//! again with a fresh draw (the process is memoryless, so the next point
//! after the end of the sampled block is again exponential). An allocation
//! of `s` bytes is therefore sampled with probability `p = 1 - exp(-s/M)`,
//! and its sample carries the weight `s / p`: summed over the samples of a
//! site (a class, a thread, a stack), the weights are an unbiased estimate
//! of the bytes that site allocated, for small and large blocks alike
//! (pprof's and tcmalloc's estimator; HotSpot gives the bytes since the
//! previous sample, which is unbiased per thread but not per site). A block
//! much smaller than `M` weighs about `M + s/2`.
//!
//! `M` comes from `jdk.ObjectAllocationSample#throttle`:
//!
//! * a rate (`150/s`, the JDK's default, or `10 ms`, one per 10 ms): the
//!   allocation thread estimates the process's allocation rate from the
//!   weights of the last quarter second and sets `M` to rate / throttle
//!   (between 4 KiB and 1 GiB, at most ×8 per step), so the events come at
//!   about the throttle's rate; each thread picks up a new `M` at its next
//!   sample;
//! * `off`: `M` is the wrapper's own interval, 512 KiB unless given with
//!   [`SamplingAllocator::with_mean_interval`].
//!
//! # Cost
//!
//! While no recording asks for allocation samples, old object samples
//! or allocation statistics, an allocation costs one relaxed load of a
//! process-wide word and a branch, and nothing is counted. While one does,
//! an allocation that is not sampled costs that, then a subtraction from a
//! thread-local and a branch on its sign (no read-modify-write atomic, no
//! lock, no lazily initialised thread-local). A free costs one relaxed load
//! while no sampled block is tracked; while some are, a look at its
//! bucket's occupancy count, and at the bucket's cache line of the leak
//! table (`live`) only if that is not 0 (out of line). It touches no
//! thread-local. A `realloc` makes the free's check, then the allocation's.
//! Each check comes before the inner allocator's call.
//!
//! # Names
//!
//! A sample's `objectClass` is its size class, `[u8; 513..=1024]` (powers
//! of two), or the Rust type given by [`with_type`] / [`boxed`]
//! (`std::any::type_name`, so `alloc::vec::Vec<u8>` or `my_app::Order`).
//! The stack starts at the function that asked for the memory: frames of
//! the allocation machinery (`alloc::`, `core::`, `std::`, `hashbrown::`,
//! `__rust_alloc`, the wrapper) above it are cut, so `jfr view
//! allocation-by-site` names that function.
//!
//! Invariant: the wrapper returns exactly what the inner allocator returns;
//! a sampled path never blocks, and every sample either reaches the queue
//! or is counted as lost.

mod allocator;
mod control;
mod emit;
mod live;
mod plug;
mod queue;
mod record;
mod sampler;
mod shared;
#[cfg(test)]
mod tests;
mod threads;

pub use allocator::{DEFAULT_MEAN_INTERVAL, SamplingAllocator, boxed, with_type};
pub use control::thread_allocated_bytes;
pub(crate) use plug::Allocations;
