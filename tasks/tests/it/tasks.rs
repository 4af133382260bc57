//! Task validation names the field; import keeps good lines; the bundled suite is complete.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};
use tasks::{
    Difficulty, Setup, Split, Task, TaskSpec, bundled_tasks, parse_jsonl, parse_task, site_file,
    site_names,
};

fn valid() -> Value {
    json!({
        "instruction": "Find the price of the blue mug",
        "start_url": "http://127.0.0.1:8001/",
        "rubric": {"groups": [{"facts": [{"check": {"type": "answer", "number": 12.5}}]}]},
        "reference_solution": ["click(css=\"#q\")", "answer(\"12.50\")"]
    })
}

fn with(field: &str, value: Value) -> Value {
    let mut v = valid();
    v[field] = value;
    v
}

fn without(field: &str) -> Value {
    let mut v = valid();
    v.as_object_mut().unwrap().remove(field);
    v
}

fn fields(v: Value) -> Vec<String> {
    parse_task(&v.to_string())
        .expect_err("should be rejected")
        .into_iter()
        .map(|e| e.field)
        .collect()
}

#[test]
fn a_valid_task_gets_defaults() {
    let t = parse_task(&valid().to_string()).unwrap();
    assert_eq!(t.site, "127.0.0.1:8001");
    assert_eq!(t.difficulty, Difficulty::Easy);
    assert_eq!(t.split, Split::for_site("127.0.0.1:8001"));
    assert!(t.id.as_str().starts_with("127-0-0-1-8001-"), "{}", t.id);
    let again = parse_task(&valid().to_string()).unwrap();
    assert_eq!(t.id, again.id, "derived ids are stable");
    let other = parse_task(&with("instruction", json!("Something else")).to_string()).unwrap();
    assert_ne!(t.id, other.id);
    assert_eq!(t.reference_solution.len(), 2);
}

#[test]
fn specs_round_trip() {
    let t = parse_task(&with("tags", json!(["search", "price"])).to_string()).unwrap();
    let spec = t.to_spec();
    let back =
        Task::try_from(TaskSpec::from_json(serde_json::to_value(&spec).unwrap()).unwrap()).unwrap();
    assert_eq!(back.to_spec(), spec);
    assert_eq!(t.screen, None, "no screen: the campaign's");

    let small = json!({"width": 332, "height": 214, "device_scale": 1.5});
    let t = parse_task(&with("screen", small).to_string()).unwrap();
    let screen = t.screen.expect("the task's own screen");
    assert_eq!((screen.width, screen.height), (332, 214));
    assert_eq!((screen.device_scale, screen.screenshot_scale), (1.5, 1.0));
    let back =
        Task::try_from(TaskSpec::from_json(serde_json::to_value(t.to_spec()).unwrap()).unwrap())
            .unwrap();
    assert_eq!(back.screen, Some(screen));

    let setup = json!({"type": "actions", "actions": [
        "goto(\"http://127.0.0.1:8001/login\")", "type(css=\"#user\", \"ada\")", "click(2)"
    ]});
    let t = parse_task(&with("setup", setup).to_string()).unwrap();
    let Some(Setup::Actions(actions)) = &t.setup else {
        panic!("{:?}", t.setup)
    };
    assert_eq!(actions.len(), 3);
    let back =
        Task::try_from(TaskSpec::from_json(serde_json::to_value(t.to_spec()).unwrap()).unwrap())
            .unwrap();
    assert_eq!(back.setup, t.setup);
}

