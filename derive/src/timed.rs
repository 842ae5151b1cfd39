//! `#[timed]`: instruments a function, or every function of an `impl`
//! block, with a static `Site` and a guard held for the call.
//!
//! The function's body becomes
//!
//! ```text
//! {
//!     fn __flightrec_site_path() -> &'static str { type_name_of_val(&__flightrec_site_path) }
//!     static __FLIGHTREC_SITE: Site = Site::nested(__flightrec_site_path, file!(), line!(), &[tags]);
//!     let __flightrec_guard = __FLIGHTREC_SITE.enter();
//!     <original body>
//! }
//! ```
//!
//! The nested function's `type_name` is the compiler's own path of the
//! function (`krate::module::Type::method::__flightrec_site_path`, or
//! `<krate::Type as krate::Trait>::method::…`), so the macro needs no
//! knowledge of the enclosing `impl`. For an `async fn` the body is the
//! future's: the guard is created at the first poll and dropped at
//! completion (or when the future is dropped).

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ImplItem, Item, Lit, LitStr, MetaNameValue, Token};

/// The attribute's arguments: `tag = "x"` or `tags = ["x", "y"]`.
pub(crate) struct Args {
    tags: Vec<LitStr>,
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let metas = Punctuated::<MetaNameValue, Token![,]>::parse_terminated(input)?;
        let mut tags = Vec::new();
        for m in metas {
            let lit_str = |e: &Expr| match e {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Ok(s.clone()),
                other => Err(syn::Error::new_spanned(other, "expected a string literal")),
            };
            if m.path.is_ident("tag") {
                tags.push(lit_str(&m.value)?);
            } else if m.path.is_ident("tags") {
                let Expr::Array(a) = &m.value else {
                    return Err(syn::Error::new_spanned(
                        &m.value,
                        "expected an array of strings: tags = [\"io\", \"db\"]",
                    ));
                };
                for e in &a.elems {
                    tags.push(lit_str(e)?);
                }
            } else {
                return Err(syn::Error::new_spanned(
                    &m.path,
                    "unknown argument (expected `tag = \"..\"` or `tags = [..]`)",
                ));
            }
        }
        for t in &tags {
            let v = t.value();
            let ok = v
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && v.chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !ok {
                return Err(syn::Error::new_spanned(
                    t,
                    "a tag is a name of letters, digits, `_`, `.` and `-` (filters select it as `@name`)",
                ));
            }
        }
        Ok(Self { tags })
    }
}

/// Expands `#[timed]` on `item`.
pub(crate) fn expand(args: Args, item: Item) -> syn::Result<TokenStream> {
    match item {
        Item::Fn(mut f) => {
            instrument(&args, &mut f.sig, &mut f.block)?;
            Ok(quote!(#f))
        }
        Item::Impl(mut imp) => {
            for it in &mut imp.items {
                if let ImplItem::Fn(f) = it {
                    if f.sig.constness.is_some() {
                        continue;
                    }
                    instrument(&args, &mut f.sig, &mut f.block)?;
                }
            }
            Ok(quote!(#imp))
        }
        other => Err(syn::Error::new_spanned(
            other,
            "#[timed] goes on a function, a method or an `impl` block",
        )),
    }
}

fn instrument(args: &Args, sig: &mut syn::Signature, block: &mut syn::Block) -> syn::Result<()> {
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new_spanned(
            c,
            "#[timed] cannot time a `const fn` (reading the clock is not const)",
        ));
    }
    let tags = &args.tags;
    let body = &*block;
    let new: syn::Block = syn::parse2(quote! {{
        #[allow(non_snake_case, dead_code)]
        fn __flightrec_site_path() -> &'static str {
            ::core::any::type_name_of_val(&__flightrec_site_path)
        }
        static __FLIGHTREC_SITE: ::flightrec::timing::Site = ::flightrec::timing::Site::nested(
            __flightrec_site_path,
            ::core::file!(),
            ::core::line!(),
            &[#(#tags),*],
        );
        let __flightrec_guard = __FLIGHTREC_SITE.enter();
        #body
    }})?;
    *block = new;
    Ok(())
}

/// For tests: the expansion of a function.
#[cfg(test)]
pub(crate) fn expand_fn(args: TokenStream, item: syn::ItemFn) -> syn::Result<TokenStream> {
    expand(syn::parse2(args)?, Item::Fn(item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_gets_a_site_and_a_guard_around_its_body() {
        let f: syn::ItemFn = syn::parse_quote! { fn work(n: u32) -> u32 { n + 1 } };
        let out = expand_fn(quote!(tags = ["io", "db"]), f)
            .unwrap()
            .to_string();
        assert!(out.contains("Site :: nested"), "{out}");
        assert!(out.contains("\"io\" , \"db\""), "{out}");
        assert!(out.contains("__FLIGHTREC_SITE . enter ()"), "{out}");
        assert!(out.contains("n + 1"), "{out}");
    }

    #[test]
    fn bad_arguments_and_const_fns_are_refused() {
        let f: syn::ItemFn = syn::parse_quote! { fn work() {} };
        assert!(expand_fn(quote!(colour = "red"), f.clone()).is_err());
        assert!(expand_fn(quote!(tag = "has space"), f).is_err());
        let c: syn::ItemFn = syn::parse_quote! { const fn k() -> u8 { 1 } };
        let e = expand_fn(quote!(), c).unwrap_err().to_string();
        assert!(e.contains("const fn"), "{e}");
    }
}
