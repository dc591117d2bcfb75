//! Rule files: one JSON file per rule type, loaded at start, reloaded when it changes, and written when
//! rules are pushed through the command API — so rules a dashboard pushed survive a restart.
//!
//! A file that does not parse or holds an invalid rule is rejected whole: the rules in force stay in
//! force and the error is logged and kept ([`RuleFiles::last_error`]). An empty file changes nothing (it
//! is usually a write in progress); `[]` clears the type. Writes go to a temporary file in
//! the same directory that is then renamed over the old one, so a reader never sees half a file, and the
//! new file keeps the old one's mode. The watcher follows the files' directories (editors and the writer
//! replace files by renaming), and those of their targets when they are symbolic links; on any change
//! there it reloads the files whose text changed, so an edit of a link's target or a Kubernetes
//! ConfigMap update (a `..data` link swapped) reloads, and the agent's own writes do not. A push writes
//! through a link to its target, and the link stays.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use floodgate_core::{Floodgate, RuleLoad, RuleType};
use notify::{Event, RecommendedWatcher, RecursiveMode, Watcher};

use crate::config::RuleTypeKey;

/// Tells apart the temporary files of concurrent writes in one process.
static TEMP_SUFFIX: AtomicU64 = AtomicU64::new(0);

/// The rule files of an agent.
#[derive(Debug, Default)]
pub struct RuleFiles {
    files: BTreeMap<RuleTypeKey, PathBuf>,
    errors: Mutex<BTreeMap<RuleTypeKey, String>>,
    /// Held while rules move between the engine and a file (a reload by the watcher, or a push
    /// loaded and written): a reload must not land between a push's load and its write, or the file
    /// and the engine would end with the rules before the push.
    sync: Mutex<()>,
    /// Set when the agent stops: the watcher's thread (which notify does not join) reloads nothing
    /// into the engine after that.
    stopped: AtomicBool,
    /// The text each file had when last loaded or written: an event reloads only a file whose text
    /// changed (so an event anywhere in a watched directory can be checked against every file).
    seen: Mutex<BTreeMap<RuleTypeKey, String>>,
}

impl RuleFiles {
    /// Files by rule type.
    pub fn new(files: BTreeMap<RuleTypeKey, PathBuf>) -> Self {
        RuleFiles {
            files,
            errors: Mutex::default(),
            sync: Mutex::default(),
            stopped: AtomicBool::new(false),
            seen: Mutex::default(),
        }
    }

    /// The file of `t`, if configured.
    pub fn path(&self, t: RuleType) -> Option<&Path> {
        self.files.get(&t.into()).map(PathBuf::as_path)
    }

