//! Code generation: from a validated struct to `impl Event`.
//!
//! # Shape
//!
//! ```text
//! impl<'a> P::Event for Request<'a> {
//!     fn event_type() -> &'static P::EventType {
//!         const _: () = assert!(<u64 as P::FieldValue>::KIND.is_integer(), ".."); // per content attribute
//!         static INFO: P::EventTypeInfo = P::EventTypeInfo { .., fields: &[P::FieldInfo { .. }, ..] };
//!         static TYPE: P::EventType = P::EventType::new(&INFO);
//!         &TYPE
//!     }
//!     // The most bytes the fields take, from their kinds (`None`: a string).
//!     const FIELDS_MAX_LEN: Option<usize> = P::FieldKind::max_len_of(&[<u64 as P::FieldValue>::KIND, ..]);
//!     // Encoded in place, in the write section, only if every field's type
//!     // is the recorder's own; else through the thread's scratch.
//!     const BUILTIN_FIELDS: Option<P::BuiltinEncoder> = P::BuiltinEncoder::all(&[<u64 as P::FieldValue>::BUILTIN, ..]);
//!     fn write_fields(&self, w: &mut P::FieldWriter<'_>) {
//!         <&'a str as P::FieldValue>::write(&self.path, w); // per recorded field
//!     }
//! }
//! ```
//!
//! `P` is `<crate>::__private`, with `<crate>` from `#[event(crate = "..")]`
//! or `::flightrec`.
//!
//! # Lifetimes
//!
//! A `static` inside the impl cannot name the impl's lifetimes, so in the
//! descriptor each of the struct's lifetime parameters is replaced by
//! `'static` (`&'a str` becomes `&'static str`). `FieldValue` impls do not
//! depend on lifetimes, so `KIND` and `CONTENT` are the same constants.
//!
//! Invariant: the descriptor lists exactly the non-skipped fields, in
//! declaration order, and `write_fields` writes exactly those fields in that
//! order; the recorder relies on this to keep metadata and records in step.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Data, DeriveInput, Fields, GenericParam, Ident, Lifetime, LitStr, Type};

use crate::attr::{ContainerAttrs, Errors, FieldAttrs, Fits};
use crate::validate;

/// One recorded field.
struct RecordedField<'a> {
    /// The Rust field.
    ident: &'a Ident,
    /// The field's type as declared.
    ty: &'a Type,
    /// The field's type with the struct's lifetimes made `'static`.
    static_ty: Type,
    /// The JFR field name.
    name: String,
    /// Its attributes.
    attrs: FieldAttrs,
}

/// Expands `#[derive(Event)]` on `input`, or returns every error found.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let fields = named_fields(input, &mut errors);
    reject_non_lifetime_generics(input, &mut errors);
    let container = ContainerAttrs::parse(&input.attrs, &input.ident, &mut errors);
    let recorded = recorded_fields(input, fields, &mut errors);
    errors.finish(())?;
    Ok(generate(input, &container, &recorded))
}

/// The struct's named fields (none for a unit struct); records an error for
/// anything but a struct with named fields.
fn named_fields<'a>(input: &'a DeriveInput, errors: &mut Errors) -> Vec<&'a syn::Field> {
    const NEED: &str = "#[derive(Event)] needs a struct with named fields";
    match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(unnamed) => {
                errors.at(
                    unnamed.span(),
                    format_args!(
                        "{NEED}: a tuple struct's fields have no names to record them under"
                    ),
                );
                Vec::new()
            }
        },
        Data::Enum(e) => {
            errors.at(
                e.enum_token.span,
                format_args!("{NEED}, not an enum: a JFR event type has one fixed set of fields"),
            );
            Vec::new()
        }
        Data::Union(u) => {
            errors.at(u.union_token.span, format_args!("{NEED}, not a union"));
            Vec::new()
        }
    }
}

/// Records an error for each type or const parameter: the descriptor is one
/// `static`, shared by every instantiation, so it cannot depend on them.
fn reject_non_lifetime_generics(input: &DeriveInput, errors: &mut Errors) {
    for param in &input.generics.params {
        let (span, what) = match param {
            GenericParam::Lifetime(_) => continue,
            GenericParam::Type(t) => (t.ident.span(), "type"),
            GenericParam::Const(c) => (c.ident.span(), "const"),
        };
        errors.at(
            span,
            format_args!(
                "#[derive(Event)] does not support generic {what} parameters: an event type's descriptor is one static \
                 shared by every instantiation (lifetime parameters are fine)"
            ),
        );
    }
}

