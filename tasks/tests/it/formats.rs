//! Importers for public task formats, on sample files written in those formats: good items
//! become tasks with the right checks, bad ones are reported and never drop the others.

use std::collections::BTreeMap;

use tasks::formats::{Format, ImportOptions, import};

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
        &ImportOptions {
            reference_answers: answers,
            ..Default::default()
        },
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

fn webarena_bases() -> ImportOptions {
    let bases = [
        ("SHOPPING_ADMIN", "http://admin.test:7780/admin"),
        ("SHOPPING", "http://shop.test:7770"),
        ("GITLAB", "http://gitlab.test:8023"),
        ("REDDIT", "http://reddit.test:9999"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    ImportOptions {
        bases,
        ..Default::default()
    }
}

/// Where an item starts in a fixture: the line of its `"task_id": N`'s object.
fn item_line(text: &str, task_id: u64) -> usize {
    let needle = format!("\"task_id\": {task_id},");
    let at = text.find(&needle).unwrap();
    let open = text[..at].rfind('{').unwrap();
    text[..open].matches('\n').count() + 1
}

#[test]
fn webarena_evaluators_become_rule_checks() {
    let text = fixture("webarena.json");
    let lines = import(Format::WebArena, &text, &webarena_bases());
    assert_eq!(lines.len(), 11);
    let get = |i: usize| {
        lines[i]
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("item {i}: {e:?}"))
    };
    let error = |i: usize| {
        let e = lines[i].result.as_ref().unwrap_err();
        (e[0].field.clone(), e[0].message.clone())
    };
    assert_eq!(
        lines[0].line, 2,
        "items are numbered by the line they start on"
    );
    assert_eq!(lines[3].line, item_line(&text, 423));

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

    // url_match: WebArena's "GOLD in PRED", not an exact URL.
    let t44 = get(2);
    assert_eq!(kinds(t44), ["url"]);
    match &t44.rubric.groups()[0].facts[0].check {
        rubrics::Check::Url {
            matcher: rubrics::UrlMatch::Includes(u),
            scope: rubrics::UrlScope::Final,
        } => assert_eq!(u, "http://gitlab.test:8023/dashboard/todos"),
        other => panic!("{other:?}"),
    }

    // program_html on another page than the final one: a check with that page (its URL
    // placeholder replaced), opened after the final page; the `last` entry reads the final
    // page.
    let t423 = get(3);
    assert_eq!(kinds(t423), ["js", "js", "js"]);
    let edit_page = "http://admin.test:7780/admin/catalog/product/edit/id/6";
    let pages: Vec<&str> = t423.rubric.pages().iter().map(|p| p.as_str()).collect();
    assert_eq!(pages, [edit_page]);
    let on_edit = t423
        .rubric
        .expressions_on(Some(&rubrics::PageUrl::parse(edit_page).unwrap()));
    assert_eq!(on_edit.len(), 1);
    assert!(on_edit[0].contains("product[sale]") && on_edit[0].contains("=== \"1\""));
    assert_eq!(
        t423.rubric.expressions().len(),
        2,
        "the two must_include items of the `last` entry read the final page"
    );
    assert!(
        t423.rubric
            .expressions()
            .iter()
            .all(|e| e.contains("document.body.innerText"))
    );

    let t424 = get(4);
    assert_eq!(
        kinds(t424),
        ["js", "js", "js"],
        "exact_match plus two must_include items, on the final page"
    );
    assert!(
        t424.rubric
            .expressions()
            .iter()
            .any(|e| e.contains("product[sale]"))
    );

    // WebArena's Python helpers, in a url or a locator.
    let (field, message) = error(5);
    assert_eq!(field, "eval.program_html[0].url");
    assert!(
        message.contains("func:shopping_get_latest_order_url()"),
        "{message}"
    );
    let (field, message) = error(6);
    assert_eq!(field, "eval.program_html[0].locator");
    assert!(message.contains("Python helpers"), "{message}");

    // Several acceptable URLs: any of them, each normalised.
    let t45 = get(7);
    assert_eq!(kinds(t45), ["url", "url"]);
    assert!(t45.rubric.groups()[0].any);

    assert_eq!(
        kinds(get(8)),
        ["judge"],
        "fuzzy matches are judged by a model, as in WebArena"
    );
    let (_, message) = error(9);
    assert!(
        message.contains("__MAP__") || message.contains("MAP="),
        "{message}"
    );
    assert_eq!(lines[9].line, item_line(&text, 7));
    assert_eq!(error(10).0, "intent");
}

/// WebArena's evaluator counts a final URL that contains the reference (host and path,
/// each reference query parameter present): the imported task is judged the same way.
#[tokio::test]
async fn webarena_url_matches_follow_webarenas_evaluator() {
    let text = fixture("webarena.json");
    let lines = import(Format::WebArena, &text, &webarena_bases());
    let t45 = lines[7].result.as_ref().unwrap();
    let t44 = lines[2].result.as_ref().unwrap();
    let passes = |task: &tasks::Task, url: &str| {
        let page = FinalPage(url.to_string());
        let rubric = task.rubric.clone();
        async move {
            rubrics::judge(&rubric, &Default::default(), &page)
                .await
                .unwrap()
                .success
        }
    };
    assert!(
        passes(
            t45,
            "http://gitlab.test:8023/issues?state=opened&sort=due_date"
        )
        .await
    );
    assert!(
        passes(
            t45,
            "HTTP://GITLAB.test:8023/dashboard/issues/?sort=due_date&state=opened&page=2#x"
        )
        .await,
        "query order, extra parameters, case and fragments do not matter"
    );
    assert!(
        !passes(
            t45,
            "http://gitlab.test:8023/issues?sort=due_date&state=closed"
        )
        .await,
        "a reference parameter with another value is another page"
    );
    assert!(
        passes(
            t44,
            "http://gitlab.test:8023/dashboard/todos?sort=created_date"
        )
        .await,
        "the reference contained in the final URL is enough, as in WebArena"
    );
    assert!(!passes(t44, "http://gitlab.test:8023/dashboard/issues").await);
}

/// A final page that only has a URL (a `url` check reads nothing else).
struct FinalPage(String);

impl rubrics::PageProbe for FinalPage {
    async fn url(&self) -> Result<String, rubrics::ProbeError> {
        Ok(self.0.clone())
    }
    async fn text(&self, _: Option<&rubrics::PageUrl>) -> Result<String, rubrics::ProbeError> {
        Ok(String::new())
    }
    async fn element(
        &self,
        _: Option<&rubrics::PageUrl>,
        _: &str,
    ) -> Result<Result<Option<rubrics::ElementSnapshot>, String>, rubrics::ProbeError> {
        Ok(Ok(None))
    }
    async fn eval(
        &self,
        _: Option<&rubrics::PageUrl>,
        _: &str,
    ) -> Result<Result<serde_json::Value, String>, rubrics::ProbeError> {
        Ok(Ok(serde_json::Value::Null))
    }
}

#[test]
fn a_broken_json_array_keeps_its_good_items_and_says_where_it_broke() {
    let text = fixture("webarena_broken.json");
    let lines = import(Format::WebArena, &text, &webarena_bases());
    let ids: Vec<_> = lines
        .iter()
        .filter_map(|l| l.result.as_ref().ok())
        .map(|t| t.id.to_string())
        .collect();
    assert_eq!(
        ids,
        ["webarena.44", "webarena.47"],
        "braces in strings do not confuse it"
    );
    let bad: Vec<_> = lines.iter().filter(|l| l.result.is_err()).collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 6, "where the broken item starts");
    let message = &bad[0].result.as_ref().unwrap_err()[0].message;
    assert!(message.contains("line 8, column"), "{message}");

    // An array that is never closed: what parsed is kept, the end is reported.
    let cut = &text[..text.find("\"task_id\": 47").unwrap()];
    let lines = import(Format::WebArena, cut, &webarena_bases());
    assert!(lines[0].result.is_ok());
    assert!(
        lines
            .iter()
            .filter_map(|l| l.result.as_ref().err())
            .any(|e| e[0].message.contains("never closed")),
        "{lines:?}"
    );
}

