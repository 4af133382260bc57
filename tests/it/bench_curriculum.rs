//! `surfgym bench curriculum` end to end (real Chromium, real Postgres, MiniWoB++, the tiny
//! model): the variants it is asked for, side by side with `--parallel`, each a training
//! run under the same budget and devices, with TTI (filtered behaviour cloning over every
//! iteration's rollouts) on its stages scaled to the suite's horizons and a warm start
//! followed by the variant `--warm-then` names (its schedule and algorithm); options it
//! cannot run are refused before anything starts, naming the option.

use crate::common;

use std::process::{Command, Output};

use sqlx::PgPool;
use store::Store;

fn bench(args: &[&str], database_url: &str, data_dir: &std::path::Path) -> Output {
    let miniwob = engine::find_miniwob(&common::data_dir())
        .expect("MiniWoB++: run ./scripts/setup-python.sh");
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["bench", "curriculum"])
        .args(args)
        .env("DATABASE_URL", database_url)
        // The runs' versions go under the data directory: a scratch one, with the
        // project's ONNX Runtime and MiniWoB++ named outright.
        .env("SURFGYM_DATA_DIR", data_dir)
        .env("ORT_DYLIB_PATH", common::ort_dylib())
        .env("SURFGYM_MINIWOB_DIR", miniwob)
        .output()
        .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn parallel_variants_run_as_training_runs_under_one_budget_and_devices(pool: PgPool) {
    let data = tempfile::tempdir().unwrap();
    let curves = data.path().join("curves.json");
    let model = common::data_dir().join("models/tiny-text");
    let tiny_group = common::TINY_GROUP.to_string();
    let args = [
        "--suite",
        "miniwob",
        "--task",
        "miniwob.click-test",
        "--task",
        "miniwob.focus-text",
        "--variants",
        "fixed-short,tti-scaled,warm",
        "--warm-then",
        "tti-scaled",
        "--parallel",
        "--short",
        "1",
        "--long",
        "3",
        "--rollouts-per-task",
        "2",
        "--group-size",
        &tiny_group,
        "--settings",
        r#"{"policy": {"max_new_tokens": 24}, "accumulation": 2}"#,
        "--eval-rollouts",
        "1",
        "--budget-steps",
        "8",
        "--iterations",
        "2",
        "--seed",
        "3",
        "--devices",
        r#"{"policy_threads": 1}"#,
        "--lr",
        "0.002",
        "--model",
        model.to_str().unwrap(),
        "--out",
        curves.to_str().unwrap(),
    ];
    let out = bench(&args, &common::database_url(&pool), data.path());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("running 3 variants side by side"),
        "{stdout}"
    );

    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&curves).unwrap()).unwrap();
    assert_eq!(doc["parallel"], true);
    assert_eq!(doc["devices"]["policy_threads"], 1);
    let variants = doc["variants"].as_array().unwrap();
    let names: Vec<&str> = variants
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fixed-short", "tti-scaled", "warm+tti-scaled"]);

    let store = Store::from_pool(pool.clone());
    let mut spans = Vec::new();
    for v in variants {
        let name = v["variant"].as_str().unwrap();
        assert_eq!(v["state"], "completed", "{name}: {v}");
        let points = v["points"].as_array().unwrap();
        assert_eq!(
            points[0]["iteration"], 0,
            "{name}: the untrained version first"
        );
        assert!(points.len() >= 2, "{name} trained: {v}");
        assert!(
            v["env_steps"].as_u64().unwrap() >= 8,
            "{name} spent its budget: {v}"
        );
        let id: uuid::Uuid = v["run"].as_str().unwrap().parse().unwrap();
        let run = store.get_run(id).await.unwrap().unwrap();
        let cfg = &run.config;
        assert_eq!(
            cfg["devices"]["policy_threads"], 1,
            "{name}: the devices reach every run: {cfg}"
        );
        assert_eq!(cfg["lr"], 0.002, "{name}: so does the learning rate");
        // The group size is GRPO's: TTI's cloning keeps one sample of each seed.
        let group = match name.ends_with("tti-scaled") {
            true => serde_json::Value::Null,
            false => serde_json::json!(common::TINY_GROUP),
        };
        assert_eq!(
            cfg["group_size"], group,
            "{name}: and the group size: {cfg}"
        );
        assert_eq!(
            (
                cfg["policy"]["max_new_tokens"].clone(),
                cfg["accumulation"].clone()
            ),
            (serde_json::json!(24), serde_json::json!(2)),
            "{name}: and the --settings: {cfg}"
        );
        let warm = v["warm_env_steps"].as_u64().unwrap();
        assert_eq!(
            cfg["max_env_steps"].as_u64(),
            Some(8 - warm),
            "{name}: one budget, a warm-up's steps counted in it"
        );
        match name {
            "tti-scaled" => {
                let stages: Vec<(u64, u64)> = cfg["curriculum"]["stages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| (s["from"].as_u64().unwrap(), s["horizon"].as_u64().unwrap()))
                    .collect();
                assert_eq!(stages, [(1, 1), (2, 2), (4, 3)], "TTI's shape, scaled");
                // TTI's algorithm too: filtered behaviour cloning over every iteration.
                assert_eq!(cfg["objective"], "fbc", "{cfg}");
                assert_eq!(cfg["replay_iterations"], 2, "{cfg}");
            }
            "warm+tti-scaled" => {
                assert!(warm > 0, "the solver's warm-up steps are counted: {v}");
                assert!(
                    cfg["model"].as_str().unwrap().contains("bench-warm-"),
                    "the run starts from the warm-started version: {cfg}"
                );
                // The variant it follows, schedule and algorithm: TTI's cloning.
                assert_eq!(cfg["curriculum"]["kind"], "stepwise");
                assert_eq!(cfg["objective"], "fbc", "{cfg}");
            }
            _ => {
                assert_eq!(cfg["curriculum"]["horizon"], 1);
                assert_ne!(
                    cfg["objective"], "fbc",
                    "the schedules' runs are GRPO: {cfg}"
                );
            }
        }
        let (start, end): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) =
            sqlx::query_as(
                "SELECT min(started_at), max(finished_at) FROM training_iterations WHERE run_id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .unwrap();
        spans.push((start, end));
    }
    // Side by side: the plain runs start together, each before the other has ended.
    let (a, b) = (spans[0], spans[1]);
    assert!(
        a.0 < b.1 && b.0 < a.1,
        "fixed-short and tti-scaled overlap in time: {spans:?}"
    );
}

