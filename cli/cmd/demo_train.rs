//! The demo's short training run: the untrained tiny-text model, two iterations on two
//! one-click MiniWoB++ tasks (the bundled ones when MiniWoB++ is not installed), executed
//! by the same executor `surfgym serve` runs for API-created runs, so the dashboard's
//! training page shows its learning curve live.

use std::time::Duration;

use anyhow::Context;
use engine::Engine;
use uuid::Uuid;

use crate::args::Common;

/// The run's configuration: small enough for the demo's minute on two cores.
fn config(common: &Common, miniwob: bool) -> serde_json::Value {
    let train = if miniwob {
        serde_json::json!({"ids": ["miniwob.click-test", "miniwob.click-test-2"]})
    } else {
        serde_json::json!({"tag": engine::BUNDLED_TAG})
    };
    serde_json::json!({
        "name": "demo: tiny-text learns to click",
        "model": common.data_dir.join("models/tiny-text"),
        "train": train, "held_out": "seeds", "iterations": 2, "rollouts_per_task": 4,
        "curriculum": {"kind": "fixed", "horizon": 3}, "eval_horizon": 2, "eval_rollouts": 4,
        "objective": "fbc", "policy": {"max_new_tokens": 16}
    })
}

/// Submits the run and has this process's executor run it; None when the tiny model is
/// not installed (the demo goes on without training).
pub async fn start(common: &Common, engine: &Engine) -> anyhow::Result<Option<Uuid>> {
    if !common.data_dir.join("models/tiny-text").is_dir() {
        println!(
            "training: the tiny-text model is not installed (./scripts/setup-python.sh makes it); no training run"
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
