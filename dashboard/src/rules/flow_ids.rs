//! Cluster flow ids. A cluster rule's `clusterConfig.flowId` is what its machines name it by when
//! they ask the token service, and one token server may serve several apps, so a flow id names one
//! rule among all the dashboard's flow and hot-parameter rules.
//!
//! A cluster rule saved without a flow id (the form's field left empty, or a JSON rule without it)
//! gets one, as Sentinel's dashboard gives a cluster rule its rule id: its own id when no other rule
//! has that flow id — for a new rule, the id it is about to get — and otherwise one more than the
//! largest flow id or rule id there is. A flow id typed for the rule a change is about (a create or an
//! update) is refused when another rule has it; lists replaced whole, imported or rolled back keep
//! theirs as they are.

use std::collections::HashSet;

use floodgate_core::RuleType;
use serde_json::{Map, Value};

use crate::AppState;
use crate::db::FlowIdUse;
use crate::error::{AppError, AppResult, FieldError};

/// The rule a change is about, when it is about one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Subject {
    /// Its position in the new list.
    pub(super) index: usize,
    /// The flow id it has now (an update), if any.
    pub(super) stored_flow_id: Option<i64>,
}

/// Gives every cluster rule of `list` (the whole new list of `rule_type` of app `app_id`, each rule
/// with the id it keeps) that has no flow id one, after refusing the subject's typed flow id when
/// another rule has it.
pub(super) async fn settle_flow_ids(
    state: &AppState,
    app_id: i64,
    rule_type: RuleType,
    list: &mut [(Option<i64>, Value)],
    subject: Option<Subject>,
) -> AppResult<()> {
    if !matches!(rule_type, RuleType::Flow | RuleType::ParamFlow) {
        return Ok(());
    }
    // The stored rules of this list are replaced by it: their flow ids are the list's.
    let others: Vec<FlowIdUse> = state
        .db
        .flow_id_uses()
        .await?
        .into_iter()
        .filter(|u| !(u.app_id == app_id && u.rule_type == rule_type.as_str()))
        .collect();
    let last_rule_id = state.db.last_rule_id().await?;
    settle(list, &others, last_rule_id, subject).map_err(|e| AppError::Invalid(vec![e]))
}

/// The flow id `rule` carries, if it carries a whole one.
pub(crate) fn flow_id(rule: &Value) -> Option<i64> {
    rule.get("clusterConfig")?.get("flowId")?.as_i64()
}

/// Whether `rule` is in cluster mode and has no flow id to be checked: no `clusterConfig`, or one
/// without `flowId`.
fn wants_flow_id(rule: &Value) -> bool {
    rule.get("clusterMode").and_then(Value::as_bool) == Some(true)
        && match rule.get("clusterConfig") {
            None | Some(Value::Null) => true,
            Some(Value::Object(c)) => matches!(c.get("flowId"), None | Some(Value::Null)),
            Some(_) => false,
        }
}