#[test]
fn options_it_cannot_run_are_refused_naming_the_option() {
    let data = tempfile::tempdir().unwrap();
    let unused = "postgres://127.0.0.1:1/unused";
    for (args, named) in [
        (
            vec!["--budget-steps", "10", "--devices", r#"{"train": "tpu"}"#],
            "--devices",
        ),
        (
            vec!["--budget-steps", "10", "--devices", r#"{"threads": 4}"#],
            "--devices",
        ),
        (
            vec!["--budget-steps", "10", "--warm-then", "warm"],
            "--warm-then",
        ),
        (
            vec!["--budget-steps", "10", "--adaptive-step", "0"],
            "--adaptive-step",
        ),
        (vec!["--budget-steps", "0"], "--budget-steps"),
        (vec!["--budget-steps", "10", "--lr", "0"], "--lr"),
        (
            vec!["--budget-steps", "10", "--group-size", "3"],
            "--group-size",
        ),
        (
            vec![
                "--budget-steps",
                "10",
                "--settings",
                r#"{"curriculum": {}}"#,
            ],
            "--settings: curriculum",
        ),
        (
            vec![
                "--budget-steps",
                "10",
                "--settings",
                r#"{"accumulation": 0}"#,
            ],
            "--settings: accumulation",
        ),
        (
            vec!["--budget-steps", "10", "--settings", "[1]"],
            "--settings",
        ),
    ] {
        let out = bench(&args, unused, data.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
