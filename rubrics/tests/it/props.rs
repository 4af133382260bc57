//! Property tests of the rubric validator: arbitrary JSON (shaped like rubrics, so that it
//! gets past serde to the checks' own validation) never panics, every rejection names
//! where it is, and rubrics built from valid parts are accepted.

use proptest::prelude::*;
use rubrics::{Rubric, RubricError};
use serde_json::{Value, json};

const KEYS: &[&str] = &[
    "groups",
    "facts",
    "check",
    "type",
    "id",
    "description",
    "any",
    "weight",
    "exact",
    "prefix",
    "includes",
    "contains",
    "regex",
    "scope",
    "case_sensitive",
    "selector",
    "exists",
    "checked",
    "value",
    "text",
    "equals",
    "any_of",
    "number",
    "tolerance",
    "expression",
    "page",
    "value_equals",
    "bogus",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "url",
            "page_text",
            "element",
            "answer",
            "js",
            "judge",
            "miniwob",
            "a[",
            "#ok",
            "div > p",
            "(",
            "[a-z]+",
            "http:///x",
            "http://127.0.0.1:8701/p",
            "document.title",
            "final",
            "path",
            "g1",
            "\u{0}",
        ])
        .prop_map(Value::from),
        "(?s).{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), inner, 0..6).prop_map(
                |m| { Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()) }
            ),
        ]
    })
}

fn named(errors: &[RubricError]) -> bool {
    !errors.is_empty()
        && errors.iter().all(|e| {
            !e.message.trim().is_empty()
                && (!e.path.is_empty()
                    || e.message.contains('`')
                    || e.message.starts_with("invalid type"))
        })
}

/// A check of a kind the validator accepts.
fn good_check() -> impl Strategy<Value = Value> {
    prop_oneof![
        (-1e6f64..1e6).prop_map(|n| json!({"type": "answer", "number": n})),
        "[a-z]{1,10}".prop_map(|s| json!({"type": "answer", "contains": s})),
        "[a-z/]{1,10}".prop_map(|s| json!({"type": "url", "contains": s})),
        "[a-z]{1,10}".prop_map(|s| json!({"type": "page_text", "contains": s})),
        prop::sample::select(vec!["#ok", "div > p", "a[href]", "input[name=q]", ".x.y"])
            .prop_map(|s| json!({"type": "element", "selector": s, "exists": true})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_json_never_panics_and_rejections_name_their_path(v in json_value()) {
        if let Err(errors) = Rubric::from_json(v) {
            prop_assert!(named(&errors), "{:?}", errors);
        }
    }

    #[test]
    fn a_bad_check_among_good_ones_is_named_by_its_path(
        checks in prop::collection::vec(json_value(), 1..4),
        good in good_check(),
    ) {
        let mut facts = vec![json!({"check": good})];
        facts.extend(checks.into_iter().map(|c| json!({"check": c})));
        if let Err(errors) = Rubric::from_json(json!({"groups": [{"facts": facts}]})) {
            prop_assert!(named(&errors), "{:?}", errors);
            prop_assert!(
                errors.iter().all(|e| !e.path.starts_with("groups[0].facts[0]")),
                "the good fact was blamed: {:?}", errors
            );
        }
    }

    #[test]
    fn rubrics_of_valid_checks_are_accepted(
        groups in prop::collection::vec(prop::collection::vec(good_check(), 1..4), 1..4)
    ) {
        let spec = json!({"groups": groups.iter().map(|g| json!({
            "facts": g.iter().map(|c| json!({"check": c})).collect::<Vec<_>>()
        })).collect::<Vec<_>>()});
        let rubric = Rubric::from_json(spec);
        prop_assert!(rubric.is_ok(), "{:?}", rubric.err());
        let n: usize = groups.iter().map(Vec::len).sum();
        prop_assert_eq!(rubric.unwrap().fact_count(), n);
    }
}
