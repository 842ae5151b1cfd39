//! Expansion tests: derive inputs written with `quote!`, checked against the
//! generated tokens or the errors reported.

use proc_macro2::TokenStream;
use quote::quote;

use super::expand;

/// Expands `input`, checks the output parses as one `impl` item, and returns
/// it as a string without whitespace (token spacing is not stable).
fn ok(input: TokenStream) -> String {
    let out =
        expand(&syn::parse2(input).unwrap()).unwrap_or_else(|e| panic!("unexpected error: {e}"));
    syn::parse2::<syn::ItemImpl>(out.clone()).expect("output is one impl item");
    compact(&out.to_string())
}

/// Every error message for `input`, in order.
fn errs(input: TokenStream) -> Vec<String> {
    match expand(&syn::parse2(input).unwrap()) {
        Ok(out) => panic!("expected errors, got {out}"),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
    }
}

/// The single error message for `input`.
fn err(input: TokenStream) -> String {
    let mut all = errs(input);
    assert_eq!(all.len(), 1, "{all:#?}");
    all.remove(0)
}

fn compact(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[track_caller]
fn has(out: &str, want: &str) {
    let want = compact(want);
    assert!(out.contains(&want), "missing `{want}` in\n{out}");
}

#[track_caller]
fn lacks(out: &str, unwanted: &str) {
    let unwanted = compact(unwanted);
    assert!(
        !out.contains(&unwanted),
        "unexpected `{unwanted}` in\n{out}"
    );
}

// === accepted input ===

#[test]
fn instant_event_defaults() {
    let out = ok(quote! {
        #[event(name = "com.example.Tick")]
        struct Tick { n: u64 }
    });
    has(&out, "impl ::flightrec::__private::Event for Tick");
    has(&out, "static INFO: ::flightrec::__private::EventTypeInfo");
    has(&out, r#"name: "com.example.Tick""#);
    has(
        &out,
        "label: ::core::option::Option::None, description: ::core::option::Option::None",
    );
    has(&out, "category: &[]");
    has(&out, "experimental: false");
    has(&out, "kind: ::flightrec::__private::EventKind::Instant");
    has(
        &out,
        "DefaultSettings { enabled: true, threshold: ::flightrec::__private::Duration::ZERO, stack_trace: false, }",
    );
    has(
        &out,
        r#"FieldInfo { name: "n", kind: <u64 as ::flightrec::__private::FieldValue>::KIND,"#,
    );
    has(
        &out,
        "content: <u64 as ::flightrec::__private::FieldValue>::CONTENT",
    );
    has(
        &out,
        "static TYPE: ::flightrec::__private::EventType = ::flightrec::__private::EventType::new(&INFO); &TYPE",
    );
    has(
        &out,
        "fn write_fields(&self, w: &mut ::flightrec::__private::FieldWriter<'_>)",
    );
    has(
        &out,
        "<u64 as ::flightrec::__private::FieldValue>::write(&self.n, w);",
    );
    lacks(&out, "const _");
}

#[test]
fn container_attributes() {
    let out = ok(quote! {
        #[event(name = "com.example.Request", label = "Request", description = "An HTTP request")]
        #[event(category = ["Example", "HTTP"], experimental, duration, threshold = "1500 ms")]
        #[event(enabled = false, stack_trace)]
        struct Request { status: u16 }
    });
    has(&out, r#"label: ::core::option::Option::Some("Request")"#);
    has(
        &out,
        r#"description: ::core::option::Option::Some("An HTTP request")"#,
    );
    has(&out, r#"category: &["Example", "HTTP"]"#);
    has(&out, "experimental: true");
    has(&out, "kind: ::flightrec::__private::EventKind::Duration");
    has(&out, "enabled: false");
    has(
        &out,
        "threshold: ::flightrec::__private::Duration::new(1u64, 500000000u32)",
    );
    has(&out, "stack_trace: true");
}

#[test]
fn flags_take_explicit_booleans_and_single_category() {
    let out = ok(quote! {
        #[event(name = "x.Y", category = "Example", experimental = false, duration = true, enabled = true)]
        #[event(stack_trace = false, threshold = "0")]
        struct Y {}
    });
    has(&out, r#"category: &["Example"]"#);
    has(&out, "experimental: false");
    has(&out, "EventKind::Duration");
    has(&out, "enabled: true");
    has(&out, "threshold: ::flightrec::__private::Duration::ZERO");
    has(&out, "stack_trace: false");
}

#[test]
fn unit_struct_has_no_fields() {
    let out = ok(quote! {
        #[event(name = "x.Marker")]
        struct Marker;
    });
    has(&out, "fields: &[]");
    has(
        &out,
        "fn write_fields(&self, _w: &mut ::flightrec::__private::FieldWriter<'_>) {}",
    );
}

#[test]
fn crate_override() {
    let out = ok(quote! {
        #[event(crate = "recorder", name = "x.Y")]
        struct Y { a: i32 }
    });
    has(&out, "impl recorder::__private::Event for Y");
    has(&out, "<i32 as recorder::__private::FieldValue>::KIND");
    lacks(&out, "flightrec");
    let out = ok(quote! {
        #[event(crate = "::some::path", name = "x.Y")]
        struct Y;
    });
    has(&out, "impl ::some::path::__private::Event for Y");
}

#[test]
fn lifetimes_are_static_in_the_descriptor_only() {
    let out = ok(quote! {
        #[event(name = "x.Request")]
        struct Request<'a, 'b: 'a> where 'a: 'b {
            path: &'a str,
            host: Option<&'b str>,
            callback: for<'c> fn(&'c str),
            fixed: &'static str,
        }
    });
    has(
        &out,
        "impl<'a, 'b: 'a> ::flightrec::__private::Event for Request<'a, 'b> where 'a: 'b",
    );
    has(
        &out,
        "kind: <&'static str as ::flightrec::__private::FieldValue>::KIND",
    );
    has(
        &out,
        "kind: <Option<&'static str> as ::flightrec::__private::FieldValue>::KIND",
    );
    // Higher-ranked lifetimes are not the struct's: left alone.
    has(
        &out,
        "kind: <for<'c> fn(&'c str) as ::flightrec::__private::FieldValue>::KIND",
    );
    has(
        &out,
        "<&'a str as ::flightrec::__private::FieldValue>::write(&self.path, w);",
    );
    has(
        &out,
        "<Option<&'b str> as ::flightrec::__private::FieldValue>::write(&self.host, w);",
    );
    has(
        &out,
        "<&'static str as ::flightrec::__private::FieldValue>::write(&self.fixed, w);",
    );
}

#[test]
fn field_attributes() {
    let out = ok(quote! {
        #[event(name = "x.Y")]
        struct Y {
            #[event(label = "Path", description = "Request path")]
            path: String,
            #[event(rename = "bytesRead")]
            bytes_read: u64,
            #[event(skip)]
            scratch: Vec<u8>,
            r#type: u8,
        }
    });
    has(
        &out,
        r#"FieldInfo { name: "path", kind: <String as ::flightrec::__private::FieldValue>::KIND,
           label: ::core::option::Option::Some("Path"),
           description: ::core::option::Option::Some("Request path"),"#,
    );
    has(&out, r#"name: "bytesRead""#);
    has(&out, r#"name: "type""#);
    has(&out, "write(&self.bytes_read, w);");
    has(&out, "write(&self.r#type, w);");
    lacks(&out, "scratch");
    lacks(&out, "Vec<u8>");
    // Order is declaration order.
    let (p, b, t) = (
        out.find(r#""path""#),
        out.find(r#""bytesRead""#),
        out.find(r#""type""#),
    );
    assert!(p < b && b < t, "{out}");
}

#[test]
fn content_attributes() {
    let out = ok(quote! {
        #[event(name = "x.Y")]
        struct Y {
            #[event(timespan)] a: u64,
            #[event(timespan = "ns")] b: u64,
            #[event(timespan = "ticks")] c: i64,
            #[event(timespan = "ms")] d: i64,
            #[event(timestamp)] e: i64,
            #[event(timestamp = "millis")] f: i64,
            #[event(timestamp = "ticks")] g: i64,
            #[event(data_amount)] h: u64,
            #[event(data_amount = "bits")] i: u64,
            #[event(percentage)] j: f64,
            #[event(frequency)] k: f32,
            #[event(memory_address)] l: usize,
            m: std::time::Duration,
        }
    });
    for (field, variant) in [
        ("a", "TimespanNanos"),
        ("b", "TimespanNanos"),
        ("c", "TimespanTicks"),
        ("d", "TimespanMillis"),
        ("e", "TimestampMillis"),
        ("f", "TimestampMillis"),
        ("g", "TimestampTicks"),
        ("h", "Bytes"),
        ("i", "Bits"),
        ("j", "Percentage"),
        ("k", "Frequency"),
        ("l", "MemoryAddress"),
    ] {
        let info = &out[out.find(&format!(r#"name:"{field}""#)).unwrap()..];
        let info = &info[..info.find('}').unwrap()];
        has(
            info,
            &format!(
                "content: ::core::option::Option::Some(::flightrec::__private::ContentType::{variant})"
            ),
        );
    }
    has(
        &out,
        "content: <std::time::Duration as ::flightrec::__private::FieldValue>::CONTENT",
    );
    // One kind check per explicit content type, none for the default.
    assert_eq!(
        out.matches("const_:()=::core::assert!").count(),
        12,
        "{out}"
    );
    has(
        &out,
        r#"const _: () = ::core::assert!(<u64 as ::flightrec::__private::FieldValue>::KIND.is_integer(),
           "field `a`: `timespan` needs an integer field type");"#,
    );
    has(
        &out,
        r#"const _: () = ::core::assert!(::core::matches!(<f64 as ::flightrec::__private::FieldValue>::KIND,
           ::flightrec::__private::FieldKind::F32 | ::flightrec::__private::FieldKind::F64),
           "field `j`: `percentage` needs an `f32` or `f64` field type");"#,
    );
    has(
        &out,
        r#"<f32 as ::flightrec::__private::FieldValue>::KIND.is_integer() || ::core::matches!("#,
    );
}

#[test]
fn content_check_uses_static_lifetimes() {
    let out = ok(quote! {
        #[event(name = "x.Y")]
        struct Y<'a> { #[event(data_amount)] n: &'a u64 }
    });
    has(
        &out,
        "const _: () = ::core::assert!(<&'static u64 as ::flightrec::__private::FieldValue>::KIND.is_integer()",
    );
}

#[test]
fn skipped_fields_escape_name_checks() {
    let out = ok(quote! {
        #[event(name = "x.Y")]
        struct Y { #[event(skip)] duration: u64, #[event(skip)] größe: u8 }
    });
    has(&out, "fields: &[]");
}

#[test]
fn other_attributes_are_ignored() {
    let out = ok(quote! {
        /// Docs.
        #[derive(Debug)]
        #[event(name = "x.Y")]
        #[allow(dead_code)]
        struct Y { #[doc = "field"] #[serde(rename = "z")] a: u8 }
    });
    has(&out, r#"name: "a""#);
}

// === rejected input ===

#[test]
fn rejects_enums_unions_tuple_structs() {
    let e = err(quote! { #[event(name = "x.Y")] enum Y { A } });
    assert!(
        e.contains("needs a struct with named fields, not an enum"),
        "{e}"
    );
    let e = err(quote! { #[event(name = "x.Y")] union Y { a: u32 } });
    assert!(e.contains("not a union"), "{e}");
    let e = err(quote! { #[event(name = "x.Y")] struct Y(u32, u64); });
    assert!(e.contains("tuple struct"), "{e}");
}

#[test]
fn rejects_type_and_const_generics() {
    let all = errs(quote! {
        #[event(name = "x.Y")]
        struct Y<'a, T, const N: usize> { a: &'a T }
    });
    assert_eq!(all.len(), 2, "{all:#?}");
    assert!(all[0].contains("generic type parameters"), "{}", all[0]);
    assert!(all[1].contains("generic const parameters"), "{}", all[1]);
}

#[test]
fn requires_a_valid_name() {
    let e = err(quote! { struct Y { a: u8 } });
    assert!(e.starts_with("missing #[event(name = \"...\")]"), "{e}");
    let e = err(quote! { #[event(label = "Y")] struct Y { a: u8 } });
    assert!(e.starts_with("missing"), "{e}");
    let e = err(quote! { #[event(name = "com.example.my-event")] struct Y; });
    assert!(e.contains("`my-event` is not a Java identifier"), "{e}");
    let e = err(quote! { #[event(name = "")] struct Y; });
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn rejects_bad_thresholds() {
    let e = err(quote! { #[event(name = "x.Y", duration, threshold = "10 sec")] struct Y; });
    assert!(e.contains("unknown unit `sec`"), "{e}");
    let e = err(quote! { #[event(name = "x.Y", threshold = "10 ms")] struct Y; });
    assert!(e.contains("only to duration events"), "{e}");
    let e = err(quote! { #[event(name = "x.Y", duration = false, threshold = "10 ms")] struct Y; });
    assert!(e.contains("only to duration events"), "{e}");
}

#[test]
fn rejects_reserved_invalid_and_duplicate_field_names() {
    let e = err(quote! { #[event(name = "x.Y")] struct Y { duration: u64 } });
    assert!(
        e.contains("`duration` is reserved") && e.contains("rename"),
        "{e}"
    );
    let e = err(
        quote! { #[event(name = "x.Y")] struct Y { #[event(rename = "startTime")] start: u64 } },
    );
    assert!(e.contains("`startTime` is reserved"), "{e}");
    let e =
        err(quote! { #[event(name = "x.Y")] struct Y { #[event(rename = "my-field")] a: u64 } });
    assert!(e.contains("not a Java identifier"), "{e}");
    let e = err(quote! { #[event(name = "x.Y")] struct Y { größe: u64 } });
    assert!(
        e.contains("not a Java identifier") && e.contains("rename"),
        "{e}"
    );
    let e = err(quote! { #[event(name = "x.Y")] struct Y { a: u8, #[event(rename = "a")] b: u8 } });
    assert_eq!(e, "duplicate field name `a` (also the name of field `a`)");
}

#[test]
fn rejects_array_slice_and_vec_fields_saying_why() {
    for (input, what) in [
        (
            quote! { #[event(name = "x.Y")] struct Y { a: [u8; 4] } },
            "an array",
        ),
        (
            quote! { #[event(name = "x.Y")] struct Y<'a> { a: &'a [i64] } },
            "a slice",
        ),
        (
            quote! { #[event(name = "x.Y")] struct Y { a: Vec<String> } },
            "a `Vec`",
        ),
        (
            quote! { #[event(name = "x.Y")] struct Y { a: std::collections::VecDeque<u8> } },
            "a `VecDeque`",
        ),
        (
            quote! { #[event(name = "x.Y")] struct Y { a: Option<Box<[f64]>> } },
            "a slice",
        ),
        (
            quote! { #[event(name = "x.Y")] struct Y<'a> { a: Cow<'a, [u8]> } },
            "a slice",
        ),
    ] {
        let e = err(input);
        assert!(
            e.starts_with(&format!("field `a`: {what} cannot be an event field"))
                && e.contains("`jfr print` crash")
                && e.contains("#[event(skip)]")
                && e.contains("docs/jfr-format.md"),
            "{e}"
        );
    }
    // Skipped sequences are fine (the crate docs' example), and so are
    // strings and types that merely contain the words.
    let out = ok(quote! {
        #[event(name = "x.Y")]
        struct Y<'a> { #[event(skip)] scratch: Vec<u8>, s: &'a str, o: Option<&'a str>, v: Vector }
    });
    has(&out, r#"name: "s""#);
    lacks(&out, r#"name: "scratch""#);
}

#[test]
fn rejects_bad_keys_and_combinations() {
    let e = err(quote! { #[event(name = "x.Y", lable = "Y")] struct Y; });
    assert!(
        e.starts_with("unknown event attribute `lable`; expected one of: crate, name"),
        "{e}"
    );
    let e = err(quote! { #[event(name = "x.Y")] struct Y { #[event(unit = "s")] a: u8 } });
    assert!(e.starts_with("unknown field attribute `unit`"), "{e}");
    let e = err(quote! { #[event(name = "x.Y")] #[event(name = "x.Z")] struct Y; });
    assert_eq!(e, "duplicate `name`");
    let e =
        err(quote! { #[event(name = "x.Y")] struct Y { #[event(timespan, data_amount)] a: u64 } });
    assert!(
        e.contains("one content type; this one already has `timespan`"),
        "{e}"
    );
    let e = err(quote! { #[event(name = "x.Y")] struct Y { #[event(timespan = "s")] a: u64 } });
    assert_eq!(
        e,
        r#"unknown timespan unit "s"; expected "ns", "nanos", "ticks", "ms", "millis""#
    );
    let e = err(quote! { #[event(name = "x.Y")] struct Y { #[event(timestamp = "ns")] a: u64 } });
    assert!(e.starts_with("unknown timestamp unit"), "{e}");
    let e = err(quote! { #[event(name = "x.Y")] struct Y { #[event(percentage = "x")] a: f64 } });
    assert_eq!(e, "`percentage` takes no value");
    let e = err(quote! { #[event(name = "x.Y")] struct Y { #[event(skip, label = "A")] a: u64 } });
    assert!(e.contains("skipped field is not recorded"), "{e}");
    let e = err(quote! { #[event(name = "x.Y", category = ["A", ""])] struct Y; });
    assert_eq!(e, "empty category name");
    let e = err(quote! { #[event(name = "x.Y", crate = "not a path")] struct Y; });
    assert_eq!(e, "`not a path` is not a path");
    let e = err(quote! { #[event] struct Y; });
    assert!(
        e.contains("expected attribute arguments in parentheses"),
        "{e}"
    );
}

#[test]
fn reports_every_error_at_once() {
    let all = errs(quote! {
        #[event(name = "bad name", duration, threshold = "1 fortnight")]
        struct Y<T> {
            startTime: u64,
            #[event(timestamp = "weeks")] a: T,
            #[event(bogus)] b: u8,
        }
    });
    assert_eq!(all.len(), 6, "{all:#?}");
    for want in [
        "generic type",
        "`bad name`",
        "unknown unit `fortnight`",
        "unknown timestamp unit",
        "unknown field attribute",
        "`startTime` is reserved",
    ] {
        assert!(all.iter().any(|e| e.contains(want)), "{want}: {all:#?}");
    }
}
