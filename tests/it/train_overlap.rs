//! Overlapped training end to end (real Chromium, real Postgres, real ONNX Runtime, the
//! tiny model on MiniWoB++): with `overlap: {max_staleness: 1}` the next iteration's
//! rollouts run while the trainer works, the samples they give the next update are one
//! version behind (and never more), and every evaluation still runs exactly its own
//! iteration's version. Synchronous runs are `tests/it/train_run.rs` and `tests/it/learning.rs`.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sqlx::PgPool;
use store::{IterationView, Store};
use trainloop::run;
use uuid::Uuid;

/// Tasks whose one right element does not depend on the seed, where the untrained
/// model's samples at temperature 1 succeed on some rollouts of a group and fail on
/// others (GRPO keeps such groups). The model is `tiny-text-flat` with `click` only, as in
/// `tests/it/learning.rs`: it starts near uniform over the page's elements, so that holds
/// whatever the prompt's layout (tiny-text's sharp head made it a matter of chance: a
/// prompt reordered for the prefix cache once left every group flat).
const TASKS: [&str; 2] = ["miniwob.click-dialog", "miniwob.focus-text"];

fn config() -> Value {
    serde_json::json!({
        "name": "overlapped clicks",
        "model": common::data_dir().join("models/tiny-text-flat"),
        "train": {"ids": TASKS},
        "held_out": "seeds",
        "iterations": 3,
        "rollouts_per_task": 16,
        "curriculum": {"kind": "fixed", "horizon": 1},
        "eval_horizon": 1,
        "eval_rollouts": 4,
        "objective": "grpo",
        "grpo_k": 1,
        "lr": 0.0003,
        "micro_batch": 16,
        "policy": {"constrained": "action", "max_new_tokens": 16, "actions": ["click"]},
        "seed": 5,
        "overlap": {"max_staleness": 1}
    })
}

/// The model directory's name each episode of `campaign` ran (its policy card's).
async fn models(store: &Store, campaign: Uuid) -> Vec<String> {
    let eps = policy::traces::from_campaigns(store, &[campaign])
        .await
        .unwrap();
    assert!(!eps.is_empty(), "campaign {campaign} ran no episode");
    eps.iter()
        .map(|e| {
            e.policy
                .as_ref()
                .and_then(|c| c.model.clone())
                .unwrap_or_default()
        })
        .collect()
}

