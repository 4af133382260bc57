//! Property tests of the task validator and every importer: arbitrary input never panics,
//! every rejection names the field (or, for the whole item, says what it must be), and a
//! good line is never dropped because of bad lines beside it.

use proptest::prelude::*;
use serde_json::{Value, json};
use tasks::formats::{Format, ImportOptions, import};
use tasks::{FieldError, Task, TaskSpec};

/// The keys a task (and its rubric) has, so that generated objects reach the validators
/// behind serde's checks, plus a few that no format has.
const KEYS: &[&str] = &[
    "id",
    "site",
    "instruction",
    "start_url",
    "tags",
    "rubric",
    "groups",
    "facts",
    "check",
    "type",
    "number",
    "contains",
    "regex",
    "selector",
    "exists",
    "url",
    "scope",
    "split",
    "difficulty",
    "max_steps",
    "setup",
    "reference_solution",
    "screen",
    "expression",
    "weight",
    "any",
    "bogus",
    "ques",
    "web",
    "web_name",
    "intent",
    "eval",
    "eval_types",
    "reference_answers",
    "task_name",
    "website",
    "evaluator_reference",
    "task_id",
    "sites",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "answer",
            "url",
            "page_text",
            "element",
            "js",
            "judge",
            "miniwob",
            "train",
            "test",
            "hard",
            "http://127.0.0.1:8701/",
            "http:///x",
            "a[",
            "#ok",
            "\u{0}",
            "exact_match",
            "url_match",
            "__SHOPPING__",
            "string_match",
        ])
        .prop_map(Value::from),
        "(?s).{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), inner, 0..6).prop_map(
                |m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

/// A rejection names what was wrong: a field path, or (for the item as a whole) a
/// message that says which field (serde's "missing field `x`") or what the item must be.
fn names_a_field(errors: &[FieldError]) -> bool {
    !errors.is_empty()
        && errors.iter().all(|e| {
            !e.message.trim().is_empty()
                && (!e.field.is_empty()
                    || e.message.contains('`')
                    || e.message.starts_with("invalid type")
                    || e.message.contains("JSON"))
        })
}

/// One good item per format (on one line) and the options it needs.
fn good(format: Format) -> (&'static str, ImportOptions) {
    let mut opts = ImportOptions::default();
    let line = match format {
        Format::Surfgym => {
            r#"{"id": "good-1", "site": "shop", "instruction": "Find the price of the blue mug", "start_url": "http://127.0.0.1:8701/", "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]}}"#
        }
        Format::WebVoyager => {
            r#"{"web_name": "Allrecipes", "id": "Allrecipes--0", "ques": "Provide a recipe for vegetarian lasagna.", "web": "https://www.allrecipes.com/"}"#
        }
        Format::WebArena => {
            opts.bases
                .insert("GITLAB".into(), "http://127.0.0.1:8023".into());
            r#"{"sites": ["gitlab"], "task_id": 44, "start_url": "__GITLAB__", "intent": "Open my todos page", "eval": {"eval_types": ["url_match"], "reference_url": "__GITLAB__/dashboard/todos"}}"#
        }
        Format::WebGym => {
            r#"{"benchmark_name": "webgym", "task_name": "Find who designed the Aster Bridge.", "website": "http://127.0.0.1:8703/", "difficulty": 3, "evaluator_reference": [{"id": "1", "description": "the designer", "facts": ["The designer of the Aster Bridge is identified"]}], "task_id": "wg-001"}"#
        }
        Format::MiniWob => {
            opts.bases
                .insert("MINIWOB".into(), "http://127.0.0.1:8790".into());
            "click-test"
        }
    };
    (line, opts)
}

/// A line that is not a good item: random text, JSON of the wrong shape, brackets.
fn bad_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^\n\r]{0,40}",
        json_value().prop_map(|v| v.to_string()),
        prop::sample::select(vec![
            "[",
            "]",
            "{",
            "}",
            "[]",
            "{}",
            ",",
            "\"",
            "null",
            "# comment"
        ])
        .prop_map(str::to_string),
    ]
}

