//! Entry arguments: the values hot-parameter rules look at, and their compact owned form.
//!
//! An entry carries its call's arguments as [`ParamValue`]s (`fg.entry(r).args(["user-42"])`). A
//! hot-parameter rule picks one argument by index and limits each distinct value of it. Values are typed,
//! as in Java: the integer `42`, the float `42.0` and the string `"42"` are three different values. A
//! [`ParamValue::List`] (owned) or [`ParamValue::Slice`] (borrowed) stands for a collection or array
//! argument: every element is a value of its own.
//! A user type takes part through [`ParamKey`] (Sentinel's `ParamFlowArgument`): its key is what rules see.
//!
//! Rule state and block errors keep values in a compact owned form (`StoredValue`): booleans, integers,
//! floats and strings of up to 22 bytes are stored inline, so remembering them does not allocate.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use foldhash::SharedSeed;
use foldhash::fast::FoldHasher;

/// One argument of an entry.
///
/// ```
/// use floodgate_core::ParamValue;
///
/// assert_eq!(ParamValue::from(42), ParamValue::Int(42));
/// assert_ne!(ParamValue::from(42), ParamValue::from("42"));
/// let list = ParamValue::list(["a", "b"]);
/// assert_eq!(list.to_string(), "[a, b]");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ParamValue<'a> {
    /// No value (passes every parameter rule, as in Sentinel).
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (Java's `int`, `long`, `short` and `byte` alike).
    Int(i64),
    /// A floating-point number (Java's `double`; a `float` widened).
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// A collection or array: a parameter rule checks every element as a value of its own.
    List(Vec<ParamValue<'a>>),
    /// A borrowed collection or array (the same as [`ParamValue::List`], without a copy).
    Slice(&'a [ParamValue<'a>]),
}

impl PartialEq for ParamValue<'_> {
    /// Same type and value; a `List` and a `Slice` with equal elements are equal.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ParamValue::Null, ParamValue::Null) => true,
            (ParamValue::Bool(a), ParamValue::Bool(b)) => a == b,
            (ParamValue::Int(a), ParamValue::Int(b)) => a == b,
            (ParamValue::Float(a), ParamValue::Float(b)) => a == b,
            (ParamValue::Str(a), ParamValue::Str(b)) => a == b,
            _ => match (self.as_list(), other.as_list()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
        }
    }
}

impl<'a> ParamValue<'a> {
    /// The same value, owning its strings and lists.
    pub fn into_owned(self) -> ParamValue<'static> {
        match self {
            ParamValue::Null => ParamValue::Null,
            ParamValue::Bool(b) => ParamValue::Bool(b),
            ParamValue::Int(i) => ParamValue::Int(i),
            ParamValue::Float(f) => ParamValue::Float(f),
            ParamValue::Str(s) => ParamValue::Str(Cow::Owned(s.into_owned())),
            ParamValue::List(values) => {
                ParamValue::List(values.into_iter().map(ParamValue::into_owned).collect())
            }
            ParamValue::Slice(values) => {
                ParamValue::List(values.iter().cloned().map(ParamValue::into_owned).collect())
            }
        }
    }

    /// A list of values (owned).
    pub fn list<I>(values: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<ParamValue<'a>>,
    {
        ParamValue::List(values.into_iter().map(Into::into).collect())
    }

    /// The elements of a list (`List` or `Slice`); `None` for a single value.
    pub fn as_list(&self) -> Option<&[ParamValue<'a>]> {
        match self {
            ParamValue::List(items) => Some(items),
            ParamValue::Slice(items) => Some(items),
            _ => None,
        }
    }

    /// The key of a user type (the same as `ParamValue::from(&value)`).
    pub fn key<T: ParamKey + ?Sized>(value: &'a T) -> Self {
        value.param_key()
    }

    /// Whether this is [`ParamValue::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, ParamValue::Null)
    }

    /// Whether dropping the value frees memory (an owned string or a list). Every variant is listed, so
    /// that a new one must say (an entry drops its inline arguments only when one owns memory).
    #[inline]
    pub(crate) fn owns_heap(&self) -> bool {
        match self {
            ParamValue::Str(Cow::Owned(_)) | ParamValue::List(_) => true,
            ParamValue::Null
            | ParamValue::Bool(_)
            | ParamValue::Int(_)
            | ParamValue::Float(_)
            | ParamValue::Str(Cow::Borrowed(_))
            | ParamValue::Slice(_) => false,
        }
    }
}

