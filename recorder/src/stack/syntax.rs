//! Lexical scanning of demangled symbol names (Rust and C++).
//!
//! # Mechanism
//!
//! Demangled names nest: generic arguments (`Vec<T>`), qualified paths
//! (`<A as B>`), C++ parameter lists (`f(int)`), anonymous items
//! (`{{closure}}`) and tags (`[abi:cxx11]`). [`TopLevel`] walks a name and
//! yields only the bytes outside every bracket pair, which is all that
//! [`split_path`], [`strip_cxx_signature`] and [`find_top_level`] need. Two
//! spellings look like brackets but are not: the arrow `->` of function
//! types, and C++ operator names (`operator<<`, `operator()`), which are
//! skipped whole.
//!
//! Invariant: every index these functions return or slice at is that of an
//! ASCII byte, so slicing never splits a UTF-8 character; unbalanced brackets
//! never panic (depth saturates at zero).

/// Bytes a C++ operator name may consist of after the `operator` keyword.
fn is_operator_byte(b: u8) -> bool {
    b"<>=!+-*/%^&|~,".contains(&b)
}

/// If an operator name starts at `at` (right after `operator`), the index
/// just past it; else `at`.
fn skip_operator(s: &[u8], at: usize) -> usize {
    let keyword = b"operator";
    let after_keyword = at >= keyword.len()
        && &s[at - keyword.len()..at] == keyword
        && (at == keyword.len() || {
            let b = s[at - keyword.len() - 1];
            !(b.is_ascii_alphanumeric() || b == b'_')
        });
    if !after_keyword {
        return at;
    }
    if s[at..].starts_with(b"()") || s[at..].starts_with(b"[]") {
        return at + 2;
    }
    let mut end = at;
    while end < s.len() && is_operator_byte(s[end]) {
        end += 1;
    }
    end
}

/// Iterates over the bytes of a name that are not nested in brackets, with
/// their index: opening brackets at depth 0 and the closing brackets that
/// return to depth 0 included, C++ operator names (`operator<<`) skipped.
#[derive(Debug)]
struct TopLevel<'a> {
    s: &'a [u8],
    at: usize,
    depth: usize,
}

impl Iterator for TopLevel<'_> {
    type Item = (usize, u8);

    fn next(&mut self) -> Option<(usize, u8)> {
        while self.at < self.s.len() {
            let at = self.at;
            let past_operator = skip_operator(self.s, at);
            if past_operator != at {
                self.at = past_operator;
                continue;
            }
            self.at += 1;
            let b = self.s[at];
            let before = self.depth;
            match b {
                b'<' | b'(' | b'[' | b'{' => self.depth += 1,
                b'>' if at > 0 && self.s[at - 1] == b'-' => {}
                b'>' | b')' | b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            if before == 0 || self.depth == 0 {
                return Some((at, b));
            }
        }
        None
    }
}

/// Scans `s` for top-level bytes.
fn top_level(s: &str) -> TopLevel<'_> {
    TopLevel {
        s: s.as_bytes(),
        at: 0,
        depth: 0,
    }
}

/// The index of the first top-level occurrence of `needle` (which has no
/// brackets) in `s`.
pub(crate) fn find_top_level(s: &str, needle: &str) -> Option<usize> {
    top_level(s)
        .map(|(at, _)| at)
        .find(|&at| s.as_bytes()[at..].starts_with(needle.as_bytes()))
}

/// Splits a path at its top-level `::` separators.
pub(crate) fn split_path(s: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let mut start = 0;
    let mut prev_colon = None;
    for (at, b) in top_level(s) {
        if b == b':' && prev_colon == Some(at.wrapping_sub(1)) {
            segments.push(&s[start..at - 1]);
            start = at + 1;
            prev_colon = None;
        } else if b == b':' {
            prev_colon = Some(at);
        } else {
            prev_colon = None;
        }
    }
    segments.push(&s[start..]);
    segments
}

/// Removes `<..>` generic arguments and `[..]` tags (`[abi:cxx11]`, v0
/// crate disambiguators), keeping C++ operator names intact.
pub(crate) fn strip_generics(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    let mut at = 0;
    let mut kept_from = 0;
    while at < bytes.len() {
        let past_operator = skip_operator(bytes, at);
        if past_operator != at {
            at = past_operator;
            continue;
        }
        let b = bytes[at];
        let opens = b == b'<' || b == b'[';
        let closes = (b == b'>' && !(at > 0 && bytes[at - 1] == b'-')) || b == b']';
        if opens {
            if depth == 0 {
                out.push_str(&s[kept_from..at]);
            }
            depth += 1;
        } else if closes && depth > 0 {
            depth -= 1;
            if depth == 0 {
                kept_from = at + 1;
            }
        }
        at += 1;
    }
    if depth == 0 {
        out.push_str(&s[kept_from..]);
    }
    out
}

