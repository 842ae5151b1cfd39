//! JEP 520's method-filter grammar, mapped onto Rust paths.
//!
//! ```text
//! filter  = part { ";" part }              blanks around a part are trimmed
//! part    = path                           `crate::module::function`, `crate::module::Type::method`
//!         | path                           `crate::module::Type`: every timed method of the type
//!         | "::" ident                     any timed function whose last segment is `ident`
//!         | "@" tag                        every site tagged `tag` in its attribute
//! path    = ident { "::" ident }
//! ident   = (letter | "_") { letter | digit | "_" }
//! tag     = (letter | "_") { letter | digit | "_" | "." | "-" }
//! ```
//!
//! A site matches a path part when the part is the site's whole path, or the
//! site's class path (its path without the last segment: the type of a
//! method, the module of a free function, as the class/method model names
//! them). A part that matches nothing now is not an error: a site may
//! register later.
//!
//! Invariant: a [`Filter`] only holds parts that passed [`parse`], so
//! matching never sees an empty segment or a character a path cannot hold.

use std::fmt;

/// One part of a filter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    /// `a::b::c`: the site's path or its class path.
    Path(String),
    /// `::name`: the last segment.
    Name(String),
    /// `@tag`.
    Tag(String),
}

/// A parsed filter: the union of its parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filter {
    pub(crate) parts: Vec<Part>,
}

/// What is wrong with one part of a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadPart {
    /// The part as written.
    pub(crate) part: String,
    /// Why it is malformed.
    pub(crate) reason: &'static str,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(p) => f.write_str(p),
            Self::Name(n) => write!(f, "::{n}"),
            Self::Tag(t) => write!(f, "@{t}"),
        }
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && s != "_"
}

fn is_tag(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Parses a filter; the error names the first malformed part.
pub(crate) fn parse(text: &str) -> Result<Filter, BadPart> {
    let bad = |part: &str, reason| BadPart {
        part: part.to_owned(),
        reason,
    };
    if text.trim().is_empty() {
        return Err(bad(text, "the filter is empty"));
    }
    let mut parts = Vec::new();
    for raw in text.split(';') {
        let p = raw.trim();
        let part = if p.is_empty() {
            return Err(bad(raw, "empty part between `;`"));
        } else if let Some(tag) = p.strip_prefix('@') {
            if !is_tag(tag) {
                return Err(bad(
                    p,
                    "a tag is `@` and a name (letters, digits, `_`, `.`, `-`)",
                ));
            }
            Part::Tag(tag.to_owned())
        } else if let Some(name) = p.strip_prefix("::") {
            if !is_ident(name) {
                return Err(bad(p, "`::` must be followed by one identifier"));
            }
            Part::Name(name.to_owned())
        } else {
            for segment in p.split("::") {
                if segment.is_empty() {
                    return Err(bad(
                        p,
                        "a path has an empty segment (`a::::b`, a trailing `::`)",
                    ));
                }
                if !is_ident(segment) {
                    return Err(bad(
                        p,
                        "a path segment is not an identifier (Rust paths: `krate::module::Type::method`)",
                    ));
                }
            }
            Part::Path(p.to_owned())
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    Ok(Filter { parts })
}

impl Filter {
    /// The union of `self` and `other`.
    pub(crate) fn union(&mut self, other: &Filter) {
        for p in &other.parts {
            if !self.parts.contains(p) {
                self.parts.push(p.clone());
            }
        }
    }

    /// True if some part matches the site.
    pub(crate) fn matches(&self, site: &SiteName<'_>) -> bool {
        self.parts.iter().any(|p| p.matches(site))
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// What a filter part is matched against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SiteName<'a> {
    /// `krate::module::Type::method`.
    pub(crate) path: &'a str,
    /// `krate::module::Type` (the path without its last segment).
    pub(crate) class: &'a str,
    /// `method`.
    pub(crate) method: &'a str,
    /// The tags given in the attribute.
    pub(crate) tags: &'a [&'static str],
}

impl Part {
    /// True if the part selects the site.
    pub(crate) fn matches(&self, site: &SiteName<'_>) -> bool {
        match self {
            Self::Path(p) => p == site.path || p == site.class,
            Self::Name(n) => n == site.method,
            Self::Tag(t) => site.tags.contains(&t.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: SiteName<'static> = SiteName {
        path: "app::db::Pool::get",
        class: "app::db::Pool",
        method: "get",
        tags: &["io"],
    };

    fn sel(f: &str) -> bool {
        parse(f).unwrap().matches(&SITE)
    }

    #[test]
    fn every_form_matches_what_it_names() {
        assert!(sel("app::db::Pool::get"));
        assert!(sel("app::db::Pool"));
        assert!(sel("::get"));
        assert!(sel("@io"));
        assert!(sel("app::other; ::get"));
        assert!(!sel("app::db"));
        assert!(!sel("app::db::Pool::put"));
        assert!(!sel("::put;@db;app::db::Po"));
        assert!(!sel("db::Pool::get"));
    }

    #[test]
    fn malformed_parts_are_named() {
        for (text, part) in [
            ("a::b;;c", ""),
            ("a::b; c:: ", "c::"),
            ("a::::b", "a::::b"),
            ("::", "::"),
            ("@", "@"),
            ("a::b<T>", "a::b<T>"),
            ("ok::x;1abc", "1abc"),
            ("a.b.C::m", "a.b.C::m"),
            ("  ", "  "),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.part, part, "{text}: {e:?}");
        }
    }

    #[test]
    fn union_keeps_each_part_once() {
        let mut a = parse("x::y;@t").unwrap();
        a.union(&parse("@t;::z").unwrap());
        assert_eq!(a.to_string(), "x::y;@t;::z");
    }
}
