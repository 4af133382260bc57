//! A run as `GET /api/training-runs/{id}`, its event stream and its page show it: the run,
//! its iterations, one curve point per iteration, and the campaigns still working.

use serde::Serialize;
use store::{CampaignView, IterationView, RunView, Stage, Store};
use uuid::Uuid;

use crate::error::ApiError;

/// One iteration's point on the learning curves.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    /// Iteration (0: the untrained model).
    pub iteration: i32,
    /// Environment steps of the rollouts up to and including this iteration.
    pub env_steps: i64,
    /// Rollout success.
    pub train_success: Option<f64>,
    /// Greedy held-out success.
    pub eval_success: Option<f64>,
    /// The update's loss.
    pub loss: Option<f64>,
    /// Samples kept for the update.
    pub samples: Option<i32>,
    /// Shortest, mean and longest horizon of the iteration's train tasks.
    pub horizon: Option<[f64; 3]>,
    /// How far the update moved the policy (`training::Health`), when it measured it.
    pub health: Option<Health>,
    /// The held-out evaluation campaign (its episodes are the point's).
    pub eval_campaign: Option<Uuid>,
    /// Finished.
    pub done: bool,
}

/// The update figures the run page plots, read from the iteration's report.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Health {
    /// KL(new ‖ reference) per token, when the update had a reference.
    pub kl_ref: Option<f64>,
    /// KL(new ‖ the weights the update started from) per token.
    pub kl_old: Option<f64>,
    /// Mean entropy of the new distributions at the response tokens.
    pub entropy: Option<f64>,
    /// Fraction of tokens whose ratio left the clip range.
    pub clipped: Option<f64>,
}

fn health(report: Option<&serde_json::Value>) -> Option<Health> {
    let h = report?.get("update")?.get("health")?;
    let f = |k: &str| h.get(k).and_then(serde_json::Value::as_f64);
    Some(Health {
        kl_ref: f("kl_ref"),
        kl_old: f("kl_old"),
        entropy: f("entropy"),
        clipped: f("clipped"),
    })
}

/// Policies evaluated once on the run's held-out episodes, to read its curves against.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Baselines {
    /// The random policy's held-out success.
    pub random: Option<f64>,
    /// Its campaign.
    pub random_campaign: Option<Uuid>,
    /// The best constant action per task, over all held-out episodes (when the run
    /// evaluated it).
    pub best_constant: Option<f64>,
}

/// What iteration 0's report says of the baselines.
fn baselines(iterations: &[IterationView]) -> Baselines {
    let all = iterations
        .iter()
        .find(|i| i.idx == 0)
        .and_then(|i| i.report.as_ref())
        .and_then(|r| r.get("baselines"));
    let random = all.and_then(|b| b.get("random"));
    Baselines {
        random: random
            .and_then(|r| r.get("success"))
            .and_then(serde_json::Value::as_f64),
        random_campaign: random
            .and_then(|r| r.get("campaign"))
            .and_then(serde_json::Value::as_str)
            .and_then(|s| s.parse().ok()),
        best_constant: all
            .and_then(|b| b.get("best_constant"))
            .and_then(|b| b.get("success"))
            .and_then(serde_json::Value::as_f64),
    }
}

/// A run with everything shown about it.
#[derive(Debug, Clone, Serialize)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunView,
    /// Its iterations in order.
    pub iterations: Vec<IterationView>,
    /// One point per iteration.
    pub curve: Vec<CurvePoint>,
    /// Baseline policies on the same held-out episodes.
    pub baselines: Baselines,
    /// Its campaigns not yet ended, with their progress.
    pub active_campaigns: Vec<CampaignView>,
}

fn horizon(h: &serde_json::Value) -> Option<[f64; 3]> {
    let v: Vec<f64> = h.as_object()?.values().filter_map(|v| v.as_f64()).collect();
    if v.is_empty() {
        return None;
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some([min, v.iter().sum::<f64>() / v.len() as f64, max])
}

/// The curve of a run's iterations.
pub fn curve(iterations: &[IterationView]) -> Vec<CurvePoint> {
    let mut steps = 0;
    iterations
        .iter()
        .map(|it| {
            steps += it.env_steps.unwrap_or(0);
            CurvePoint {
                iteration: it.idx,
                env_steps: steps,
                train_success: it.train_success,
                eval_success: it.eval_success,
                loss: it.loss,
                samples: it.samples,
                horizon: horizon(&it.horizons),
                health: health(it.report.as_ref()),
                eval_campaign: it.eval_campaign,
                done: it.phase == Stage::Done,
            }
        })
        .collect()
}

/// Reads a run (404 if there is none).
pub async fn detail(store: &Store, id: Uuid) -> Result<RunDetail, ApiError> {
    let run = store
        .get_run(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no training run {id}")))?;
    let iterations = store.run_iterations(id).await?;
    let mut active_campaigns = Vec::new();
    for it in iterations.iter().filter(|it| it.phase != Stage::Done) {
        for c in it.rollout_campaigns.iter().chain(it.eval_campaign.iter()) {
            if let Some(v) = store.get_campaign(*c).await?
                && !v.status.is_ended()
            {
                active_campaigns.push(v);
            }
        }
    }
    Ok(RunDetail {
        curve: curve(&iterations),
        baselines: baselines(&iterations),
        run,
        iterations,
        active_campaigns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_sums_environment_steps_and_spans_the_horizons() {
        let it = |idx: i32, steps: Option<i64>, h: serde_json::Value| IterationView {
            idx,
            phase: Stage::Done,
            horizons: h,
            env_steps: steps,
            ..Default::default()
        };
        let c = curve(&[
            it(0, None, serde_json::json!({})),
            it(1, Some(40), serde_json::json!({"a": 10, "b": 20, "c": 30})),
            it(2, Some(60), serde_json::json!({"a": 20})),
        ]);
        assert_eq!(
            c.iter().map(|p| p.env_steps).collect::<Vec<_>>(),
            [0, 40, 100]
        );
        assert_eq!(c[0].horizon, None, "iteration 0 rolls nothing out");
        assert_eq!(c[1].horizon, Some([10.0, 20.0, 30.0]));
        assert_eq!(c[2].horizon, Some([20.0, 20.0, 20.0]));
        assert!(c.iter().all(|p| p.done));
    }
}
