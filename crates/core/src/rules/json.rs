//! Reading and writing Sentinel's rule JSON field by field, so that every error names its field.

use serde_json::{Map, Value};

use super::RuleError;

/// Parses `json` as an array of objects (`[]` is an empty list; empty text and `null` are refused).
/// For tests: loads use [`parse_rule_items`], which keeps every item's error.
#[cfg(test)]
pub(crate) fn parse_rule_array(json: &str) -> Result<Vec<Map<String, Value>>, RuleError> {
    super::all_or_errors(parse_rule_items(json)?)
}

/// One item of a rule array: a JSON object, or the error saying it is not one.
pub(crate) type RuleItem = Result<Map<String, Value>, RuleError>;

/// The items of a JSON array of rules, each an object or its error (the array itself must parse).
pub(crate) fn parse_rule_items(json: &str) -> Result<Vec<RuleItem>, RuleError> {
    // Blank text or `null` would clear every rule of the type: more likely a value that did not get
    // filled in than a wish, so it is refused; `[]` clears.
    if json.trim().is_empty() {
        return Err(RuleError::Json(
            "empty text (send [] to clear the rules)".to_owned(),
        ));
    }
    let value: Value = serde_json::from_str(json).map_err(|e| RuleError::Json(e.to_string()))?;
    match value {
        Value::Array(items) => Ok(rule_items(items)),
        _ => Err(RuleError::NotAnArray),
    }
}

/// The items of an array of rules, each an object or its error.
pub(crate) fn rule_items(items: Vec<Value>) -> Vec<RuleItem> {
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| match item {
            Value::Object(map) => Ok(map),
            _ => Err(RuleError::invalid(index, "(rule)", "must be a JSON object")),
        })
        .collect()
}

/// Whether each item sets `regex` to `true`, in list order: what the regex cap counts before any rule
/// is read further.
pub(crate) fn regex_flags(items: &[RuleItem]) -> impl Iterator<Item = bool> + '_ {
    items
        .iter()
        .map(|item| matches!(item, Ok(map) if map.get("regex") == Some(&Value::Bool(true))))
}

/// Writes rules as a JSON array.
pub(crate) fn to_json_array(rules: impl IntoIterator<Item = Map<String, Value>>) -> String {
    Value::Array(rules.into_iter().map(Value::Object).collect()).to_string()
}

/// The fields of `object`, a JSON object written with `json!({…})` (none when it is not an object),
/// so that a rule's fields are written as the object they make.
pub(crate) fn object(object: Value) -> Map<String, Value> {
    match object {
        Value::Object(fields) => fields,
        _ => Map::new(),
    }
}

/// An enum Sentinel writes as an integer code, its variants numbered 0, 1, … in the order of
/// [`BY_CODE`](Self::BY_CODE); its `Default` is the variant of an absent field.
pub(crate) trait Coded: Copy + Default + 'static {
    /// The variants, each at the position of its code.
    const BY_CODE: &'static [Self];
}

/// The fields every rule kind has (Sentinel's `AbstractRule`): `id` (when set), `resource`,
/// `limitApp` and `regex`.
pub(crate) fn rule_head(
    id: Option<i64>,
    resource: &str,
    limit_app: &str,
    regex: bool,
) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(id) = id {
        m.insert("id".into(), Value::from(id));
    }
    m.insert("resource".into(), Value::from(resource));
    m.insert("limitApp".into(), Value::from(limit_app));
    m.insert("regex".into(), Value::from(regex));
    m
}

