//! A rule file's bytes, read as the agent reads its rule files at start and on every change: the
//! first byte picks the type, the rest is the file. Never a panic; a file that is refused leaves the
//! rules in force as they were.

#![no_main]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use floodgate_core::{Floodgate, RuleType};
use floodgate_transport::RuleFiles;
use libfuzzer_sys::fuzz_target;

/// One file per rule type in a directory of this process's own (memory-backed where there is one).
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = std::path::Path::new("/dev/shm");
        let base = if base.is_dir() { base.to_owned() } else { std::env::temp_dir() };
        let dir = base.join(format!("floodgate-fuzz-rule-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

const IN_FORCE: &str = r#"[{"resource":"kept","count":5}]"#;

fuzz_target!(|data: &[u8]| {
    let Some((&first, contents)) = data.split_first() else {
        return;
    };
    let rule_type = RuleType::ALL[usize::from(first) % RuleType::ALL.len()];
    let path = dir().join(format!("{rule_type}.json"));
    std::fs::write(&path, contents).expect("the scratch file is writable");
    let files = RuleFiles::new(BTreeMap::from([(rule_type.into(), path)]));
    let fg = Floodgate::default();
    let before = if rule_type == RuleType::Flow {
        fg.load_rules_json(rule_type, IN_FORCE).expect("a valid list");
        fg.rules_json(rule_type)
    } else {
        fg.rules_json(rule_type)
    };
    match files.load(&fg, rule_type) {
        Ok(()) => assert!(files.last_error(rule_type).is_none()),
        Err(message) => {
            assert!(!message.is_empty());
            assert_eq!(fg.rules_json(rule_type), before, "a refused file changed the rules");
        }
    }
});
