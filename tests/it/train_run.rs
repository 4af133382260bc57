//! Training runs end to end, with real Chromium, real Postgres, MiniWoB++ and the tiny
//! model: a short run from the untrained model, on the policy's own rollouts only (no
//! reference solution, no scripted solver), trains on its own successes and evaluates
//! every version on the same held-out seeds (that a run beats the untrained model and the
//! random policy there is `tests/it/learning.rs`); a run killed with `kill -9` resumes where
//! it was and applies no update twice; configs that cannot run are refused before any
//! campaign starts.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use policy::PolicyRegistry;
use sqlx::PgPool;
use store::{EpisodeFilter, EpisodeStatus, Store};
use trainloop::run;
use uuid::Uuid;

/// One-click MiniWoB++ tasks, where the untrained model's own samples at temperature 1
/// succeed often enough (about one rollout in eight) for behaviour cloning to start.
const TASKS: [&str; 3] = [
    "miniwob.click-test",
    "miniwob.click-test-2",
    "miniwob.click-button",
];

fn config(iterations: u32) -> serde_json::Value {
    serde_json::json!({
        "name": "tiny clicks",
        "model": common::data_dir().join("models/tiny-text"),
        "train": {"ids": TASKS},
        "held_out": "seeds",
        "iterations": iterations,
        // 12 a task: at about one success in eight, 36 rollouts all fail under 1% of the
        // time (24 did once in CI, and iteration 1 had nothing to learn from).
        "rollouts_per_task": 12,
        "group_size": common::TINY_GROUP,
        "curriculum": {"kind": "fixed", "horizon": 3},
        "eval_horizon": 3,
        "eval_rollouts": 8,
        "fbc_iterations": 1,
        "policy": {"max_new_tokens": 16}
    })
}

