//! How often the periodic thread looks: the polls of the thread list
//! while threads come and go and when all is quiet, the slack a wait may
//! overrun, and the shortest period honoured.

use std::time::Duration;

/// Time between two polls of the thread list while threads come and go:
/// how late a thread start or end is seen then.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// Time between two polls once no thread started or ended for
/// [`QUIET_AFTER`] (a multiple of [`POLL`], on the same grid, and a divisor
/// of the JDK's `1 s` periods). Each round is a wake and a few system
/// calls; on a loaded 2-core VM a wake costs the thread 30-60 µs of CPU
/// however little it does, so at 100 ms the wakes alone were 0.05-0.06 %
/// of a core with 200 threads, most of the periodic thread's cost.
pub(crate) const QUIET_POLL: Duration = Duration::from_millis(200);

/// How long the thread list must stay unchanged before polls slow down.
pub(crate) const QUIET_AFTER: Duration = Duration::from_secs(1);

/// A task due this soon after a wake runs in it (module docs).
pub(crate) const SLACK: Duration = Duration::from_millis(2);

/// The shortest interval honoured (shorter ones are clamped to it).
pub const MIN_PERIOD: Duration = Duration::from_millis(1);