/// Parses the fields' attributes and names, dropping skipped fields.
fn recorded_fields<'a>(
    input: &DeriveInput,
    fields: Vec<&'a syn::Field>,
    errors: &mut Errors,
) -> Vec<RecordedField<'a>> {
    let mut statics = StaticLifetimes(
        input
            .generics
            .lifetimes()
            .map(|l| l.lifetime.ident.clone())
            .collect(),
    );
    let mut seen: HashMap<String, &Ident> = HashMap::new();
    let mut recorded = Vec::new();
    for field in fields {
        let attrs = FieldAttrs::parse(&field.attrs, errors);
        let Some(ident) = &field.ident else { continue };
        if attrs.skip {
            continue;
        }
        let (name, span) = match &attrs.rename {
            // Validated when parsed.
            Some(lit) => (lit.value(), lit.span()),
            None => {
                let name = ident.unraw().to_string();
                if let Err(msg) = validate::field_name(&name, true) {
                    errors.at(ident.span(), msg);
                }
                (name, ident.span())
            }
        };
        if let Some(first) = seen.insert(name.clone(), ident) {
            errors.at(
                span,
                format_args!("duplicate field name `{name}` (also the name of field `{first}`)"),
            );
        }
        if let Some(what) = sequence_kind(&field.ty) {
            errors.at(
                field.ty.span(),
                format_args!(
                    "field `{ident}`: {what} cannot be an event field. JFR array fields of numbers, \
                     `bool`s or strings make JDK 25's `jfr print` crash (a NullPointerException in \
                     its pretty printer), so the event API has none; record each value as its own \
                     field, join them into a string, or mark the field #[event(skip)] \
                     (docs/jfr-format.md, \"Arrays and the printers\")"
                ),
            );
        }
        let mut static_ty = field.ty.clone();
        statics.visit_type_mut(&mut static_ty);
        recorded.push(RecordedField {
            ident,
            ty: &field.ty,
            static_ty,
            name,
            attrs,
        });
    }
    recorded
}