/// The fields of one rule object, read with errors that carry the rule's index and the field's path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RuleFields<'a> {
    index: usize,
    prefix: &'a str,
    map: &'a Map<String, Value>,
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> RuleFields<'a> {
    pub(crate) fn new(index: usize, map: &'a Map<String, Value>) -> Self {
        RuleFields {
            index,
            prefix: "",
            map,
        }
    }

    /// The full path of `field` (with the prefix of a nested object).
    pub(crate) fn path(&self, field: &str) -> String {
        if self.prefix.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", self.prefix)
        }
    }

    /// An error about `field` of this rule.
    pub(crate) fn error(&self, field: &str, reason: impl Into<String>) -> RuleError {
        RuleError::Invalid {
            index: self.index,
            field: self.path(field),
            reason: reason.into(),
        }
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    /// A string field; `None` when absent or null.
    pub(crate) fn string(&self, field: &str) -> Result<Option<&'a str>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.error(field, format!("must be a string, got {}", kind(v)))),
        }
    }

    /// A string field, or a number or boolean field as its JSON text (`42` → `"42"`); `None` when
    /// absent or null.
    pub(crate) fn scalar_text(&self, field: &str) -> Result<Option<String>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(Some(v.to_string())),
            Some(v) => Err(self.error(
                field,
                format!("must be a string, a number or a boolean, got {}", kind(v)),
            )),
        }
    }

    /// `limitApp` when set and not blank (blank means `default`, as in Sentinel).
    pub(crate) fn limit_app(&self) -> Result<Option<&'a str>, RuleError> {
        Ok(self.string("limitApp")?.filter(|a| !a.trim().is_empty()))
    }

    /// A number field (`20` or `20.0`).
    pub(crate) fn number(&self, field: &str) -> Result<Option<f64>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.error(field, "is not a representable number")),
            Some(v) => Err(self.error(field, format!("must be a number, got {}", kind(v)))),
        }
    }

    /// A number field that must be set: absent or null, it is an error (a threshold that defaulted to
    /// 0 would block everything, and a misspelt one is absent).
    pub(crate) fn required_number(&self, field: &str) -> Result<f64, RuleError> {
        self.number(field)?
            .ok_or_else(|| self.error(field, "is required"))
    }

    /// A whole-number field (`10` or `10.0`).
    pub(crate) fn integer(&self, field: &str) -> Result<Option<i64>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return Ok(Some(i));
                }
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                    // Past ±9e15 a number with an exponent or a fraction is not exact.
                    Some(f) if f.fract() == 0.0 && f.abs() < i64::MAX as f64 => Err(self.error(
                        field,
                        format!("must be written in digits past ±9e15, got {n}"),
                    )),
                    Some(f) if f.fract() == 0.0 => Err(self.error(
                        field,
                        format!("is out of range ({} to {}), got {n}", i64::MIN, i64::MAX),
                    )),
                    _ => Err(self.error(field, format!("must be a whole number, got {n}"))),
                }
            }
            Some(v) => Err(self.error(field, format!("must be a whole number, got {}", kind(v)))),
        }
    }

    /// A whole-number field that must fit `T`.
    pub(crate) fn int_in<T: TryFrom<i64>>(&self, field: &str) -> Result<Option<T>, RuleError> {
        match self.integer(field)? {
            None => Ok(None),
            Some(i) => T::try_from(i)
                .map(Some)
                .map_err(|_| self.error(field, format!("is out of range: {i}"))),
        }
    }

    /// A whole-number field that must fit a `u32` (its whole range, so that every rule the typed API
    /// accepts loads back from its JSON).
    pub(crate) fn non_negative(&self, field: &str) -> Result<Option<u32>, RuleError> {
        match self.integer(field)? {
            None => Ok(None),
            Some(v) => u32::try_from(v).map(Some).map_err(|_| {
                let reason = if v < 0 {
                    format!("must be ≥ 0, got {v}")
                } else {
                    format!("must be at most {}, got {v}", u32::MAX)
                };
                self.error(field, reason)
            }),
        }
    }

    /// A field holding the code of a [`Coded`] variant (its default when absent); `expected` names
    /// the codes for the error (`0 (thread) or 1 (QPS)`).
    pub(crate) fn code<T: Coded>(&self, field: &str, expected: &str) -> Result<T, RuleError> {
        let Some(code) = self.integer(field)? else {
            return Ok(T::default());
        };
        usize::try_from(code)
            .ok()
            .and_then(|i| T::BY_CODE.get(i))
            .copied()
            .ok_or_else(|| self.error(field, format!("must be {expected}, got {code}")))
    }

    /// A boolean field.
    pub(crate) fn boolean(&self, field: &str) -> Result<Option<bool>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.error(field, format!("must be true or false, got {}", kind(v)))),
        }
    }

    /// A nested object, read with `field` as the prefix of its fields' paths.
    pub(crate) fn object<R>(
        &self,
        field: &'a str,
        read: impl FnOnce(RuleFields<'_>) -> Result<R, RuleError>,
    ) -> Result<Option<R>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => {
                let prefix = self.path(field);
                read(RuleFields {
                    index: self.index,
                    prefix: &prefix,
                    map,
                })
                .map(Some)
            }
            Some(v) => Err(self.error(field, format!("must be an object, got {}", kind(v)))),
        }
    }

    /// An array of objects, each read with `field[i]` as the prefix of its fields' paths.
    pub(crate) fn array<R>(
        &self,
        field: &str,
        mut read: impl FnMut(RuleFields<'_>) -> Result<R, RuleError>,
    ) -> Result<Option<Vec<R>>, RuleError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Object(map) => {
                        let prefix = self.path(&format!("{field}[{i}]"));
                        read(RuleFields {
                            index: self.index,
                            prefix: &prefix,
                            map,
                        })
                    }
                    v => Err(self.error(
                        &format!("{field}[{i}]"),
                        format!("must be an object, got {}", kind(v)),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.error(field, format!("must be an array, got {}", kind(v)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str) -> Map<String, Value> {
        parse_rule_array(json).unwrap().remove(0)
    }

    #[test]
    fn numbers_accept_integers_and_floats() {
        let m = one(r#"[{"count":20,"c2":20.0,"w":10.0,"bad":10.5,"s":"x"}]"#);
        let f = RuleFields::new(0, &m);
        assert_eq!(f.number("count").unwrap(), Some(20.0));
        assert_eq!(f.number("c2").unwrap(), Some(20.0));
        assert_eq!(f.integer("w").unwrap(), Some(10));
        assert_eq!(
            f.integer("bad").unwrap_err().to_string(),
            "rule 0: `bad` must be a whole number, got 10.5"
        );
        assert_eq!(
            f.number("s").unwrap_err().to_string(),
            "rule 0: `s` must be a number, got a string"
        );
        assert_eq!(f.number("missing").unwrap(), None);
        assert_eq!(f.required_number("c2").unwrap(), 20.0);
        assert_eq!(
            f.required_number("missing").unwrap_err().to_string(),
            "rule 0: `missing` is required"
        );
    }

    #[test]
    fn nested_fields_carry_their_path() {
        let m = one(r#"[{"clusterConfig":{"flowId":"x"}}]"#);
        let f = RuleFields::new(3, &m);
        let err = f
            .object("clusterConfig", |c| c.integer("flowId"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "rule 3: `clusterConfig.flowId` must be a whole number, got a string"
        );
    }

    #[test]
    fn array_elements_carry_their_index() {
        let m = one(r#"[{"items":[{"n":1},{"n":"x"}],"bad":[1],"scalar":3}]"#);
        let f = RuleFields::new(1, &m);
        let err = f.array("items", |i| i.integer("n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rule 1: `items[1].n` must be a whole number, got a string"
        );
        assert_eq!(
            f.array("bad", |i| i.integer("n")).unwrap_err().to_string(),
            "rule 1: `bad[0]` must be an object, got a number"
        );
        assert_eq!(
            f.array("scalar", |i| i.integer("n"))
                .unwrap_err()
                .to_string(),
            "rule 1: `scalar` must be an array, got a number"
        );
        assert_eq!(f.array("missing", |i| i.integer("n")).unwrap(), None);
    }

    #[test]
    fn each_coded_variant_stands_at_its_code() {
        use crate::{AuthorityStrategy, ControlBehavior, DegradeGrade, FlowGrade, FlowStrategy};

        fn at_their_codes<T: Coded + std::fmt::Debug>(code: impl Fn(T) -> i32) {
            for (i, variant) in T::BY_CODE.iter().enumerate() {
                assert_eq!(code(*variant), i as i32, "{variant:?}");
            }
        }
        at_their_codes(FlowGrade::code);
        at_their_codes(|s: FlowStrategy| s as i32);
        at_their_codes(ControlBehavior::code);
        at_their_codes(DegradeGrade::as_i32);
        at_their_codes(|s: AuthorityStrategy| s as i32);
        let m = one(r#"[{"grade":0,"bad":2}]"#);
        let f = RuleFields::new(4, &m);
        assert_eq!(f.code("grade", "0 or 1"), Ok(FlowGrade::Thread));
        assert_eq!(
            f.code("missing", "0 or 1"),
            Ok(FlowGrade::Qps),
            "the default"
        );
        assert_eq!(
            f.code::<FlowGrade>("bad", "0 or 1")
                .unwrap_err()
                .to_string(),
            "rule 4: `bad` must be 0 or 1, got 2"
        );
    }

    #[test]
    fn lists_must_be_arrays_of_objects() {
        assert_eq!(parse_rule_array("{}").unwrap_err(), RuleError::NotAnArray);
        assert!(matches!(
            parse_rule_array("[1]").unwrap_err(),
            RuleError::Invalid { index: 0, .. }
        ));
        assert!(matches!(
            parse_rule_array("[").unwrap_err(),
            RuleError::Json(_)
        ));
        assert_eq!(parse_rule_array("null").unwrap_err(), RuleError::NotAnArray);
        assert!(matches!(
            parse_rule_array("  ").unwrap_err(),
            RuleError::Json(_)
        ));
        assert!(parse_rule_array("[]").unwrap().is_empty());
    }
}
