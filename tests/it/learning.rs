//! A policy learns to read in surfgym: a short training run, on its own rollouts only (no
//! demonstrations, no solver), raises held-out greedy success on tasks whose right
//! element depends on what the instruction says clearly above the untrained model, the
//! random policy and the best constant action per task, all on the very same episodes.
//!
//! The tasks: click-tab ("Click on Tab #2.": three tabs, the one named) and focus-text-2
//! ("Focus into the 3rd input textbox.": three text boxes, the one named). The page's
//! elements are the same whatever the seed, and each instance names one of three, so no
//! single action solves more than about a third of them; what the run must learn is to
//! read the number or ordinal in the instruction and pick the element it names.
//!
//! The model: `tiny-text-flat`, the generated 2-layer tiny-text with a small output head,
//! random weights (it knows nothing, starts near the uniform distribution over what the
//! grammar allows, and so explores every element), with the policy's actions narrowed to
//! `click` (BrowserGym's action subsets do the same for MiniWoB++'s click tasks). Honest
//! because: nothing about the tasks is in its weights, the only signal is the reward of
//! its own samples, the held-out seeds are asserted disjoint from every rollout's, and the
//! best constant action (every first action the untrained model and the random policy
//! took, tried on each task's held-out episodes, the 4 likeliest per task) is measured,
//! not assumed.
//!
//! The run: six iterations of TTI's filtered behaviour cloning of its own successful
//! rollouts (temperature 1, constrained to the grammar), evaluated only before and after.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgPool;
use store::{EpisodeFilter, Store};
use uuid::Uuid;

/// Tasks whose right element is named by the instruction.
const TASKS: [&str; 2] = ["miniwob.click-tab", "miniwob.focus-text-2"];
const ITERATIONS: u32 = 6;

fn config() -> serde_json::Value {
    serde_json::json!({
        "name": "read the tab, read the box",
        "model": common::data_dir().join("models/tiny-text-flat"),
        "train": {"ids": TASKS},
        "held_out": "seeds",
        "iterations": ITERATIONS,
        // 32 instances per task per iteration, one sample of each.
        "rollouts_per_task": 32,
        "curriculum": {"kind": "fixed", "horizon": 1},
        "eval_horizon": 1,
        "eval_rollouts": 24,
        // The untrained model and the last version: the points the test compares.
        "eval_every": ITERATIONS,
        // TTI's algorithm: filtered behaviour cloning of the policy's own successes over a
        // replay buffer of the last 3 iterations. (GRPO on 4-sample groups of 12
        // instances per task reached 0.52 and 0.83 in two runs of the same length.)
        "objective": "fbc",
        "replay_iterations": 3,
        "lr": 0.002,
        "epochs": 4,
        "micro_batch": 16,
        "best_constant": true,
        "best_constant_candidates": 4,
        "policy": {"constrained": "action", "max_new_tokens": 16, "actions": ["click"]},
        "seed": 3
    })
}

/// One episode as a campaign ran it.
#[derive(Debug)]
struct Outcome {
    success: bool,
    instruction: String,
}

/// A campaign's episodes by (task, seed).
async fn outcomes(store: &Store, campaign: Uuid) -> BTreeMap<(String, i64), Outcome> {
    let (eps, _) = store
        .list_episodes(&EpisodeFilter::campaign(campaign), 10_000, 0)
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for e in eps {
        let d = store.get_episode(e.id).await.unwrap().unwrap();
        out.insert(
            (e.task_id.clone(), e.seed),
            Outcome {
                success: e.success == Some(true),
                instruction: d.instruction.clone(),
            },
        );
    }
    out
}

