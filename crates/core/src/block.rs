//! `BlockError`: why an entry was refused.
//!
//! Built on the blocking path without formatting or allocation: it holds the kind, a shared handle to the
//! resource name, when a rule blocked, a shared handle to that rule and, for a hot-parameter block, the
//! offending value in a compact owned form (inline for booleans, numbers and strings up to 22 bytes).
//! `Display` formats on demand.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::param::{ParamValue, StoredValue};

/// Which protection refused an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockKind {
    /// A flow rule (QPS or concurrency limit, warm-up, rate limiter).
    Flow,
    /// An open circuit breaker.
    Degrade,
    /// System adaptive protection.
    System,
    /// An authority (white/black list) rule.
    Authority,
    /// A hot-parameter rule.
    ParamFlow,
    /// A user slot.
    Custom,
}

impl BlockKind {
    /// Sentinel's exception class name for this kind (used in block logs and metrics).
    pub fn exception_name(self) -> &'static str {
        match self {
            BlockKind::Flow => "FlowException",
            BlockKind::Degrade => "DegradeException",
            BlockKind::System => "SystemBlockException",
            BlockKind::Authority => "AuthorityException",
            BlockKind::ParamFlow => "ParamFlowException",
            BlockKind::Custom => "BlockException",
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BlockKind::Flow => "flow",
            BlockKind::Degrade => "degrade",
            BlockKind::System => "system",
            BlockKind::Authority => "authority",
            BlockKind::ParamFlow => "param flow",
            BlockKind::Custom => "custom",
        })
    }
}

/// A rule that can block an entry. Rule types of the engine implement it; so can a user slot's rules.
pub trait BlockRule: fmt::Debug + Send + Sync + 'static {
    /// The rule's id, if it has one.
    fn id(&self) -> Option<i64> {
        None
    }

    /// The caller the rule limits (`default` for any).
    fn limit_app(&self) -> &str {
        "default"
    }

    /// The rule as `Any`, to downcast with [`BlockError::rule_as`].
    fn as_any(&self) -> &dyn Any;
}

/// Implements [`BlockRule`] for a rule type with `id: Option<i64>` and `limit_app: String` fields.
macro_rules! rule_with_id_and_limit_app {
    ($rule:ty) => {
        impl $crate::block::BlockRule for $rule {
            fn id(&self) -> Option<i64> {
                self.id
            }

            fn limit_app(&self) -> &str {
                &self.limit_app
            }

            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}
pub(crate) use rule_with_id_and_limit_app;

/// An entry was refused.
#[derive(Clone)]
pub struct BlockError {
    kind: BlockKind,
    resource: Arc<str>,
    rule: Option<Arc<dyn BlockRule>>,
    param: Option<StoredValue>,
}

impl BlockError {
    /// A block of `kind` on `resource`, without a rule.
    pub fn new(kind: BlockKind, resource: Arc<str>) -> Self {
        BlockError {
            kind,
            resource,
            rule: None,
            param: None,
        }
    }

    /// The same block, naming the rule that caused it.
    pub fn with_rule(mut self, rule: Arc<dyn BlockRule>) -> Self {
        self.rule = Some(rule);
        self
    }

    /// The same block, naming the argument value that caused it (a hot-parameter block). Allocates only
    /// for strings longer than 22 bytes; `Null` and lists name no value.
    pub fn with_param(mut self, value: &ParamValue<'_>) -> Self {
        self.param = StoredValue::from_value(value);
        self
    }

    /// The argument value that caused a hot-parameter block (Sentinel's `ParamFlowException.getLimitParam`).
    pub fn param(&self) -> Option<ParamValue<'_>> {
        self.param.as_ref().map(StoredValue::view)
    }

    /// Which protection blocked.
    pub fn kind(&self) -> BlockKind {
        self.kind
    }

    /// The resource that was blocked.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The rule that blocked, if any.
    pub fn rule(&self) -> Option<&dyn BlockRule> {
        self.rule.as_deref()
    }

    /// The rule that blocked, as its concrete type.
    pub fn rule_as<R: BlockRule>(&self) -> Option<&R> {
        self.rule.as_deref()?.as_any().downcast_ref()
    }
}

impl fmt::Debug for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockError")
            .field("kind", &self.kind)
            .field("resource", &self.resource)
            .field("rule", &self.rule)
            .field("param", &self.param)
            .finish()
    }
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blocked by {} protection on `{}`",
            self.kind, self.resource
        )?;
        match &self.param {
            Some(p) => write!(f, " (value `{}`)", p.view()),
            None => Ok(()),
        }
    }
}

impl std::error::Error for BlockError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct MyRule(i64);
    impl BlockRule for MyRule {
        fn id(&self) -> Option<i64> {
            Some(self.0)
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn carries_kind_resource_and_rule() {
        let e = BlockError::new(BlockKind::Custom, "R".into()).with_rule(Arc::new(MyRule(7)));
        assert_eq!(e.kind(), BlockKind::Custom);
        assert_eq!(e.resource(), "R");
        assert_eq!(e.rule().and_then(|r| r.id()), Some(7));
        assert_eq!(e.rule_as::<MyRule>().map(|r| r.0), Some(7));
        assert_eq!(e.to_string(), "blocked by custom protection on `R`");
        assert_eq!(e.param(), None);
    }

    #[test]
    fn carries_the_offending_value() {
        let e = BlockError::new(BlockKind::ParamFlow, "R".into()).with_param(&ParamValue::from(42));
        assert_eq!(e.param(), Some(ParamValue::Int(42)));
        assert_eq!(
            e.to_string(),
            "blocked by param flow protection on `R` (value `42`)"
        );
        let e = e.with_param(&ParamValue::Null);
        assert_eq!(e.param(), None);
    }
}
