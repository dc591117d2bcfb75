//! Tests of the origins an engine interns, through its public API.

use crate::registry::MAX_INTERNED_ORIGINS;
use crate::{AuthorityRule, Floodgate};

/// 20,000 origins named by one authority rule: interned in one batch, so the origin index copies
/// each entry it already held once per load, not once per origin (12 million copies).
#[test]
fn origins_a_rule_list_names_are_interned_in_one_batch() {
    let fg = Floodgate::default();
    let origins: Vec<String> = (0..20_000).map(|i| format!("app-{i}")).collect();
    let rule = AuthorityRule::white("R", origins.join(","));
    fg.load_authority_rules([rule]).unwrap();
    let inner = &fg.inner.registry;
    assert!(
        inner.origin_index.copied() <= 20_000,
        "{}",
        inner.origin_index.copied()
    );
    assert!(origins.iter().all(|o| inner.origin_index.get(o).is_some()));
    let id = inner.origin_index.get("app-7").unwrap();
    assert_eq!(inner.origin_str(id), "app-7");
    // A reload naming them again interns nothing.
    let before = inner.origins.len();
    fg.load_authority_rules([AuthorityRule::black("R", origins.join(","))])
        .unwrap();
    assert_eq!(inner.origins.len(), before);
}

#[test]
fn owned_entries_intern_a_bounded_number_of_origins() {
    let fg = Floodgate::default();
    let inner = &fg.inner.registry;
    for i in 0..MAX_INTERNED_ORIGINS {
        assert_ne!(inner.intern_origin(&format!("o{i}"), true), u32::MAX);
    }
    assert_eq!(
        inner.intern_origin("one-more", true),
        u32::MAX,
        "past the cap"
    );
    assert_eq!(
        inner.origin_str(inner.intern_origin("o7", true)),
        "o7",
        "known ones still are"
    );
    let id = inner.intern_origin("a-context-origin", false);
    assert_eq!(
        inner.origin_str(id),
        "a-context-origin",
        "rules' origins are never lost"
    );
}

/// Origins a client makes up (a header) do not grow the engine without bound through contexts
/// either; origins rules name keep their names, so authority rules still apply past the cap.
#[test]
fn context_origins_are_bounded_and_rules_still_see_their_origins() {
    use crate::{AuthorityRule, BlockKind};
    let fg = Floodgate::default();
    for i in 0..MAX_INTERNED_ORIGINS + 500 {
        fg.context("web")
            .origin(&format!("caller-{i}"))
            .run(|| drop(fg.entry("R").enter()));
    }
    assert!(fg.inner.registry.origins.len() <= MAX_INTERNED_ORIGINS + 1);
    fg.load_authority_rules([AuthorityRule::black("R", "evil")])
        .unwrap();
    let blocked = fg
        .context("web")
        .origin("evil")
        .run(|| fg.entry("R").enter().map(drop));
    assert_eq!(
        blocked.unwrap_err().kind(),
        BlockKind::Authority,
        "a black-listed origin is named by its rule, so it is interned past the cap"
    );
    fg.load_authority_rules([AuthorityRule::white("R", "partner")])
        .unwrap();
    let refused = fg
        .context("web")
        .origin("made-up-after-the-cap")
        .run(|| fg.entry("R").enter().map(drop));
    assert_eq!(
        refused.unwrap_err().kind(),
        BlockKind::Authority,
        "an origin past the cap is no white-listed name"
    );
    assert!(
        fg.context("web")
            .origin("partner")
            .run(|| fg.entry("R").enter().is_ok())
    );
}
