//! `flightrec flame`: an interactive flame graph of one kind of profile,
//! as SVG or as an HTML page that holds the same SVG.
//!
//! inferno draws it (the Rust port of FlameGraph): search (Ctrl-F or the
//! "Search" button), click to zoom, tooltips with counts and percentages,
//! all in the file with no network. The HTML page embeds the SVG inline, so
//! its script runs in the page, and sizes it to the window's width (an
//! inline SVG without a width is 300 px wide in a browser).
//!
//! A differential graph ([`write_diff`]) draws the second profile's stacks
//! with the first's weights scaled to the same total: a frame is red where
//! it takes a larger share than in the base, blue where smaller.

use std::io::Write;

use inferno::flamegraph::{self, Direction, Options};

use crate::convert::collapsed;
use crate::profile::Profile;

/// Writes the flame graph of `profile`.
pub fn write(
    profile: &Profile,
    threads: bool,
    reverse: bool,
    title: &str,
    html: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let lines = collapsed::lines(profile, threads);
    draw(lines, profile, reverse, title, html, out)
}

/// Writes the differential flame graph of `profile` against `base`: the
/// frames of `profile`, coloured by how their share changed since `base`
/// (red: more, blue: less; the base is scaled to the same total).
pub fn write_diff(
    base: &Profile,
    profile: &Profile,
    threads: bool,
    reverse: bool,
    title: &str,
    html: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let before = collapsed::lines(base, threads).join("\n");
    let after = collapsed::lines(profile, threads).join("\n");
    let mut two = Vec::new();
    let opts = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    inferno::differential::from_readers(opts, before.as_bytes(), after.as_bytes(), &mut two)?;
    let lines: Vec<String> = String::from_utf8_lossy(&two)
        .lines()
        .map(str::to_owned)
        .collect();
    draw(lines, profile, reverse, title, html, out)
}

fn draw(
    lines: Vec<String>,
    profile: &Profile,
    reverse: bool,
    title: &str,
    html: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut opts = Options::default();
    opts.title = title.to_owned();
    opts.count_name = profile
        .kind
        .map_or("samples", |k| match k.unit().1 {
            "bytes" => "bytes",
            "nanoseconds" => "ns",
            _ => "samples",
        })
        .to_owned();
    if reverse {
        opts.direction = Direction::Inverted;
    }
    let mut svg = Vec::new();
    if lines.is_empty() {
        // inferno refuses an empty profile; an empty graph says it plainly.
        opts.subtitle = Some("no samples matched".into());
        flamegraph::from_lines(&mut opts, ["(none) 0"].iter().copied(), &mut svg)
            .map_err(std::io::Error::other)?;
    } else {
        flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)
            .map_err(std::io::Error::other)?;
    }
    if !html {
        return out.write_all(&svg);
    }
    let svg = String::from_utf8_lossy(&svg);
    // Drop the XML prolog and doctype: they are not HTML.
    let body = svg.find("<svg").map_or(&*svg, |i| &svg[i..]);
    write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{margin:0}}svg{{display:block;width:100%}}</style></head><body>\n{body}\n</body></html>\n",
        escape(title)
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
