//! The attribute's arguments: `name = "..."` (required) and the optional `entry_type`, `resource_type`,
//! `args`, `block_handler`, `fallback` and `engine`, each at most once, in any order.

use proc_macro2::Span;
use quote::quote_spanned;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Expr, ExprPath, Ident, Lit};

/// Every argument the attribute accepts, for the "unknown argument" message.
const EXPECTED: &str =
    "`name`, `entry_type`, `resource_type`, `args`, `block_handler`, `fallback` or `engine`";

/// The parsed attribute.
#[derive(Default)]
pub(crate) struct Args {
    /// The resource name (an expression of type `&'static str`, usually a literal).
    pub(crate) name: Option<Expr>,
    /// `EntryType` expression, bare `In`/`Out` already resolved to `::floodgate::EntryType::*`.
    pub(crate) entry_type: Option<proc_macro2::TokenStream>,
    /// `ResourceType` expression, bare variants resolved like `entry_type`.
    pub(crate) resource_type: Option<proc_macro2::TokenStream>,
    /// Hot-parameter values, each converted with `ParamValue::from`.
    pub(crate) args: Option<Vec<Expr>>,
    /// Called with the function's arguments and the `BlockError` when the entry is blocked.
    pub(crate) block_handler: Option<ExprPath>,
    /// Called with the function's arguments and the error when the body returns `Err`.
    pub(crate) fallback: Option<ExprPath>,
    /// A `&Floodgate` expression; the process-wide default engine when absent.
    pub(crate) engine: Option<Expr>,
}

impl Args {
    /// Reads one `key = value` pair (the callback of `syn::meta::parser`).
    pub(crate) fn parse(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(key) = meta.path.get_ident().cloned() else {
            return Err(meta.error(format!("unknown argument; expected {EXPECTED}")));
        };
        match key.to_string().as_str() {
            "name" => {
                let name: Expr = meta.value()?.parse()?;
                if let Expr::Lit(lit) = &name {
                    match &lit.lit {
                        Lit::Str(s) if s.value().trim().is_empty() => {
                            return Err(syn::Error::new(
                                s.span(),
                                "the resource name must not be blank",
                            ));
                        }
                        Lit::Str(_) => {}
                        other => {
                            return Err(syn::Error::new(
                                other.span(),
                                "the resource name must be a string",
                            ));
                        }
                    }
                }
                set(&key, &mut self.name, name)
            }
            "entry_type" => {
                let value: Expr = meta.value()?.parse()?;
                let resolved = variant(&value, "EntryType", &["In", "Out"])?;
                set(&key, &mut self.entry_type, resolved)
            }
            "resource_type" => {
                let value: Expr = meta.value()?.parse()?;
                let resolved = variant(
                    &value,
                    "ResourceType",
                    &["Common", "Web", "Rpc", "ApiGateway", "DbSql"],
                )?;
                set(&key, &mut self.resource_type, resolved)
            }
            "args" => {
                let value: Expr = meta.value()?.parse()?;
                let Expr::Array(array) = value else {
                    return Err(syn::Error::new(
                        value.span(),
                        "expected a list of values: `args = [a, b]`",
                    ));
                };
                set(&key, &mut self.args, array.elems.into_iter().collect())
            }
            "block_handler" => {
                let path = function_path(&meta)?;
                set(&key, &mut self.block_handler, path)
            }
            "fallback" => {
                let path = function_path(&meta)?;
                set(&key, &mut self.fallback, path)
            }
            "engine" => {
                let value: Expr = meta.value()?.parse()?;
                set(&key, &mut self.engine, value)
            }
            other => Err(meta.error(format!("unknown argument `{other}`; expected {EXPECTED}"))),
        }
    }
}

/// Stores `value` in `slot`, refusing a second occurrence of `key`.
fn set<T>(key: &Ident, slot: &mut Option<T>, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` is given more than once"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// A handler argument: the path of a function (`on_block`, `Self::on_block`, `handlers::on_block::<T>`).
fn function_path(meta: &ParseNestedMeta<'_>) -> syn::Result<ExprPath> {
    let value: Expr = meta.value()?.parse()?;
    match value {
        Expr::Path(path) => Ok(path),
        other => Err(syn::Error::new(
            other.span(),
            "expected the path of a function, such as `on_block` or `Self::on_block`",
        )),
    }
}

/// A bare identifier names a variant of `::floodgate::<ty>` (and must be one of `variants`); any other
/// expression is used as written.
fn variant(value: &Expr, ty: &str, variants: &[&str]) -> syn::Result<proc_macro2::TokenStream> {
    if let Expr::Path(path) = value {
        if path.qself.is_none() {
            if let Some(ident) = path.path.get_ident() {
                if !variants.iter().any(|v| ident == v) {
                    let list = variants
                        .iter()
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(syn::Error::new(
                        ident.span(),
                        format!("unknown {ty} `{ident}`; expected one of {list}"),
                    ));
                }
                let ty = Ident::new(ty, Span::call_site());
                return Ok(quote_spanned!(ident.span()=> ::floodgate::#ty::#ident));
            }
        }
    }
    Ok(quote_spanned!(value.span()=> #value))
}
