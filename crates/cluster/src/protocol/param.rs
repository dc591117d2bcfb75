//! The values of a hot-parameter token request, each written as a type tag and the value.

use bytes::{Buf, BufMut};

use floodgate_core::ParamValue;

use super::error::DecodeError;

/// Writes the window key of an engine value ([`Param::window_key`] of [`Param::of`] it) into
/// `out`, cleared first, without allocating once `out` has the room; false, with `out` empty, for
/// a value a hot-parameter rule does not count (`Null`, a list).
pub fn write_window_key(value: &ParamValue<'_>, out: &mut String) -> bool {
    use std::fmt::Write;
    out.clear();
    // Writing to a `String` cannot fail.
    let _ = match value {
        ParamValue::Int(v) => write!(out, "i:{v}"),
        ParamValue::Float(v) => write!(out, "f:{v}"),
        ParamValue::Bool(v) => write!(out, "b:{v}"),
        ParamValue::Str(s) => write!(out, "s:{s}"),
        _ => return false,
    };
    true
}

/// One argument of a hot-parameter request, typed as Java's boxed primitives and strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    /// `int` (tag 0).
    Int(i32),
    /// `long` (tag 1).
    Long(i64),
    /// `byte` (tag 2).
    Byte(i8),
    /// `double` (tag 3).
    Double(f64),
    /// `float` (tag 4).
    Float(f32),
    /// `short` (tag 5).
    Short(i16),
    /// `boolean` (tag 6).
    Bool(bool),
    /// `String` (tag 7), UTF-8 on the wire.
    Str(String),
}

impl Param {
    /// An engine's argument value as a wire parameter: an integer as a `long`, a float as a
    /// `double`; `None` for a value a hot-parameter rule does not count (`Null`, a list).
    pub fn of(value: &ParamValue<'_>) -> Option<Param> {
        Some(match value {
            ParamValue::Int(v) => Param::Long(*v),
            ParamValue::Float(v) => Param::Double(*v),
            ParamValue::Bool(v) => Param::Bool(*v),
            ParamValue::Str(s) => Param::Str(s.to_string()),
            _ => return None,
        })
    }

    /// The parameter as the engine's value (Java's integer types alike, a `float` widened).
    pub fn value(&self) -> ParamValue<'_> {
        match self {
            Param::Int(v) => ParamValue::Int(i64::from(*v)),
            Param::Long(v) => ParamValue::Int(*v),
            Param::Byte(v) => ParamValue::Int(i64::from(*v)),
            Param::Short(v) => ParamValue::Int(i64::from(*v)),
            Param::Double(v) => ParamValue::Float(*v),
            Param::Float(v) => ParamValue::Float(f64::from(*v)),
            Param::Bool(v) => ParamValue::Bool(*v),
            Param::Str(s) => ParamValue::Str(s.as_str().into()),
        }
    }

    /// The text that names the value's window wherever windows are shared (in Redis): values
    /// that count as one (Java's integer types alike) have one text ([`write_window_key`]).
    pub fn window_key(&self) -> String {
        let mut key = String::new();
        write_window_key(&self.value(), &mut key);
        key
    }

    /// The bytes it takes on the wire, tag included.
    pub(crate) fn wire_len(&self) -> usize {
        1 + match self {
            Param::Int(_) | Param::Float(_) => 4,
            Param::Long(_) | Param::Double(_) => 8,
            Param::Byte(_) | Param::Bool(_) => 1,
            Param::Short(_) => 2,
            Param::Str(s) => 4 + s.len(),
        }
    }

    pub(crate) fn write(&self, out: &mut impl BufMut) {
        match self {
            Param::Int(v) => {
                out.put_u8(0);
                out.put_i32(*v);
            }
            Param::Long(v) => {
                out.put_u8(1);
                out.put_i64(*v);
            }
            Param::Byte(v) => {
                out.put_u8(2);
                out.put_i8(*v);
            }
            Param::Double(v) => {
                out.put_u8(3);
                out.put_f64(*v);
            }
            Param::Float(v) => {
                out.put_u8(4);
                out.put_f32(*v);
            }
            Param::Short(v) => {
                out.put_u8(5);
                out.put_i16(*v);
            }
            Param::Bool(v) => {
                out.put_u8(6);
                out.put_u8(u8::from(*v));
            }
            Param::Str(s) => {
                out.put_u8(7);
                // A frame holds at most 1022 bytes: the length always fits.
                out.put_i32(s.len() as i32);
                out.put_slice(s.as_bytes());
            }
        }
    }

    pub(crate) fn read(data: &mut &[u8]) -> Result<Param, DecodeError> {
        let tag = read_u8(data)?;
        Ok(match tag {
            0 => Param::Int(need(data, 4)?.get_i32()),
            1 => Param::Long(need(data, 8)?.get_i64()),
            2 => Param::Byte(need(data, 1)?.get_i8()),
            3 => Param::Double(need(data, 8)?.get_f64()),
            4 => Param::Float(need(data, 4)?.get_f32()),
            5 => Param::Short(need(data, 2)?.get_i16()),
            6 => Param::Bool(read_bool(data)?),
            7 => Param::Str(read_string(data)?),
            other => return Err(DecodeError::UnknownParamTag(other)),
        })
    }
}

/// `data`, checked to hold `n` more bytes.
pub(crate) fn need<'a, 'b>(
    data: &'a mut &'b [u8],
    n: usize,
) -> Result<&'a mut &'b [u8], DecodeError> {
    if data.remaining() < n {
        return Err(DecodeError::Truncated);
    }
    Ok(data)
}

pub(crate) fn read_u8(data: &mut &[u8]) -> Result<u8, DecodeError> {
    Ok(need(data, 1)?.get_u8())
}

/// One byte, 0 or 1.
pub(crate) fn read_bool(data: &mut &[u8]) -> Result<bool, DecodeError> {
    match read_u8(data)? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::BadBool(other)),
    }
}

/// `len:i32` and that many bytes of UTF-8.
pub(crate) fn read_string(data: &mut &[u8]) -> Result<String, DecodeError> {
    let len = need(data, 4)?.get_i32();
    let len = usize::try_from(len).map_err(|_| DecodeError::BadLength(len))?;
    need(data, len)?;
    let (bytes, rest) = data.split_at(len);
    let text = std::str::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8)?;
    *data = rest;
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_value_and_its_wire_parameter_name_one_window() {
        let mut key = String::from("left over");
        for (value, expected) in [
            (ParamValue::Int(42), "i:42"),
            (ParamValue::Float(1.5), "f:1.5"),
            (ParamValue::Bool(true), "b:true"),
            (ParamValue::from("alice"), "s:alice"),
        ] {
            assert!(write_window_key(&value, &mut key));
            assert_eq!(key, expected);
            assert_eq!(Param::of(&value).unwrap().window_key(), expected);
        }
        // Java's integer types count as one value.
        assert_eq!(Param::Int(42).window_key(), Param::Short(42).window_key());
        assert!(!write_window_key(&ParamValue::Null, &mut key));
        assert!(key.is_empty());
    }
}
