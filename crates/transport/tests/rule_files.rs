//! Rule files: loaded at start, reloaded on change, bad files rejected, pushed rules persisted so they
//! survive a restart.

mod support;

use std::path::PathBuf;

use floodgate_core::RuleType;
use support::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("floodgate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn files_load_at_start_and_reload_on_change() {
    let dir = temp_dir("reload");
    let file = dir.join("flow.json");
    std::fs::write(&file, r#"[{"resource":"R","count":5}]"#).unwrap();
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &file)
        .start()
        .unwrap();
    assert_eq!(fg.flow_rules()[0].count, 5.0, "loaded at start");

    std::fs::write(&file, r#"[{"resource":"R","count":7}]"#).unwrap();
    assert!(
        eventually(|| fg.flow_rules().first().map(|r| r.count) == Some(7.0)),
        "reloaded"
    );

    // A bad file keeps the rules in force and says why.
    std::fs::write(&file, r#"[{"resource":"R","count":-1}]"#).unwrap();
    assert!(eventually(|| agent
        .rule_files()
        .last_error(RuleType::Flow)
        .is_some()));
    assert_eq!(
        agent.rule_files().last_error(RuleType::Flow).unwrap(),
        "rule 0: `count` must be a finite number ≥ 0, got -1"
    );
    assert_eq!(fg.flow_rules()[0].count, 7.0);
    std::fs::write(&file, "not json").unwrap();
    assert!(eventually(|| agent
        .rule_files()
        .last_error(RuleType::Flow)
        .is_some_and(|e| e.starts_with("invalid JSON"))));
    assert_eq!(fg.flow_rules()[0].count, 7.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pushed_rules_survive_a_restart() {
    let dir = temp_dir("persist");
    let file = dir.join("rules").join("flow.json");
    {
        let (_clock, fg) = engine();
        let agent = builder(&fg)
            .rule_file(RuleType::Flow, &file)
            .start()
            .unwrap();
        let (status, body) = post(
            agent.local_addr(),
            "setRules",
            &[
                ("type", "flow"),
                ("data", r#"[{"resource":"a+b","count":3.5}]"#),
            ],
        );
        assert_eq!((status, body.as_str()), (200, "success"));
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("\"a+b\""), "{written}");
        agent.shutdown();
    }
    // A new process: the file brings the pushed rules back.
    let (_clock, fg) = engine();
    let _agent = builder(&fg)
        .rule_file(RuleType::Flow, &file)
        .start()
        .unwrap();
    assert_eq!(fg.flow_rules().len(), 1);
    assert_eq!(fg.flow_rules()[0].resource, "a+b");
    assert_eq!(fg.flow_rules()[0].count, 3.5);
    let leftovers: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "atomic write leaves no temp file");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_file_changes_nothing() {
    let dir = temp_dir("empty");
    let file = dir.join("flow.json");
    std::fs::write(&file, r#"[{"resource":"R","count":5}]"#).unwrap();
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &file)
        .start()
        .unwrap();
    std::fs::write(&file, "").unwrap();
    std::fs::write(&file, "[]").unwrap();
    assert!(eventually(|| fg.flow_rules().is_empty()), "`[]` clears");
    assert!(agent.rule_files().last_error(RuleType::Flow).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_write_is_a_partial_success() {
    let dir = temp_dir("unwritable");
    // The rule file's path is a directory: the rules load, the write fails.
    let file = dir.join("flow.json");
    std::fs::create_dir_all(file.join("occupied")).unwrap();
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &file)
        .start()
        .unwrap();
    let (status, body) = post(
        agent.local_addr(),
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"R","count":1}]"#),
        ],
    );
    assert_eq!(
        (status, body.as_str()),
        (200, "partial success (write data source failed)")
    );
    assert_eq!(fg.flow_rules().len(), 1, "loaded even though not persisted");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A push loaded but not written stays in force until the file itself changes: an event in the
/// watched directory (here another type's push) does not reload the file's old text over it.
#[test]
fn a_push_that_could_not_be_written_stays_in_force() {
    let dir = temp_dir("unsaved-push");
    let flow = dir.join("flow.json");
    std::fs::write(&flow, r#"[{"resource":"R","count":5}]"#).unwrap();
    // Every temporary name a write could take is taken: the write fails, the file stays as it is.
    let pid = std::process::id();
    for k in 0..4096 {
        std::fs::create_dir(dir.join(format!(".flow.json.{pid}.{k}.tmp"))).unwrap();
    }
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &flow)
        .rule_file(RuleType::Degrade, dir.join("degrade.json"))
        .start()
        .unwrap();
    let count = |fg: &floodgate_core::Floodgate| fg.flow_rules().first().map(|r| r.count);
    assert_eq!(count(&fg), Some(5.0));
    let (status, body) = post(
        agent.local_addr(),
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"R","count":1}]"#),
        ],
    );
    assert_eq!(
        (status, body.as_str()),
        (200, "partial success (write data source failed)")
    );
    // An event in the watched directory: the watcher compares every file with what it saw. Once it
    // has loaded the degrade file, `load` (which waits for the watcher's pass to finish) marks the
    // pass as over.
    std::fs::write(
        dir.join("degrade.json"),
        r#"[{"resource":"Other","grade":2,"count":10,"timeWindow":10}]"#,
    )
    .unwrap();
    assert!(eventually(|| !fg.degrade_rules().is_empty()));
    agent
        .rule_files()
        .load(&fg, RuleType::Degrade)
        .expect("the degrade file loads");
    assert_eq!(count(&fg), Some(1.0), "the pushed rules are still in force");
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A start that fails (here: the metric log directory is a file) loads no rule file: it changes
/// nothing, rather than loading the rules and then failing.
#[test]
fn a_start_that_fails_loads_no_rules() {
    let dir = temp_dir("failed-start");
    let flow = dir.join("flow.json");
    std::fs::write(&flow, r#"[{"resource":"R","count":5}]"#).unwrap();
    let not_a_dir = dir.join("log");
    std::fs::write(&not_a_dir, "a file").unwrap();
    let (_clock, fg) = engine();
    let started = builder(&fg)
        .rule_file(RuleType::Flow, &flow)
        .metric_log_dir(&not_a_dir)
        .start();
    assert!(started.is_err());
    assert!(fg.flow_rules().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A link planted where the temporary file of a write could go is never followed: the file it points
/// to stays as it was, and no temporary file is left behind.
#[cfg(unix)]
#[test]
fn a_write_never_follows_a_planted_link() {
    use floodgate_transport::RuleFiles;
    let dir = temp_dir("planted");
    let victim = dir.join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let pid = std::process::id();
    let names = (0..256).map(|k| format!(".flow.json.{pid}.{k}.tmp"));
    // The name writes used before (the process id alone) too.
    for name in names.chain([format!(".flow.json.{pid}.tmp")]) {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    let files = RuleFiles::new([(RuleType::Flow.into(), dir.join("flow.json"))].into());
    let written = files.write(RuleType::Flow, r#"[{"resource":"R","count":1}]"#);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    if written.is_ok() {
        let saved = std::fs::read_to_string(dir.join("flow.json")).unwrap();
        assert!(saved.contains("\"R\""), "{saved}");
    }
    let stray = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file() && !e.file_type().unwrap().is_symlink())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .count();
    assert_eq!(stray, 0, "no temporary file left");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A push replaces the file with one of the same mode (an operator's 0600 stays 0600).
#[cfg(unix)]
#[test]
fn a_push_keeps_the_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("mode");
    let file = dir.join("flow.json");
    std::fs::write(&file, "[]").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &file)
        .start()
        .unwrap();
    let (status, _) = post(
        agent.local_addr(),
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"r","count":1}]"#),
        ],
    );
    assert_eq!(status, 200);
    let written = std::fs::metadata(&file).unwrap();
    assert!(std::fs::read_to_string(&file).unwrap().contains("\"r\""));
    assert_eq!(written.permissions().mode() & 0o777, 0o600);
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}

fn count(fg: &floodgate_core::Floodgate) -> Option<f64> {
    fg.flow_rules().first().map(|r| r.count)
}

/// A rule file behind a symbolic link: edits of the target reload it, and a push writes through the
/// link (which stays a link).
#[cfg(unix)]
#[test]
fn a_linked_file_reloads_on_target_edits_and_pushes_keep_the_link() {
    let dir = temp_dir("linked");
    std::fs::create_dir_all(dir.join("real")).unwrap();
    let target = dir.join("real").join("flow.json");
    std::fs::write(&target, r#"[{"resource":"R","count":5}]"#).unwrap();
    let link = dir.join("flow.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let (_clock, fg) = engine();
    let agent = builder(&fg)
        .rule_file(RuleType::Flow, &link)
        .start()
        .unwrap();
    assert_eq!(count(&fg), Some(5.0));
    std::fs::write(&target, r#"[{"resource":"R","count":6}]"#).unwrap();
    assert!(eventually(|| count(&fg) == Some(6.0)), "the target's edit");
    let (status, _) = post(
        agent.local_addr(),
        "setRules",
        &[
            ("type", "flow"),
            ("data", r#"[{"resource":"R","count":8}]"#),
        ],
    );
    assert_eq!(status, 200);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&target).unwrap().contains("8"));
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Kubernetes ConfigMap volume: `flow.json -> ..data/flow.json`, and an update swaps the `..data`
/// link to a new directory. The swap reloads the rules.
#[cfg(unix)]
#[test]
fn a_configmap_update_reloads() {
    use std::os::unix::fs::symlink;
    let dir = temp_dir("configmap");
    for (version, count) in [("..v1", 5), ("..v2", 9)] {
        std::fs::create_dir_all(dir.join(version)).unwrap();
        std::fs::write(
            dir.join(version).join("flow.json"),
            format!(r#"[{{"resource":"R","count":{count}}}]"#),
        )
        .unwrap();
    }
    symlink("..v1", dir.join("..data")).unwrap();
    symlink("..data/flow.json", dir.join("flow.json")).unwrap();
    let (_clock, fg) = engine();
    let _agent = builder(&fg)
        .rule_file(RuleType::Flow, dir.join("flow.json"))
        .start()
        .unwrap();
    assert_eq!(count(&fg), Some(5.0));
    symlink("..v2", dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    assert!(eventually(|| count(&fg) == Some(9.0)), "the swap reloaded");
    let _ = std::fs::remove_dir_all(&dir);
}
