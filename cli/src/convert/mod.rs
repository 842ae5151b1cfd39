//! Profile outputs other tools read: collapsed stacks (FlameGraph),
//! pprof (`go tool pprof`, Pyroscope) and Speedscope's JSON, all made from
//! one [`Profile`](crate::profile::Profile).

pub mod collapsed;
pub mod pprof;
pub mod speedscope;
