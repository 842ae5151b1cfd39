//! Constant pools: threads, stack traces, and the class/method model.

pub(crate) mod methods;
pub(crate) mod stacks;
pub(crate) mod threads;
