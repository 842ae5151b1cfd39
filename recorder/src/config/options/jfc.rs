//! Settings from the JDK's `.jfc` XML files, read without an XML library.
//!
//! # What is read
//!
//! ```text
//! <configuration ...>                     the root; anything else is an error
//!   <event name="com.example.Start">
//!     <setting name="enabled" control="x">true</setting>
//!   </event>
//!   <control> ... </control>              skipped
//! </configuration>
//! ```
//!
//! Each `<setting>` of an `<event>` directly under the root is applied as
//! `event#setting=text` (text trimmed). The `control` attribute is ignored:
//! the element's text is the value the JDK uses when no control option
//! changes it, which FLIGHTREC cannot do. Settings flightrec does not know
//! (`cutoff`, `level`, `filter`), and known settings flightrec cannot honour
//! for the event (`period` of the JVM's periodic events, `throttle` of
//! anything but `jdk.CPUTimeSample`), are skipped, as the JDK skips
//! settings an event type does not declare; the rest must parse.
//!
//! # The XML subset
//!
//! The reader accepts what the JDK's own files and `jfr configure` write:
//! declarations (`<?xml ..?>`), comments, `<!DOCTYPE ..>`, `CDATA`,
//! single- or double-quoted attributes, self-closing tags, and the five
//! named entities plus numeric character references. It checks that tags
//! nest; any other malformation is a [`OptionError::SettingsSyntax`] with the
//! line it is on. It never panics.

use std::path::Path;

use super::error::OptionError;
use super::value::{EVENT_SETTINGS, event_setting};
use crate::config::settings::Settings;

/// One piece of the document.
#[derive(Debug)]
enum Token<'a> {
    /// `<name attr="v" ...>` or, with `empty`, `<name .../>`.
    Start {
        name: &'a str,
        attrs: Vec<(&'a str, String)>,
        empty: bool,
    },
    /// `</name>`.
    End(&'a str),
    /// Character data, entities decoded.
    Text(String),
}

/// Walks the document, byte offset `pos` into `text`.
struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

/// A malformation: what, and at which byte offset.
type Malformed = (usize, String);

impl<'a> Reader<'a> {
    /// The next token, skipping declarations, comments and DOCTYPE.
    fn next(&mut self) -> Result<Option<Token<'a>>, Malformed> {
        loop {
            let start = self.pos;
            let rest = &self.text[start..];
            if rest.is_empty() {
                return Ok(None);
            }
            if rest.starts_with("<!--") {
                self.skip_past("<!--", "-->", "a comment")?;
            } else if rest.starts_with("<![CDATA[") {
                let body = start + "<![CDATA[".len();
                self.skip_past("<![CDATA[", "]]>", "a CDATA section")?;
                let text = &self.text[body..self.pos - "]]>".len()];
                return Ok(Some(Token::Text(text.to_owned())));
            } else if rest.starts_with("<?") {
                self.skip_past("<?", "?>", "a declaration")?;
            } else if rest.starts_with("<!") {
                self.skip_doctype()?;
            } else if let Some(end) = rest.strip_prefix("</") {
                let Some(close) = end.find('>') else {
                    return Err((start, "an end tag is not closed".to_owned()));
                };
                self.pos = start + 2 + close + 1;
                return Ok(Some(Token::End(end[..close].trim())));
            } else if rest.starts_with('<') {
                return self.start_tag().map(Some);
            } else {
                let len = rest.find('<').unwrap_or(rest.len());
                self.pos = start + len;
                return decode(&rest[..len])
                    .map(|t| Some(Token::Text(t)))
                    .map_err(|e| (start, e));
            }
        }
    }

    /// Moves past `close`, with `pos` at `open`.
    fn skip_past(&mut self, open: &str, close: &str, what: &str) -> Result<(), Malformed> {
        let body = self.pos + open.len();
        match self.text[body..].find(close) {
            Some(i) => {
                self.pos = body + i + close.len();
                Ok(())
            }
            None => Err((self.pos, format!("{what} is not closed"))),
        }
    }

    /// Skips `<!DOCTYPE ...>`, including an internal subset in `[...]`.
    fn skip_doctype(&mut self) -> Result<(), Malformed> {
        let mut depth = 0usize;
        for (i, b) in self.text.bytes().enumerate().skip(self.pos) {
            match b {
                b'[' => depth += 1,
                b']' => depth = depth.saturating_sub(1),
                b'>' if depth == 0 => {
                    self.pos = i + 1;
                    return Ok(());
                }
                _ => {}
            }
        }
        Err((self.pos, "a `<!` declaration is not closed".to_owned()))
    }

    /// `<name attr="value" ... [/]>`, with `pos` at the `<`.
    fn start_tag(&mut self) -> Result<Token<'a>, Malformed> {
        let text = self.text;
        let tag = self.pos;
        let bad = |why: &str| Err((tag, why.to_owned()));
        let mut i = tag + 1;
        let name_end = |from: usize| {
            text[from..]
                .find(|c: char| c.is_whitespace() || matches!(c, '/' | '>' | '=' | '<'))
                .map_or(text.len(), |n| from + n)
        };
        let end = name_end(i);
        let name = &text[i..end];
        if name.is_empty() {
            return bad("`<` is not followed by an element name");
        }
        i = end;
        let mut attrs = Vec::new();
        loop {
            i += text[i..].len() - text[i..].trim_start().len();
            let rest = &text[i..];
            if rest.starts_with("/>") || rest.starts_with('>') {
                let empty = rest.starts_with('/');
                self.pos = i + if empty { 2 } else { 1 };
                return Ok(Token::Start { name, attrs, empty });
            }
            let end = name_end(i);
            let attr = &text[i..end];
            if attr.is_empty() {
                return bad(&format!("the tag `<{name}` is not closed by `>`"));
            }
            i = end;
            i += text[i..].len() - text[i..].trim_start().len();
            if !text[i..].starts_with('=') {
                return bad(&format!("attribute `{attr}` of `<{name}>` has no `=`"));
            }
            i += 1;
            i += text[i..].len() - text[i..].trim_start().len();
            let quote = match text[i..].chars().next() {
                Some(q @ ('"' | '\'')) => q,
                _ => return bad(&format!("attribute `{attr}` of `<{name}>` is not quoted")),
            };
            let Some(len) = text[i + 1..].find(quote) else {
                return bad(&format!("attribute `{attr}` of `<{name}>` is not closed"));
            };
            let value = decode(&text[i + 1..i + 1 + len]).map_err(|e| (tag, e))?;
            attrs.push((attr, value));
            i += 1 + len + 1;
        }
    }
}

