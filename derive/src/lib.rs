//! `#[derive(Event)]` for flightrec: declares a JFR event type from a struct.
//!
//! Use it through the facade, `flightrec::Event`. This crate's only item is
//! the derive; the runtime it targets is `flightrec-recorder`.
//!
//! ```ignore
//! // Compiled for real in recorder/tests/derive_event.rs.
//! use flightrec::Event;
//!
//! #[derive(Event)]
//! #[event(name = "com.example.Request", label = "Request", category = ["Example", "HTTP"])]
//! #[event(duration, threshold = "10 ms")]
//! struct Request<'a> {
//!     #[event(label = "Path")]
//!     path: &'a str,
//!     #[event(data_amount)]
//!     bytes: u64,
//!     #[event(skip)]
//!     scratch: Vec<u8>,
//! }
//! ```
//!
//! # What is generated
//!
//! An `impl Event` whose `event_type()` returns one `static EventType`
//! built by a `const fn` from a `static EventTypeInfo`: no lazy
//! initialisation, so the hot path's first step is one load at a fixed
//! address. Each field's JFR kind is `<T as FieldValue>::KIND` and its
//! content type `<T as FieldValue>::CONTENT` unless an attribute gives one.
//! `write_fields` writes the recorded fields in declaration order.
//!
//! # Accepted input
//!
//! A struct with named fields, or a unit struct (an event with no fields of
//! its own). Lifetime parameters are allowed; type and const parameters,
//! enums, unions and tuple structs are rejected, because the descriptor is
//! one static shared by every instantiation.
//!
//! # Struct attributes: `#[event(...)]`
//!
//! Several `#[event(...)]` attributes are merged; each key may appear once.
//!
//! | key | value | default |
//! |---|---|---|
//! | `name` | `"com.example.Request"`: dot-separated Java identifiers | required |
//! | `label` | `"..."` | none |
//! | `description` | `"..."` | none |
//! | `category` | `"A"` or `["A", "B"]`, outermost first | none |
//! | `experimental` | flag | off |
//! | `duration` | flag: a duration event (start time and duration) | instant event |
//! | `enabled` | flag; `enabled = false` turns the type off by default | `true` |
//! | `threshold` | `"<integer> <unit>"`, unit `ns`/`us`/`ms`/`s`/`m`/`h`, or `"0"`; only with `duration` | `0` |
//! | `stack_trace` | flag: capture a stack trace with each event | off |
//! | `crate` | `"path"` to the crate exposing `__private` | `"::flightrec"` |
//!
//! A *flag* is written `key` or `key = true` / `key = false`.
//!
//! # Field attributes: `#[event(...)]`
//!
//! | key | meaning |
//! |---|---|
//! | `rename = "javaName"` | JFR field name (else the Rust name, without `r#`) |
//! | `label = "..."`, `description = "..."` | annotations |
//! | `timespan`, `timespan = "ns" \| "ticks" \| "ms"` | a time span (integers; bare = nanoseconds) |
//! | `timestamp`, `timestamp = "millis" \| "ticks"` | a point in time (integers; bare = millis since the epoch) |
//! | `data_amount`, `data_amount = "bytes" \| "bits"` | an amount of data (integers; bare = bytes) |
//! | `percentage` | a fraction in 0..1 (`f32`/`f64`) |
//! | `frequency` | in Hz (integers or floats) |
//! | `memory_address` | an address (integers) |
//! | `skip` | not recorded; takes no other key |
//!
//! A field's type is any type with a `FieldValue` impl, such as the integers,
//! floats, `bool`, `char`, strings, `Option` of a string, `Duration`,
//! `SystemTime`, and references to them. There are no array fields: an
//! array, slice, `Vec` or `VecDeque` field is rejected with a message saying
//! why (JDK 25's `jfr print` crashes on JFR arrays of numbers, booleans or
//! strings, see `docs/jfr-format.md`); mark such a field `skip`.
//!
//! A field has at most one content type. Whether it fits the field's kind is
//! checked at compile time (a `const` assertion naming the field).
//! `timespan`/`timestamp` also accept `"nanos"`/`"millis"`/`"ms"` spellings.
//! Field names must be Java identifiers, unique, and not one of the implicit
//! fields `startTime`, `duration`, `eventThread`, `stackTrace`.
//!
//! # Paths
//!
//! Generated code names everything through `<crate>::__private`, which the
//! facade (and the recorder, for its own tests) re-export for this purpose.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod attr;
mod expand;
mod timed;
mod validate;

/// Declares a JFR event type; see the [crate docs](crate) for attributes.
#[proc_macro_derive(Event, attributes(event))]
pub fn derive_event(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Times and traces a function, a method, or every method of an `impl`
/// block, as JEP 520 does for Java methods: each instrumented function has a
/// static site that registers on its first call and costs one relaxed load
/// and a branch while no filter selects it. Select sites at run time with
/// `method-timing=FILTER` / `method-trace=FILTER` (`FLIGHTREC`), the
/// `jdk.MethodTiming#filter` / `jdk.MethodTrace#filter` settings, or
/// `Recording::set`. Arguments: `tag = "io"` or `tags = ["io", "db"]`
/// (selected by the filter `@io`). The path a filter matches is the
/// function's Rust path, `krate::module::Type::method`.
///
/// ```ignore
/// #[flightrec::timed(tag = "db")]
/// fn query(sql: &str) -> usize { sql.len() }
/// ```
#[proc_macro_attribute]
pub fn timed(
    args: proc_macro::TokenStream,
    item: proc_macro::TokenStream,
) -> proc_macro::TokenStream {
    let args = syn::parse_macro_input!(args as timed::Args);
    let item = syn::parse_macro_input!(item as syn::Item);
    timed::expand(args, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
