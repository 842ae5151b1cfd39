//! Collapsed stacks, FlameGraph's input format: one line per distinct
//! stack, frames root first joined by `;`, a space, the weight.

use std::io::Write;

use crate::profile::Profile;

/// Writes `profile` as collapsed stacks, in a fixed order (`threads`: a
/// root frame per thread).
pub fn write(profile: &Profile, threads: bool, out: &mut dyn Write) -> std::io::Result<()> {
    for line in lines(profile, threads) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// A frame name with the format's separators (`;`, newlines) replaced, so
/// one frame stays one frame.
pub fn clean(f: &str) -> String {
    f.replace([';', '\n', '\r'], "_")
}

/// The lines [`write()`] writes, for the flame graph.
pub fn lines(profile: &Profile, threads: bool) -> Vec<String> {
    profile
        .sorted(threads)
        .into_iter()
        .map(|(frames, w)| {
            let names: Vec<String> = frames.iter().map(|f| clean(f)).collect();
            format!("{} {w}", names.join(";"))
        })
        .collect()
}