fn rate(o: &BTreeMap<(String, i64), Outcome>) -> f64 {
    o.values().filter(|x| x.success).count() as f64 / o.len() as f64
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_short_run_learns_to_read_beating_the_best_constant_action_on_held_out_seeds(
    pool: PgPool,
) {
    let root = tempfile::tempdir().unwrap();
    let run = common::training_run(&pool, &config(), root.path()).await;
    run.execute_to_end(root.path()).await;
    let common::TrainingRun {
        engine,
        id,
        sites: _sites,
        ..
    } = run;
    let store = engine.store().clone();
    let its = store.run_iterations(id).await.unwrap();
    assert_eq!(its.len(), ITERATIONS as usize + 1);

    // Every rollout sampled from the model; no held-out instance was ever rolled out.
    let mut rolled: BTreeSet<(String, i64)> = BTreeSet::new();
    for it in &its[1..] {
        for c in &it.rollout_campaigns {
            let v = store.get_campaign(*c).await.unwrap().unwrap();
            assert!(v.policy.ends_with("-sample"), "{}", v.policy);
            rolled.extend(outcomes(&store, *c).await.into_keys());
        }
    }
    assert!(
        rolled.len() >= 2 * 30 * ITERATIONS as usize,
        "{}",
        rolled.len()
    );

    let baselines = &its[0].report.as_ref().unwrap()["baselines"];
    let random: Uuid = baselines["random"]["campaign"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let untrained = outcomes(&store, its[0].eval_campaign.unwrap()).await;
    let trained = outcomes(&store, its.last().unwrap().eval_campaign.unwrap()).await;
    let random = outcomes(&store, random).await;
    let keys = |o: &BTreeMap<(String, i64), Outcome>| o.keys().cloned().collect::<BTreeSet<_>>();
    let held_out = keys(&trained);
    assert_eq!(held_out.len(), 48);
    assert!(
        held_out.is_disjoint(&rolled),
        "held-out instances were rolled out: {:?}",
        held_out.intersection(&rolled).collect::<Vec<_>>()
    );
    assert_eq!(keys(&untrained), held_out, "the same held-out episodes");
    assert_eq!(keys(&random), held_out, "the same held-out episodes");
    for (k, o) in &trained {
        assert_eq!(
            o.instruction, random[k].instruction,
            "the same instance {k:?}"
        );
    }

    // The best constant action per task, tried on that task's held-out episodes: at most
    // 40% of them, so a policy above it by 25 points must read.
    let best = &baselines["best_constant"];
    let constant = best["success"].as_f64().unwrap();
    let per_task = best["per_task"].as_object().unwrap();
    assert_eq!(per_task.len(), TASKS.len(), "{best}");
    for (task, b) in per_task {
        assert_eq!(b["episodes"], 24, "{task}: {b}");
    }
    assert!(
        constant <= 0.40,
        "the tasks are solvable by one action: {best}"
    );

    let (before, after, floor) = (rate(&untrained), rate(&trained), rate(&random));
    let report = format!(
        "held-out greedy success: untrained {before:.2}, trained {after:.2}, random {floor:.2}, \
         best constant {constant:.2} ({best})"
    );
    // 0.25 of 48 episodes is 12 more successes than the best baseline. A policy no better
    // than a baseline near 0.4 would exceed it by 12 with probability under 1% (each
    // count's sd is about 3.4, the difference's about 4.8: 12 is 2.5 sd); the baselines'
    // counts are fixed by the seeds (greedy, random with the episode's seed, constant).
    for (name, baseline) in [
        ("untrained", before),
        ("random", floor),
        ("best constant", constant),
    ] {
        assert!(
            after >= baseline + 0.25,
            "the trained policy is not 25 points above the {name}: {report}"
        );
    }
    // And it reads: on some task it solves instances naming every one of its elements.
    // (In CI's run of 2026-11-28 focus-text-2 was read whole and click-tab not yet: 0.67.)
    let named = |task: &str, solved: bool| {
        trained
            .iter()
            .filter(|((t, _), o)| t == task && (o.success || !solved))
            .map(|(_, o)| o.instruction.as_str())
            .collect::<BTreeSet<&str>>()
    };
    assert!(
        TASKS
            .iter()
            .any(|t| named(t, true) == named(t, false) && named(t, false).len() >= 3),
        "no task is solved for every element it names: {report}"
    );
}