/// What kind of sequence `ty` is, if it is one written the usual ways: an
/// array, a slice, a `Vec`/`VecDeque`, or a reference, `Option` or smart
/// pointer to one. These have no `FieldValue` impl, so the check only turns
/// an opaque "trait not implemented" error into one that says why.
fn sequence_kind(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Array(_) => Some("an array"),
        Type::Slice(_) => Some("a slice"),
        Type::Reference(r) => sequence_kind(&r.elem),
        Type::Paren(p) => sequence_kind(&p.elem),
        Type::Group(g) => sequence_kind(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            match last.ident.to_string().as_str() {
                "Vec" => Some("a `Vec`"),
                "VecDeque" => Some("a `VecDeque`"),
                "Option" | "Box" | "Rc" | "Arc" | "Cow" => match &last.arguments {
                    syn::PathArguments::AngleBracketed(args) => {
                        args.args.iter().find_map(|a| match a {
                            syn::GenericArgument::Type(t) => sequence_kind(t),
                            _ => None,
                        })
                    }
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// Replaces the named lifetimes (the struct's parameters) by `'static`.
struct StaticLifetimes(Vec<Ident>);

impl VisitMut for StaticLifetimes {
    fn visit_lifetime_mut(&mut self, l: &mut Lifetime) {
        if self.0.contains(&l.ident) {
            *l = Lifetime::new("'static", l.span());
        }
    }
}

/// `Some("..")` or `None` as an expression.
fn opt_str(lit: Option<&LitStr>) -> TokenStream {
    match lit {
        Some(l) => quote!(::core::option::Option::Some(#l)),
        None => quote!(::core::option::Option::None),
    }
}

/// The `impl Event` for a validated struct.
fn generate(input: &DeriveInput, c: &ContainerAttrs, fields: &[RecordedField<'_>]) -> TokenStream {
    let krate = c
        .krate
        .as_ref()
        .map_or_else(|| quote!(::flightrec), |p| quote!(#p));
    let p = quote!(#krate::__private);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();

    let name = c.name.as_ref().expect("validated: name is required");
    let label = opt_str(c.label.as_ref());
    let description = opt_str(c.description.as_ref());
    let category = &c.category;
    let experimental = c.experimental;
    let kind = if c.duration {
        quote!(#p::EventKind::Duration)
    } else {
        quote!(#p::EventKind::Instant)
    };
    let enabled = c.enabled;
    let threshold = match c.threshold {
        Some(t) if (t.secs, t.nanos) != (0, 0) => {
            let (secs, nanos) = (t.secs, t.nanos);
            quote!(#p::Duration::new(#secs, #nanos))
        }
        _ => quote!(#p::Duration::ZERO),
    };
    let stack_trace = c.stack_trace;

    let checks = fields.iter().filter_map(|f| content_check(&p, f));
    let infos = fields.iter().map(|f| field_info(&p, f));
    let writes = fields.iter().map(|f| {
        let (ident, ty) = (f.ident, f.ty);
        quote_spanned!(ty.span()=> <#ty as #p::FieldValue>::write(&self.#ident, w);)
    });
    let kinds = fields.iter().map(|f| {
        let ty = f.ty;
        quote_spanned!(ty.span()=> <#ty as #p::FieldValue>::KIND)
    });
    let builtins = fields.iter().map(|f| {
        let ty = f.ty;
        quote_spanned!(ty.span()=> <#ty as #p::FieldValue>::BUILTIN)
    });
    let w = if fields.is_empty() {
        format_ident!("_w")
    } else {
        format_ident!("w")
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #p::Event for #ident #ty_generics #where_clause {
            const FIELDS_MAX_LEN: ::core::option::Option<usize> =
                #p::FieldKind::max_len_of(&[#(#kinds),*]);

            const BUILTIN_FIELDS: ::core::option::Option<#p::BuiltinEncoder> =
                #p::BuiltinEncoder::all(&[#(#builtins),*]);

            #[inline]
            fn event_type() -> &'static #p::EventType {
                #(#checks)*
                static INFO: #p::EventTypeInfo = #p::EventTypeInfo {
                    name: #name,
                    label: #label,
                    description: #description,
                    category: &[#(#category),*],
                    experimental: #experimental,
                    kind: #kind,
                    defaults: #p::DefaultSettings {
                        enabled: #enabled,
                        threshold: #threshold,
                        stack_trace: #stack_trace,
                    },
                    fields: &[#(#infos),*],
                };
                static TYPE: #p::EventType = #p::EventType::new(&INFO);
                &TYPE
            }

            // Always: its one caller is the recorder's encoder, and inlined
            // there the field writes share one cursor in registers.
            #[inline(always)]
            fn write_fields(&self, #w: &mut #p::FieldWriter<'_>) {
                #(#writes)*
            }
        }
    }
}

/// The `FieldInfo` expression for one field.
fn field_info(p: &TokenStream, f: &RecordedField<'_>) -> TokenStream {
    let name = &f.name;
    let ty = &f.static_ty;
    let span = f.ty.span();
    let label = opt_str(f.attrs.label.as_ref());
    let description = opt_str(f.attrs.description.as_ref());
    let content = match f.attrs.content {
        Some((_, c)) => {
            let variant = Ident::new(c.variant(), Span::call_site());
            quote!(::core::option::Option::Some(#p::ContentType::#variant))
        }
        None => quote_spanned!(span=> <#ty as #p::FieldValue>::CONTENT),
    };
    let kind = quote_spanned!(span=> <#ty as #p::FieldValue>::KIND);
    quote! {
        #p::FieldInfo {
            name: #name,
            kind: #kind,
            label: #label,
            description: #description,
            content: #content,
        }
    }
}

/// A compile-time assertion that an explicit content type fits the field's
/// kind (as `ContentType::fits` would say), pointing at the attribute.
fn content_check(p: &TokenStream, f: &RecordedField<'_>) -> Option<TokenStream> {
    let (span, content) = f.attrs.content?;
    let ty = &f.static_ty;
    let kind = quote!(<#ty as #p::FieldValue>::KIND);
    let float = quote!(::core::matches!(#kind, #p::FieldKind::F32 | #p::FieldKind::F64));
    let (cond, needs) = match content.fits() {
        Fits::Integer => (quote!(#kind.is_integer()), "an integer"),
        Fits::Float => (float, "an `f32` or `f64`"),
        Fits::IntegerOrFloat => (
            quote!(#kind.is_integer() || #float),
            "an integer or floating-point",
        ),
    };
    let msg = format!(
        "field `{}`: `{}` needs {needs} field type",
        f.ident,
        content.key()
    );
    Some(quote_spanned!(span=> const _: () = ::core::assert!(#cond, #msg);))
}

#[cfg(all(test, not(flightrec_loom)))]
mod tests;
