//! The run config's parsing and validation: defaults, and errors that name the field.

use super::*;

fn good() -> serde_json::Value {
    serde_json::json!({
        "name": "clicks", "model": "m", "train": {"ids": ["miniwob.click-test"]},
        "held_out": "seeds", "iterations": 3, "curriculum": {"kind": "tti"}, "eval_horizon": 5
    })
}

#[test]
fn a_good_config_parses_with_defaults() {
    let c = RunConfig::parse(&good().to_string()).unwrap();
    assert_eq!(c.rollouts_per_task, 4);
    assert_eq!(
        c.eval_rollouts, 4,
        "enough held-out episodes to see reading"
    );
    assert_eq!(c.eval_answer_checks, 1);
    // GRPO groups 8 samples of an instance unless asked (fewer when the rollouts are
    // fewer or 8 does not divide them), filtered behaviour cloning one per seed; an
    // explicit group must divide the rollouts.
    assert_eq!(c.group_at(1), 4, "the default 4 rollouts: one instance");
    let mut v = good();
    v["fbc_iterations"] = 1.into();
    let warmed = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(
        (warmed.group_at(1), warmed.group_at(2)),
        (1, 4),
        "a GRPO run's cloning warm-up draws one sample per seed"
    );
    for (rollouts, objective, group, k) in [
        (16, "grpo", None, 8),
        (32, "grpo", None, 8),
        (12, "grpo", None, 6),
        (7, "grpo", None, 7),
        (9, "grpo", None, 3),
        (16, "fbc", None, 1),
        (16, "grpo", Some(1), 1),
        (16, "fbc", Some(8), 8),
        (12, "grpo", Some(3), 3),
    ] {
        let mut v = good();
        v["rollouts_per_task"] = rollouts.into();
        v["objective"] = objective.into();
        if let Some(g) = group {
            v["group_size"] = serde_json::json!(g);
        }
        assert_eq!(
            RunConfig::parse(&v.to_string()).unwrap().group_at(1),
            k,
            "{rollouts} {objective} {group:?}"
        );
    }
    // GRPO shares an advantage by a constant unless told per trajectory.
    assert_eq!(
        c.weighting(),
        training::select::StepWeighting::Constant { k: c.grpo_k }
    );
    let mut v = good();
    v["step_weighting"] = serde_json::json!("trajectory");
    assert_eq!(
        RunConfig::parse(&v.to_string()).unwrap().weighting(),
        training::select::StepWeighting::Trajectory
    );
    v["step_weighting"] = serde_json::json!("per_token");
    assert!(
        RunConfig::parse(&v.to_string())
            .unwrap_err()
            .contains("step_weighting")
    );
    // FBC replays WebGym's window unless told; an empty buffer is refused.
    assert_eq!(c.replay_iterations, 4);
    let mut v = good();
    v["replay_iterations"] = 0.into();
    let e = RunConfig::parse(&v.to_string()).unwrap_err();
    assert!(e.starts_with("replay_iterations:"), "{e}");
    // Regularization, the guard and the schedule parse, and a bad value is named.
    let mut v = good();
    v["regularization"] = serde_json::json!({"kl": 0.001, "entropy": 0.01});
    v["guard"] = serde_json::json!({"max_kl": 0.05, "max_mean_ratio": 1.5});
    v["warmup_steps"] = 5.into();
    v["lr_schedule"] = serde_json::json!({"kind": "cosine", "total_steps": 100, "min_ratio": 0.1});
    let r = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(r.regularization.kl, 0.001);
    assert_eq!(r.guard.unwrap().retries, 2);
    assert!(c.guard.is_none() && c.regularization.kl == 0.0);
    for (field, value, named) in [
        (
            "regularization",
            serde_json::json!({"kl": -1}),
            "regularization.kl",
        ),
        (
            "guard",
            serde_json::json!({"max_mean_ratio": 0.5}),
            "guard.max_mean_ratio",
        ),
        (
            "lr_schedule",
            serde_json::json!({"kind": "cosine", "total_steps": 9, "min_ratio": 2}),
            "lr_schedule.min_ratio",
        ),
        ("guard", serde_json::json!({"max_kl": 1, "typo": 2}), "typo"),
    ] {
        let mut v = good();
        v[field] = value;
        let e = RunConfig::parse(&v.to_string()).unwrap_err();
        assert!(e.contains(named), "{field}: {e}");
    }
    for bad in [5, 0] {
        let mut v = good();
        v["group_size"] = serde_json::json!(bad);
        let e = RunConfig::parse(&v.to_string()).unwrap_err();
        assert!(e.starts_with("group_size:"), "{e}");
    }
    // The evaluation campaigns carry the setting, so a version is evaluated with and
    // without re-check by changing only it.
    let mut v = good();
    v["eval_answer_checks"] = serde_json::json!(2);
    let checked = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(
        (
            crate::run::eval_spec(&c, "p", 1).answer_checks,
            crate::run::eval_spec(&checked, "p", 1).answer_checks
        ),
        (Some(1), Some(2))
    );
    assert_eq!(c.objective_at(1), training::Objective::Grpo);
    assert_eq!(c.policy.constrained.as_deref(), Some("action"));
    assert_eq!(c.max_staleness(), None, "no overlap unless asked");
    let mut v = good();
    v["overlap"] = serde_json::json!({"max_staleness": 2});
    let o = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(o.max_staleness(), Some(2));
    // A synchronous run's stored config is as it was before overlap existed.
    assert!(serde_json::to_value(&c).unwrap().get("overlap").is_none());
    assert!(
        serde_json::to_value(&c)
            .unwrap()
            .get("max_env_steps")
            .is_none()
    );
    assert!(serde_json::to_value(&c).unwrap().get("devices").is_none());
    let mut v = good();
    v["devices"] = serde_json::json!({"policy_threads": 6});
    let d = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(d.devices.policy_threads, 6);
    assert_eq!(
        serde_json::to_value(&d).unwrap()["devices"]["policy_threads"],
        6,
        "a setting off the default is stored"
    );
    assert!(!c.demonstrates(1));
    let mut v = good();
    v["demonstrator"] = serde_json::json!("miniwob-solver");
    v["fbc_iterations"] = serde_json::json!(1);
    let d = RunConfig::parse(&v.to_string()).unwrap();
    assert_eq!(
        (d.demonstrates(1), d.demonstrates(2)),
        (true, false),
        "only the FBC iterations are demonstrated"
    );
    assert_eq!(d.objective_at(1), training::Objective::Fbc);
    let mut v = good();
    v["max_env_steps"] = serde_json::json!(500);
    assert_eq!(
        RunConfig::parse(&v.to_string()).unwrap().max_env_steps,
        Some(500)
    );
}