/// Drops a C++ signature's parameter list (and what follows it: `const`,
/// ref-qualifiers) and its return type, leaving the qualified name. Names
/// without a parameter list are returned as they are.
pub(crate) fn strip_cxx_signature(s: &str) -> &str {
    let bytes = s.as_bytes();
    // A parameter list opens right after a name, not at a segment start
    // such as `(anonymous namespace)::`.
    let params = top_level(s)
        .find(|&(at, b)| b == b'(' && at > 0 && !matches!(bytes[at - 1], b':' | b' ' | b'('));
    let Some((params, _)) = params else {
        return s;
    };
    let name = &s[..params];
    let return_type_end = top_level(name)
        .filter(|&(at, b)| b == b' ' && !name[..at].ends_with("operator"))
        .map(|(at, _)| at)
        .last();
    match return_type_end {
        Some(at) => name[at + 1..].trim_start(),
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_only_top_level_separators() {
        assert_eq!(split_path("a::b::c"), ["a", "b", "c"]);
        assert_eq!(split_path("<a::B as c::D>::f"), ["<a::B as c::D>", "f"]);
        assert_eq!(split_path("x::Vec<a::b>::push"), ["x", "Vec<a::b>", "push"]);
        assert_eq!(split_path("f::{{closure}}"), ["f", "{{closure}}"]);
        assert_eq!(
            split_path("<fn() -> a::B as c::D>::f"),
            ["<fn() -> a::B as c::D>", "f"]
        );
        assert_eq!(
            split_path("(anonymous namespace)::f"),
            ["(anonymous namespace)", "f"]
        );
        assert_eq!(split_path("x::operator<<"), ["x", "operator<<"]);
        assert_eq!(split_path("memcpy"), ["memcpy"]);
        assert_eq!(split_path(""), [""]);
    }

    #[test]
    fn finds_needles_outside_brackets() {
        assert_eq!(find_top_level("a<b as c> as d", " as "), Some(9));
        assert_eq!(find_top_level("a<b as c>", " as "), None);
    }

    #[test]
    fn strips_generic_arguments_and_tags() {
        assert_eq!(
            strip_generics("drop_in_place<alloc::vec::Vec<u8>>"),
            "drop_in_place"
        );
        assert_eq!(strip_generics("RawVec<T,A>"), "RawVec");
        assert_eq!(strip_generics("std[1a2b3c4d5e6f7081]"), "std");
        assert_eq!(strip_generics("_M_create[abi:cxx11]"), "_M_create");
        assert_eq!(strip_generics("operator<<"), "operator<<");
        assert_eq!(strip_generics("operator<"), "operator<");
        assert_eq!(strip_generics("unbalanced<"), "unbalanced");
        assert_eq!(strip_generics("f::{{closure}}"), "f::{{closure}}");
    }

    #[test]
    fn cxx_signatures_lose_parameters_and_return_type() {
        let cases = [
            (
                "std::vector<int, std::allocator<int> >::push_back(int const&)",
                "std::vector<int, std::allocator<int> >::push_back",
            ),
            (
                "void std::vector<int>::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int> >, int const&)",
                "std::vector<int>::_M_realloc_insert<int const&>",
            ),
            ("ns::Foo::bar(int) const", "ns::Foo::bar"),
            (
                "(anonymous namespace)::Worker::run()",
                "(anonymous namespace)::Worker::run",
            ),
            (
                "void (anonymous namespace)::helper<int>(int)",
                "(anonymous namespace)::helper<int>",
            ),
            ("ns::Foo::operator()(int)", "ns::Foo::operator()"),
            (
                "ns::Foo::operator new(unsigned long)",
                "ns::Foo::operator new",
            ),
            (
                "std::function<void ()>::operator()() const",
                "std::function<void ()>::operator()",
            ),
            ("foo()::{lambda()#1}::operator()() const", "foo"),
            ("my_crate::work::burn_cpu", "my_crate::work::burn_cpu"),
            (
                "<fn() -> u8 as core::ops::function::Fn<()>>::call",
                "<fn() -> u8 as core::ops::function::Fn<()>>::call",
            ),
        ];
        for (symbol, name) in cases {
            assert_eq!(strip_cxx_signature(symbol), name, "{symbol}");
        }
    }
}
