//! Constant pools: threads, stack traces, the class/method model, and the
//! synthetic classes known only by name.

pub(crate) mod keys;
pub(crate) mod methods;
pub(crate) mod named_classes;
pub(crate) mod stacks;
pub(crate) mod threads;