#[test]
fn bad_configs_name_the_field() {
    let cases: [(&str, serde_json::Value, &str); 20] = [
        (
            "policy",
            serde_json::json!({"actions": ["click", "fly"]}),
            "policy.actions: \"fly\" is no action",
        ),
        (
            "eval_every",
            serde_json::json!(0),
            "eval_every: must be at least 1",
        ),
        (
            "best_constant_candidates",
            serde_json::json!(0),
            "best_constant_candidates: must be at least 1",
        ),
        (
            "devices",
            serde_json::json!({"policy_threads": 0}),
            "devices.policy_threads: must be between 1",
        ),
        (
            "devices",
            serde_json::json!({"train": "gpu0"}),
            "devices.train: unknown \"gpu0\"",
        ),
        (
            "demonstrator",
            serde_json::json!("oracle"),
            "demonstrator: unknown \"oracle\" (expected miniwob-solver or scripted)",
        ),
        (
            "demonstrator",
            serde_json::json!("miniwob-solver"),
            "demonstrator: needs fbc_iterations of at least 1",
        ),
        (
            "max_env_steps",
            serde_json::json!(0),
            "max_env_steps: must be at least 1",
        ),
        ("max_env_steps", serde_json::json!(-5), "expected u64"),
        (
            "overlap",
            serde_json::json!({"max_staleness": 0}),
            "overlap.max_staleness: must be at least 1 (0 is the synchronous loop",
        ),
        (
            "overlap",
            serde_json::json!({"max_staleness": 1, "eager": true}),
            "overlap.eager: unknown field `eager`",
        ),
        ("train", serde_json::json!({}), "train: names no tasks"),
        (
            "held_out",
            serde_json::json!({"tasks": {}}),
            "held_out.tasks",
        ),
        (
            "held_out",
            serde_json::json!("nope"),
            "held_out: unknown variant",
        ),
        ("eval_horizon", serde_json::json!(0), "eval_horizon"),
        (
            "eval_answer_checks",
            serde_json::json!(0),
            "eval_answer_checks: must be between 1",
        ),
        ("objective", serde_json::json!("ppo"), "objective: unknown"),
        (
            "curriculum",
            serde_json::json!({"kind": "fixed", "horizon": 0}),
            "curriculum.horizon",
        ),
        (
            "rollouts_per_task",
            serde_json::json!(1),
            "rollouts_per_task",
        ),
        ("sneaky", serde_json::json!(1), "unknown field `sneaky`"),
    ];
    for (field, value, want) in cases {
        let mut v = good();
        v[field] = value;
        let e = RunConfig::parse(&v.to_string()).unwrap_err();
        assert!(e.contains(want), "{field}: {e}");
        assert!(
            !e.contains(" at line "),
            "a bad value is named by its path: {e}"
        );
    }
    // Text that is not JSON keeps serde_json's position.
    let e = RunConfig::parse("{\"name\": \"x\",\n \"iterations\": }").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
}