fn phase_ms(it: &IterationView, phase: &str, end: &str) -> i64 {
    it.report.as_ref().unwrap()["phases"][phase][end]
        .as_i64()
        .unwrap_or_else(|| panic!("iteration {} records no {phase}.{end}", it.idx))
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn overlapped_rollouts_run_beside_the_trainer_within_the_staleness_bound(pool: PgPool) {
    let root = tempfile::tempdir().unwrap();
    let run = common::training_run(&pool, &config(), root.path()).await;
    let done = run.execute_to_end(root.path()).await;
    let common::TrainingRun {
        engine,
        policies,
        id,
        cfg,
        sites: _sites,
    } = run;
    assert_eq!(cfg.max_staleness(), Some(1));
    let store = engine.store().clone();
    let its = store.run_iterations(id).await.unwrap();
    assert_eq!(its.len(), 4);
    assert!(its.iter().all(|it| it.phase == store::Stage::Done));

    // v1..v3, each published once, by its own iteration, from the one before.
    let dir = run::run_dir(root.path(), id);
    let base = name(cfg.onnx_model().unwrap());
    let mut published: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('v'))
        .collect();
    published.sort();
    let figures: Vec<_> = its
        .iter()
        .map(|it| (it.idx, it.samples, it.train_success, it.dropped.clone()))
        .collect();
    assert_eq!(published, ["v1", "v2", "v3"], "{figures:?}");
    for it in &its[1..] {
        let v = PathBuf::from(it.version.clone().expect("every iteration published"));
        assert_eq!(name(&v), format!("v{}", it.idx));
        let lineage: Value = serde_json::from_str(
            &std::fs::read_to_string(v.join(training::version::LINEAGE)).unwrap(),
        )
        .unwrap();
        assert_eq!(lineage["training"]["iteration"], it.idx, "{lineage}");
        assert_eq!(
            lineage["training"]["staleness"],
            it.report.as_ref().unwrap()["staleness"],
            "the lineage keeps the staleness of what the version was trained on"
        );
        let parent = PathBuf::from(it.parent_version.clone().unwrap());
        let want = if it.idx == 1 {
            base.clone()
        } else {
            format!("v{}", it.idx - 1)
        };
        assert_eq!(
            name(&parent),
            want,
            "update {} starts from the newest",
            it.idx
        );
        assert!(it.wall_ms.unwrap() > 0, "iteration {} wall time", it.idx);
        // The first update loads the base; each later one starts from the version the
        // previous update just published, and goes on with that trainer from memory.
        let update = &it.report.as_ref().unwrap()["update"];
        assert_eq!(
            update["resident"],
            it.idx > 1,
            "update {}: {update}",
            it.idx
        );
        // The replay's frozen parts too: loaded by the first update, kept by the others.
        assert_eq!(
            update["replay_resident"],
            it.idx > 1,
            "update {}: {update}",
            it.idx
        );
    }
    assert_eq!(name(Path::new(done.version.as_deref().unwrap())), "v3");

    // The overlap happened: iteration 2's rollouts were created, and its rollout phase
    // began, before iteration 1's update had recorded v1.
    let v1_recorded = phase_ms(&its[1], "train", "end_ms");
    let first = store
        .get_campaign(its[2].rollout_campaigns[0])
        .await
        .unwrap()
        .unwrap();
    assert!(
        first.created_at.timestamp_millis() < v1_recorded,
        "iteration 2's rollouts were created at {} ms, after v1 was recorded at {v1_recorded} ms",
        first.created_at.timestamp_millis()
    );
    assert!(phase_ms(&its[2], "rollout", "start_ms") < v1_recorded);
    // ... and the bound held: iteration 3's rollouts waited for v1.
    assert!(phase_ms(&its[3], "rollout", "start_ms") >= v1_recorded);

    // Staleness: some kept samples of an update from v{j-1} were made by v{j-2}, none
    // older (nothing had to be dropped either: the schedule keeps within the bound).
    let mut stale_one = 0;
    for it in &its[1..] {
        let report = it.report.as_ref().unwrap();
        let hist: BTreeMap<String, u64> =
            serde_json::from_value(report["staleness"].clone()).unwrap();
        assert!(
            hist.keys().all(|k| k == "0" || k == "1"),
            "iteration {}: {hist:?}",
            it.idx
        );
        let dropped = it.dropped.as_ref().unwrap();
        assert_eq!(dropped["too_stale"], 0, "iteration {}: {dropped}", it.idx);
        assert_eq!(
            dropped["unknown_version"], 0,
            "iteration {}: {dropped}",
            it.idx
        );
        if it.idx >= 2 {
            stale_one += hist.get("1").copied().unwrap_or(0);
        }
        // What the histogram says matches the episodes' own cards.
        let parent = name(Path::new(it.parent_version.as_deref().unwrap()));
        for c in &it.rollout_campaigns {
            for m in models(&store, *c).await {
                let behind = |v: &str| match v.strip_prefix('v') {
                    Some(n) if v != base => n.parse::<i64>().unwrap(),
                    _ => 0,
                };
                let s = behind(&parent) - behind(&m);
                assert!(
                    (0..=1).contains(&s),
                    "iteration {}: an episode of {m} for an update from {parent}",
                    it.idx
                );
            }
        }
    }
    assert!(
        stale_one > 0,
        "no kept sample of iterations 2-3 was one version behind: {:?}",
        its.iter().map(|it| &it.report).collect::<Vec<_>>()
    );

    // The greedy policy follows its own link, which no update moves: the sampling
    // policy's link moved back to the base model leaves it on v3.
    let v3 = std::fs::canonicalize(dir.join("v3")).unwrap();
    inference::version_link::promote(cfg.onnx_model().unwrap(), &dir.join("current")).unwrap();
    let sampling = policies.sample.catch_up().await.unwrap();
    assert_eq!(
        sampling,
        std::fs::canonicalize(cfg.onnx_model().unwrap()).unwrap()
    );
    assert_eq!(policies.greedy.catch_up().await.unwrap(), v3);

    // Each evaluation ran its own iteration's version, even with the next one published
    // meanwhile.
    for it in &its {
        let want = if it.idx == 0 {
            base.clone()
        } else {
            format!("v{}", it.idx)
        };
        let ran = models(&store, it.eval_campaign.unwrap()).await;
        assert!(
            ran.iter().all(|m| *m == want),
            "evaluation {} ran {ran:?}, not {want}",
            it.idx
        );
    }
}
