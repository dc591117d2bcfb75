//! The expansion: the function keeps its signature; its body becomes
//!
//! 1. enter the resource (`enter()` for a sync fn, the task-safe `enter_async()` for an `async fn`); when
//!    blocked, return the block handler's value, else the fallback's, else the block converted into the
//!    `Result`'s error;
//! 2. run the original body inside a closure (sync) or an async block (async), so that `return` and `?`
//!    end the body, not the function, and the entry guard outlives them;
//! 3. trace an `Err` into the entry, hand it to the fallback if there is one, exit the entry, return.
//!
//! Locals of the expansion use mixed-site hygiene: the body cannot see or shadow them.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{AttrStyle, FnArg, Ident, Item, ItemFn, Pat, ReturnType, Type};

use crate::args::Args;

/// Expands `#[resource(args)] item`.
pub(crate) fn expand(args: Args, item: TokenStream) -> syn::Result<TokenStream> {
    let function = match syn::parse2::<Item>(item) {
        Ok(Item::Fn(function)) => function,
        Ok(other) => {
            return Err(syn::Error::new_spanned(
                other,
                "`#[floodgate::resource]` applies to functions with a body",
            ));
        }
        Err(e) => {
            return Err(syn::Error::new(
                e.span(),
                "`#[floodgate::resource]` applies to functions with a body",
            ));
        }
    };
    let Some(name) = &args.name else {
        return Err(syn::Error::new(
            Span::call_site(),
            "missing resource name: write `#[floodgate::resource(name = \"...\")]`",
        ));
    };
    let ItemFn {
        attrs,
        vis,
        sig,
        mut block,
    } = function;
    if let Some(constness) = &sig.constness {
        return Err(syn::Error::new(
            constness.span(),
            "`#[floodgate::resource]` cannot guard a `const fn`",
        ));
    }
    // `#[async_trait]` (tonic's service traits) expands first: the method is a plain `fn` returning
    // `Pin<Box<dyn Future<Output = T> + ..>>` whose body is `Box::pin(async move { .. })`. The guard
    // goes inside that async block, with `T` as the output, as for an `async fn`.
    let boxed = if sig.asyncness.is_none() {
        boxed_future(&sig.output, &block)
    } else {
        None
    };
    if let Some((_, inner)) = &boxed {
        // The body `async_trait` makes moves `self` and the owned arguments in its first lines: a
        // fallback, called after the body with the arguments, could not have them. (`args` borrowed
        // across the body compile where nothing they borrow is moved; rustc says so otherwise.)
        if let Some(fallback) = &args.fallback {
            return Err(syn::Error::new(
                fallback.span(),
                "`fallback` is not supported on a function returning a boxed future (what `#[async_trait]` makes of a method: its body moves the arguments): use `block_handler`, or guard an inherent `async fn` it calls",
            ));
        }
        *block = inner.clone();
    }
    let is_async = sig.asyncness.is_some() || boxed.is_some();
    let handlers = args.block_handler.is_some() || args.fallback.is_some();
    let forwarded = if handlers {
        forwarded_arguments(&sig)?
    } else {
        Vec::new()
    };

    // The return type, written where an expression needs it: `impl Trait` becomes `_`.
    let (mut output, output_span) = match (&boxed, &sig.output) {
        (Some((output, _)), _) => (output.clone(), output.span()),
        (None, ReturnType::Default) => (syn::parse_quote!(()), sig.ident.span()),
        (None, ReturnType::Type(_, ty)) => ((**ty).clone(), ty.span()),
    };
    InferImplTrait.visit_type_mut(&mut output);

    let entry = Ident::new("__floodgate_entry", Span::mixed_site());
    let admitted = Ident::new("__floodgate_admitted", Span::mixed_site());
    let block_error = Ident::new("__floodgate_block", Span::mixed_site());
    let out = Ident::new("__floodgate_out", Span::mixed_site());
    let error = Ident::new("__floodgate_error", Span::mixed_site());
    let returned = Ident::new("__floodgate_returned", Span::mixed_site());
    let awaited = if is_async { quote!(.await) } else { quote!() };

    // 1. Enter.
    let engine_handle = Ident::new("__floodgate_engine", Span::mixed_site());
    let (bind_engine, engine) = match &args.engine {
        // A handle of the call's own (one reference count) only where the entry would otherwise
        // borrow `self` in a method that needs `self` mutably or by value.
        Some(engine) if mentions_self(engine.to_token_stream()) && owns_or_mutates_self(&sig) => (
            quote_spanned!(engine.span()=>
                let #engine_handle = ::floodgate::__private::engine_handle(#engine);
            ),
            quote!(#engine_handle),
        ),
        Some(engine) => (
            quote_spanned!(engine.span()=>
                let #engine_handle = ::floodgate::__private::engine(#engine);
            ),
            quote!(#engine_handle),
        ),
        None => (quote!(), quote!(::floodgate::global())),
    };
    let mut builder = quote!(#engine.entry(#name));
    if let Some(entry_type) = &args.entry_type {
        builder = quote!(#builder.entry_type(#entry_type));
    }
    if let Some(resource_type) = &args.resource_type {
        builder = quote!(#builder.resource_type(#resource_type));
    }
    if let Some(values) = args.args.as_ref().filter(|v| !v.is_empty()) {
        let values = values
            .iter()
            .map(|v| quote_spanned!(v.span()=> ::floodgate::ParamValue::from(#v)));
        builder = quote!(#builder.args([#(#values),*]));
    }
    let enter = if is_async {
        quote!(::floodgate::__private::EnterAsync::enter_in_task(#builder).await)
    } else {
        quote!(#builder.enter())
    };
    let on_block = match (&args.block_handler, &args.fallback) {
        (Some(handler), _) => {
            quote_spanned!(handler.span()=> #handler(#(#forwarded,)* #block_error) #awaited)
        }
        (None, Some(fallback)) => {
            let converted = quote_spanned!(output_span=>
                ::floodgate::__private::block_error::<#output>(#block_error)
            );
            quote_spanned!(fallback.span()=> #fallback(#(#forwarded,)* #converted) #awaited)
        }
        (None, None) => quote_spanned!(output_span=>
            ::floodgate::__private::blocked::<#output>(#block_error)
        ),
    };

    // 2. Run the body.
    let inner_attrs = attrs
        .iter()
        .filter(|a| matches!(a.style, AttrStyle::Inner(_)));
    let outer_attrs = attrs.iter().filter(|a| matches!(a.style, AttrStyle::Outer));
    let run = if is_async {
        // A bound on the future does not type the async block's own output (the body's `Ok(Box::new(x))`
        // for a `Result<Box<dyn Trait>, E>` was typed `Result<Box<X>, _>`): a `return` of the output
        // type ahead of the body fixes the block's type, and the `let` coerces the body's value to it.
        let returned = Ident::new("__floodgate_body", Span::mixed_site());
        quote!(::floodgate::__private::traced_body(#entry.entry(), ::floodgate::__private::typed_future::<#output, _>(async {
            #[allow(unreachable_code)]
            if let ::core::option::Option::Some(#returned) =
                ::core::option::Option::None::<#output>
            {
                return #returned;
            }
            let #returned: #output = #block;
            // Unreachable after a body that never returns.
            #[allow(unreachable_code)]
            return #returned;
        }))
        .await)
    } else {
        quote!(::floodgate::__private::call::<#output, _>(|| #block))
    };

    // 3. Trace, fall back, exit.
    let trace = quote! {
        {
            #[allow(unused_imports)]
            use ::floodgate::__private::{
                TraceAsRef as _, TraceAsRefSend as _, TraceError as _, TraceNothing as _,
                TraceUntyped as _,
            };
            (&&&&::floodgate::__private::Probe(&#out)).__floodgate_trace(&#entry);
        }
    };
    let finish = match &args.fallback {
        None => quote! {
            #trace
            ::core::mem::drop(#entry);
            #out
        },
        Some(fallback) => {
            let split = quote_spanned!(output_span=>
                ::floodgate::__private::split_error::<#output>(#out)
            );
            let call = quote_spanned!(fallback.span()=> #fallback(#(#forwarded,)* #error) #awaited);
            let rejoin = quote_spanned!(output_span=>
                ::floodgate::__private::rejoin_error::<#output>(#error)
            );
            // The fallback gets the errors that were traced; one the engine's filters ignore is
            // returned as it is (Sentinel rethrows its `exceptionsToIgnore`).
            quote! {
                #trace
                let #returned = match #split {
                    ::core::result::Result::Ok(#out) => #out,
                    ::core::result::Result::Err(#error) if #entry.falls_back() => #call,
                    ::core::result::Result::Err(#error) => #rejoin,
                };
                ::core::mem::drop(#entry);
                #returned
            }
        }
    };

    let guard = if is_async {
        quote!(::floodgate::__private::Guard::new_async(#admitted))
    } else {
        quote!(::floodgate::__private::Guard::new(#admitted))
    };
    let guarded = quote! {
        #bind_engine
        let #entry = match #enter {
            ::core::result::Result::Ok(#admitted) => #guard,
            ::core::result::Result::Err(#block_error) => return #on_block,
        };
        let #out = #run;
        #finish
    };
    let body = if boxed.is_some() {
        quote!(::std::boxed::Box::pin(async move { #guarded }))
    } else {
        guarded
    };
    Ok(quote! {
        #(#outer_attrs)*
        #vis #sig {
            #(#inner_attrs)*
            #body
        }
    })
}

/// `Some((T, body))` for the shape `#[async_trait]` gives a method: returning
/// `Pin<Box<dyn Future<Output = T> ..>>` with the body `Box::pin(async move { body })`.
fn boxed_future(output: &ReturnType, block: &syn::Block) -> Option<(Type, syn::Block)> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    let output = future_output(last_generic(ty, "Pin")?)?;
    let [syn::Stmt::Expr(syn::Expr::Call(call), None)] = block.stmts.as_slice() else {
        return None;
    };
    let syn::Expr::Path(func) = &*call.func else {
        return None;
    };
    let names: Vec<String> = func
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    if !names.ends_with(&["Box".to_owned(), "pin".to_owned()]) || call.args.len() != 1 {
        return None;
    }
    let syn::Expr::Async(body) = &call.args[0] else {
        return None;
    };
    Some((output, body.block.clone()))
}

/// The single type argument of `ty` if its path ends with `name` (`Pin<X>` → `X`).
fn last_generic<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if segment.ident != name {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    args.args.iter().find_map(|a| match a {
        syn::GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// `T` of `Box<dyn Future<Output = T> + ..>`.
fn future_output(boxed: &Type) -> Option<Type> {
    let Type::TraitObject(object) = last_generic(boxed, "Box")? else {
        return None;
    };
    object.bounds.iter().find_map(|bound| {
        let syn::TypeParamBound::Trait(bound) = bound else {
            return None;
        };
        let segment = bound.path.segments.last()?;
        if segment.ident != "Future" {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &segment.arguments else {
            return None;
        };
        args.args.iter().find_map(|a| match a {
            syn::GenericArgument::AssocType(assoc) if assoc.ident == "Output" => {
                Some(assoc.ty.clone())
            }
            _ => None,
        })
    })
}

/// The expressions that pass the function's own arguments on to a handler: `self` first if there is a
/// receiver, then each argument by name. An argument bound by a pattern has no name to pass.
fn forwarded_arguments(sig: &syn::Signature) -> syn::Result<Vec<TokenStream>> {
    sig.inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(receiver) => {
                let token = receiver.self_token;
                Ok(quote!(#token))
            }
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
                    let ident = &ident.ident;
                    Ok(quote!(#ident))
                }
                other => Err(syn::Error::new_spanned(
                    other,
                    "`block_handler` and `fallback` receive the function's arguments: bind this one to a plain name",
                )),
            },
        })
        .collect()
}

/// Whether `tokens` name `self` anywhere.
fn mentions_self(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => ident == "self",
        proc_macro2::TokenTree::Group(group) => mentions_self(group.stream()),
        _ => false,
    })
}

/// Whether the function takes `self` by value or as `&mut self`.
fn owns_or_mutates_self(sig: &syn::Signature) -> bool {
    sig.inputs.iter().any(|input| match input {
        FnArg::Receiver(receiver) => receiver.reference.is_none() || receiver.mutability.is_some(),
        FnArg::Typed(_) => false,
    })
}

/// Replaces `impl Trait` with `_`, which an expression may name.
struct InferImplTrait;

impl VisitMut for InferImplTrait {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::ImplTrait(impl_trait) = ty {
            *ty = Type::Infer(syn::TypeInfer {
                underscore_token: syn::Token![_](impl_trait.span()),
            });
            return;
        }
        visit_mut::visit_type_mut(self, ty);
    }
}