#[test]
fn devices_belong_to_the_built_in_trainer_and_onnx_policies() {
    let mut v = good();
    v["devices"] = serde_json::json!({"policy_threads": 4});
    v["served"] = serde_json::json!({"base_url": "http://127.0.0.1:9", "model": "m"});
    v.as_object_mut().unwrap().remove("model");
    v["trainer"] =
        serde_json::json!({"kind": "external", "command": ["t"], "returns": "served_model"});
    let e = RunConfig::parse(&v.to_string()).unwrap_err();
    assert!(e.starts_with("devices: a served run"), "{e}");
    if training::TrainDevice::Cuda(0).check().is_ok() {
        let mut v = good();
        v["devices"] = serde_json::json!({"train": "cuda"});
        v["trainer"] = serde_json::json!({"kind": "external", "command": ["t"]});
        let e = RunConfig::parse(&v.to_string()).unwrap_err();
        assert!(e.starts_with("devices.train: an external trainer"), "{e}");
    }
}

#[test]
fn a_runs_web_settings_reach_its_campaigns_and_bad_ones_are_refused_by_field() {
    let c = RunConfig::parse(&good().to_string()).unwrap();
    assert!(c.web.is_default());
    let spec = crate::run::eval_spec(&c, "p", 1);
    assert_eq!((spec.record, spec.replay), (Some(false), None));
    let mut v = good();
    let recording = uuid::Uuid::new_v4();
    v["web"] = serde_json::json!({"replay": recording, "replay_unmatched": "network",
        "allowed_domains": ["localhost"], "detect_blocks": false});
    let replaying = RunConfig::parse(&v.to_string()).unwrap();
    let spec = crate::run::eval_spec(&replaying, "p", 1);
    assert_eq!(spec.replay, Some(recording));
    assert_eq!(spec.replay_unmatched.as_deref(), Some("network"));
    assert_eq!(spec.allowed_domains, Some(vec!["localhost".to_string()]));
    assert_eq!(spec.detect_blocks, Some(false));
    // Saved and read back as given.
    let again = RunConfig::parse(&serde_json::to_string(&replaying).unwrap()).unwrap();
    assert_eq!(again.web, replaying.web);
    for (web, field) in [
        (
            serde_json::json!({"record": true, "replay": recording}),
            "web.record:",
        ),
        (
            serde_json::json!({"replay_unmatched": "fail"}),
            "web.replay_unmatched:",
        ),
        (
            serde_json::json!({"allowed_domains": ["a b"]}),
            "web.allowed_domains[0]:",
        ),
    ] {
        let mut v = good();
        v["web"] = web;
        let e = RunConfig::parse(&v.to_string()).unwrap_err();
        assert!(e.starts_with(field), "{field}: {e}");
    }
    let mut v = good();
    v["web"] = serde_json::json!({"recrod": true});
    let e = RunConfig::parse(&v.to_string()).unwrap_err();
    assert!(e.contains("recrod"), "{e}");
}

#[test]
fn a_lora_config_parses_and_bad_settings_name_their_field() {
    let mut v = good();
    v["lora"] = serde_json::json!({"rank": 8, "targets": ["q_proj", "v_proj"]});
    let c = RunConfig::parse(&v.to_string()).unwrap();
    let l = c.lora.unwrap();
    assert_eq!((l.rank, l.alpha(), l.targets.len()), (8, 16.0, 2));
    v["lora"] = serde_json::json!({"rank": 0});
    let e = RunConfig::parse(&v.to_string()).unwrap_err();
    assert!(e.starts_with("lora.rank:"), "{e}");
    v["lora"] = serde_json::json!({"rank": 4, "targets": ["x_proj"]});
    let e = RunConfig::parse(&v.to_string()).unwrap_err();
    assert!(e.contains("x_proj"), "{e}");
}
