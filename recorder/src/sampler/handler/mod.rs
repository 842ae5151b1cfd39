//! Exactly the code that runs in the sampling signal's handler, and
//! nothing else: the entry point that finds the slot a signal names
//! ([`entry`]), the stack capture ([`capture`]), the sample it writes
//! ([`sample`]), the slots and queues it writes into ([`queue`], which also
//! holds the sampler thread's steps of the same protocol, so the protocol
//! reads in one file; they are atomics and a bounded spin, safe here too)
//! and ringing the sampler thread ([`doorbell`]).
//!
//! Invariant: nothing here allocates, frees, locks, blocks or touches a
//! lazily initialised thread-local; every function here is
//! async-signal-safe. Whatever prepares what the handler uses (unwind
//! tables, slots, the task directory) lives outside this folder, in
//! `super::unwind`, `super::slots` and `super::wake`. The test
//! `signal_handler_no_alloc` runs the handler on CPU-time timers with the C
//! allocator replaced and fails on any allocation inside it.

pub(crate) mod capture;
pub(crate) mod doorbell;
pub(crate) mod entry;
pub(crate) mod queue;
pub(crate) mod sample;
