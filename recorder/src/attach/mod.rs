//! Control by the JDK's own `jcmd`: the HotSpot attach protocol, listener
//! side.
//!
//! ```text
//! FLIGHTREC='settings=default,disk=false,maxage=5m,attach=true' ./service &
//! jcmd <pid> JFR.check
//! jcmd <pid> JFR.dump filename=/tmp/last-5-minutes.jfr
//! ```
//!
//! Enabled by `attach=true` in `FLIGHTREC`, [`RecordingConfig::attach`]
//! or [`listen`], or lazily by `attach=lazy` (see *SIGQUIT* below); off by
//! default. `jcmd` finds no JVM in the process and
//! needs none: it only speaks this protocol.
//!
//! # Socket
//!
//! A Unix stream socket at `/tmp/.java_pid<pid>` (`<pid>` as the process
//! sees itself; `jcmd` looks in `/proc/<pid>/root/tmp/`). It is bound under
//! a temporary name, set to `0600` and owned by the effective uid/gid, then
//! renamed into place (replacing a stale one). `jcmd` refuses a socket with
//! group or other bits. An `atexit` handler removes it when the process
//! that made it exits (not in a forked child).
//!
//! # Discovery
//!
//! `jcmd` with no arguments lists the processes that publish
//! `/tmp/hsperfdata_<user>/<pid>`; a listening flightrec process (or one
//! waiting for SIGQUIT) writes such a file, a minimal HotSpot
//! performance-data buffer naming its command line, and removes it at exit
//! (see `perfdata.rs`).
//!
//! # Peers
//!
//! Each connection's `SO_PEERCRED` must carry the process's effective uid
//! and gid, or uid 0, as HotSpot requires; other peers are closed without
//! a reply (the first refusal is named on stderr, the rest only counted).
//!
//! Invariant: the listener thread only ever blocks in `poll` (until the
//! nearest deadline), answering one whole request, or writing its reply
//! with a timeout, so it answers the next `jcmd` whatever other clients
//! do.
//!
//! # Commands
//!
//! `JFR.start`, `JFR.check`, `JFR.dump`, `JFR.stop`, `JFR.configure`,
//! `help`, `VM.version` and `VM.uptime`, with the JDK's arguments and
//! output (see `jfr.rs`). One recording runs at a time: a `JFR.start`
//! while one runs is refused, naming it.
//!
//! # SIGQUIT
//!
//! When the socket is missing, `jcmd` creates `.attach_pid<pid>` and sends
//! SIGQUIT for the JVM to start its listener; JDK 25's client only sends
//! it to a process that catches SIGQUIT, JDK 17's sends it unconditionally,
//! and SIGQUIT's default action ends the process with a core dump. With
//! `attach=true` the socket exists from the start, so neither sends it.
//! With `attach=lazy` ([`listen_on_sigquit`], opt-in because it changes
//! what SIGQUIT does) flightrec catches SIGQUIT and starts the listener
//! when `jcmd` asks; a SIGQUIT without the trigger file goes to the
//! handler installed before, or is noted on stderr (see `sigquit.rs`).
//! Otherwise flightrec does not handle SIGQUIT: do not point JDK 17's
//! `jcmd` at a process that has no listener.
//!
//! [`RecordingConfig::attach`]: crate::RecordingConfig::attach

pub(crate) mod control;
mod dcmd;
mod jfr;
mod listener;
mod perfdata;
mod plug;
mod protocol;
mod sigquit;
mod start;

pub use listener::{listen, socket_path};
pub(crate) use plug::Jcmd;
pub use sigquit::listen_on_sigquit;
pub(crate) use start::start;
