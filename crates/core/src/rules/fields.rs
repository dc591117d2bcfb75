//! The JSON fields each rule kind has, so that a load can report the others: every field of
//! Sentinel's rule class for the kind (what Sentinel writes and reads), nested objects included.

use serde_json::{Map, Value};

use super::RuleWarning;

/// The fields of Sentinel's `AbstractRule`, which every rule class extends: every rule kind has them.
const ABSTRACT_RULE_FIELDS: [&str; 4] = ["id", "resource", "limitApp", "regex"];

/// The fields Sentinel's dashboard keeps beside a rule's own (its rule entities: the app, the machine
/// and the times of creation and change). Lists exported from that dashboard, or pushed by it to a
/// configuration centre, carry them on every rule: they are known, and ignored without a warning.
const DASHBOARD_ENTITY_FIELDS: [&str; 5] = ["app", "ip", "port", "gmtCreate", "gmtModified"];

/// The fields of one kind of JSON object, and the shape of those that hold objects (an object, or an
/// array of them). At the top of a rule, the fields every rule has (Sentinel's `AbstractRule`'s) and
/// those its dashboard keeps are known too.
#[derive(Debug)]
pub(crate) struct Fields {
    names: &'static [&'static str],
    nested: &'static [(&'static str, &'static Fields)],
}

impl Fields {
    /// Objects with the fields `names`; `nested` gives the shape of the ones holding objects.
    pub(crate) const fn new(
        names: &'static [&'static str],
        nested: &'static [(&'static str, &'static Fields)],
    ) -> Self {
        Fields { names, nested }
    }

    /// Appends to `out` a warning for each field of rule `index` (the object `map`) that is not one of
    /// these, then for the unknown fields of its nested objects. A nested field that is not an object
    /// (or an array of objects) is left to the parser, which refuses it.
    pub(crate) fn unknown(
        &self,
        index: usize,
        map: &Map<String, Value>,
        out: &mut Vec<RuleWarning>,
    ) {
        self.unknown_under(index, "", map, out);
    }

    /// Whether `field` is one of the names: the length and first byte are compared before the rest, which
    /// tells most names apart without a call to compare them.
    fn knows(&self, field: &str) -> bool {
        let (len, first) = (field.len(), field.as_bytes().first());
        self.names
            .iter()
            .any(|n| n.len() == len && n.as_bytes().first() == first && *n == field)
    }

    fn unknown_under(
        &self,
        index: usize,
        prefix: &str,
        map: &Map<String, Value>,
        out: &mut Vec<RuleWarning>,
    ) {
        let path = |field: &str| {
            if prefix.is_empty() {
                field.to_owned()
            } else {
                format!("{prefix}.{field}")
            }
        };
        for (field, value) in map {
            if prefix.is_empty()
                && (ABSTRACT_RULE_FIELDS.contains(&field.as_str())
                    || DASHBOARD_ENTITY_FIELDS.contains(&field.as_str()))
            {
                continue;
            }
            if !self.knows(field) {
                out.push(RuleWarning::unknown_field(index, path(field)));
                continue;
            }
            let Some((_, shape)) = self.nested.iter().find(|(name, _)| name == field) else {
                continue;
            };
            match value {
                Value::Object(inner) => shape.unknown_under(index, &path(field), inner, out),
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Value::Object(inner) = item {
                            shape.unknown_under(index, &path(&format!("{field}[{i}]")), inner, out);
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEM: Fields = Fields::new(&["object", "count"], &[]);
    const CONFIG: Fields = Fields::new(&["flowId"], &[]);
    const RULE: Fields = Fields::new(
        &["resource", "items", "config"],
        &[("items", &ITEM), ("config", &CONFIG)],
    );

    #[test]
    fn unknown_fields_are_named_by_their_path() {
        let json = r#"{"resource":"R","Count":1,"config":{"flowId":1,"flowID":2},
            "items":[{"object":"a","count":1},5,{"value":"b"}]}"#;
        let Value::Object(map) = serde_json::from_str(json).unwrap() else {
            unreachable!()
        };
        let mut out = Vec::new();
        RULE.unknown(7, &map, &mut out);
        let fields: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(
            fields,
            [
                "rule 7: unknown field `Count` (ignored)",
                "rule 7: unknown field `config.flowID` (ignored)",
                "rule 7: unknown field `items[2].value` (ignored)",
            ]
        );
    }

    /// Regression test for rules exported from Sentinel's dashboard (its entities) warning on
    /// every rule: the entity's own fields are known at the top level, and only there.
    #[test]
    fn the_dashboard_entity_fields_are_known_at_the_top_level() {
        let json = r#"{"resource":"R","app":"shop","ip":"10.0.0.1","port":8719,
            "gmtCreate":1700000000000,"gmtModified":1700000000000,"config":{"app":"x"}}"#;
        let Value::Object(map) = serde_json::from_str(json).unwrap() else {
            unreachable!()
        };
        let mut out = Vec::new();
        RULE.unknown(0, &map, &mut out);
        let fields: Vec<String> = out.iter().map(ToString::to_string).collect();
        assert_eq!(fields, ["rule 0: unknown field `config.app` (ignored)"]);
    }
}