    /// The last error loading the file of `t` (cleared by a good load).
    pub fn last_error(&self, t: RuleType) -> Option<String> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&t.into())
            .cloned()
    }

    /// Loads the file of `t` into `fg`. A missing file loads nothing.
    pub fn load(&self, fg: &Floodgate, t: RuleType) -> Result<(), String> {
        let Some(path) = self.path(t) else {
            return Ok(());
        };
        let _sync = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        self.load_unsynced(fg, t, path, false)
    }

    /// [`load`](Self::load) under `sync`; `if_changed`: only if the text differs from the last seen.
    fn load_unsynced(
        &self,
        fg: &Floodgate,
        t: RuleType,
        path: &Path,
        if_changed: bool,
    ) -> Result<(), String> {
        let result = match std::fs::read_to_string(path) {
            // An empty file is a write in progress (truncate, then write), not "no rules": write `[]`
            // to clear a type.
            Ok(text) if text.trim().is_empty() => return Ok(()),
            Ok(text) => {
                let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                if if_changed && seen.get(&t.into()) == Some(&text) {
                    return Ok(());
                }
                let loaded = fg
                    .load_rules_json(t, &text)
                    .map(drop)
                    .map_err(|e| e.to_string());
                seen.insert(t.into(), text);
                loaded
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err("the file is not UTF-8 text".to_owned())
            }
            Err(e) => Err(e.to_string()),
        };
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        match &result {
            Ok(()) => {
                errors.remove(&t.into());
            }
            Err(e) => {
                // The error quoted: one event, one line (a regex error spans several).
                tracing::error!(rule_type = %t, file = %path.display(), error = ?e, "rule file rejected; the rules in force stay");
                errors.insert(t.into(), e.clone());
            }
        }
        result
    }

    /// Loads every configured file.
    pub fn load_all(&self, fg: &Floodgate) {
        for key in self.files.keys() {
            let _ = self.load(fg, key.rule_type());
        }
    }

    /// Loads `json` (rules of `t`) into `fg` and writes the rules then in force to the file of `t`, with
    /// no reload from the file in between. A rejected list changes nothing; `Ok((load, Err(_)))`:
    /// loaded (with `load`'s warnings), but the file could not be written.
    pub fn load_and_write(
        &self,
        fg: &Floodgate,
        t: RuleType,
        json: &str,
    ) -> Result<(RuleLoad, std::io::Result<()>), floodgate_core::RuleError> {
        let _sync = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        let load = fg.load_rules_json(t, json)?;
        let written = self.write_unsynced(t, &fg.rules_json(t));
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        match &written {
            // The watcher sees the rename: these are the rules in force, nothing to reload.
            Ok(Some(text)) => {
                seen.insert(t.into(), text.clone());
            }
            Ok(None) => {}
            // The file still holds what it held. The pushed rules stay in force until its text
            // changes: that text is seen, or the next event in any watched directory (even the
            // failed write's own temporary file) would reload the old text over the push
            // (`a_push_that_could_not_be_written_stays_in_force`).
            Err(_) => match self.path(t).map(std::fs::read_to_string) {
                Some(Ok(text)) => {
                    seen.insert(t.into(), text);
                }
                _ => {
                    seen.remove(&t.into());
                }
            },
        }
        Ok((load, written.map(drop)))
    }

    /// Writes `json` (the rules of `t`) to its file, atomically; nothing to do without a file.
    pub fn write(&self, t: RuleType, json: &str) -> std::io::Result<()> {
        let _sync = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        self.write_unsynced(t, json).map(drop)
    }

    /// Writes the file of `t`; the text written (`None`: no file configured).
    fn write_unsynced(&self, t: RuleType, json: &str) -> std::io::Result<Option<String>> {
        let Some(configured) = self.path(t) else {
            return Ok(None);
        };
        // Through a symbolic link to its target, so that the link stays (a missing file: as named).
        let target = std::fs::symlink_metadata(configured)
            .is_ok_and(|m| m.file_type().is_symlink())
            .then(|| configured.canonicalize().ok())
            .flatten();
        let path = target.as_deref().unwrap_or(configured);
        let pretty = serde_json::from_str::<serde_json::Value>(json)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|_| json.to_owned());
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name = path
            .file_name()
            .map_or("rules".into(), |n| n.to_string_lossy());
        // A new file of a name no one else uses: `create_new` never follows a link planted under the
        // name, nor truncates someone else's file.
        let (tmp, mut file) = (0..16)
            .find_map(|attempt| {
                let tmp = dir.join(format!(
                    ".{name}.{}.{}.tmp",
                    std::process::id(),
                    TEMP_SUFFIX.fetch_add(1, Ordering::Relaxed) + attempt
                ));
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp);
                match file {
                    Ok(file) => Some(Ok((tmp, file))),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                    Err(e) => Some(Err(e)),
                }
            })
            .unwrap_or_else(|| Err(std::io::Error::other("no free temporary file name")))?;
        // The file the operator made keeps its mode (0600, 0664, …) across the replacement.
        let kept_mode = match std::fs::metadata(path) {
            Ok(old) => file.set_permissions(old.permissions()),
            Err(_) => Ok(()),
        };
        let written = kept_mode
            .and_then(|()| file.write_all(pretty.as_bytes()))
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        // The rename itself survives a crash only once the directory is on disk.
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(Some(format!("{pretty}\n")))
    }

    /// Reloads the files whose text changed, on any change in a watched directory (none once
    /// stopped). Any change, not only one naming a file: a file behind a symbolic link changes when the
    /// link, its target or a link on the way is replaced (a Kubernetes ConfigMap swaps a `..data` link).
    fn on_event(&self, fg: &Floodgate, event: &Event) {
        if event.kind.is_access() || self.stopped.load(Ordering::Acquire) {
            return;
        }
        let _sync = self.sync.lock().unwrap_or_else(|e| e.into_inner());
        // Again under the lock: a stop that came while this event waited for it wins.
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        for (key, path) in &self.files {
            let _ = self.load_unsynced(fg, key.rule_type(), path, true);
        }
    }

    /// Stops the reloads of [`watch`](Self::watch) (events still queued change nothing).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// Watches the files and reloads a type whenever its file changes.
    pub fn watch(self: &Arc<Self>, fg: Floodgate) -> notify::Result<RecommendedWatcher> {
        let files = Arc::clone(self);
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| {
            if let Ok(event) = event {
                files.on_event(&fg, &event);
            }
        })?;
        // The directory of each file, and of its target when it is a symbolic link.
        let mut dirs: Vec<PathBuf> = self
            .files
            .values()
            .flat_map(|p| [Some(p.clone()), p.canonicalize().ok()])
            .flatten()
            .map(|p| {
                p.parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_path_buf()
            })
            .collect();
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            std::fs::create_dir_all(&dir).map_err(notify::Error::io)?;
            watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        }
        Ok(watcher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::EventKind;
    use notify::event::{DataChange, ModifyKind};

    /// A push whose file write failed leaves the file as it was: the next change to it, even the same
    /// text saved again, must reload it (the text it holds is no longer the rules in force).
    #[test]
    fn a_failed_write_forgets_the_files_text() {
        let dir = std::env::temp_dir().join(format!("floodgate-forget-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The file's directory is a plain file: the write fails.
        std::fs::write(dir.join("plain"), "").unwrap();
        let path = dir.join("plain").join("flow.json");
        let files = RuleFiles::new(BTreeMap::from([(RuleType::Flow.into(), path)]));
        files
            .seen
            .lock()
            .unwrap()
            .insert(RuleType::Flow.into(), "[]".to_owned());
        let fg = Floodgate::default();
        let written = files
            .load_and_write(&fg, RuleType::Flow, r#"[{"resource":"r","count":1}]"#)
            .unwrap()
            .1;
        assert!(written.is_err());
        assert_eq!(fg.flow_rules().len(), 1, "loaded all the same");
        assert!(files.seen.lock().unwrap().is_empty(), "forgotten");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// notify's watcher thread is not joined when the agent stops: an event it still delivers must not
    /// load a file into the engine after the stop.
    #[test]
    fn events_after_a_stop_change_nothing() {
        let dir = std::env::temp_dir().join(format!("floodgate-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flow.json");
        std::fs::write(&path, r#"[{"resource":"r","count":1}]"#).unwrap();
        let files = RuleFiles::new(BTreeMap::from([(RuleType::Flow.into(), path.clone())]));
        let fg = Floodgate::default();
        let event =
            Event::new(EventKind::Modify(ModifyKind::Data(DataChange::Content))).add_path(path);
        files.stop();
        files.on_event(&fg, &event);
        assert!(fg.flow_rules().is_empty(), "stopped: not loaded");
        files.stopped.store(false, Ordering::Release);
        files.on_event(&fg, &event);
        assert_eq!(fg.flow_rules().len(), 1, "running: loaded");
        let _ = std::fs::remove_dir_all(&dir);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// JSON values of every kind, nested a little.
        fn json() -> impl Strategy<Value = serde_json::Value> {
            let leaf = prop_oneof![
                Just(serde_json::Value::Null),
                any::<bool>().prop_map(serde_json::Value::from),
                any::<i64>().prop_map(serde_json::Value::from),
                any::<f64>().prop_map(serde_json::Value::from),
                "[ -~]{0,12}".prop_map(serde_json::Value::from),
                Just(serde_json::Value::from("(unclosed")),
            ];
            leaf.prop_recursive(3, 24, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4)
                        .prop_map(serde_json::Value::from),
                    proptest::collection::btree_map(
                        prop_oneof![
                            Just("resource".to_owned()),
                            Just("count".to_owned()),
                            Just("grade".to_owned()),
                            Just("regex".to_owned()),
                            Just("paramIdx".to_owned()),
                            Just("controlBehavior".to_owned()),
                            Just("limitApp".to_owned()),
                            Just("timeWindow".to_owned()),
                            "[a-zA-Z]{1,8}",
                        ],
                        inner,
                        0..6,
                    )
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// A rule file's bytes: anything, or JSON close to a rule list.
        fn contents() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..512),
                json().prop_map(|v| v.to_string().into_bytes()),
                proptest::collection::vec(json(), 0..4)
                    .prop_map(|v| serde_json::Value::from(v).to_string().into_bytes()),
            ]
        }

        proptest! {
            /// Whatever a rule file holds: loaded, or refused with a clear error (kept for
            /// `last_error`) while the rules in force stay in force; never a panic.
            #[test]
            fn any_rule_file_loads_or_is_refused_clearly(
                rule_type in proptest::sample::select(RuleType::ALL.to_vec()),
                bytes in contents(),
            ) {
                let dir = std::env::temp_dir().join(format!(
                    "floodgate-rule-file-props-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&dir).unwrap();
                let path = dir.join("rules.json");
                std::fs::write(&path, &bytes).unwrap();
                let files = RuleFiles::new(BTreeMap::from([(rule_type.into(), path)]));
                let fg = Floodgate::builder()
                    .clock(floodgate_core::ManualClock::new(1_700_000_000_000))
                    .build();
                let in_force = match rule_type {
                    RuleType::System => r#"[{"qps":5}]"#,
                    RuleType::ParamFlow => r#"[{"resource":"kept","count":1,"paramIdx":0}]"#,
                    RuleType::Authority => r#"[{"resource":"kept","limitApp":"a"}]"#,
                    RuleType::Degrade => r#"[{"resource":"kept","count":1,"timeWindow":10}]"#,
                    _ => r#"[{"resource":"kept","count":1}]"#,
                };
                fg.load_rules_json(rule_type, in_force).unwrap();
                let before = fg.rules_json(rule_type);
                match files.load(&fg, rule_type) {
                    Ok(()) => prop_assert_eq!(files.last_error(rule_type), None),
                    Err(error) => {
                        prop_assert!(!error.trim().is_empty());
                        prop_assert_eq!(files.last_error(rule_type), Some(error));
                        prop_assert_eq!(fg.rules_json(rule_type), before, "the rules in force stay");
                    }
                }
                if std::str::from_utf8(&bytes).is_err() {
                    prop_assert_eq!(
                        files.last_error(rule_type),
                        Some("the file is not UTF-8 text".to_owned())
                    );
                }
            }
        }
    }
}