async fn success(store: &Store, campaign: Uuid) -> (usize, usize) {
    let (eps, _) = store
        .list_episodes(&EpisodeFilter::campaign(campaign), 1000, 0)
        .await
        .unwrap();
    let ok = eps.iter().filter(|e| e.success == Some(true)).count();
    (ok, eps.len())
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_short_run_trains_on_its_own_rollouts_and_evaluates_each_version_on_held_out_seeds(
    pool: PgPool,
) {
    let root = tempfile::tempdir().unwrap();
    let run = common::training_run(&pool, &config(2), root.path()).await;
    let done = run.execute_to_end(root.path()).await;
    let common::TrainingRun {
        engine,
        id,
        sites: _sites,
        ..
    } = run;
    let store = engine.store().clone();
    let its = store.run_iterations(id).await.unwrap();
    assert_eq!(
        its.len(),
        3,
        "iteration 0 (untrained) and two training iterations"
    );
    assert!(its.iter().all(|it| it.phase == store::Stage::Done));
    for it in &its[1..] {
        let campaigns = &it.rollout_campaigns;
        assert_eq!(campaigns.len(), 1, "one horizon, one rollout campaign");
        let v = store.get_campaign(campaigns[0]).await.unwrap().unwrap();
        assert!(
            v.policy.starts_with("run-") && v.policy.ends_with("-sample"),
            "rollouts come from the run's own sampling policy, not {}",
            v.policy
        );
    }

    let eval = |it: &store::IterationView| it.eval_campaign.unwrap();
    let (_, n0) = success(&store, eval(&its[0])).await;
    let last = its.last().unwrap();
    let (_, n1) = success(&store, eval(last)).await;
    assert_eq!(
        (n0, n1),
        (24, 24),
        "the same held-out episodes every iteration"
    );
    // Held-out means seeds no rollout used.
    let eval_seeds: std::collections::HashSet<i64> = store
        .list_episodes(&EpisodeFilter::campaign(eval(last)), 1000, 0)
        .await
        .unwrap()
        .0
        .iter()
        .map(|e| e.seed)
        .collect();
    for it in &its[1..] {
        for c in &it.rollout_campaigns {
            let (eps, _) = store
                .list_episodes(&EpisodeFilter::campaign(*c), 1000, 0)
                .await
                .unwrap();
            assert!(
                eps.iter().all(|e| !eval_seeds.contains(&e.seed)),
                "a training seed was evaluated"
            );
        }
    }
    // The evaluation ran the version the iteration published (its card's fingerprint).
    let version = PathBuf::from(last.version.clone().or(done.version.clone()).unwrap());
    let first = store
        .list_episodes(&EpisodeFilter::campaign(eval(last)), 1, 0)
        .await
        .unwrap()
        .0;
    let card = store
        .get_episode(first[0].id)
        .await
        .unwrap()
        .unwrap()
        .policy
        .unwrap();
    assert_eq!(
        card.fingerprint.unwrap(),
        policy::fingerprint(&version).unwrap()
    );

    // Iteration 1 trained on the policy's own successes and published a version.
    assert!(
        its[1].samples.unwrap() > 0,
        "iteration 1 had successes to learn from"
    );
    assert!(
        PathBuf::from(its[1].version.clone().unwrap())
            .join("weights.safetensors")
            .is_file()
    );
}

fn surfgym(pool: &PgPool, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_surfgym"));
    c.args(args)
        .args(["--lease-secs", "5", "--sites-port", "0"])
        .env("DATABASE_URL", common::database_url(pool))
        .env("SURFGYM_DATA_DIR", common::data_dir());
    c
}

async fn campaigns(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM campaigns")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_run_killed_mid_iteration_resumes_without_applying_an_update_twice(pool: PgPool) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("run.json");
    std::fs::write(&file, config(2).to_string()).unwrap();
    // Its own process group, so that the kill takes its Chromium with it (a browser left
    // running would outlive the test).
    let mut child = surfgym(&pool, &["train", "run", file.to_str().unwrap()])
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once iteration 2's rollouts are under way (iteration 1 published v1).
    let deadline = Instant::now() + Duration::from_secs(600);
    let run: Uuid = loop {
        assert!(Instant::now() < deadline, "iteration 2 never started");
        let row: Option<(Uuid,)> = sqlx::query_as(
            "SELECT i.run_id FROM training_iterations i JOIN episodes e ON e.campaign_id = ANY(i.rollout_campaigns)
             WHERE i.idx = 2 AND e.status = ANY($1) LIMIT 1",
        )
        .bind(&[EpisodeStatus::Running, EpisodeStatus::Finished][..])
        .fetch_optional(&pool)
        .await
        .unwrap();
        if let Some((id,)) = row {
            break id;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let pgid = i32::try_from(child.id()).unwrap();
    assert!(pgid > 1);
    // SAFETY: kill(2) with a negative pid other than -1 signals exactly the process group
    // the run leads (spawned with `process_group(0)`).
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    child.wait().unwrap();
    let before = campaigns(&pool).await;

    let out = surfgym(&pool, &["train", "resume", &run.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let store = Store::from_pool(pool.clone());
    let view = store.get_run(run).await.unwrap().unwrap();
    assert_eq!(view.state, store::Status::Completed);
    let its = store.run_iterations(run).await.unwrap();
    assert_eq!(its.iter().map(|i| i.idx).collect::<Vec<_>>(), [0, 1, 2]);
    // Resuming created only iteration 2's evaluation: its rollouts were picked up.
    assert_eq!(campaigns(&pool).await, before + 1);
    // Every episode ran once: a campaign has exactly its planned episodes, all finished.
    for it in &its {
        for c in it.rollout_campaigns.iter().chain(it.eval_campaign.iter()) {
            let v = store.get_campaign(*c).await.unwrap().unwrap();
            assert_eq!(v.counts.finished, v.total_episodes, "campaign {c}");
        }
    }
    // One update per iteration: v2 was trained from v1, which was trained from the base.
    let lineage = |v: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(v.join("train.json")).unwrap()).unwrap()
    };
    let v1 = PathBuf::from(its[1].version.clone().unwrap());
    let v2 = PathBuf::from(its[2].version.clone().unwrap());
    assert_eq!(lineage(&v2)["parent"], serde_json::json!(v1));
    let steps = |v: &Path| lineage(v)["optimizer_steps"].as_u64().unwrap();
    let v2_steps = lineage(&v2)["training"]["report"]["steps"]
        .as_u64()
        .unwrap();
    assert_eq!(steps(&v2), steps(&v1) + v2_steps, "v2 = v1 plus one update");
    // Only the newest version keeps its AdamW moments: the next update starts there.
    assert!(
        !v1.join("optimizer.safetensors").exists(),
        "v1's moments kept"
    );
    assert!(
        v2.join("optimizer.safetensors").is_file(),
        "v2's moments gone"
    );

    // What scripts read: the same run and figures as one JSON object.
    let out = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["train", "show", "--json", &run.to_string()])
        .env("DATABASE_URL", common::database_url(&pool))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["run"]["state"], "completed");
    assert_eq!(shown["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(shown["iterations"][2]["version"], serde_json::json!(v2));
    // The update records where it computed (the default: the CPU, in f32).
    let update = &shown["iterations"][2]["report"]["update"];
    assert_eq!(update["device"], "cpu f32");
    // A resumed run has no trainer in memory: it read v1 back.
    assert_eq!(update["resident"], false);
    // And where the train phase's time went, besides the optimiser's own seconds.
    for part in ["seconds", "replay_s", "load_s", "publish_s"] {
        assert!(
            update[part].as_f64().is_some_and(|s| s > 0.0),
            "{part}: {update}"
        );
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn configs_that_cannot_run_are_refused_before_any_campaign(pool: PgPool) {
    let tmp = tempfile::tempdir().unwrap();
    let untrainable = tmp.path().join("not-a-model");
    std::fs::create_dir_all(untrainable.join("onnx")).unwrap();
    std::fs::write(untrainable.join("onnx/decoder_model_merged.onnx"), b"junk").unwrap();
    let cases = [
        ("train", serde_json::json!({}), "train: names no tasks"),
        (
            "train",
            serde_json::json!({"ids": ["no-such-task"]}),
            "train: no registered task",
        ),
        (
            "held_out",
            serde_json::json!({"tasks": {"site": "nowhere"}}),
            "held_out.tasks: no registered task",
        ),
        (
            "model",
            serde_json::json!(untrainable),
            "model: the trainer cannot train it",
        ),
        ("eval_horizon", serde_json::json!(0), "eval_horizon"),
        (
            "devices",
            serde_json::json!({"policy_threads": 0}),
            "devices.policy_threads: must be between 1",
        ),
    ];
    for (field, value, want) in cases {
        let mut c = config(1);
        c[field] = value;
        let file = tmp.path().join(format!("{field}.json"));
        std::fs::write(&file, c.to_string()).unwrap();
        let out = surfgym(&pool, &["train", "run", file.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{field}: {err}"
        );
    }
    assert_eq!(campaigns(&pool).await, 0, "nothing ran");
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM training_runs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(runs, 0, "nothing was stored");
}

/// A run's campaigns have ids derived from the run and their purpose, and creating one
/// again under its id returns the existing campaign: a run resumed after dying between
/// creating a campaign and recording it in its iteration leaves no orphan behind.
#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_campaign_created_again_under_its_derived_id_is_the_same_campaign(pool: PgPool) {
    let (engine, _sites, _) =
        common::engine_with_sites(pool.clone(), PolicyRegistry::builtin()).await;
    let run = Uuid::new_v4();
    let id = run::campaign_id(run, "iteration 1 rollouts at horizon 3");
    assert_eq!(
        id,
        run::campaign_id(run, "iteration 1 rollouts at horizon 3")
    );
    assert_ne!(id, run::campaign_id(run, "iteration 1 evaluation"));
    assert_ne!(
        id,
        run::campaign_id(Uuid::new_v4(), "iteration 1 rollouts at horizon 3")
    );
    let spec = || engine::CampaignSpec {
        policy: Some("random".into()),
        rollouts_per_task: Some(2),
        ..Default::default()
    };
    assert_eq!(engine.create_campaign_as(id, spec()).await.unwrap(), id);
    let before = campaigns(&pool).await;
    let episodes: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(episodes > 0);
    assert_eq!(engine.create_campaign_as(id, spec()).await.unwrap(), id);
    assert_eq!(campaigns(&pool).await, before, "no second campaign");
    let again: i64 = sqlx::query_scalar("SELECT count(*) FROM episodes")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(again, episodes, "no second set of episodes");
}
