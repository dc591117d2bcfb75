//! The builder setters of the rule types, written once: each rule type lists its setters as
//! signatures, and [`rule_setters`] makes each a `pub fn` that sets the field of its name and returns
//! the rule.

/// Implements builder setters on a rule type. Each entry is a setter's doc, name and parameter,
/// optionally with the value to store (the parameter itself when there is none):
///
/// ```text
/// rule_setters! {
///     FlowRule {
///         /// Sets the grade.
///         grade(grade: FlowGrade);
///         /// Sets the caller the rule limits.
///         limit_app(limit_app: impl Into<String>) = limit_app.into();
///         /// Makes `resource` a regular expression.
///         regex() = true;
///     }
/// }
/// ```
macro_rules! rule_setters {
    ($rule:ty {
        $($(#[$doc:meta])* $field:ident($($param:ident: $ty:ty)?) $(= $value:expr)?;)*
    }) => {
        impl $rule {
            $(
                $(#[$doc])*
                pub fn $field(mut self $(, $param: $ty)?) -> Self {
                    self.$field = $crate::rules::rule_setters!(@value $($param)? $(= $value)?);
                    self
                }
            )*
        }
    };
    (@value $param:ident) => {
        $param
    };
    (@value $($param:ident)? = $value:expr) => {
        $value
    };
}
pub(crate) use rule_setters;
