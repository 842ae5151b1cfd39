//! What the sampler is asked to do: which mode, how often, which signal.
//!
//! CPU-time sampling is on while the recording's settings say
//! `jdk.CPUTimeSample#enabled=true`; its rate is JEP 509's `throttle`,
//! either an interval of CPU time per thread (`10 ms`, the default) or a
//! total rate (`500/s`) spread over the CPUs, i.e. a per-thread interval of
//! `cpus / rate`. Wall-clock sampling is on while
//! `jdk.ExecutionSample#enabled=true`, every `period` (default 20 ms).

use std::time::Duration;

use crate::config::settings::{Period, Settings, Throttle, format_duration};

/// The event CPU-time samples are written as.
pub const CPU_EVENT: &str = "jdk.CPUTimeSample";
/// The event wall-clock samples are written as.
pub const WALL_EVENT: &str = "jdk.ExecutionSample";

/// Shortest per-thread interval used; faster settings are clamped to it.
pub const MIN_PERIOD: Duration = Duration::from_micros(100);

/// The CPU-time interval when `throttle` is not set.
pub const DEFAULT_THROTTLE: Duration = Duration::from_millis(10);

/// The wall-clock interval when `period` is not set.
pub const DEFAULT_WALL_PERIOD: Duration = Duration::from_millis(20);

/// The per-thread CPU-time interval `throttle` asks for with `cpus` CPUs.
/// `off` (no limit) samples at the default interval.
pub(crate) fn cpu_period(throttle: Throttle, cpus: usize) -> Duration {
    let d = match throttle {
        Throttle::Interval(d) => d,
        Throttle::Rate { count, per } if count > 0 => {
            let ns = per.as_nanos() * cpus.max(1) as u128 / count as u128;
            Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
        }
        Throttle::Rate { .. } | Throttle::Off => DEFAULT_THROTTLE,
    };
    d.max(MIN_PERIOD)
}

/// The textual form of a throttle, as `jdk.ActiveSetting` reports it.
pub(crate) fn throttle_text(throttle: Throttle) -> String {
    match throttle {
        Throttle::Off => "off".to_owned(),
        Throttle::Interval(d) => format_duration(d),
        Throttle::Rate { count, per } => {
            let unit = match per.as_nanos() {
                1 => "ns",
                1_000 => "us",
                1_000_000 => "ms",
                60_000_000_000 => "m",
                3_600_000_000_000 => "h",
                86_400_000_000_000 => "d",
                _ => "s",
            };
            format!("{count}/{unit}")
        }
    }
}

// === the sampling signal ===

/// Whether sampling may use `signal`: a real-time signal the C library
/// leaves to programs (`SIGRTMIN..=SIGRTMAX` as libc reports them at run
/// time: glibc reserves the first two or three for threads and
/// cancellation), or `SIGPROF`, `SIGVTALRM`, `SIGALRM`. Never a signal with
/// another meaning (`SIGSEGV`, `SIGKILL`, ...).
pub fn signal_allowed(signal: i32) -> bool {
    (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signal)
        || [libc::SIGPROF, libc::SIGVTALRM, libc::SIGALRM].contains(&signal)
}

/// The signals [`signal_allowed`] accepts, for messages.
pub(crate) fn allowed_signals() -> String {
    format!(
        "SIGPROF, SIGVTALRM, SIGALRM or a real-time signal SIGRTMIN..=SIGRTMAX ({}..={})",
        libc::SIGRTMIN(),
        libc::SIGRTMAX()
    )
}

/// Parses a sampling signal: `SIGPROF`, `SIGVTALRM`, `SIGALRM` (the `SIG`
/// prefix optional), `SIGRTMIN`, `SIGRTMIN+N`, `SIGRTMAX`, `SIGRTMAX-N`, or
/// a number; the result must pass [`signal_allowed`]. The error says why.
pub fn parse_signal(text: &str) -> Result<i32, String> {
    let t = text.trim();
    let name = t.strip_prefix("SIG").unwrap_or(t);
    let offset = |rest: &str, sign: char| -> Option<i32> {
        if rest.is_empty() {
            return Some(0);
        }
        let n = rest.strip_prefix(sign)?;
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || n.len() > 3 {
            return None;
        }
        n.parse().ok()
    };
    let signal = if let Some(rest) = name.strip_prefix("RTMIN") {
        offset(rest, '+').map(|n| libc::SIGRTMIN() + n)
    } else if let Some(rest) = name.strip_prefix("RTMAX") {
        offset(rest, '-').map(|n| libc::SIGRTMAX() - n)
    } else {
        match name {
            "PROF" => Some(libc::SIGPROF),
            "VTALRM" => Some(libc::SIGVTALRM),
            "ALRM" => Some(libc::SIGALRM),
            n if !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()) => {
                n.parse().ok()
            }
            _ => None,
        }
    };
    let Some(signal) = signal else {
        return Err(format!(
            "`{t}` is not a signal (expected e.g. SIGPROF, SIGRTMIN+3 or a number)"
        ));
    };
    if !signal_allowed(signal) {
        return Err(format!(
            "signal {signal} may not be used for sampling (allowed: {})",
            allowed_signals()
        ));
    }
    Ok(signal)
}