/// A user type a hot-parameter rule can limit by value (Sentinel's `ParamFlowArgument`): rules compare
/// its key, not the value itself.
///
/// ```
/// use floodgate_core::{ParamKey, ParamValue};
///
/// struct Order { customer: String, lines: u32 }
///
/// impl ParamKey for Order {
///     fn param_key(&self) -> ParamValue<'_> {
///         ParamValue::from(&self.customer)
///     }
/// }
///
/// let order = Order { customer: "acme".into(), lines: 3 };
/// assert_eq!(ParamValue::from(&order), ParamValue::from("acme"));
/// ```
pub trait ParamKey {
    /// The value rules compare (return [`ParamValue::Null`] to exempt this argument).
    fn param_key(&self) -> ParamValue<'_>;
}

impl<'a, T: ParamKey + ?Sized> From<&'a T> for ParamValue<'a> {
    fn from(v: &'a T) -> Self {
        v.param_key()
    }
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

impl<'a> From<Cow<'a, str>> for ParamValue<'a> {
    fn from(v: Cow<'a, str>) -> Self {
        ParamValue::Str(v)
    }
}

impl<'a, 'b> From<&'b ParamValue<'a>> for ParamValue<'a> {
    /// A copy (cheap for everything but owned strings and lists).
    fn from(v: &'b ParamValue<'a>) -> Self {
        v.clone()
    }
}

impl<'a> From<&'a [ParamValue<'a>]> for ParamValue<'a> {
    /// A borrowed list: no copy, no allocation.
    fn from(v: &'a [ParamValue<'a>]) -> Self {
        ParamValue::Slice(v)
    }
}

impl<'a, T: Into<ParamValue<'a>>> From<Vec<T>> for ParamValue<'a> {
    fn from(v: Vec<T>) -> Self {
        ParamValue::list(v)
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

impl fmt::Display for ParamValue<'_> {
    /// As Java's `String.valueOf` would print it (`null`, `true`, `42`, `1.5`, `2.0`, `abc`, `[a, b]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Null => f.write_str("null"),
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 => {
                write!(f, "{x:.1}")
            }
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Str(s) => f.write_str(s),
            ParamValue::List(_) | ParamValue::Slice(_) => {
                let items = self.as_list().unwrap_or_default();
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Strings up to this many bytes are stored inline.
pub(crate) const INLINE_STR: usize = 22;

/// A single (non-null, non-list) value in a compact owned form, for rule state and block errors.
/// Booleans, integers, floats and strings of up to [`INLINE_STR`] bytes are inline; longer strings are
/// boxed. Floats compare by their bits (Java's `Double.equals`: every NaN is equal, `0.0 ≠ -0.0`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum StoredValue {
    Bool(bool),
    Int(i64),
    Float(u64),
    Short { len: u8, bytes: [u8; INLINE_STR] },
    Long(Box<str>),
}

/// The bits a float is compared and hashed by (NaNs made one).
#[inline]
fn float_bits(x: f64) -> u64 {
    if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

impl StoredValue {
    /// The owned form of a single value; `None` for `Null` and lists (which are not values of their own).
    /// Allocates only for strings longer than [`INLINE_STR`] bytes.
    pub(crate) fn from_value(v: &ParamValue<'_>) -> Option<Self> {
        Some(match v {
            ParamValue::Null | ParamValue::List(_) | ParamValue::Slice(_) => return None,
            ParamValue::Bool(b) => StoredValue::Bool(*b),
            ParamValue::Int(i) => StoredValue::Int(*i),
            ParamValue::Float(x) => StoredValue::Float(float_bits(*x)),
            ParamValue::Str(s) => StoredValue::from_str(s),
        })
    }

    /// A string value.
    pub(crate) fn from_str(s: &str) -> Self {
        if s.len() <= INLINE_STR {
            let mut bytes = [0u8; INLINE_STR];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            StoredValue::Short {
                len: s.len() as u8,
                bytes,
            }
        } else {
            StoredValue::Long(Box::from(s))
        }
    }

    /// The value, borrowed.
    pub(crate) fn view(&self) -> ParamValue<'_> {
        match self {
            StoredValue::Bool(b) => ParamValue::Bool(*b),
            StoredValue::Int(i) => ParamValue::Int(*i),
            StoredValue::Float(bits) => ParamValue::Float(f64::from_bits(*bits)),
            StoredValue::Short { len, bytes } => ParamValue::Str(Cow::Borrowed(
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default(),
            )),
            StoredValue::Long(s) => ParamValue::Str(Cow::Borrowed(s)),
        }
    }

    /// Whether `v` is this value (same type, same value).
    #[inline]
    pub(crate) fn matches(&self, v: &ParamValue<'_>) -> bool {
        match (self, v) {
            (StoredValue::Bool(a), ParamValue::Bool(b)) => a == b,
            (StoredValue::Int(a), ParamValue::Int(b)) => a == b,
            (StoredValue::Float(a), ParamValue::Float(b)) => *a == float_bits(*b),
            (StoredValue::Short { len, bytes }, ParamValue::Str(s)) => {
                s.len() == usize::from(*len) && bytes[..s.len()] == *s.as_bytes()
            }
            (StoredValue::Long(a), ParamValue::Str(s)) => **a == **s,
            _ => false,
        }
    }
}

impl fmt::Debug for StoredValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}

