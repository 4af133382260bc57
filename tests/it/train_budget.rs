//! An environment-step budget end to end (real Chromium, real Postgres, real ONNX Runtime,
//! the tiny model on MiniWoB++): a 5-iteration run with `max_env_steps` stops starting
//! rollouts once its iterations' recorded steps reach the budget, trains and evaluates the
//! last rolled-out iteration (even where `eval_every` would skip it), and completes before
//! its 5 iterations.

use crate::common;

use serde_json::Value;
use sqlx::PgPool;

const BUDGET: i64 = 9;

fn config() -> Value {
    serde_json::json!({
        "name": "a budget of environment steps",
        "model": common::data_dir().join("models/tiny-text"),
        "train": {"ids": ["miniwob.click-dialog", "miniwob.focus-text"]},
        "held_out": "seeds",
        "iterations": 5,
        "rollouts_per_task": 4,
        "group_size": common::TINY_GROUP,
        "curriculum": {"kind": "fixed", "horizon": 1},
        "eval_horizon": 1,
        "eval_rollouts": 1,
        // No evaluation between the untrained model's and the 5th but the last: the
        // budget's end must still be measured.
        "eval_every": 5,
        "objective": "grpo",
        "grpo_k": 1,
        "policy": {"constrained": "action", "max_new_tokens": 16},
        "seed": 7,
        "max_env_steps": BUDGET
    })
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_spent_budget_ends_the_run_after_the_iteration_in_flight(pool: PgPool) {
    let root = tempfile::tempdir().unwrap();
    let run = common::training_run(&pool, &config(), root.path()).await;
    run.execute_to_end(root.path()).await;
    let common::TrainingRun {
        engine,
        id,
        cfg,
        sites: _sites,
        ..
    } = run;
    assert_eq!(cfg.max_env_steps, Some(BUDGET as u64));
    let mut its = engine.store().run_iterations(id).await.unwrap();
    its.sort_by_key(|it| it.idx);
    assert!(
        its.iter().all(|it| it.phase == store::Stage::Done),
        "every started iteration ends"
    );
    assert!(
        its.len() < 6,
        "the budget stopped the run before its 5 iterations: {} rows",
        its.len()
    );
    let steps: Vec<i64> = its[1..].iter().map(|it| it.env_steps.unwrap()).collect();
    let total: i64 = steps.iter().sum();
    let before_last: i64 = steps[..steps.len() - 1].iter().sum();
    assert!(total >= BUDGET, "stopped only once spent: {steps:?}");
    assert!(
        before_last < BUDGET,
        "no rollout started after the budget was spent: {steps:?}"
    );
    let last = its.last().unwrap();
    assert!(
        last.eval_success.is_some(),
        "the last iteration was evaluated, though eval_every skips it: {its:?}"
    );
}