/// Everything the sampler thread acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SamplerConfig {
    /// CPU-time sampling, if enabled.
    pub(crate) cpu: Option<Throttle>,
    /// Wall-clock sampling interval, if enabled.
    pub(crate) wall: Option<Duration>,
    pub(crate) signal: i32,
    /// Sample flightrec's own threads too (see
    /// [`super::set_sample_own_threads`]).
    pub(crate) own_threads: bool,
}

impl SamplerConfig {
    /// The configuration the recording's settings ask for.
    pub(crate) fn from_settings(settings: &Settings, signal: i32) -> Self {
        let cpu = settings.get(CPU_EVENT).filter(|t| t.enabled == Some(true));
        let wall = settings.get(WALL_EVENT).filter(|t| t.enabled == Some(true));
        Self {
            cpu: cpu.map(|t| t.throttle.unwrap_or(Throttle::Interval(DEFAULT_THROTTLE))),
            wall: wall.map(|t| match t.period {
                Some(Period::Interval(d)) => d.max(MIN_PERIOD),
                _ => DEFAULT_WALL_PERIOD,
            }),
            signal,
            own_threads: false,
        }
    }

    /// True if any sampling is enabled.
    pub(crate) fn any(&self) -> bool {
        self.cpu.is_some() || self.wall.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::parse_throttle;

    #[test]
    fn throttles_become_per_thread_intervals() {
        let t = |s| parse_throttle("throttle", s).unwrap();
        assert_eq!(cpu_period(t("10ms"), 2), Duration::from_millis(10));
        assert_eq!(
            cpu_period(t("500/s"), 2),
            Duration::from_millis(4),
            "500/s over 2 CPUs is one sample per 4 ms of each thread"
        );
        assert_eq!(cpu_period(t("1 ns"), 2), MIN_PERIOD);
        assert_eq!(cpu_period(t("off"), 2), DEFAULT_THROTTLE);
        for text in ["500/s", "10 ms", "2/ms", "off"] {
            assert_eq!(throttle_text(t(text)), text);
        }
    }

    #[test]
    fn only_unreserved_real_time_and_timer_signals_are_accepted() {
        let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
        assert_eq!(parse_signal("SIGPROF"), Ok(libc::SIGPROF));
        assert_eq!(parse_signal("VTALRM"), Ok(libc::SIGVTALRM));
        assert_eq!(parse_signal("SIGALRM"), Ok(libc::SIGALRM));
        assert_eq!(parse_signal("SIGRTMIN"), Ok(min));
        assert_eq!(parse_signal("SIGRTMIN+3"), Ok(min + 3));
        assert_eq!(parse_signal("SIGRTMAX-1"), Ok(max - 1));
        assert_eq!(parse_signal(&(min + 1).to_string()), Ok(min + 1));
        // glibc's reserved 32 and 33 lie below SIGRTMIN.
        assert!(min > 33, "{min}");
        for bad in [
            32,
            33,
            libc::SIGSEGV,
            libc::SIGKILL,
            libc::SIGSTOP,
            0,
            max + 1,
        ] {
            let e = parse_signal(&bad.to_string()).unwrap_err();
            assert!(e.contains("may not be used for sampling"), "{bad}: {e}");
            assert!(!signal_allowed(bad), "{bad}");
        }
        for bad in [
            "SIGSEGV",
            "SIGRTMIN+",
            "SIGRTMIN-1",
            "SIGRTMAX+1",
            "",
            "x",
            "SIGRTMIN+1000",
        ] {
            assert!(parse_signal(bad).is_err(), "{bad}");
        }
        assert!(parse_signal(&format!("SIGRTMIN+{}", max - min + 1)).is_err());
    }

    #[test]
    fn settings_select_the_modes() {
        let mut s = Settings::new();
        assert!(!SamplerConfig::from_settings(&s, 27).any());
        s.set(CPU_EVENT, "enabled", "true").unwrap();
        s.set(CPU_EVENT, "throttle", "1ms").unwrap();
        let c = SamplerConfig::from_settings(&s, 27);
        assert_eq!(c.cpu, Some(Throttle::Interval(Duration::from_millis(1))));
        assert_eq!(c.wall, None);
        s.set(WALL_EVENT, "enabled", "true").unwrap();
        assert_eq!(
            SamplerConfig::from_settings(&s, 27).wall,
            Some(DEFAULT_WALL_PERIOD)
        );
    }
}
