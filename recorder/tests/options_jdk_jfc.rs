//! The JDK 25's own `default.jfc` and `profile.jfc`, read through
//! `settings=PATH`: the `.jfc` reader copes with real files (controls,
//! comments, settings flightrec does not know) and keeps their values.

use std::time::Duration;

use recorder::options;
use recorder::settings::{Period, Throttle};

#[test]
fn jdk_settings_files_are_read() {
    let jdk = flightrec_testkit::jfr();
    let ms = Duration::from_millis;
    for (file, cpu_throttle, sample_period) in [
        (
            "default.jfc",
            Throttle::Rate {
                count: 500,
                per: Duration::from_secs(1),
            },
            ms(20),
        ),
        ("profile.jfc", Throttle::Interval(ms(10)), ms(10)),
    ] {
        let path = jdk.home().join("lib/jfr").join(file);
        assert!(
            path.is_file(),
            "{} is missing from the JDK 25 at {}",
            file,
            jdk.home().display()
        );
        let o = options::parse(&format!("settings={}", path.display()))
            .unwrap_or_else(|e| panic!("{e}"));
        let get = |event: &str| {
            o.settings
                .get(event)
                .cloned()
                .unwrap_or_else(|| panic!("{file}: no {event}"))
        };
        let cpu = get("jdk.CPUTimeSample");
        assert_eq!(cpu.enabled, Some(false), "{file}");
        assert_eq!(cpu.throttle, Some(cpu_throttle), "{file}");
        assert_eq!(cpu.stack_trace, Some(true), "{file}");
        let sample = get("jdk.ExecutionSample");
        assert_eq!(sample.enabled, Some(true), "{file}");
        assert_eq!(
            sample.period,
            Some(Period::Interval(sample_period)),
            "{file}"
        );
        // The JVM's periodic events' `period` is skipped (flightrec does
        // not emit them), so the file starts a recording without error.
        assert_eq!(
            o.settings
                .get("jdk.ClassLoadingStatistics")
                .and_then(|t| t.period),
            None,
            "{file}"
        );
        // Per-thread allocated bytes are written (by the sampling
        // allocator's statistics): their `period` is honoured.
        assert!(
            o.settings
                .get("jdk.ThreadAllocationStatistics")
                .and_then(|t| t.period)
                .is_some(),
            "{file}"
        );
        o.settings
            .check_supported()
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        // `cutoff` is skipped; the event's known settings are still read.
        assert!(get("jdk.OldObjectSample").enabled.is_some(), "{file}");
    }
}
