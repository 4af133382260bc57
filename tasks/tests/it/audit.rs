//! A task's `audit` field: validated against its rubric and reference solution, every error
//! naming its field; perturbations edit the solution as declared; the bundled tasks'
//! declarations are all valid and round-trip through the stored spec.

use std::collections::BTreeMap;

use serde_json::json;
use tasks::audit::Edit;
use tasks::{Task, TaskSpec};

fn task(audit: serde_json::Value) -> Result<Task, Vec<tasks::FieldError>> {
    Task::try_from(TaskSpec::from_json(json!({
        "id": "t", "instruction": "add two", "start_url": "http://shop.test/",
        "rubric": {"groups": [{"facts": [
            {"id": "qty", "check": {"type": "element", "selector": "#qty", "value": {"equals": "2"}}},
            {"id": "cart", "check": {"type": "url", "contains": "cart"}}
        ]}]},
        "reference_solution": ["type(css=\"#qty\", \"2\")", "click(css=\"#add\")", "click(css=\"#cart\")", "stop()"],
        "audit": audit
    }))?)
}

fn fields(r: Result<Task, Vec<tasks::FieldError>>) -> Vec<String> {
    r.unwrap_err().into_iter().map(|e| e.field).collect()
}

#[test]
fn a_valid_audit_is_kept_and_applied() {
    let t = task(json!({
        "accept": [{"finding": "never-false", "fact": "cart", "reason": "the start page is never the cart"}],
        "holds_after": {"qty": 2, "cart": 3},
        "perturbations": [
            {"name": "one", "op": "replace", "step": 0, "action": "type(css=\"#qty\", \"1\")", "fails": ["qty"], "holds": ["cart"]},
            {"name": "no-add", "op": "drop", "step": 1, "fails": ["qty"]},
            {"name": "swapped", "op": "swap", "step": 1, "holds": ["cart"]}
        ]
    }))
    .unwrap();
    assert!(t.audit.accepts("never-false", Some("cart")));
    assert!(!t.audit.accepts("never-false", Some("qty")));
    assert!(!t.audit.accepts("lenient-prefix", None));
    assert_eq!(
        t.audit.holds_after,
        BTreeMap::from([("qty".into(), 2), ("cart".into(), 3)])
    );
    let [one, drop, swap] = &t.audit.perturbations[..] else {
        panic!("three perturbations")
    };
    assert!(matches!(one.edit, Edit::Replace(0, _)));
    let played: Vec<String> = drop
        .apply(&t.reference_solution)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        played,
        [
            "type(css=\"#qty\", \"2\")",
            "click(css=\"#cart\")",
            "stop()"
        ]
    );
    let played: Vec<String> = swap
        .apply(&t.reference_solution)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        played[1..3],
        ["click(css=\"#cart\")", "click(css=\"#add\")"]
    );
    // The stored spec round-trips.
    let again = Task::try_from(t.to_spec()).unwrap();
    assert_eq!(again.audit, t.audit);
}

#[test]
fn bad_audits_name_their_fields() {
    assert_eq!(
        fields(task(
            json!({"accept": [{"finding": "lenient", "reason": "because it is fine"}]})
        )),
        ["audit.accept[0].finding"]
    );
    assert_eq!(
        fields(task(json!({"accept": [{"finding": "lenient-prefix"}]}))),
        ["audit.accept[0].reason"]
    );
    assert_eq!(
        fields(task(
            json!({"accept": [{"finding": "never-false", "fact": "nope", "reason": "a long enough reason"}]})
        )),
        ["audit.accept[0].fact"]
    );
    assert_eq!(
        fields(task(json!({"holds_after": {"qty": 9, "nope": 1}}))),
        ["audit.holds_after.nope", "audit.holds_after.qty"]
    );
    assert_eq!(
        fields(task(json!({"perturbations": [
            {"name": "a", "op": "drop", "step": 4, "fails": ["qty"]},
            {"name": "a", "op": "swap", "step": 3, "fails": ["qty"]},
            {"name": "b", "op": "replace", "step": 0, "fails": ["qty"]},
            {"name": "c", "op": "replace", "step": 0, "action": "clack(1)", "fails": ["qty"]},
            {"name": "d", "op": "bend", "step": 0, "fails": ["qty"]},
            {"name": "e", "op": "drop", "step": 0},
            {"name": "f", "op": "drop", "step": 0, "fails": ["qty", "x"], "holds": ["qty"]}
        ]}))),
        [
            "audit.perturbations[0].step",
            "audit.perturbations[1].name",
            "audit.perturbations[1].step",
            "audit.perturbations[2].action",
            "audit.perturbations[3].action",
            "audit.perturbations[4].op",
            "audit.perturbations[5].fails",
            "audit.perturbations[6].fails[1]",
            "audit.perturbations[6].holds",
        ]
    );
    assert_eq!(
        fields(task(json!({"surprise": 1}))),
        ["audit.surprise"],
        "unknown fields are refused"
    );
}

#[test]
fn every_bundled_task_declares_its_labels_validly() {
    let bases = BTreeMap::from([
        ("shop".to_string(), "http://127.0.0.1:1".to_string()),
        ("wiki".to_string(), "http://127.0.0.1:2".to_string()),
        ("booking".to_string(), "http://127.0.0.1:3".to_string()),
    ]);
    let all = tasks::bundled_tasks(&bases);
    assert!(!all.is_empty());
    for l in all {
        let t = l
            .line
            .result
            .unwrap_or_else(|e| panic!("{}:{}: {e:?}", l.file, l.line.line));
        assert!(
            !t.audit.perturbations.is_empty() && t.audit.accept.is_empty(),
            "{}: every bundled task declares perturbations and accepts no finding",
            t.id
        );
    }
}

#[test]
fn facts_that_flip_are_declared_prefix_by_prefix() {
    let t = task(json!({"holds_after": {"qty": 1}, "holds_on": {"cart": [0, 3]}})).unwrap();
    assert_eq!(
        t.audit.holds_on,
        BTreeMap::from([("cart".to_string(), vec![0, 3])])
    );
    let again = Task::try_from(t.to_spec()).unwrap();
    assert_eq!(again.audit, t.audit);
    // Unknown fact, a fact in both maps, a prefix past the solution (4 steps: 0 to 3),
    // prefixes out of order.
    assert_eq!(
        fields(task(json!({"holds_on": {"nope": [1]}}))),
        ["audit.holds_on.nope"]
    );
    assert_eq!(
        fields(task(
            json!({"holds_after": {"cart": 3}, "holds_on": {"cart": [1]}})
        )),
        ["audit.holds_on.cart"]
    );
    assert_eq!(
        fields(task(json!({"holds_on": {"cart": [1, 4]}}))),
        ["audit.holds_on.cart"]
    );
    assert_eq!(
        fields(task(json!({"holds_on": {"cart": [2, 1]}}))),
        ["audit.holds_on.cart"]
    );
}
