//! Speedscope's file format (`https://www.speedscope.app/file-format-schema.json`):
//! one shared frame table and one "sampled" profile whose samples are
//! stacks of frame indices, root first, each with its weight.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use serde_json::json;

use crate::profile::Profile;

/// Writes `profile` as a Speedscope JSON document named `name`.
pub fn write(
    profile: &Profile,
    threads: bool,
    name: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut index: HashMap<Arc<str>, usize> = HashMap::new();
    let mut frames = Vec::new();
    let mut samples = Vec::new();
    let mut weights = Vec::new();
    for (stack, w) in profile.sorted(threads) {
        let ids: Vec<usize> = stack
            .iter()
            .map(|f| {
                *index.entry(f.clone()).or_insert_with(|| {
                    frames.push(json!({ "name": &**f }));
                    frames.len() - 1
                })
            })
            .collect();
        samples.push(ids);
        weights.push(w);
    }
    let unit = match profile.kind.map(|k| k.unit().1) {
        Some("bytes") => "bytes",
        Some("nanoseconds") => "nanoseconds",
        _ => "none",
    };
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": [{
            "type": "sampled",
            "name": name,
            "unit": unit,
            "startValue": 0,
            "endValue": profile.total,
            "samples": samples,
            "weights": weights,
        }],
        "name": name,
        "exporter": concat!("flightrec ", env!("CARGO_PKG_VERSION")),
    });
    serde_json::to_writer(&mut *out, &doc)?;
    out.write_all(b"\n")
}
