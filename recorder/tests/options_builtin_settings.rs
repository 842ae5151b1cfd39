//! What the recorder accepts for each built-in event type is what the
//! format crate's type table (`jfr_format::builtin`) gives the type: type
//! by type, setting by setting, through each public way in: the check
//! `Recording::start` and `Recording::set` run (`Settings::check_supported`),
//! `Recording::set` itself on a running recording, and a `.jfc` file read by
//! the `FLIGHTREC` parser (which skips what a type does not take, as the
//! JDK does). The values tried for the table's settings are the table's
//! defaults, so the defaults parse too.

use std::collections::BTreeSet;

use recorder::{Recording, RecordingConfig, SettingError, Settings, TypeSettings, options};

/// Every setting the recorder's settings know.
const SETTINGS: [&str; 5] = ["enabled", "threshold", "stackTrace", "throttle", "period"];

/// The built-in types written whenever they apply, or declared and never
/// written: they take no setting, although the table declares `enabled`
/// for them (as the JDK's metadata does).
const TAKE_NONE: [&str; 12] = [
    "jdk.CPUTimeSamplesLost",
    "jdk.ActiveSetting",
    "jdk.ActiveRecording",
    "jdk.DataLoss",
    "flightrec.EventsLost",
    "jdk.JavaExceptionThrow",
    "jdk.JavaMonitorWait",
    "jdk.ThreadSleep",
    "jdk.SocketRead",
    "jdk.SocketWrite",
    "jdk.FileRead",
    "jdk.FileWrite",
];

/// A value each setting parses, for the settings a type's table entry does
/// not give (so no default to try).
fn any_value(setting: &str) -> &'static str {
    match setting {
        "enabled" | "stackTrace" => "true",
        "threshold" => "5 ms",
        "throttle" => "10 ms",
        _ => "1 s",
    }
}

/// One built-in event type as the table gives it.
struct Expected {
    name: String,
    /// `(setting, default)` in the table's order.
    table: Vec<(String, String)>,
    /// The settings the recorder must take.
    takes: BTreeSet<String>,
}

impl Expected {
    /// The value to try for `setting`: the table's default, or any.
    fn value(&self, setting: &str) -> String {
        self.table
            .iter()
            .find(|(s, _)| s == setting)
            .map_or_else(|| any_value(setting).to_owned(), |(_, d)| d.clone())
    }
}

fn expected() -> Vec<Expected> {
    let all: Vec<Expected> = jfr_format::builtin::builtin_types()
        .into_iter()
        .filter(|t| t.is_event())
        .map(|t| {
            let table: Vec<(String, String)> = t
                .settings
                .iter()
                .map(|s| (s.name.to_string(), s.default_value.to_string()))
                .collect();
            let takes = if TAKE_NONE.contains(&&*t.name) {
                BTreeSet::new()
            } else {
                table.iter().map(|(s, _)| s.clone()).collect()
            };
            Expected {
                name: t.name.to_string(),
                table,
                takes,
            }
        })
        .collect();
    for name in TAKE_NONE {
        assert!(
            all.iter().any(|e| e.name == name),
            "{name} is no built-in type any more"
        );
    }
    let taking = all.iter().filter(|e| !e.takes.is_empty()).count();
    assert!(taking >= 30, "only {taking} built-in types take settings");
    all
}

/// What `Settings::check_supported` says of `event#setting=value` alone.
fn checked(event: &str, setting: &str, value: &str) -> Result<(), SettingError> {
    let mut s = Settings::new();
    s.set(event, setting, value)
        .unwrap_or_else(|e| panic!("{event}#{setting}={value} does not parse: {e}"));
    s.check_supported()
}

/// True if `t` gives `setting`.
fn gives(t: &TypeSettings, setting: &str) -> bool {
    match setting {
        "enabled" => t.enabled.is_some(),
        "threshold" => t.threshold.is_some(),
        "stackTrace" => t.stack_trace.is_some(),
        "throttle" => t.throttle.is_some(),
        "period" => t.period.is_some(),
        other => panic!("unknown setting {other}"),
    }
}