#[test]
fn every_bad_field_is_named() {
    let cases: Vec<(Value, &str)> = vec![
        (without("instruction"), "instruction"),
        (with("instruction", json!("   ")), "instruction"),
        (with("instruction", json!(42)), "instruction"),
        (without("start_url"), "start_url"),
        (with("start_url", json!("ftp://x.test/")), "start_url"),
        (with("start_url", json!("javascript:alert(1)")), "start_url"),
        (with("start_url", json!("not a url")), "start_url"),
        (with("start_url", json!("http:///x")), "start_url"),
        (with("start_url", json!("http:/x.test/")), "start_url"),
        (with("start_url", json!("https:\\\\x.test/")), "start_url"),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "element", "selector": "a[", "exists": true}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.selector",
        ),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "url", "exact": "http:///x"}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.exact",
        ),
        (without("rubric"), "rubric"),
        (with("rubric", json!({"groups": []})), "rubric.groups"),
        (
            with(
                "rubric",
                json!({"groups": [{"facts": [{"check": {"type": "url", "regex": "("}}]}]}),
            ),
            "rubric.groups[0].facts[0].check.regex",
        ),
        (with("id", json!("Bad Id")), "id"),
        (with("site", json!("a/b")), "site"),
        (with("difficulty", json!("extreme")), "difficulty"),
        (with("split", json!("validation")), "split"),
        (with("tags", json!(["ok", "has space"])), "tags[1]"),
        (with("max_steps", json!(0)), "max_steps"),
        (with("max_steps", json!(-3)), "max_steps"),
        (with("max_steps", json!(1)), "max_steps"),
        (
            with("reference_solution", json!(["click(1)", "fly(2)"])),
            "reference_solution[1]",
        ),
        (
            with("reference_solution", json!(["stop()", "click(1)"])),
            "reference_solution[0]",
        ),
        (
            with("reference_solution", json!(["click(1)"])),
            "reference_solution",
        ),
        (with("colour", json!("blue")), "colour"),
        (
            with("screen", json!({"width": 50, "height": 300})),
            "screen.width",
        ),
        (
            with(
                "screen",
                json!({"width": 400, "height": 300, "device_scale": 9}),
            ),
            "screen.device_scale",
        ),
        (
            with("screen", json!({"width": "big", "height": 300})),
            "screen.width",
        ),
        (with("screen", json!({"height": 300})), "screen"),
        (
            with("screen", json!({"width": 400, "height": 300, "depth": 24})),
            "screen.depth",
        ),
        (with("setup", json!("login")), "setup"),
        (with("setup", json!({})), "setup.type"),
        (with("setup", json!({"type": "fixture"})), "setup.type"),
        (
            with("setup", json!({"type": "miniwob", "seed": 3})),
            "setup",
        ),
        (with("setup", json!({"type": "actions"})), "setup.actions"),
        (
            with("setup", json!({"type": "actions", "actions": []})),
            "setup.actions",
        ),
        (
            with(
                "setup",
                json!({"type": "actions", "actions": ["click(1)", "fly(2)"]}),
            ),
            "setup.actions[1]",
        ),
        (
            with("setup", json!({"type": "actions", "actions": [7]})),
            "setup.actions[0]",
        ),
        (
            with(
                "setup",
                json!({"type": "actions", "actions": ["answer(\"x\")"]}),
            ),
            "setup.actions[0]",
        ),
        (
            with(
                "setup",
                json!({"type": "actions", "actions": ["click(1)"], "retries": 2}),
            ),
            "setup.retries",
        ),
        (
            with(
                "setup",
                json!({"type": "actions", "actions": vec!["scroll(down)"; 51]}),
            ),
            "setup.actions",
        ),
    ];
    for (v, field) in cases {
        let got = fields(v.clone());
        assert!(
            got.contains(&field.to_string()),
            "{v}\n  wanted {field}, got {got:?}"
        );
    }
    let all = fields(json!({"start_url": "mailto:x@y.z", "max_steps": 1000}));
    for f in ["instruction", "start_url", "rubric", "max_steps"] {
        assert!(
            all.contains(&f.to_string()),
            "all problems reported at once: {all:?}"
        );
    }
    assert_eq!(fields(json!([1, 2])), vec![""]);
}

#[test]
fn jsonl_import_keeps_the_good_lines() {
    let text = format!(
        "{}\n\nnot json\n{}\n{}\n",
        valid(),
        without("rubric"),
        with("instruction", json!("Second task"))
    );
    let lines = parse_jsonl(&text);
    let summary: Vec<(usize, bool)> = lines.iter().map(|l| (l.line, l.result.is_ok())).collect();
    assert_eq!(summary, vec![(1, true), (3, false), (4, false), (5, true)]);
    let bad = lines[1].result.as_ref().unwrap_err();
    assert!(bad[0].message.contains("invalid JSON"));
    assert_eq!(lines[2].result.as_ref().unwrap_err()[0].field, "rubric");
}

#[test]
fn difficulty_follows_the_fact_bands() {
    assert_eq!(Difficulty::from_fact_count(1), Difficulty::Easy);
    assert_eq!(Difficulty::from_fact_count(3), Difficulty::Easy);
    assert_eq!(Difficulty::from_fact_count(4), Difficulty::Medium);
    assert_eq!(Difficulty::from_fact_count(6), Difficulty::Medium);
    assert_eq!(Difficulty::from_fact_count(7), Difficulty::Hard);
}

fn bases() -> BTreeMap<String, String> {
    site_names()
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s.to_string(), format!("http://127.0.0.1:{}", 9100 + i)))
        .collect()
}

#[test]
fn the_bundled_suite_is_valid_and_complete() {
    assert_eq!(site_names(), vec!["booking", "shop", "wiki"]);
    let lines = bundled_tasks(&bases());
    let mut tasks = Vec::new();
    for l in &lines {
        match &l.line.result {
            Ok(t) => tasks.push(t.clone()),
            Err(e) => panic!("{}:{}: {e:?}", l.file, l.line.line),
        }
    }
    assert!(tasks.len() >= 30, "{} bundled tasks", tasks.len());
    let ids: HashSet<_> = tasks.iter().map(|t| t.id.clone()).collect();
    assert_eq!(ids.len(), tasks.len(), "ids are unique");
    for d in [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard] {
        let n = tasks.iter().filter(|t| t.difficulty == d).count();
        assert!(n >= 5, "{n} {d:?} tasks");
    }
    for t in &tasks {
        assert!(
            !t.reference_solution.is_empty(),
            "{} has a reference solution",
            t.id
        );
        assert!(
            bases().contains_key(&t.site),
            "{} runs on a bundled site",
            t.id
        );
        assert!(
            !t.start_url.as_str().contains("{{"),
            "{} placeholders filled",
            t.id
        );
        if let Some(Setup::Actions(actions)) = &t.setup {
            for a in actions {
                assert!(!a.to_string().contains("{{"), "{} setup filled: {a}", t.id);
            }
        }
        let path = t.start_url.path();
        assert!(
            site_file(&t.site, path).is_some(),
            "{} starts on an existing page {path}",
            t.id
        );
    }
    let splits: HashSet<_> = tasks.iter().map(|t| (t.site.clone(), t.split)).collect();
    let sites: HashSet<_> = tasks.iter().map(|t| t.site.clone()).collect();
    assert_eq!(
        splits.len(),
        sites.len(),
        "no site straddles train and test"
    );
}
