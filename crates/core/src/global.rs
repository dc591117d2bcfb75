//! The process-wide default engine behind the free functions, like tracing's global dispatcher.
//!
//! Until [`set_global_default`] is called, the default is an engine built with
//! `Floodgate::builder().build()` on first use. `set_global_default` succeeds once, and only before the
//! default was first used; libraries should take a `&Floodgate` instead of relying on it.

use std::sync::OnceLock;

use thiserror::Error;

use crate::entry::EntryBuilder;
use crate::floodgate::Floodgate;

static GLOBAL: OnceLock<Floodgate> = OnceLock::new();

/// The global default was already set (or already used).
#[derive(Debug, Error)]
#[error("a global default engine is already in use")]
pub struct SetGlobalDefaultError(());

/// Makes `engine` the process-wide default.
pub fn set_global_default(engine: Floodgate) -> Result<(), SetGlobalDefaultError> {
    GLOBAL.set(engine).map_err(|_| SetGlobalDefaultError(()))
}

/// The process-wide default engine.
pub fn global() -> &'static Floodgate {
    GLOBAL.get_or_init(Floodgate::default)
}

/// Starts an entry on `resource` with the default engine.
///
/// ```
/// let entry = floodgate_core::entry("checkout").enter();
/// assert!(entry.is_ok());
/// ```
pub fn entry(resource: &str) -> EntryBuilder<'_> {
    global().entry(resource)
}