#[test]
fn each_builtin_type_takes_exactly_the_settings_of_its_table_entry() {
    let mut accepted = 0;
    let mut refused = 0;
    for e in expected() {
        for setting in SETTINGS {
            let value = e.value(setting);
            let r = checked(&e.name, setting, &value);
            if e.takes.contains(setting) {
                r.unwrap_or_else(|err| panic!("{}#{setting}={value} refused: {err}", e.name));
                accepted += 1;
            } else {
                match r {
                    Err(SettingError::Unsupported {
                        event, setting: s, ..
                    }) => assert_eq!((event.as_str(), s.as_str()), (&*e.name, setting)),
                    other => panic!(
                        "{}#{setting}={value}: {other:?}, but the table does not give it",
                        e.name
                    ),
                }
                refused += 1;
            }
        }
    }
    eprintln!("{accepted} settings accepted, {refused} refused");
    assert!(
        accepted >= 60 && refused >= 100,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn settings_the_table_does_not_give_are_refused() {
    // Negative controls, each a setting the table does not list for the
    // type (and a type the table lists no setting flightrec honours for).
    for (event, setting, value) in [
        ("jdk.JavaMonitorEnter", "throttle", "10 ms"),
        ("jdk.ThreadCPULoad", "threshold", "1 ms"),
        ("jdk.MethodTiming", "period", "endChunk"),
        ("jdk.ThreadStart", "period", "1 s"),
        ("jdk.ActiveSetting", "enabled", "false"),
        ("jdk.SocketRead", "threshold", "20 ms"),
        ("com.example.NotBuiltIn", "throttle", "10 ms"),
    ] {
        assert!(
            matches!(
                checked(event, setting, value),
                Err(SettingError::Unsupported { .. })
            ),
            "{event}#{setting} accepted"
        );
    }
    // Controls the other way: what the table gives, and a type of the
    // program's, are taken.
    checked("jdk.JavaMonitorEnter", "threshold", "5 ms").unwrap();
    checked("jdk.ThreadCPULoad", "period", "1 s").unwrap();
    checked("com.example.NotBuiltIn", "enabled", "true").unwrap();
    // A value check beyond the table: CPU-time samples carry a stack.
    assert!(checked("jdk.CPUTimeSample", "stackTrace", "false").is_err());
}

#[test]
fn a_jfc_file_keeps_exactly_the_settings_of_the_table() {
    let all = expected();
    let mut jfc = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration version=\"2.0\">\n",
    );
    for e in &all {
        jfc.push_str(&format!("  <event name=\"{}\">\n", e.name));
        for setting in SETTINGS {
            jfc.push_str(&format!(
                "    <setting name=\"{setting}\">{}</setting>\n",
                e.value(setting)
            ));
        }
        jfc.push_str("  </event>\n");
    }
    jfc.push_str("</configuration>\n");
    let dir = flightrec_testkit::temp_dir("builtin-settings-jfc");
    let path = dir.join("every.jfc");
    std::fs::write(&path, jfc).unwrap();
    let o = options::parse(&format!("settings={}", path.display())).unwrap();
    for e in &all {
        let got = o.settings.get(&e.name).cloned().unwrap_or_default();
        for setting in SETTINGS {
            assert_eq!(
                gives(&got, setting),
                e.takes.contains(setting),
                "{}#{setting} in a .jfc file",
                e.name
            );
        }
        // What was kept is the table's default, parsed as `set` parses it.
        let mut want = Settings::new();
        for setting in &e.takes {
            want.set(&e.name, setting, &e.value(setting)).unwrap();
        }
        assert_eq!(
            got,
            want.get(&e.name).cloned().unwrap_or_default(),
            "{}",
            e.name
        );
    }
    o.settings.check_supported().unwrap();
}

#[test]
fn a_running_recording_takes_exactly_the_settings_of_the_table() {
    let dir = flightrec_testkit::temp_dir("builtin-settings-set");
    let rec = Recording::start(RecordingConfig::new(dir.join("set.jfr")).disk(false)).unwrap();
    for e in expected() {
        for setting in SETTINGS {
            let value = e.value(setting);
            let r = rec.set(&e.name, setting, &value);
            assert_eq!(
                r.is_ok(),
                e.takes.contains(setting),
                "Recording::set({}, {setting}, {value}): {r:?}",
                e.name
            );
        }
    }
    rec.stop().unwrap();
}
