//! A flow rule's `limitApp`, classified once when the rule is loaded rather than compared as a string
//! on every entry: `default` (every caller), `other` (callers no rule of the resource names) or one
//! named caller. `FlowSlot` picks the node a rule reads from this and the caller's origin.

/// Which callers a rule limits: its `limitApp`, classified once when the rule is loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitApp {
    /// `default`: every caller, read from the resource's cluster node.
    Default,
    /// `other`: callers no other rule of the resource names.
    Other,
    /// One named caller.
    Specific,
}

impl LimitApp {
    pub(crate) fn of(limit_app: &str) -> Self {
        match limit_app {
            "default" => LimitApp::Default,
            "other" => LimitApp::Other,
            _ => LimitApp::Specific,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LimitApp;

    #[test]
    fn only_the_two_reserved_names_are_not_callers() {
        assert_eq!(LimitApp::of("default"), LimitApp::Default);
        assert_eq!(LimitApp::of("other"), LimitApp::Other);
        assert_eq!(LimitApp::of("appA"), LimitApp::Specific);
        assert_eq!(
            LimitApp::of("Default"),
            LimitApp::Specific,
            "case-sensitive, as Sentinel"
        );
    }
}
