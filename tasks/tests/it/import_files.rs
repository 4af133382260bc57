//! How import files are read: WebArena's configs as published (one pretty-printed object
//! per `config_files/N.json`, or a directory of them), JSON Lines, arrays, objects one
//! after another; the split imported tasks land in; and what an import warns about.

use tasks::formats::{Format, ImportOptions, import, import_path};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn opts() -> ImportOptions {
    let mut o = ImportOptions::default();
    for (k, v) in [
        ("SHOPPING_ADMIN", "http://admin.test:7780/admin"),
        ("SHOPPING", "http://shop.test:7770"),
        ("GITLAB", "http://gitlab.test:8023"),
        ("REDDIT", "http://reddit.test:9999"),
    ] {
        o.bases.insert(k.into(), v.into());
    }
    o
}

/// The fixture's items, each pretty-printed on its own as WebArena publishes them.
fn config_files() -> Vec<(u64, String)> {
    let all: Vec<serde_json::Value> = serde_json::from_str(&fixture("webarena.json")).unwrap();
    all.iter()
        .filter(|v| v.get("intent").is_some() && v.get("task_id").is_some())
        .take(4)
        .map(|v| {
            (
                v["task_id"].as_u64().unwrap(),
                serde_json::to_string_pretty(v).unwrap(),
            )
        })
        .collect()
}

fn ids(lines: &[tasks::ImportLine]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match &l.result {
            Ok(t) => t.id.to_string(),
            Err(e) => format!("line {}: {e:?}", l.line),
        })
        .collect()
}

#[test]
fn one_pretty_printed_config_file_is_one_task() {
    let (id, text) = config_files().remove(2);
    assert!(text.lines().count() > 10, "pretty-printed");
    let lines = import(Format::WebArena, &text, &opts());
    assert_eq!(ids(&lines), [format!("webarena.{id}")]);
    assert_eq!(lines[0].line, 1);
}

#[test]
fn pretty_printed_objects_one_after_another_each_become_a_task() {
    let files = config_files();
    let mut text = String::new();
    for (_, f) in &files {
        text.push_str(f);
        text.push('\n');
    }
    let lines = import(Format::WebArena, &text, &opts());
    let want: Vec<String> = files
        .iter()
        .map(|(id, _)| format!("webarena.{id}"))
        .collect();
    assert_eq!(ids(&lines), want);
    assert_eq!(lines[1].line, files[0].1.lines().count() + 1);

    // A broken object costs only itself: the next one starts a line with `{`.
    let broken = text.replacen("\"intent\":", "\"intent\" ", 2);
    let lines = import(Format::WebArena, &broken, &opts());
    assert_eq!(lines.len(), files.len());
    assert!(lines[0].result.is_err() && lines[1].result.is_err());
    let message = &lines[0].result.as_ref().unwrap_err()[0].message;
    assert!(message.contains("invalid JSON at line"), "{message}");
    assert!(lines[2].result.is_ok() && lines[3].result.is_ok());
}

#[test]
fn a_bad_jsonl_line_costs_only_itself() {
    let good = r#"{"instruction": "a", "start_url": "http://x.test/", "rubric": {"groups": [{"facts": [{"check": {"type": "url", "exact": "http://x.test/a"}}]}]}}"#;
    let text = format!("{good}\nnot json\n{}\n", good.replace("\"a\"", "\"b\""));
    let lines = import(Format::Surfgym, &text, &ImportOptions::default());
    let got: Vec<(usize, bool)> = lines.iter().map(|l| (l.line, l.result.is_ok())).collect();
    assert_eq!(got, [(1, true), (2, false), (3, true)]);
}

#[test]
fn a_directory_of_config_files_imports_in_numeric_order() {
    let dir = tempfile::tempdir().unwrap();
    let files = config_files();
    for (id, text) in &files {
        std::fs::write(dir.path().join(format!("{id}.json")), text).unwrap();
    }
    std::fs::write(dir.path().join("README.md"), "not a config").unwrap();
    let got = import_path(Format::WebArena, dir.path(), &opts()).unwrap();
    let mut want: Vec<u64> = files.iter().map(|(id, _)| *id).collect();
    want.sort_unstable();
    let names: Vec<String> = got
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        want.iter()
            .map(|id| format!("{id}.json"))
            .collect::<Vec<_>>(),
        "numbers by value, other files left out"
    );
    for ((_, lines), id) in got.iter().zip(&want) {
        assert_eq!(ids(lines), [format!("webarena.{id}")]);
    }
    let missing = import_path(Format::WebArena, &dir.path().join("nope.json"), &opts());
    assert!(missing.unwrap_err().to_string().contains("nope.json"));
}

#[test]
fn benchmarks_import_as_test_unless_told_otherwise() {
    let text = fixture("webarena.json");
    let all_test = import(Format::WebArena, &text, &opts());
    let splits: Vec<_> = all_test
        .iter()
        .filter_map(|l| l.result.as_ref().ok())
        .map(|t| t.split)
        .collect();
    assert!(splits.len() > 3);
    assert!(
        splits.iter().all(|s| *s == tasks::Split::Test),
        "{splits:?}"
    );

    let train = ImportOptions {
        split: Some(tasks::Split::Train),
        ..opts()
    };
    let lines = import(Format::WebArena, &text, &train);
    assert!(
        lines
            .iter()
            .filter_map(|l| l.result.as_ref().ok())
            .all(|t| t.split == tasks::Split::Train)
    );

    // surfgym's own tasks keep the split they name; `split` fills in the others.
    let own = r#"{"instruction": "a", "start_url": "http://x.test/", "split": "test", "rubric": {"groups": [{"facts": [{"check": {"type": "url", "exact": "http://x.test/a"}}]}]}}
{"instruction": "b", "start_url": "http://x.test/", "rubric": {"groups": [{"facts": [{"check": {"type": "url", "exact": "http://x.test/b"}}]}]}}"#;
    let lines = import(Format::Surfgym, own, &train);
    let splits: Vec<_> = lines
        .iter()
        .map(|l| l.result.as_ref().unwrap().split)
        .collect();
    assert_eq!(splits, [tasks::Split::Test, tasks::Split::Train]);

    let mut miniwob = ImportOptions::default();
    miniwob
        .bases
        .insert("MINIWOB".into(), "http://127.0.0.1:1".into());
    miniwob.split = Some(tasks::Split::Train);
    let lines = import(Format::MiniWob, "click-test\n", &miniwob);
    assert_eq!(lines[0].result.as_ref().unwrap().split, tasks::Split::Train);
}

#[test]
fn tasks_that_expect_a_login_are_imported_with_a_warning() {
    let lines = import(Format::WebArena, &fixture("webarena.json"), &opts());
    let first = &lines[0];
    assert!(first.result.is_ok());
    let fields: Vec<&str> = first.warnings.iter().map(|w| w.field.as_str()).collect();
    assert_eq!(fields, ["require_login", "storage_state"]);
    assert!(
        first.warnings[1]
            .message
            .contains("./.auth/shopping_admin_state.json"),
        "{:?}",
        first.warnings
    );
    assert!(first.warnings[0].message.contains("setup"));
    // Without them, no warning.
    let mut plain: serde_json::Value = serde_json::from_str(&config_files()[0].1).unwrap();
    let fields = plain.as_object_mut().unwrap();
    fields.remove("require_login");
    fields.remove("storage_state");
    let lines = import(Format::WebArena, &plain.to_string(), &opts());
    assert!(lines[0].result.is_ok() && lines[0].warnings.is_empty());
}