fn settle(
    list: &mut [(Option<i64>, Value)],
    others: &[FlowIdUse],
    last_rule_id: i64,
    subject: Option<Subject>,
) -> Result<(), FieldError> {
    if let Some(s) = subject
        && let Some((_, rule)) = list.get(s.index)
        && let Some(id) = flow_id(rule)
        && s.stored_flow_id != Some(id)
    {
        let taken_here = list
            .iter()
            .enumerate()
            .any(|(i, (_, r))| i != s.index && flow_id(r) == Some(id));
        let taken_there = others.iter().find(|u| u.flow_id == id);
        let whose = match (taken_there, taken_here) {
            (Some(u), _) => Some(format!(
                "{} rule {} of app {}",
                if u.rule_type == "paramFlow" {
                    "hot-parameter"
                } else {
                    "flow"
                },
                u.rule_id,
                u.app
            )),
            (None, true) => Some("another rule of this list".to_owned()),
            (None, false) => None,
        };
        if let Some(whose) = whose {
            return Err(FieldError {
                index: None,
                field: "clusterConfig.flowId".to_owned(),
                message: format!("{id} is already the flow id of {whose}"),
            });
        }
    }
    let mut used: HashSet<i64> = others.iter().map(|u| u.flow_id).collect();
    used.extend(list.iter().filter_map(|(_, r)| flow_id(r)));
    let mut next = used
        .iter()
        .copied()
        .chain([last_rule_id])
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    // New rules get the ids after the last one handed out, in the list's order.
    let mut new_id = last_rule_id;
    for (id, rule) in list.iter_mut() {
        let own = match id {
            Some(id) => *id,
            None => {
                new_id += 1;
                new_id
            }
        };
        if !wants_flow_id(rule) {
            continue;
        }
        let assigned = if used.contains(&own) {
            while used.contains(&next) {
                next += 1;
            }
            next
        } else {
            own
        };
        used.insert(assigned);
        if let Some(m) = rule.as_object_mut() {
            let config = m
                .entry("clusterConfig")
                .or_insert_with(|| Value::Object(Map::new()));
            if config.is_null() {
                *config = Value::Object(Map::new());
            }
            if let Some(c) = config.as_object_mut() {
                c.insert("flowId".into(), Value::from(assigned));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn used(rule_id: i64, flow_id: i64) -> FlowIdUse {
        FlowIdUse {
            rule_id,
            app_id: 2,
            app: "payments".into(),
            rule_type: "flow".into(),
            flow_id,
        }
    }

    fn cluster(config: Value) -> Value {
        json!({"resource": "r", "count": 1, "clusterMode": true, "clusterConfig": config})
    }

    #[test]
    fn a_new_rule_gets_the_id_it_is_about_to_get() {
        let mut list = vec![
            (Some(3), cluster(json!({"flowId": 3}))),
            (None, cluster(json!({"thresholdType": 1}))),
        ];
        settle(&mut list, &[used(1, 1)], 4, None).unwrap();
        assert_eq!(flow_id(&list[1].1), Some(5));
        assert_eq!(list[1].1["clusterConfig"]["thresholdType"], 1);
    }

    #[test]
    fn a_taken_id_gives_way_to_one_above_every_id() {
        // Rule 5 would be the new rule's id, but app payments' rule 1 has flow id 5.
        let mut list = vec![
            (None, cluster(Value::Null)),
            (
                Some(2),
                json!({"resource": "r", "count": 1, "clusterMode": true}),
            ),
            (Some(3), json!({"resource": "r", "count": 1})),
        ];
        settle(&mut list, &[used(1, 5)], 4, None).unwrap();
        assert_eq!(flow_id(&list[0].1), Some(6));
        assert_eq!(flow_id(&list[1].1), Some(2));
        assert!(
            list[2].1.get("clusterConfig").is_none(),
            "not a cluster rule"
        );
    }

    #[test]
    fn a_typed_flow_id_of_another_rule_is_refused() {
        let mut list = vec![(None, cluster(json!({"flowId": 7})))];
        let subject = Subject {
            index: 0,
            stored_flow_id: None,
        };
        let e = settle(&mut list, &[used(9, 7)], 9, Some(subject)).unwrap_err();
        assert_eq!(e.field, "clusterConfig.flowId");
        assert_eq!(
            e.message,
            "7 is already the flow id of flow rule 9 of app payments"
        );
        // A rule keeping its own flow id is not refused for a duplicate it already had.
        let kept = Subject {
            index: 0,
            stored_flow_id: Some(7),
        };
        settle(&mut list, &[used(9, 7)], 9, Some(kept)).unwrap();
    }

    #[test]
    fn a_bad_flow_id_is_left_for_the_engine_to_name() {
        let mut list = vec![(None, cluster(json!({"flowId": "x"})))];
        settle(&mut list, &[], 0, None).unwrap();
        assert_eq!(list[0].1["clusterConfig"]["flowId"], "x");
        let mut list = vec![(None, cluster(json!({"flowId": 0})))];
        settle(&mut list, &[], 0, None).unwrap();
        assert_eq!(flow_id(&list[0].1), Some(0));
    }
}
