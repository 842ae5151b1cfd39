//! Readers besides the JDK's: every file a test checks must read the same
//! through each.
//!
//! * [`positional`](crate::positional): the events profilers convert, read
//!   in the JDK's field order as async-profiler's converter reads them,
//!   ending at their record's end, with `int` keys.
//! * [`jfrs_unresolved`]: the `jfrs` crate (a JFR reader for Rust written
//!   apart from flightrec), with every constant-pool reference of every
//!   event followed through the pools of its chunk.
//! * [`flightrec_unresolved`]: flightrec's own reader
//!   (`jfr_format::read::check_references`), which also follows the
//!   references between constants.
//!
//! A reference must resolve in its own chunk: the JDK shows an undefined
//! key as `N/A` without a word, other readers drop the event or fail. Key 0
//! is null (no stack trace, no parent), never unresolved.
//!
//! [`assert_readable`] runs the three and panics with what the first that
//! disagrees found.

use std::collections::HashSet;
use std::path::Path;

use jfrs::reader::JfrReader;
use jfrs::reader::event::Accessor;
use jfrs::reader::value_descriptor::ValueDescriptor;

/// Unresolved references one reader found in a file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// How many (each reference of each event counted once per event; a
    /// constant's references once per chunk).
    pub count: u64,
    /// The first, as `java.lang.Thread id 2 (used by jdk.ThreadEnd)`.
    pub first: Option<String>,
    /// Events read.
    pub events: u64,
}

impl Unresolved {
    fn note(&mut self, what: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(what());
        }
    }
}

/// Reads `path` with `jfrs` and follows every constant-pool reference of
/// every event, and of every constant reached, through its chunk's pools.
/// `Err` if `jfrs` cannot read the file.
pub fn jfrs_unresolved(path: &Path) -> Result<Unresolved, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = JfrReader::new(std::io::BufReader::new(file));
    let mut out = Unresolved::default();
    for (i, chunk) in reader.chunks().enumerate() {
        let (mut chunk_reader, chunk) = chunk.map_err(|e| format!("jfrs: chunk {i}: {e}"))?;
        // Constants already followed in this chunk.
        let mut seen: HashSet<(i64, i64)> = HashSet::new();
        for event in chunk_reader.events(&chunk) {
            let event = event.map_err(|e| format!("jfrs: chunk {i}: {e}"))?;
            out.events += 1;
            let name = event.class.name().to_owned();
            let mut todo = vec![event.value()];
            while let Some(a) = todo.pop() {
                match a.value {
                    ValueDescriptor::ConstantPool {
                        class_id,
                        constant_index,
                    } => {
                        let (class_id, key) = (*class_id, *constant_index);
                        if key == 0 || !seen.insert((class_id, key)) {
                            continue;
                        }
                        match a.resolve() {
                            Some(v) => todo.push(v),
                            None => {
                                seen.remove(&(class_id, key));
                                out.note(|| {
                                    let pool = chunk
                                        .metadata
                                        .type_pool
                                        .get(class_id)
                                        .map_or("?", |t| t.name());
                                    format!("{pool} id {key} (used by {name})")
                                });
                            }
                        }
                    }
                    ValueDescriptor::Object(o) => {
                        todo.extend(o.fields.iter().map(|v| Accessor::new(&chunk, v)));
                    }
                    ValueDescriptor::Array(items) => {
                        todo.extend(items.iter().map(|v| Accessor::new(&chunk, v)));
                    }
                    ValueDescriptor::Primitive(_) => {}
                }
            }
        }
    }
    Ok(out)
}

/// Reads `path` with flightrec's reader
/// (`jfr_format::read::check_references`). `Err` if it cannot read the
/// file.
pub fn flightrec_unresolved(path: &Path) -> Result<Unresolved, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let chunks = jfr_format::read::check_references(&bytes)
        .map_err(|e| format!("flightrec's reader: {e}"))?;
    let mut out = Unresolved::default();
    for c in &chunks {
        out.events += c.events;
        out.count += c.unresolved.total();
        if out.first.is_none() {
            out.first = c.unresolved.first().first().map(|r| c.describe(r));
        }
    }
    Ok(out)
}

/// Asserts that `path` reads through the positional reader and that every
/// reference resolves in its chunk for `jfrs` and for flightrec's reader.
///
/// # Panics
///
/// With the reader, the file, and what it found.
pub fn assert_readable(path: &Path) {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    if let Err(e) = crate::positional::check(&bytes) {
        panic!(
            "{}: a positional reader (async-profiler's way) misreads it: {e}",
            path.display()
        );
    }
    drop(bytes);
    for (reader, found) in [
        ("jfrs", jfrs_unresolved(path)),
        ("flightrec's reader", flightrec_unresolved(path)),
    ] {
        let found = found.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            found.count == 0,
            "{}: {} constant-pool references do not resolve in their chunk ({reader}); first: {}",
            path.display(),
            found.count,
            found.first.as_deref().unwrap_or("?")
        );
    }
}
