//! Start-up options from the `FLIGHTREC` environment variable, in the
//! grammar of the JDK's `-XX:StartFlightRecording`.
//!
//! ```text
//! FLIGHTREC='filename=app.jfr,duration=5m,settings=profile,com.example.Request#threshold=1ms'
//! ```
//!
//! [`parse`] turns such a string into [`StartOptions`] (reading any settings
//! file it names); [`from_env`] does so for `$FLIGHTREC`. Starting the
//! recording from them is the caller's job.
//!
//! # Grammar
//!
//! ```text
//! options    = [ item { "," item } ]
//! item       = blank | option              blank items (`a=1,,b=2`, a trailing `,`) are skipped;
//!                                          a string of only blank items (`,,,`) is an error
//! option     = key "=" value               blanks around key and value are trimmed
//! key        = start-key | event-key       keys are case-sensitive
//! event-key  = [ "+" ] EVENT "#" SETTING   the JDK's `+` is accepted and changes nothing
//! value      = any text without ","        so paths cannot contain `,`
//! ```
//!
//! | key              | value                         | |
//! |------------------|-------------------------------|-|
//! | `filename`       | PATH                          | the `.jfr` written at stop or exit; `%p` pid, `%t` start time |
//! | `duration`       | TIME                          | stop after; `0` = no limit |
//! | `delay`          | TIME                          | start after; `0` = at once |
//! | `name`           | TEXT                          | the recording's name |
//! | `settings`       | `default`, `profile`, `none` or PATH | may repeat; see below |
//! | `disk`           | BOOL                          | `false`: keep chunks in memory only |
//! | `dumponexit`     | BOOL                          | `false`: do not write `filename` at exit |
//! | `maxage`         | TIME                          | repository retention; `0` = no limit |
//! | `maxsize`        | SIZE                          | repository retention; `0` = no limit |
//! | `maxchunksize`   | SIZE                          | rotate at, at least `64k` (flightrec-specific) |
//! | `maxchunkage`    | TIME                          | rotate after (flightrec-specific) |
//! | `flush-interval` | TIME                          | write buffered events this often (10 ms ..= 1 h) |
//! | `repository`     | DIR                           | where chunks are kept |
//! | `preserve-repository` | BOOL                     | keep the chunks after the file is written |
//! | `signal`         | SIGNAL                        | the sampling signal (`SIGPROF`, `SIGRTMIN+3`, a number) |
//! | `sample-own-threads` | BOOL                      | sample flightrec's own `flightrec-*` threads too (default `false`) |
//! | `method-timing`  | FILTER                        | JEP 520: time the instrumented functions it selects (joined with `jdk.MethodTiming#filter`) |
//! | `method-trace`   | FILTER                        | JEP 520: trace them (joined with `jdk.MethodTrace#filter`) |
//! | `attach`         | `true`, `false` or `lazy`     | answer `jcmd` on the attach socket, from the start or (`lazy`) from the first `jcmd`'s SIGQUIT (default `false`; see `crate::attach`) |
//! | `pyroscope`, `pyroscope.app`, `pyroscope.period`, `pyroscope.auth-env` | see `pyroscope.rs` | push to Grafana Pyroscope (feature `pyroscope`); the commas inside `pyroscope.app=NAME{k=v,...}` do not end it |
//! | EVENT`#`SETTING  | per setting, below            | may repeat; later wins |
//!
//! * TIME: digits, optional blanks, a unit `ns`, `us`, `ms`, `s`, `m`/`min`,
//!   `h` or `d` (`10ms`, `20 ms`, `5m`, `1d`); a bare `0` needs none.
//! * SIZE: digits, optional blanks, optionally `k`, `m` or `g` in either case
//!   for KiB, MiB, GiB (`1048576`, `512k`, `100M`, `1g`).
//! * BOOL: `true` or `false`.
//! * EVENT is a dotted identifier (`com.example.Request`). SETTING and its
//!   value: `enabled` and `stackTrace` BOOL, `threshold` TIME, `throttle` a
//!   rate `N/unit` (`500/s`, `10/ms`), a TIME (`10ms`) or `off`, `period` a
//!   TIME or `everyChunk`, `beginChunk`, `endChunk`, `filter` (of
//!   `jdk.MethodTiming` and `jdk.MethodTrace`) a FILTER.
//! * FILTER: `;`-separated parts, each `krate::module::function`,
//!   `krate::module::Type::method`, `krate::module::Type`, `::name` or
//!   `@tag` (see `recorder::timing`); a malformed part fails the start,
//!   naming it. Filters given in several places are joined.
//!
//! `FLIGHTREC` is ignored, with one line on stderr, in a process the
//! kernel started in secure mode (`AT_SECURE`: setuid or setgid).
//!
//! Each start key may be given once; `settings` and event settings may
//! repeat.
//!
//! # Settings
//!
//! The settings of the recording are built in two layers:
//!
//! 1. the sets named by `settings=`, in order, each laid over the previous
//!    one (later wins per event setting), or the built-in `default` when
//!    there is none. `default` and `profile` are data files,
//!    `recorder/settings/{default,profile}.settings`, which say what they
//!    set and why: `default` leaves `jdk.CPUTimeSample` disabled with a
//!    `20ms` throttle; `profile` enables it, with stack traces, at `10ms`.
//!    `none` is empty: every event type keeps its declared defaults.
//! 2. every `EVENT#SETTING=VALUE`, in the order written, wherever it is
//!    written relative to `settings=`; later wins.
//!
//! A settings file is read in flightrec's line format (one
//! `event#setting=value` per line, `#` comments; see `source.rs`) or, when
//! its first non-blank character is `<`, as a JDK `.jfc` file (see
//! `jfc.rs`: `<event>`/`<setting>` elements are read, `<control>` is not,
//! settings flightrec does not know are skipped).
//!
//! # Errors
//!
//! [`OptionError`] names the first bad option, as written, and says why;
//! its `Display` starts with `FLIGHTREC: `. Nothing here panics on any
//! input.

mod error;
mod jfc;
mod pyroscope;
mod source;
mod start;
mod value;

pub use error::OptionError;
pub use start::{ENV_VAR, StartOptions, from_env, parse};