#[test]
fn the_miniwob_suite_imports_by_task_name() {
    let mut opts = ImportOptions::default();
    let suite =
        "# MiniWoB++ tasks\nclick-test\n\nminiwob.enter-text  # BrowserGym's id\nnot a task\n";
    let lines = import(Format::MiniWob, suite, &opts);
    assert!(
        lines.iter().all(|l| l
            .result
            .as_ref()
            .is_err_and(|e| e[0].message.contains("MINIWOB="))),
        "no base: every line says what to give"
    );
    opts.bases
        .insert("MINIWOB".to_string(), "http://127.0.0.1:9000/".to_string());
    let lines = import(Format::MiniWob, suite, &opts);
    let got: Vec<_> = lines
        .iter()
        .map(|l| {
            (
                l.line,
                l.result
                    .as_ref()
                    .map(|t| t.id.to_string())
                    .map_err(|e| e[0].field.clone()),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (2, Ok("miniwob.click-test".to_string())),
            (4, Ok("miniwob.enter-text".to_string())),
            (5, Err("name".to_string()))
        ]
    );
    let t = lines[0].result.as_ref().unwrap();
    assert_eq!(
        t.start_url.as_str(),
        "http://127.0.0.1:9000/miniwob/click-test.html"
    );
    assert_eq!(kinds(t), ["miniwob"]);
    assert_eq!(Format::parse("MiniWoB++"), Some(Format::MiniWob));
}

#[test]
fn webgym_release_records_become_judged_groups() {
    let lines = import(
        Format::WebGym,
        &fixture("webgym.jsonl"),
        &ImportOptions::default(),
    );
    let t = lines[0].result.as_ref().unwrap();
    assert_eq!(t.id.as_str(), "webgym.wg-001");
    assert_eq!(
        t.instruction,
        "Find who designed the Aster Bridge and in which year it opened."
    );
    assert_eq!(t.start_url.as_str(), "http://127.0.0.1:8703/");
    let groups: Vec<_> = t
        .rubric
        .groups()
        .iter()
        .map(|g| (g.id.as_str(), g.description.as_str(), g.facts.len()))
        .collect();
    assert_eq!(groups, [("1", "the designer", 1), ("2", "opening", 2)]);
    assert_eq!(kinds(t), ["judge", "judge", "judge"]);
    assert_eq!(
        t.rubric.groups()[1].facts[1].description,
        "The year given matches the article"
    );
    assert_eq!(t.difficulty, tasks::Difficulty::Easy, "WebGym's level 3");
    assert_eq!(t.reference_answer.as_deref(), Some("Ilse Marren, 1887"));
    assert_eq!(t.tags, ["webgym", "mind2web-live"]);
    assert_eq!(t.split, tasks::Split::Test, "a benchmark imports as test");

    // A flat list of facts (strings or {"description"}), a website without a scheme, a
    // numeric id, an empty definite answer.
    let t2 = lines[1].result.as_ref().unwrap();
    assert_eq!(t2.id.as_str(), "webgym.2");
    assert_eq!(t2.start_url.as_str(), "https://northwind.example/");
    assert_eq!(t2.site, "northwind.example");
    assert_eq!(kinds(t2), ["judge", "judge"]);
    assert_eq!(t2.difficulty, tasks::Difficulty::Medium);
    assert_eq!(t2.reference_answer, None);

    let field = |i: usize| lines[i].result.as_ref().unwrap_err()[0].field.clone();
    assert_eq!(field(2), "evaluator_reference[0].facts[0]");
    assert_eq!(field(3), "task_name");
    let t5 = lines[4].result.as_ref().unwrap();
    assert_eq!(kinds(t5), ["judge"], "one fact as a string");
    assert_eq!(t5.difficulty, tasks::Difficulty::Hard);
}

#[test]
fn webgym_records_missing_their_rubric_say_which_field() {
    let lines = import(
        Format::WebGym,
        r#"{"task_name": "x", "website": "a.example"}
{"task_name": "x", "website": "a.example", "evaluator_reference": [], "task_id": "e"}
{"task_name": "x", "website": "a.example", "evaluator_reference": "y", "difficulty": "very"}"#,
        &ImportOptions::default(),
    );
    let fields: Vec<_> = lines
        .iter()
        .map(|l| l.result.as_ref().unwrap_err()[0].field.clone())
        .collect();
    assert_eq!(
        fields,
        ["evaluator_reference", "evaluator_reference", "difficulty"]
    );
}

#[test]
fn formats_parse_by_name() {
    assert_eq!(Format::parse("WebVoyager"), Some(Format::WebVoyager));
    assert_eq!(Format::parse("visualwebarena"), Some(Format::WebArena));
    assert_eq!(Format::parse("webgym"), Some(Format::WebGym));
    assert_eq!(Format::parse("jsonl"), Some(Format::Surfgym));
    assert_eq!(Format::parse("csv"), None);
}
