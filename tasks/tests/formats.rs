//! Importers for public task formats, on sample files written in those formats: good items
//! become tasks with the right checks, bad ones are reported and never drop the others.

use std::collections::BTreeMap;

use tasks::formats::{Format, import};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn kinds(t: &tasks::Task) -> Vec<&'static str> {
    t.rubric
        .groups()
        .iter()
        .flat_map(|g| &g.facts)
        .map(|f| f.check.kind())
        .collect()
}

#[test]
fn webvoyager_questions_become_model_judged_tasks() {
    let mut answers = BTreeMap::new();
    answers.insert(
        "Apple--0".to_string(),
        "MacBook Air 13-inch M3 from $1099".to_string(),
    );
    let lines = import(
        Format::WebVoyager,
        &fixture("webvoyager.jsonl"),
        &BTreeMap::new(),
        &answers,
    );
    let ok: Vec<_> = lines
        .iter()
        .filter_map(|l| l.result.as_ref().ok())
        .collect();
    assert_eq!(ok.len(), 3);
    let apple = ok
        .iter()
        .find(|t| t.id.as_str() == "webvoyager.apple-0")
        .unwrap();
    assert_eq!(
        (apple.site.as_str(), apple.start_url.as_str()),
        ("apple", "https://www.apple.com/")
    );
    assert_eq!(kinds(apple), ["judge"]);
    assert!(apple.rubric.needs_model());
    assert_eq!(
        apple.reference_answer.as_deref(),
        Some("MacBook Air 13-inch M3 from $1099")
    );
    assert!(
        apple.rubric.groups()[0].facts[0]
            .description
            .contains("Compare the prices")
    );
    let bad: Vec<(usize, String)> = lines
        .iter()
        .filter_map(|l| {
            l.result
                .as_ref()
                .err()
                .map(|e| (l.line, e[0].field.clone()))
        })
        .collect();
    assert_eq!(
        bad,
        vec![(4, "start_url".to_string()), (5, "id".to_string())]
    );
}

#[test]
fn webarena_evaluators_become_rule_checks() {
    let bases: BTreeMap<String, String> = [
        ("SHOPPING_ADMIN", "http://admin.test:7780/admin"),
        ("SHOPPING", "http://shop.test:7770"),
        ("GITLAB", "http://gitlab.test:8023"),
        ("REDDIT", "http://reddit.test:9999"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let lines = import(
        Format::WebArena,
        &fixture("webarena.json"),
        &bases,
        &BTreeMap::new(),
    );
    assert_eq!(lines.len(), 7);
    let get = |i: usize| {
        lines[i]
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("item {i}: {e:?}"))
    };

    let t0 = get(0);
    assert_eq!(
        (t0.id.as_str(), t0.site.as_str(), t0.start_url.as_str()),
        (
            "webarena.0",
            "shopping_admin",
            "http://admin.test:7780/admin"
        )
    );
    assert_eq!(kinds(t0), ["answer"]);
    assert_eq!(t0.reference_answer.as_deref(), Some("Quest Lumaflex™ Band"));

    let t21 = get(1);
    assert_eq!(
        kinds(t21),
        ["answer", "answer", "answer"],
        "one fact per must_include item"
    );
    assert_eq!(
        t21.start_url.as_str(),
        "http://shop.test:7770/6s-wireless-headphones-over-ear.html"
    );

    let t44 = get(2);
    assert_eq!(kinds(t44), ["url"]);
    match &t44.rubric.groups()[0].facts[0].check {
        rubrics::Check::Url {
            matcher: rubrics::UrlMatch::Contains(u),
            ..
        } => assert_eq!(u, "http://gitlab.test:8023/dashboard/todos"),
        other => panic!("{other:?}"),
    }

    let t423 = get(3);
    assert_eq!(
        kinds(t423),
        ["js", "js", "js"],
        "exact_match plus two must_include items"
    );
    assert!(
        t423.rubric
            .expressions()
            .iter()
            .any(|e| e.contains("product[sale]"))
    );

    assert_eq!(
        kinds(get(4)),
        ["judge"],
        "fuzzy matches are judged by a model, as in WebArena"
    );
    let errors: Vec<(usize, String, String)> = lines[5..]
        .iter()
        .map(|l| {
            let e = l.result.as_ref().unwrap_err();
            (l.line, e[0].field.clone(), e[0].message.clone())
        })
        .collect();
    assert_eq!(errors[0].0, 6);
    assert!(
        errors[0].2.contains("__MAP__") || errors[0].2.contains("MAP="),
        "{errors:?}"
    );
    assert_eq!(errors[1].1, "intent");
}

#[test]
fn webgym_fact_groups_become_judged_groups() {
    let lines = import(
        Format::WebGym,
        &fixture("webgym.jsonl"),
        &BTreeMap::new(),
        &BTreeMap::new(),
    );
    let t = lines[0].result.as_ref().unwrap();
    assert_eq!(t.id.as_str(), "webgym.wg-001");
    assert_eq!(t.rubric.groups().len(), 2);
    assert_eq!(t.rubric.groups()[1].description, "opening");
    assert_eq!(kinds(t), ["judge", "judge", "judge"]);
    assert_eq!(t.difficulty, tasks::Difficulty::Easy, "three facts");
    assert_eq!(t.reference_answer.as_deref(), Some("Ilse Marren, 1887"));
    let t2 = lines[1].result.as_ref().unwrap();
    assert_eq!(
        (t2.id.as_str(), t2.site.as_str()),
        ("webgym.2", "northwind-goods")
    );
    assert_eq!(
        lines[2].result.as_ref().unwrap_err()[0].field,
        "fact_groups[0][0]"
    );
    assert_eq!(lines[3].result.as_ref().unwrap_err()[0].field, "task");
}

#[test]
fn formats_parse_by_name() {
    assert_eq!(Format::parse("WebVoyager"), Some(Format::WebVoyager));
    assert_eq!(Format::parse("visualwebarena"), Some(Format::WebArena));
    assert_eq!(Format::parse("webgym"), Some(Format::WebGym));
    assert_eq!(Format::parse("jsonl"), Some(Format::Surfgym));
    assert_eq!(Format::parse("csv"), None);
}
