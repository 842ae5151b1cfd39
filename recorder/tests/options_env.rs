//! `options::from_env` reads `$FLIGHTREC`. One test in its own process: it
//! changes the environment.

use std::path::Path;

use recorder::options::{self, ENV_VAR, OptionError};

#[test]
fn from_env_reads_flightrec() {
    let set = |value: Option<&str>| {
        // SAFETY: this is the only test of this binary, so no other thread
        // reads or writes the environment while it runs.
        unsafe {
            match value {
                Some(v) => std::env::set_var(ENV_VAR, v),
                None => std::env::remove_var(ENV_VAR),
            }
        }
    };
    assert_eq!(ENV_VAR, "FLIGHTREC");

    set(None);
    assert!(options::from_env().unwrap().is_none());
    set(Some(""));
    assert!(options::from_env().unwrap().is_none());

    set(Some(
        "filename=app.jfr,settings=profile,jdk.CPUTimeSample#enabled=false",
    ));
    let o = options::from_env().unwrap().expect("FLIGHTREC is set");
    assert_eq!(o.filename.as_deref(), Some(Path::new("app.jfr")));
    let cpu = o.settings.get("jdk.CPUTimeSample").unwrap();
    assert_eq!((cpu.enabled, cpu.stack_trace), (Some(false), Some(true)));

    set(Some("maxsize=12q"));
    let e = options::from_env().unwrap_err();
    assert!(matches!(e, OptionError::BadSize { .. }));
    assert_eq!(
        e.to_string(),
        "FLIGHTREC: option `maxsize=12q`: `12q` is not a size (expected e.g. 100M, 1g, 512k or \
         a byte count)"
    );
    set(None);
}