/// Replaces entity and character references in `raw`.
fn decode(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';') else {
            return Err("`&` does not start an entity (write `&amp;`)".to_owned());
        };
        let entity = &rest[1..semi];
        let c = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => match entity.strip_prefix('#') {
                Some(hex) if hex.starts_with(['x', 'X']) => u32::from_str_radix(&hex[1..], 16)
                    .ok()
                    .and_then(char::from_u32),
                Some(dec) => dec.parse().ok().and_then(char::from_u32),
                None => None,
            },
        };
        let Some(c) = c else {
            return Err(format!("unknown entity `&{entity};`"));
        };
        out.push(c);
        rest = &rest[semi + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// 1-based line of byte offset `pos`.
fn line_at(text: &str, pos: usize) -> usize {
    1 + text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The `<setting>` being read: its event, name, text and offset.
struct Open {
    event: String,
    name: String,
    text: String,
    pos: usize,
}

/// Reads the settings of a `.jfc` document; errors name `path`.
pub(super) fn parse(text: &str, path: &Path) -> Result<Settings, OptionError> {
    let syntax = |pos: usize, reason: String| OptionError::SettingsSyntax {
        path: path.to_owned(),
        line: line_at(text, pos),
        reason,
    };
    let mut reader = Reader { text, pos: 0 };
    let mut settings = Settings::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut seen_root = false;
    let mut event: Option<String> = None;
    let mut open: Option<Open> = None;
    loop {
        let at = reader.pos;
        let Some(token) = reader.next().map_err(|(pos, why)| syntax(pos, why))? else {
            break;
        };
        match token {
            Token::Start { name, attrs, empty } => {
                if open.is_some() {
                    return Err(syntax(at, format!("`<setting>` contains `<{name}>`")));
                }
                let attr = |want: &str| {
                    attrs
                        .iter()
                        .find(|(a, _)| *a == want)
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| syntax(at, format!("`<{name}>` has no `{want}` attribute")))
                };
                match (stack.as_slice(), name) {
                    ([], "configuration") if !seen_root => {
                        // JDK 8's version 1 nests events in `<producer>`
                        // and names them by path: nothing would be read.
                        if attr("version").is_ok_and(|v| v.trim().starts_with("1.")) {
                            return Err(syntax(
                                at,
                                "a version 1 (JDK 8) .jfc file; use a file of JDK 9 or later \
                                 (version 2.0)"
                                    .to_owned(),
                            ));
                        }
                        seen_root = true;
                    }
                    ([], _) if seen_root => {
                        return Err(syntax(at, "a second root element".to_owned()));
                    }
                    ([], _) => {
                        return Err(syntax(
                            at,
                            format!(
                                "not a .jfc file: the root is `<{name}>`, not `<configuration>`"
                            ),
                        ));
                    }
                    (["configuration"], "event") => event = Some(attr("name")?),
                    (["configuration", "event"], "setting") => {
                        open = Some(Open {
                            event: event.clone().unwrap_or_default(),
                            name: attr("name")?,
                            text: String::new(),
                            pos: at,
                        });
                    }
                    _ => {}
                }
                if empty {
                    // `<x/>` opens and closes at once.
                    finish(&mut settings, open.take(), path, text)?;
                    if name == "event" && stack.len() == 1 {
                        event = None;
                    }
                } else {
                    stack.push(name);
                }
            }
            Token::End(name) => match stack.pop() {
                Some(top) if top == name => {
                    finish(&mut settings, open.take(), path, text)?;
                    if name == "event" && stack.len() == 1 {
                        event = None;
                    }
                }
                Some(top) => {
                    return Err(syntax(at, format!("`</{name}>` closes `<{top}>`")));
                }
                None => return Err(syntax(at, format!("`</{name}>` closes nothing"))),
            },
            Token::Text(t) => {
                if let Some(o) = &mut open {
                    o.text.push_str(&t);
                } else if stack.is_empty() && !t.trim().is_empty() {
                    return Err(syntax(at, "text outside the root element".to_owned()));
                }
            }
        }
    }
    if let Some(top) = stack.last() {
        return Err(syntax(text.len(), format!("`<{top}>` is not closed")));
    }
    if !seen_root {
        return Err(syntax(
            text.len(),
            "no `<configuration>` element".to_owned(),
        ));
    }
    Ok(settings)
}

/// Applies a finished `<setting>` if it is one flightrec knows.
fn finish(
    settings: &mut Settings,
    open: Option<Open>,
    path: &Path,
    text: &str,
) -> Result<(), OptionError> {
    let Some(o) = open else { return Ok(()) };
    if !EVENT_SETTINGS.contains(&o.name.as_str()) {
        return Ok(());
    }
    // A setting flightrec cannot honour for the event (the JVM's periodic
    // events' `period`, `throttle` of allocation samples, ...) is skipped,
    // as the JDK skips settings a type does not declare; in FLIGHTREC or a
    // line-format file the same setting is an error at start.
    if o.name == "filter" {
        // The JDK's own .jfc files declare an empty method filter (and
        // filters of other kinds on other events): only a given method
        // filter means anything here.
        if !crate::config::settings::FILTER_EVENTS.contains(&o.event.as_str())
            || o.text.trim().is_empty()
        {
            return Ok(());
        }
    } else if crate::config::supported::check_supported(
        &o.event,
        &o.name,
        &crate::config::settings::TypeSettings::default(),
        None,
    )
    .is_err()
    {
        return Ok(());
    }
    let key = format!("{}#{}", o.event, o.name);
    event_setting(settings, &key, o.text.trim()).map_err(|error| OptionError::BadSettingsLine {
        path: path.to_owned(),
        line: line_at(text, o.pos),
        error: Box::new(error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Throttle;
    use std::time::Duration;

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE configuration [ <!ENTITY x "y"> ]>
<!-- a comment with <event name="no.Such"> inside -->
<configuration version="2.0" label='Sample' description="a &amp; b &#x263A;">
  <event name="com.example.Start">
    <setting name="enabled" control="threads">true</setting>
    <setting name="stackTrace">
      false
    </setting>
  </event>
  <event name="com.example.Request">
    <setting name="threshold"><![CDATA[20 ms]]></setting>
    <setting name="cutoff">whatever</setting>
    <setting name="filter"/>
  </event>
  <event name="jdk.CPUTimeSample">
    <setting name="throttle">500/s</setting>
    <setting name="period">&#101;veryChunk</setting>
  </event>
  <event name="jdk.Empty"/>
  <event name="jdk.ClassLoadingStatistics">
    <setting name="enabled">true</setting>
    <setting name="period">everyChunk</setting>
  </event>
  <control>
    <selection name="x" default="y"><option name="y">off</option></selection>
    <text name="t" label="a &lt;b&gt;">20 ms</text>
  </control>
</configuration>
"#;

    #[test]
    fn reads_settings_and_ignores_controls_and_unknown_settings() {
        let s = parse(SAMPLE, Path::new("s.jfc")).unwrap();
        let t = s.get("com.example.Start").unwrap();
        assert_eq!((t.enabled, t.stack_trace), (Some(true), Some(false)));
        assert_eq!(
            s.get("com.example.Request").unwrap().threshold,
            Some(Duration::from_millis(20))
        );
        let cpu = s.get("jdk.CPUTimeSample").unwrap();
        assert_eq!(
            cpu.throttle,
            Some(Throttle::Rate {
                count: 500,
                per: Duration::from_secs(1)
            })
        );
        // `period` on the CPU-time sampler, or on a JVM event flightrec
        // does not write, is not honoured: skipped.
        assert_eq!(cpu.period, None);
        let jvm = s.get("jdk.ClassLoadingStatistics").unwrap();
        assert_eq!((jvm.enabled, jvm.period), (Some(true), None));
        assert!(s.get("no.Such").is_none() && s.get("jdk.Empty").is_none());
    }

    #[test]
    fn malformed_documents_name_the_line() {
        for (doc, line, what) in [
            (
                "<configuration>\n<event name=\"a.B\">\n</configuration>",
                3,
                "closes",
            ),
            (
                "<configuration>\n<event>\n</event></configuration>",
                2,
                "no `name`",
            ),
            ("<configuration>\n\n<event name=\"a.B\">", 3, "not closed"),
            ("<other/>", 1, "not a .jfc"),
            ("<configuration/>\n<configuration/>", 2, "second root"),
            ("<?xml version=\"1.0\"?>", 1, "no `<configuration>`"),
            ("<configuration>\n<!-- open", 2, "comment is not closed"),
            ("<configuration a=b>", 1, "not quoted"),
            ("<configuration a>", 1, "has no `=`"),
            ("<configuration a=\"b>", 1, "not closed"),
            (
                "<configuration>&bogus;</configuration>",
                1,
                "unknown entity",
            ),
            ("<configuration>a & b</configuration>", 1, "`&`"),
            ("<configuration></event>", 1, "closes"),
            ("</configuration>", 1, "closes nothing"),
            ("text<configuration/>", 1, "outside the root"),
            ("< configuration/>", 1, "element name"),
            (
                "<configuration><event name=\"a.B\"><setting name=\"enabled\"><b/></setting>",
                1,
                "contains",
            ),
            ("<configuration>\n</configuration", 2, "end tag"),
            ("<!DOCTYPE x [", 1, "not closed"),
            ("<configuration", 1, "not closed by"),
            ("<configuration version=\"1.0\">", 1, "version 1"),
        ] {
            match parse(doc, Path::new("f.jfc")) {
                Err(OptionError::SettingsSyntax {
                    line: l, reason, ..
                }) => {
                    assert_eq!(l, line, "{doc}: {reason}");
                    assert!(reason.contains(what), "{doc}: {reason}");
                }
                other => panic!("{doc}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_known_setting_with_a_bad_value_names_its_line() {
        let doc = "<configuration>\n<event name=\"a.B\">\n\
                   <setting name=\"threshold\">soon</setting>\n</event>\n</configuration>";
        match parse(doc, Path::new("f.jfc")) {
            Err(OptionError::BadSettingsLine { line: 3, error, .. }) => {
                assert!(matches!(*error, OptionError::BadTime { .. }), "{error:?}");
            }
            other => panic!("{other:?}"),
        }
        let empty = "<configuration><event name=\"a.B\"><setting name=\"enabled\"/></event></configuration>";
        assert!(matches!(
            parse(empty, Path::new("f.jfc")),
            Err(OptionError::BadSettingsLine { .. })
        ));
    }

    mod never_panic {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn on_arbitrary_text(text in "<?\\PC{0,200}") {
                if let Err(e) = parse(&text, Path::new("p.jfc")) {
                    let _ = e.to_string();
                }
            }

            #[test]
            fn on_xml_like_text(text in "[<>/=\"' a-z!?\\[\\]&;#x0-9-]{0,160}") {
                let _ = parse(&text, Path::new("p.jfc"));
            }

            #[test]
            fn on_a_damaged_sample(
                at in 0..SAMPLE.len(),
                cut in any::<bool>(),
                insert in "[<>/=\"'&;!\\[\\]-]{0,3}",
            ) {
                // SAMPLE is ASCII, so every index is a char boundary.
                prop_assert!(SAMPLE.is_ascii());
                let mut doc = SAMPLE.to_owned();
                if cut {
                    doc.truncate(at);
                } else {
                    doc.insert_str(at, &insert);
                }
                let _ = parse(&doc, Path::new("p.jfc"));
            }
        }
    }
}
