//! The report's page: the collected data as JSON in a
//! `<script type="application/json">`, then the page's own style and
//! script (`page.css`, `page.js`, compiled into the command), so one file
//! holds everything and nothing is fetched.
//!
//! Invariant: no `<` is written inside the JSON (each is `\u003c`), so no
//! value a recording holds can close the script element.

use std::io::Write;

use serde_json::Value as Json;

const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");

/// Writes the page for `data`.
pub(super) fn write(title: &str, data: &Json, out: &mut dyn Write) -> std::io::Result<()> {
    let json = serde_json::to_string(data)
        .map_err(std::io::Error::other)?
        .replace('<', "\\u003c");
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title>\n<style>\n{CSS}</style></head>\n<body>\n\
         <script type=\"application/json\" id=\"data\">{json}</script>\n\
         <script>\n{JS}</script>\n</body></html>\n",
        escape(title)
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
