//! The `flightrec` command's library: reading any JFR recording one chunk
//! at a time, and what the command makes of it.
//!
//! * [`recording`]: opening a file (regular files only) and walking its
//!   chunks in bounded memory.
//! * [`summary`], [`print`](mod@print), [`metadata`], [`view`]: the facts `jfr` shows,
//!   computed the JDK's way.
//! * [`stacks`], [`profile`]: frames named as the JDK names them, folded
//!   into weighted stacks per kind of profile.
//! * [`flame`], [`convert`]: flame graphs, pprof, collapsed stacks,
//!   Speedscope.
//! * [`report`]: one HTML page to look at a recording (heatmap, flame
//!   graph, thread lanes, findings, event browser).
//! * [`assemble`]: the library's crash recovery of a repository.
//! * [`jcmd`]: a client of the attach protocol (flightrec processes and
//!   JVMs).
//! * [`record`]: running a program with `libflightrec.so` preloaded
//!   ([`elf`]: whether it can be; [`verdict`]: what its recorder reported).

pub mod assemble;
pub mod convert;
pub mod elf;
pub mod error;
pub mod flame;
pub mod jcmd;
pub mod metadata;
pub mod print;
pub mod profile;
pub mod record;
pub mod recording;
pub mod report;
pub mod stacks;
pub mod summary;
pub mod time;
pub mod verdict;
pub mod view;