const FORMATS: [Format; 5] = [
    Format::Surfgym,
    Format::WebVoyager,
    Format::WebArena,
    Format::WebGym,
    Format::MiniWob,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_task_validator_never_panics_and_names_fields(v in json_value()) {
        match TaskSpec::from_json(v).and_then(Task::try_from) {
            Ok(task) => prop_assert!(!task.id.as_str().is_empty()),
            Err(errors) => prop_assert!(names_a_field(&errors), "{:?}", errors),
        }
    }

    #[test]
    fn task_shaped_objects_are_judged_field_by_field(
        extra in prop::collection::btree_map(prop::sample::select(KEYS.to_vec()), json_value(), 0..4)
    ) {
        let mut task = json!({
            "id": "t", "site": "shop", "instruction": "Find it", "start_url": "http://127.0.0.1:8701/",
            "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 1}}]}]}
        });
        for (k, v) in extra {
            task[k] = v;
        }
        if let Err(errors) = TaskSpec::from_json(task).and_then(Task::try_from) {
            prop_assert!(names_a_field(&errors), "{:?}", errors);
        }
    }

    #[test]
    fn importers_never_panic_on_arbitrary_text(text in "(?s).{0,200}", f in 0..FORMATS.len()) {
        let format = FORMATS[f];
        let (_, opts) = good(format);
        for line in import(format, &text, &opts) {
            if let Err(errors) = &line.result {
                prop_assert!(names_a_field(errors), "{:?}: {:?}", format, errors);
            }
        }
    }

    #[test]
    fn a_good_line_survives_bad_lines_beside_it(
        before in prop::collection::vec(bad_line(), 0..4),
        after in prop::collection::vec(bad_line(), 0..4),
        f in 0..FORMATS.len(),
    ) {
        let format = FORMATS[f];
        let (good_line, opts) = good(format);
        let mut lines = before.clone();
        lines.push(good_line.to_string());
        lines.extend(after);
        let text = lines.join("\n");
        let at = before.len() + 1;
        let imported = import(format, &text, &opts);
        let kept = imported.iter().any(|l| l.line == at && l.result.is_ok());
        // A file that starts with `[` is one JSON array: when a bad line opens it and
        // never closes it, the good line is inside it, and the import says so.
        let unclosed = imported.iter().any(|l| {
            l.result.as_ref().is_err_and(|e| e.iter().any(|e| e.message.contains("never closed")))
        });
        prop_assert!(kept || unclosed, "{:?}: the good line {} was dropped in\n{}\n{:?}", format, at, text,
            imported.iter().map(|l| (l.line, l.result.as_ref().map(|t| t.id.as_str().to_string()))).collect::<Vec<_>>());
    }
}

/// What the properties found, kept as plain cases: text after a closed array was dropped
/// unseen, and an unclosed array ending in a multi-byte character panicked.
#[test]
fn found_by_the_properties() {
    for format in FORMATS {
        let (good_line, opts) = good(format);
        let after_array = import(format, &format!("[]\n{good_line}"), &opts);
        assert!(
            after_array.iter().any(|l| l.line == 2 && l.result.is_ok()),
            "{format:?}: {after_array:?}"
        );
        // A missing comma between two items keeps both and names the comma (MiniWoB++
        // lists are names, one a line, with no commas to miss).
        let no_comma = import(format, &format!("[\n{good_line}\nnull\n]"), &opts);
        assert!(
            no_comma.iter().any(|l| l.line == 2 && l.result.is_ok()),
            "{format:?}: {no_comma:?}"
        );
        // Text before or after the item, on lines of their own, costs only itself.
        for text in [
            format!("[\nA\n{good_line}\n]"),
            format!("[\n{good_line}\nA]"),
        ] {
            let at = if text.starts_with("[\nA") { 3 } else { 2 };
            let got = import(format, &text, &opts);
            assert!(
                got.iter().any(|l| l.line == at && l.result.is_ok()),
                "{format:?} {text:?}: {got:?}"
            );
        }
        assert!(
            format == Format::MiniWob
                || no_comma.iter().any(|l| l.line == 3
                    && l.result
                        .as_ref()
                        .is_err_and(|e| e[0].message.contains("missing comma"))),
            "{format:?}: {no_comma:?}"
        );
        let unclosed = import(format, "[\n{\"task_name\": \"¥\"", &opts);
        assert!(!unclosed.is_empty(), "{format:?}");
    }
}
