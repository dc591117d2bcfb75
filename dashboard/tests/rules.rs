//! The rule book on a real SQLite file: every change validates the whole new list as the engine
//! does (the field named, nothing changed when refused), keeps ids (never reused), records who
//! changed what with the lists before and after, and rolls back; imports only into a type the app
//! does not manage.

mod support;

use floodgate_core::RuleType;
use floodgate_dashboard::rules::Change;
use floodgate_dashboard::{AppError, AppState, Dashboard};
use serde_json::{Value, json};

async fn start(dir: &tempfile::TempDir) -> (Dashboard, i64) {
    let d = support::start(dir).await;
    let app_id = support::machine(&d, "orders", "127.0.0.1", "h")
        .await
        .app_id;
    (d, app_id)
}

async fn apply(
    s: &AppState,
    app: i64,
    t: RuleType,
    c: Change,
) -> Result<Vec<(i64, Value)>, AppError> {
    let outcome = s
        .rules
        .apply(s, app, t, c, "alice")
        .await?
        .expect("applied");
    Ok(outcome
        .rules
        .iter()
        .map(|r| (r.id, serde_json::from_str(&r.body).unwrap()))
        .collect())
}

#[tokio::test]
async fn changes_keep_ids_record_history_and_roll_back() {
    let dir = tempfile::tempdir().unwrap();
    let (d, app) = start(&dir).await;
    let s = d.state();
    let flow = RuleType::Flow;
    assert_eq!(
        s.db.rule_version(app, "flow").await.unwrap(),
        None,
        "never managed"
    );

    let one = apply(
        s,
        app,
        flow,
        Change::Create(json!({"resource": "a", "count": 1})),
    )
    .await
    .unwrap();
    let two = apply(
        s,
        app,
        flow,
        Change::Create(json!({"resource": "b", "count": 2})),
    )
    .await
    .unwrap();
    let (id_a, id_b) = (one[0].0, two[1].0);
    assert_eq!(two.len(), 2);
    // Stored as the engine writes a rule back: defaults filled in.
    assert_eq!(two[1].1["grade"], 1);
    assert_eq!(two[1].1["limitApp"], "default");

    let updated = apply(
        s,
        app,
        flow,
        Change::Update {
            id: id_a,
            rule: json!({"resource": "a", "count": 10}),
        },
    )
    .await
    .unwrap();
    assert_eq!(updated[0], (id_a, updated[0].1.clone()));
    assert_eq!(updated[0].1["count"], 10.0);

    // A bad change names the field and changes nothing.
    let err = apply(
        s,
        app,
        flow,
        Change::Update {
            id: id_b,
            rule: json!({"resource": "b", "count": "many"}),
        },
    )
    .await
    .unwrap_err();
    match &err {
        AppError::Invalid(fields) => {
            assert_eq!(fields[0].field, "count");
            assert_eq!(fields[0].index, None, "the rule sent, not a position");
        }
        other => panic!("{other:?}"),
    }
    let err = apply(
        s,
        app,
        flow,
        Change::Replace(vec![
            json!({"resource": "x", "count": 1}),
            json!({"count": 1}),
        ]),
    )
    .await
    .unwrap_err();
    match &err {
        AppError::Invalid(fields) => {
            assert_eq!(
                (fields[0].index, fields[0].field.as_str()),
                (Some(1), "resource")
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        apply(s, app, flow, Change::Delete(9999)).await,
        Err(AppError::NotFound(_))
    ));
    let stored = s.db.rules(app, "flow").await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(s.db.rule_version(app, "flow").await.unwrap(), Some(3));

    let after_delete = apply(s, app, flow, Change::Delete(id_b)).await.unwrap();
    assert_eq!(after_delete.len(), 1);
    // A new rule never takes the deleted one's id.
    let three = apply(
        s,
        app,
        flow,
        Change::Create(json!({"resource": "c", "count": 3})),
    )
    .await
    .unwrap();
    let id_c = three[1].0;
    assert!(id_c > id_b);

    let history = s.db.history(app, Some("flow"), None, 50).await.unwrap();
    let actions: Vec<&str> = history.iter().map(|h| h.action.as_str()).collect();
    assert_eq!(actions, ["create", "delete", "update", "create", "create"]);
    assert!(history.iter().all(|h| h.actor == "alice"));
    // Roll back the deletion: b comes back with its own id.
    let deletion = &history[1];
    let before: Vec<Value> = serde_json::from_str(&deletion.before).unwrap();
    let restore = before
        .iter()
        .map(|i| (i["id"].as_i64().unwrap(), i["rule"].clone()))
        .collect();
    let restored = apply(s, app, flow, Change::Restore(restore)).await.unwrap();
    let ids: Vec<i64> = restored.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids,
        [id_a, id_b],
        "c was added after the deletion, so it goes too"
    );
    assert_eq!(
        s.db.history(app, None, None, 1).await.unwrap()[0].action,
        "rollback"
    );
    d.shutdown().await;
}

#[tokio::test]
async fn imports_only_into_a_type_never_managed() {
    let dir = tempfile::tempdir().unwrap();
    let (d, app) = start(&dir).await;
    let s = d.state();
    let imported = s
        .rules
        .apply(
            s,
            app,
            RuleType::Degrade,
            Change::Import(vec![
                json!({"resource": "r", "count": 5, "timeWindow": 10, "grade": 2}),
            ]),
            "import from 127.0.0.1:1",
        )
        .await
        .unwrap();
    assert!(imported.is_some());
    let again = s
        .rules
        .apply(
            s,
            app,
            RuleType::Degrade,
            Change::Import(vec![
                json!({"resource": "other", "count": 1, "timeWindow": 1, "grade": 2}),
            ]),
            "import from 127.0.0.1:2",
        )
        .await
        .unwrap();
    assert!(
        again.is_none(),
        "a managed type is never overwritten by a machine"
    );
    let stored = s.db.rules(app, "degrade").await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].resource.as_deref(), Some("r"));
    d.shutdown().await;
}
