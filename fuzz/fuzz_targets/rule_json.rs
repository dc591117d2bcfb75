//! Rule JSON of every type, as `setRules` and rule files hand it to the engine: the first byte picks
//! the type, the rest is the text. Never a panic; a list that loads writes JSON that loads into a
//! fresh engine as the same rules.

#![no_main]

use floodgate_core::{Floodgate, RuleType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let Ok(json) = std::str::from_utf8(rest) else {
        return;
    };
    let rule_type = RuleType::ALL[usize::from(first) % RuleType::ALL.len()];
    let fg = Floodgate::default();
    if fg.load_rules_json(rule_type, json).is_err() {
        assert_eq!(fg.rules_json(rule_type), "[]", "a refused list changed the rules");
        return;
    }
    let written = fg.rules_json(rule_type);
    let again = Floodgate::default();
    if let Err(e) = again.load_rules_json(rule_type, &written) {
        panic!("the engine's own JSON was refused: {e}\n{written}");
    }
    assert_eq!(again.rules_json(rule_type), written, "the round trip changed the rules");
});
