//! `flightrec metadata`: the types a recording declares, as `jfr metadata`
//! lists them: each class with its super type and its fields (type, name,
//! array), event types first.

use std::collections::BTreeMap;
use std::io::Write;

use crate::error::CliError;
use crate::recording::Recording;

/// Prints every type declared in any chunk of `rec` (the last chunk's
/// declaration of a name wins: types are only ever added).
pub fn run(rec: &mut Recording, out: &mut dyn Write) -> Result<(), CliError> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    rec.for_each_scan(|scan, _| {
        let meta = &scan.metadata;
        for c in &meta.classes {
            let mut s = String::new();
            match &c.super_type {
                Some(sup) => s.push_str(&format!("class {} extends {sup} {{\n", c.name)),
                None => s.push_str(&format!("class {} {{\n", c.name)),
            }
            for f in &c.fields {
                let ty = meta.class(f.type_id).map_or("?", |t| &*t.name);
                let arr = if f.array { "[]" } else { "" };
                s.push_str(&format!("  {ty}{arr} {};\n", f.name));
            }
            s.push_str("}\n\n");
            types.insert(c.name.to_string(), s);
        }
        Ok(())
    })?;
    let text: String = types.into_values().collect();
    out.write_all(text.as_bytes())
        .map_err(|source| CliError::Output {
            path: "-".into(),
            source,
        })
}
