//! An iteration's plan: which training tasks it rolls out and at which horizon. The
//! curriculum gives each task's horizon from its history (the outcomes earlier iterations
//! recorded in their reports); edge-of-competence sampling leaves out, with probability
//! 1 − `flat_task_weight`, tasks whose rollouts all got the same reward in each of the
//! last two iterations (they give GRPO no signal). Pure: the caller reads the store.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use store::IterationView;

use crate::config::RunConfig;
use crate::curriculum::{History, TaskInfo, TaskOutcome};

/// Each drawn task's horizon in iteration `idx`; `tasks` are (id, facts in its rubric).
/// When every task was flat and none was drawn, all of them are kept rather than train on
/// nothing.
pub(crate) fn horizons(
    cfg: &RunConfig,
    tasks: &[(String, usize)],
    idx: u32,
    before: &[IterationView],
) -> BTreeMap<String, u32> {
    let history = history(before);
    let mut rng =
        rand::rngs::StdRng::seed_from_u64(cfg.seed ^ u64::from(idx).wrapping_mul(0x9E37_79B9));
    let all: BTreeMap<String, u32> = tasks
        .iter()
        .map(|(id, facts)| {
            let info = TaskInfo { id, facts: *facts };
            (id.clone(), cfg.curriculum.horizon(idx, info, &history))
        })
        .collect();
    let drawn: BTreeMap<String, u32> = all
        .iter()
        .filter(|(id, _)| {
            let past = history.get(id.as_str()).map_or(&[][..], Vec::as_slice);
            let flat = past.len() >= 2
                && past[past.len() - 2..]
                    .iter()
                    .all(|o| o.success == 0.0 || o.success == 1.0);
            !flat || rng.random::<f64>() < cfg.flat_task_weight
        })
        .map(|(id, h)| (id.clone(), *h))
        .collect();
    if drawn.is_empty() { all } else { drawn }
}

/// Each task's outcomes in earlier iterations, from their reports.
pub(crate) fn history(before: &[IterationView]) -> History {
    let mut h = History::new();
    for it in before.iter().filter(|it| it.idx > 0) {
        let Some(tasks) = it.report.as_ref().and_then(|r| r.get("tasks")) else {
            continue;
        };
        if let Ok(m) = serde_json::from_value::<BTreeMap<String, TaskOutcome>>(tasks.clone()) {
            for (task, o) in m {
                h.entry(task).or_default().push(o);
            }
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iteration(idx: i32, outcomes: &[(&str, f64)]) -> IterationView {
        let tasks: BTreeMap<&str, TaskOutcome> = outcomes
            .iter()
            .map(|(t, success)| {
                (
                    *t,
                    TaskOutcome {
                        horizon: 5,
                        success: *success,
                        max_success_steps: 2,
                        rollouts: 4,
                    },
                )
            })
            .collect();
        IterationView {
            idx,
            report: Some(serde_json::json!({ "tasks": tasks })),
            ..Default::default()
        }
    }

    fn cfg(flat_task_weight: f64) -> RunConfig {
        let mut c = RunConfig::parse(
            &serde_json::json!({"name": "n", "model": "m", "train": {"ids": ["a"]}, "held_out": "seeds",
                "iterations": 3, "curriculum": {"kind": "fixed", "horizon": 5}, "eval_horizon": 5})
            .to_string(),
        )
        .unwrap();
        c.flat_task_weight = flat_task_weight;
        c
    }

    #[test]
    fn tasks_without_signal_are_drawn_less_and_never_all_dropped() {
        let tasks = vec![("a".to_string(), 1), ("b".to_string(), 1)];
        // a: solved by every rollout twice running (flat); b: mixed.
        let before = [
            iteration(1, &[("a", 1.0), ("b", 0.5)]),
            iteration(2, &[("a", 1.0), ("b", 0.25)]),
        ];
        let h = horizons(&cfg(1e-9), &tasks, 3, &before);
        assert_eq!(
            h.keys().collect::<Vec<_>>(),
            ["b"],
            "the flat task is left out"
        );
        assert_eq!(h["b"], 5);
        assert_eq!(
            horizons(&cfg(1.0), &tasks, 3, &before).len(),
            2,
            "weight 1: always drawn"
        );
        let all_flat = [
            iteration(1, &[("a", 0.0), ("b", 1.0)]),
            iteration(2, &[("a", 0.0), ("b", 1.0)]),
        ];
        assert_eq!(
            horizons(&cfg(1e-9), &tasks, 3, &all_flat).len(),
            2,
            "never nothing"
        );
        assert_eq!(
            horizons(&cfg(1e-9), &tasks, 3, &before[..1]).len(),
            2,
            "one flat iteration is not enough"
        );
    }
}