/// The kind of a single value, as [`hash_value`] files it: values of different kinds never match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    Bool,
    Int,
    Float,
    Str,
}

impl ValueKind {
    /// The kind of `v`; `None` for `Null` and lists.
    #[inline]
    pub(crate) fn of(v: &ParamValue<'_>) -> Option<Self> {
        Some(match v {
            ParamValue::Null | ParamValue::List(_) | ParamValue::Slice(_) => return None,
            ParamValue::Bool(_) => ValueKind::Bool,
            ParamValue::Int(_) => ValueKind::Int,
            ParamValue::Float(_) => ValueKind::Float,
            ParamValue::Str(_) => ValueKind::Str,
        })
    }

    /// Whether the hash of a value of this kind identifies it: for one seed, two booleans, integers
    /// or floats (compared as [`StoredValue`] compares them) are equal exactly when their hashes are.
    #[inline]
    pub(crate) fn hash_is_identity(self) -> bool {
        self != ValueKind::Str
    }
}

/// splitmix64's finaliser: a bijection of `u64` (xor-shifts and odd multiplications invert).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hashes a single value (`None` for `Null` and lists), so that both the high bits (shard) and the low
/// bits (slot) are usable.
///
/// A boolean, integer or float hashes as `mix(bits ^ salt)`, with `salt` fixed by the seed and the
/// kind: a bijection of its 64 bits, so within one kind and seed the hash *is* the value (see
/// [`ValueKind::hash_is_identity`]). A string hashes with foldhash keyed by `strings` (the process's
/// random keys, see [`keyed_hash`](crate::keyed_hash)), then the same mix: argument values come from
/// clients.
#[inline]
pub(crate) fn hash_value(seed: u64, strings: &SharedSeed, v: &ParamValue<'_>) -> Option<u64> {
    let salt = |kind: u64| seed.wrapping_add(kind.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    Some(match v {
        ParamValue::Null | ParamValue::List(_) | ParamValue::Slice(_) => return None,
        ParamValue::Bool(b) => mix(salt(1) ^ u64::from(*b)),
        ParamValue::Int(i) => mix(salt(2) ^ *i as u64),
        ParamValue::Float(x) => mix(salt(3) ^ float_bits(*x)),
        ParamValue::Str(s) => {
            let mut h = FoldHasher::with_seed(salt(4), strings);
            s.hash(&mut h);
            mix(h.finish())
        }
    })
}

/// The inverse of [`mix`] (for tests that make values collide on purpose).
#[cfg(test)]
pub(crate) fn unmix(z: u64) -> u64 {
    /// The inverse of `x ^ (x >> k)`.
    fn unshift(y: u64, k: u32) -> u64 {
        let mut x = y;
        for _ in 0..64 / k {
            x = y ^ (x >> k);
        }
        x
    }
    /// The multiplicative inverse of an odd number mod 2^64 (Newton's iteration).
    fn inverse(a: u64) -> u64 {
        let mut x = a;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        }
        x
    }
    let z = unshift(z, 31).wrapping_mul(inverse(0x94d0_49bb_1331_11eb));
    let z = unshift(z, 27).wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9));
    unshift(z, 30)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_hashes_are_bijections() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            assert_eq!(unmix(mix(x)), x);
        }
        // So the hash of an integer gives the integer back: equal hashes mean equal values.
        let seed = 0xfeed;
        let keys = crate::keyed_hash::shared_seed();
        let salt = unmix(hash_value(seed, keys, &ParamValue::Int(0)).unwrap());
        for i in [1, -1, 42, i64::MIN, i64::MAX] {
            let h = hash_value(seed, keys, &ParamValue::Int(i)).unwrap();
            assert_eq!(unmix(h) ^ salt, i as u64);
        }
        assert!(ValueKind::Int.hash_is_identity() && !ValueKind::Str.hash_is_identity());
    }

    #[test]
    fn values_are_typed() {
        let keys = crate::keyed_hash::shared_seed();
        let int = ParamValue::from(42);
        let float = ParamValue::from(42.0);
        let string = ParamValue::from("42");
        for (a, b) in [(&int, &float), (&int, &string), (&float, &string)] {
            let sa = StoredValue::from_value(a).unwrap();
            assert!(sa.matches(a));
            assert!(!sa.matches(b), "{a:?} vs {b:?}");
            assert_ne!(hash_value(1, keys, a), hash_value(1, keys, b));
        }
        assert_eq!(
            hash_value(1, keys, &ParamValue::from(7u8)),
            hash_value(1, keys, &7i64.into())
        );
    }

    #[test]
    fn stored_values_round_trip_and_stay_small() {
        let keys = crate::keyed_hash::shared_seed();
        assert_eq!(std::mem::size_of::<StoredValue>(), 24);
        assert_eq!(std::mem::size_of::<Option<StoredValue>>(), 24);
        let long = "x".repeat(40);
        for v in [
            ParamValue::from(true),
            ParamValue::from(-3),
            ParamValue::from(1.5),
            ParamValue::from(f64::NAN),
            ParamValue::from("short"),
            ParamValue::from(""),
            ParamValue::from("exactly-twenty-two-byt"),
            ParamValue::from(long.as_str()),
        ] {
            let s = StoredValue::from_value(&v).unwrap();
            assert!(s.matches(&v), "{v:?}");
            assert!(s.matches(&s.view()));
            assert_eq!(hash_value(9, keys, &s.view()), hash_value(9, keys, &v));
        }
        assert!(matches!(
            StoredValue::from_str("exactly-twenty-two-byt"),
            StoredValue::Short { len: 22, .. }
        ));
        assert!(matches!(
            StoredValue::from_str("twenty-three-bytes-long"),
            StoredValue::Long(_)
        ));
        assert!(StoredValue::from_value(&ParamValue::Null).is_none());
        assert!(StoredValue::from_value(&ParamValue::list([1])).is_none());
    }

    #[test]
    fn floats_compare_like_java_double_equals() {
        let zero = StoredValue::from_value(&ParamValue::from(0.0)).unwrap();
        assert!(!zero.matches(&ParamValue::from(-0.0)));
        let nan = StoredValue::from_value(&ParamValue::from(f64::NAN)).unwrap();
        assert!(nan.matches(&ParamValue::from(-f64::NAN)));
    }

    #[test]
    fn display_reads_like_java() {
        assert_eq!(ParamValue::Null.to_string(), "null");
        assert_eq!(ParamValue::from(2.0).to_string(), "2.0");
        assert_eq!(ParamValue::from(2.5).to_string(), "2.5");
        assert_eq!(ParamValue::list([1, 2]).to_string(), "[1, 2]");
        assert_eq!(ParamValue::from(Some("a")).to_string(), "a");
        assert_eq!(ParamValue::from(None::<i32>).to_string(), "null");
    }

    #[test]
    fn user_types_pass_their_key() {
        struct User(u32);
        impl ParamKey for User {
            fn param_key(&self) -> ParamValue<'_> {
                ParamValue::Int(i64::from(self.0))
            }
        }
        let u = User(5);
        assert_eq!(ParamValue::from(&u), ParamValue::Int(5));
        assert_eq!(ParamValue::key(&u), ParamValue::Int(5));
        let borrowed = [ParamValue::from(1), ParamValue::from("b")];
        assert_eq!(
            ParamValue::from(&borrowed[..]),
            ParamValue::list([ParamValue::from(1), ParamValue::from("b")])
        );
    }
}
