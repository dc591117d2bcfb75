//! Which business errors count as exceptions (Sentinel's `exceptionsToTrace` / `exceptionsToIgnore`).

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use crate::block::BlockError;

type Predicate = Arc<dyn Fn(&(dyn Error + 'static)) -> bool + Send + Sync>;

/// How deep an error's `source()` chain is searched for a [`BlockError`].
const MAX_SOURCE_DEPTH: usize = 32;

/// Trace and ignore predicates; ignore wins, and a [`BlockError`] is never traced, nor an error it
/// caused (one whose `source()` chain holds it: a nested guarded call's block, wrapped in the caller's
/// error type and passed up with `?`, as Sentinel's `isBlockException` walks the causes).
#[derive(Clone, Default)]
pub(crate) struct ErrorFilter {
    pub(crate) trace_if: Option<Predicate>,
    pub(crate) ignore_if: Option<Predicate>,
}

impl fmt::Debug for ErrorFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ErrorFilter")
            .field("trace_if", &self.trace_if.is_some())
            .field("ignore_if", &self.ignore_if.is_some())
            .finish()
    }
}

impl ErrorFilter {
    pub(crate) fn should_trace(&self, error: &(dyn Error + 'static)) -> bool {
        let mut cause = Some(error);
        for _ in 0..MAX_SOURCE_DEPTH {
            let Some(e) = cause else { break };
            if e.is::<BlockError>() {
                return false;
            }
            cause = e.source();
        }
        if self.ignore_if.as_ref().is_some_and(|p| p(error)) {
            return false;
        }
        self.trace_if.as_ref().is_none_or(|p| p(error))
    }
}
