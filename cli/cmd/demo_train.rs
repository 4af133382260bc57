//! The demo's short training run: the untrained tiny-text-flat model, two iterations on two
//! one-click MiniWoB++ tasks (the bundled ones when MiniWoB++ is not installed), executed
//! by the same executor `surfgym serve` runs for API-created runs, so the dashboard's
//! training page shows its learning curve live.

use std::time::Duration;

use anyhow::Context;
use engine::Engine;
use uuid::Uuid;

use crate::args::Common;

/// The run's configuration: small enough for the demo's minute on two cores, and on the
/// run defaults a user gets (GRPO, 8 samples of one instance a group, the learning rate
/// for the model's size, 4 held-out episodes a task). The model is the near-uniform
/// tiny-text-flat, narrowed to clicks on MiniWoB++, so its first rollouts differ and GRPO
/// has groups to learn from (the bundled sites need typing: there it keeps every action).
fn config(common: &Common, miniwob: bool) -> serde_json::Value {
    let (train, policy) = if miniwob {
        (
            serde_json::json!({"ids": ["miniwob.click-test", "miniwob.click-test-2"]}),
            serde_json::json!({"constrained": "action", "max_new_tokens": 16, "actions": ["click"]}),
        )
    } else {
        (
            serde_json::json!({"tag": engine::BUNDLED_TAG}),
            serde_json::json!({"max_new_tokens": 16}),
        )
    };
    serde_json::json!({
        "name": "demo: tiny-text learns to click",
        "model": common.data_dir.join(MODEL),
        "train": train, "held_out": "seeds", "iterations": 2, "rollouts_per_task": 8,
        "curriculum": {"kind": "fixed", "horizon": 2}, "eval_horizon": 2,
        "policy": policy, "seed": 1
    })
}

/// The model the demo trains (made by `scripts/setup-python.sh`).
const MODEL: &str = "models/tiny-text-flat";

/// Submits the run and has this process's executor run it; None when the tiny model is
/// not installed (the demo goes on without training).
pub async fn start(common: &Common, engine: &Engine) -> anyhow::Result<Option<Uuid>> {
    if !common.data_dir.join(MODEL).is_dir() {
        println!(
            "training: the tiny-text-flat model is not installed (./scripts/setup-python.sh makes it); no training run"
        );
        return Ok(None);
    }
    let miniwob = engine
        .store()
        .load_tasks(&store::TaskFilter {
            ids: vec!["miniwob.click-test".into()],
            ..Default::default()
        })
        .await?
        .len()
        == 1;
    let cfg: trainloop::RunConfig = serde_json::from_value(config(common, miniwob))?;
    let id = trainloop::executor::submit(engine.store(), &cfg)
        .await
        .context("the demo's training run")?;
    Ok(Some(id))
}

/// Waits for the run to end, printing each finished iteration.
pub async fn watch(engine: &Engine, id: Uuid) -> anyhow::Result<store::Status> {
    let store = engine.store();
    let mut shown = 0;
    loop {
        let run = store
            .get_run(id)
            .await?
            .context("the demo's training run")?;
        let done: Vec<_> = store
            .run_iterations(id)
            .await?
            .into_iter()
            .filter(|i| i.phase == store::Stage::Done)
            .collect();
        for it in done.iter().skip(shown) {
            let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.0}%", v * 100.0));
            println!(
                "training iteration {}: train {}, held-out {}",
                it.idx,
                pct(it.train_success),
                pct(it.eval_success)
            );
        }
        shown = done.len();
        if run.state.is_ended() {
            if let Some(e) = run.error {
                println!("training run {}: {e}", run.state);
            }
            return Ok(run.state);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
