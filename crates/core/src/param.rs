//! Entry arguments: the values hot-parameter rules look at.

use std::borrow::Cow;

/// One argument of an entry.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParamValue<'a> {
    /// No value (passes every parameter rule, as in Sentinel).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
}

impl<'a> From<&'a str> for ParamValue<'a> {
    fn from(v: &'a str) -> Self {
        ParamValue::Str(Cow::Borrowed(v))
    }
}

impl From<String> for ParamValue<'_> {
    fn from(v: String) -> Self {
        ParamValue::Str(Cow::Owned(v))
    }
}

impl<'a> From<&'a String> for ParamValue<'a> {
    fn from(v: &'a String) -> Self {
        ParamValue::Str(Cow::Borrowed(v.as_str()))
    }
}

impl From<bool> for ParamValue<'_> {
    fn from(v: bool) -> Self {
        ParamValue::Bool(v)
    }
}

impl From<f64> for ParamValue<'_> {
    fn from(v: f64) -> Self {
        ParamValue::Float(v)
    }
}

impl From<f32> for ParamValue<'_> {
    fn from(v: f32) -> Self {
        ParamValue::Float(f64::from(v))
    }
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl From<$t> for ParamValue<'_> {
            fn from(v: $t) -> Self {
                ParamValue::Int(i64::from(v))
            }
        }
    )*};
}
int_param!(i8, i16, i32, i64, u8, u16, u32);

impl<'a, T: Into<ParamValue<'a>>> From<Option<T>> for ParamValue<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(ParamValue::Null, Into::into)
    }
}
