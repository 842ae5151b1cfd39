//! `flightrec summary`: what `jfr summary` prints, to the byte: version,
//! chunk count, start, duration, and per event type the records and bytes,
//! most frequent first, names in order among equals.
//!
//! Only record frames and each chunk's metadata are read, never an event's
//! payload, so the cost is one pass over the file's record headers.

use std::collections::HashMap;
use std::io::Write;

use std::sync::Arc;

use crate::error::CliError;
use crate::recording::Recording;
use crate::time::Civil;

#[derive(Debug)]
struct Row {
    name: String,
    count: u64,
    bytes: u64,
}

/// Prints the summary of `rec` to `out`.
pub fn run(rec: &mut Recording, out: &mut dyn Write) -> Result<(), CliError> {
    let mut rows: HashMap<u64, Row> = HashMap::new();
    let row = |name: &str| Row {
        name: name.to_owned(),
        count: 0,
        bytes: 0,
    };
    rows.insert(0, row("jdk.Metadata"));
    rows.insert(1, row("jdk.Checkpoint"));
    let mut width = 0;
    let mut chunks = 0u64;
    let mut duration = 0i64;
    let mut first = None;
    let mut last_meta = None;
    rec.for_each_scan(|scan, _| {
        // The types of a metadata record the previous chunk shared are
        // known already.
        if last_meta
            .as_ref()
            .is_none_or(|m| !Arc::ptr_eq(m, &scan.metadata))
        {
            for class in scan.metadata.event_types() {
                rows.entry(class.id.0).or_insert_with(|| row(&class.name));
                width = width.max(class.name.chars().count());
            }
            last_meta = Some(scan.metadata.clone());
        }
        for (id, n) in &scan.records {
            let r = rows
                .entry(*id)
                .or_insert_with(|| row(&format!("{id} (missing event metadata)")));
            r.count += n.count;
            r.bytes += n.bytes;
        }
        duration = duration.wrapping_add(scan.header.duration_nanos);
        chunks += 1;
        first.get_or_insert(scan.header);
        Ok(())
    })?;
    let Some(first) = first else {
        return Ok(());
    };
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows.sort_by_key(|r| std::cmp::Reverse(r.count));

    let mut text = String::new();
    text.push('\n');
    text.push_str(&format!(" Version: {}.{}\n", first.major, first.minor));
    text.push_str(&format!(" Chunks: {chunks}\n"));
    text.push_str(&format!(
        " Start: {} (UTC)\n",
        Civil::at(first.start_nanos, 0).date_time()
    ));
    text.push_str(&format!(
        " Duration: {} s\n",
        duration.wrapping_add(500_000_000) / 1_000_000_000
    ));
    text.push('\n');
    let header = "      Count  Size (bytes) ";
    let type_header = " Event Type";
    let width = width.max(type_header.len());
    text.push_str(&format!("{type_header:<width$}{header}\n"));
    text.push_str(&"=".repeat(width + header.len()));
    text.push('\n');
    for r in &rows {
        text.push_str(&format!(
            " {:<width$}{:>10}  {:>12}\n",
            r.name, r.count, r.bytes
        ));
    }
    out.write_all(text.as_bytes())
        .map_err(|source| CliError::Output {
            path: "-".into(),
            source,
        })
}
