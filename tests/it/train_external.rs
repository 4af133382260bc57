//! External trainers end to end, with real Chromium, real Postgres, real ONNX Runtime on
//! the tiny model and a real process: a run whose update is a command (a standard-library
//! Python trainer, `tests/external/scale_trainer.py`) gets the iteration's selected steps
//! as TRL JSON Lines and verl Parquet with the recorded token ids, and the tensor it gives
//! back becomes a version the ONNX policy loads and evaluates; what a trainer gets wrong
//! (an unknown tensor, a wrong shape, a NaN, a failure, a timeout, no output beside a
//! stale one) fails with an error that says so and publishes nothing.

use crate::common;

use std::path::{Path, PathBuf};

use inference::Device;
use inference::GenParams;
use inference::Model;
use inference::expand_images;
use policy::PolicyRegistry;
use sqlx::PgPool;
use store::EpisodeFilter;
use trainloop::external::{self, ExternalTrainer, Outcome, Returns, TrainerChoice};
use trainloop::{data, run};

const TASKS: [&str; 3] = [
    "miniwob.click-test",
    "miniwob.click-test-2",
    "miniwob.click-button",
];
const TENSOR: &str = "model.layers.0.mlp.down_proj.weight_t";

fn dylib() -> PathBuf {
    inference::find_ort_dylib(&common::data_dir())
        .expect("ONNX Runtime: run ./scripts/setup-python.sh")
}

fn trainer(mode: &str, timeout_s: u64) -> serde_json::Value {
    serde_json::json!({
        "kind": "external",
        "command": [common::python(), concat!(env!("CARGO_MANIFEST_DIR"), "/tests/external/scale_trainer.py"),
                    "{input}", "{output}"],
        "timeout_s": timeout_s,
        "env": {"SCALE_TRAINER_MODE": mode, "SCALE_TENSOR": TENSOR, "SCALE_FACTOR": "3"}
    })
}

fn config() -> serde_json::Value {
    serde_json::json!({
        "name": "external trainer",
        "model": common::data_dir().join("models/tiny-text"),
        "train": {"ids": TASKS},
        "held_out": "seeds",
        "iterations": 1,
        // 36 rollouts: a group with both outcomes (GRPO's signal) is all but certain
        // (the untrained model succeeds in about one rollout in eight).
        "rollouts_per_task": 12,
        "group_size": common::TINY_GROUP,
        "curriculum": {"kind": "fixed", "horizon": 3},
        "eval_horizon": 3,
        "eval_rollouts": 2,
        "objective": "grpo",
        "grpo_k": 1.0,
        "policy": {"max_new_tokens": 16},
        "trainer": trainer("scale", 300),
    })
}

/// A tensor of the model or version at `dir`, as the trainer's decoder holds it.
fn tensor(dir: &Path, name: &str) -> Vec<f32> {
    let d = external::accept::parent_decoder(dir).unwrap();
    d.params()[name]
        .as_tensor()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap()
}

fn base_tensor(name: &str) -> Vec<f32> {
    tensor(&common::data_dir().join("models/tiny-text"), name)
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn an_external_trainer_gets_the_selected_steps_and_its_tensors_become_the_next_version(
    pool: PgPool,
) {
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
    let store = engine.store().clone();
    let its = store.run_iterations(id).await.unwrap();
    let it = &its[1];
    let samples = it.samples.unwrap() as usize;
    assert!(samples > 0, "iteration 1 selected steps: {:?}", it.dropped);

    // The version: the trainer's one tensor over the base, lineage naming the command.
    let v1 = PathBuf::from(it.version.clone().expect("iteration 1 published a version"));
    let lineage = training::version::read_lineage(&v1).unwrap().unwrap();
    let ext = &lineage.training["external"];
    assert_eq!(ext["command"][3], "{output}", "{ext}");
    assert_eq!(ext["samples"], samples);
    assert_eq!(ext["trainer_report"]["tensor"], TENSOR);
    assert_eq!(it.report.as_ref().unwrap()["external"]["samples"], samples);
    assert_eq!(
        it.loss,
        Some(0.5),
        "the trainer's reported loss is the iteration's"
    );
    let base = base_tensor(TENSOR);
    let trained = tensor(&v1, TENSOR);
    assert!(
        trained
            .iter()
            .zip(&base)
            .all(|(t, b)| (t - 3.0 * b).abs() <= 1e-6 * b.abs().max(1.0))
    );
    let other = "model.layers.0.mlp.up_proj.weight_t";
    assert_eq!(
        tensor(&v1, other),
        base_tensor(other),
        "tensors not returned keep the parent's values"
    );

    // The training set: what the episodes recorded, token for token.
    let work = external::work_dir(&run::run_dir(root.path(), id), 1);
    let input = work.join("input");
    assert!(
        !input.join(external::BASE_WEIGHTS).exists(),
        "the weights' copy is removed"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(input.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["samples"], samples);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(input.join("train.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rows = external::parquet::read(&input.join("train.parquet")).unwrap();
    assert_eq!((lines.len(), rows.len()), (samples, samples));
    let model = Model::load(cfg.onnx_model().unwrap(), &dylib(), Device::Cpu, 1).unwrap();
    let ids = |v: &serde_json::Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let mut signs = (0, 0);
    let mut masked_below = 0;
    for (line, row) in lines.iter().zip(&rows) {
        let episode: uuid::Uuid = line["episode"].as_str().unwrap().parse().unwrap();
        let step_idx = line["step"].as_u64().unwrap() as usize;
        let detail = store.get_episode(episode).await.unwrap().unwrap();
        let step = &detail.steps[step_idx];
        let recorded: Vec<u32> = step
            .token_ids
            .clone()
            .unwrap()
            .iter()
            .map(|&i| i as u32)
            .collect();
        assert_eq!(ids(&line["completion_ids"]), recorded, "completion ids");
        let lps: Vec<f32> = line["old_logprobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(
            lps,
            step.token_logprobs.clone().unwrap(),
            "recorded log-probabilities"
        );
        // The policy decoded under the action grammar: the recorded log-probabilities are
        // of the masked distribution, and the unmasked ones (the full distribution, what a
        // trainer without the mask scores) are beside them, never above.
        assert_eq!(line["masked"], serde_json::json!(true));
        let unmasked: Vec<f32> = line["old_logprobs_unmasked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(unmasked.len(), lps.len());
        assert!(
            unmasked.iter().zip(&lps).all(|(u, m)| *u <= m + 1e-4),
            "unmasked {unmasked:?} above masked {lps:?}"
        );
        masked_below += usize::from(unmasked.iter().zip(&lps).any(|(u, m)| *u < m - 1e-3));
        assert_eq!((row.masked, &row.old_log_probs_unmasked), (true, &unmasked));
        let prompt = step.core.prompt.clone().unwrap();
        assert_eq!(line["prompt_text"], prompt.as_str());
        assert_eq!(
            ids(&line["prompt_ids"]),
            model.encode(&prompt).unwrap(),
            "prompt ids"
        );
        let mut input_ids = ids(&line["prompt_ids"]);
        input_ids.extend(recorded.iter().copied());
        assert_eq!(ids(&line["input_ids"]), input_ids);
        assert_eq!(
            line["messages"][1]["content"][0]["text"],
            line["completion_text"]
        );
        // The Parquet row is the same sample.
        assert_eq!(row.episode, episode.to_string());
        assert_eq!(row.step as usize, step_idx);
        let as_i32 = |v: Vec<u32>| v.into_iter().map(|x| x as i32).collect::<Vec<_>>();
        assert_eq!(row.response_ids, as_i32(recorded));
        assert_eq!(row.prompt_ids, as_i32(ids(&line["prompt_ids"])));
        assert_eq!(row.old_log_probs, lps);
        assert_eq!(
            f64::from(row.advantage),
            line["advantage"].as_f64().unwrap()
        );
        let a = row.advantage;
        signs.0 += usize::from(a > 0.0);
        signs.1 += usize::from(a < 0.0);
    }
    assert!(
        signs.0 > 0 && signs.1 > 0,
        "GRPO hands over both signs: {signs:?}"
    );
    // The mask mattered somewhere: a token the grammar allowed among few.
    assert!(
        masked_below > 0,
        "no sample's mask changed a log-probability"
    );
    let stdout = std::fs::read_to_string(work.join("stdout.log")).unwrap();
    assert!(
        stdout.contains(&format!("checked {samples} samples of iteration 1")),
        "{stdout}"
    );

    // The ONNX policy loads the version: its evaluation ran it, and it answers otherwise.
    let card = |campaign| {
        let store = store.clone();
        async move {
            let first = store
                .list_episodes(&EpisodeFilter::campaign(campaign), 1, 0)
                .await
                .unwrap()
                .0;
            let e = store.get_episode(first[0].id).await.unwrap().unwrap();
            e.policy.unwrap().fingerprint.unwrap()
        }
    };
    let (f0, f1) = (
        card(its[0].eval_campaign.unwrap()).await,
        card(it.eval_campaign.unwrap()).await,
    );
    assert_ne!(f0, f1);
    assert_eq!(f1, policy::fingerprint(&v1).unwrap());
    let prompt = expand_images(
        lines[0]["prompt_text"].as_str().unwrap(),
        &[],
        model.config(),
    )
    .unwrap();
    let greedy = GenParams {
        max_new_tokens: 8,
        temperature: 0.0,
        top_p: 1.0,
        stop: Vec::new(),
    };
    let mut base_model = model;
    let mut trained_model = Model::load(&v1, &dylib(), Device::Cpu, 1).unwrap();
    let a = base_model
        .generate(std::slice::from_ref(&prompt), &greedy, &[0])
        .unwrap();
    let b = trained_model.generate(&[prompt], &greedy, &[0]).unwrap();
    assert_ne!(
        a[0].logprobs, b[0].logprobs,
        "the version's outputs differ from the base's"
    );

    // What a trainer gets wrong, on the same selected steps: refused, nothing published.
    let campaigns = it.rollout_campaigns.clone();
    let episodes = policy::traces::from_campaigns(&store, &campaigns)
        .await
        .unwrap();
    let collected = data::collect(&episodes, false);
    let kept: Vec<(usize, f32)> = (0..collected.metas.len().min(4))
        .map(|i| (i, 1.0))
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let attempt_returning =
        |mode: &'static str, timeout_s: u64, returns: Returns, work: PathBuf| {
            let (store, episodes, collected, kept, scratch, v1) =
                (&store, &episodes, &collected, &kept, scratch.path(), &v1);
            async move {
                let TrainerChoice::External(t) =
                    serde_json::from_value::<TrainerChoice>(trainer(mode, timeout_s)).unwrap()
                else {
                    unreachable!()
                };
                // Set here, past the config's check (an ONNX run takes safetensors).
                let t = ExternalTrainer { returns, ..t };
                let out = scratch.join(format!("v-{mode}"));
                let job = external::Job {
                    store,
                    trainer: &t,
                    run: uuid::Uuid::nil(),
                    iteration: 2,
                    objective: training::Objective::Fbc,
                    episodes,
                    at: &collected.at,
                    kept,
                    parent: v1,
                    out: &out,
                    work: &work,
                    dylib: &dylib(),
                    lineage: serde_json::json!({}),
                    served: None,
                };
                let started = std::time::Instant::now();
                let r = external::update(job, &mut Default::default()).await;
                (
                    r.map_err(|e| e.to_string()),
                    out.exists(),
                    started.elapsed(),
                )
            }
        };
    let attempt = |mode: &'static str, timeout_s: u64, work: PathBuf| {
        attempt_returning(mode, timeout_s, Returns::Safetensors, work)
    };
    for (mode, timeout_s, want) in [
        (
            "unknown",
            120,
            "tensor `model.layers.99.bogus.weight_t` is no trainable initializer",
        ),
        ("shape", 120, &format!("tensor `{TENSOR}` has shape")[..]),
        ("nan", 120, "holds a NaN or infinite value"),
        (
            "fail",
            120,
            "exited with exit status: 3; the end of its stderr: simulated failure",
        ),
        ("sleep", 3, "ran past its timeout of 3 s"),
    ] {
        let (r, published, took) = attempt(mode, timeout_s, scratch.path().join(mode)).await;
        let e = r.expect_err(mode);
        assert!(e.contains(want), "{mode}: {e}");
        assert!(!published, "{mode}: a version was published");
        if mode == "sleep" {
            assert!(took.as_secs() < 60, "the timeout killed it ({took:?})");
        }
    }
    // A rerun after a crash never takes what the interrupted attempt left: a trainer that
    // writes nothing this time is refused, though a good weights file lay in its output.
    let work = scratch.path().join("rerun");
    std::fs::create_dir_all(work.join("output")).unwrap();
    std::fs::copy(
        v1.join("weights.safetensors"),
        work.join("output/weights.safetensors"),
    )
    .unwrap();
    let (r, published, _) = attempt("nothing", 120, work).await;
    let e = r.unwrap_err();
    assert!(
        e.contains("weights.safetensors") && e.contains("missing"),
        "{e}"
    );
    assert!(!published);
    // And the good trainer on the same steps publishes.
    let (r, published, _) = attempt("scale", 120, scratch.path().join("good")).await;
    assert!(matches!(r.unwrap(), Outcome::Version { samples: 4, .. }));
    assert!(published);
    // An ONNX run's update cannot take a served name (tests/it/train_served.rs has served
    // runs): refused, nothing published.
    let (r, published, _) = attempt_returning(
        "served",
        120,
        Returns::ServedModel,
        scratch.path().join("served"),
    )
    .await;
    let e = r.unwrap_err();
    assert!(e.contains("does not fit this run's policy"), "{e}");
    assert!(!published);
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_vision_models_training_set_holds_the_screenshots_as_the_policy_saw_them(pool: PgPool) {
    use inference::grammar::Constraint;
    use policy::BatchLimits;
    use policy::onnx::{self, OnnxOptions};

    let (sites, dir) = common::miniwob_sites().await;
    let model_dir = common::data_dir().join("models/tiny-vlm");
    let mut o = OnnxOptions::new(&model_dir, dylib());
    o.generation.max_new_tokens = 16;
    o.generation.temperature = 1.0;
    o.constrained = Some(Constraint::Action);
    o.threads = 1;
    let limits = BatchLimits {
        max_batch: 4,
        max_wait: std::time::Duration::from_millis(5),
    };
    let (p, _) = onnx::policy("onnx", o, limits).unwrap();
    let mut policies = PolicyRegistry::builtin();
    policies.register(std::sync::Arc::new(p));
    let engine = common::new_engine(pool.clone(), policies);
    engine
        .register_miniwob(&dir, &sites.bases()["miniwob"])
        .await
        .unwrap();
    let id = engine
        .create_campaign(engine::CampaignSpec {
            policy: Some("onnx".into()),
            tasks: Some(store::TaskFilter {
                ids: vec!["miniwob.click-test".into()],
                ..Default::default()
            }),
            rollouts_per_task: Some(2),
            max_steps: Some(2),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    let store = engine.store().clone();
    let episodes = policy::traces::from_campaigns(&store, &[id]).await.unwrap();
    let collected = data::collect(&episodes, false);
    assert!(!collected.metas.is_empty());
    let kept: Vec<(usize, f32)> = (0..collected.metas.len()).map(|i| (i, 1.0)).collect();
    let TrainerChoice::External(t) =
        serde_json::from_value::<TrainerChoice>(trainer("scale", 120)).unwrap()
    else {
        unreachable!()
    };
    let scratch = tempfile::tempdir().unwrap();
    let (out, work) = (scratch.path().join("v1"), scratch.path().join("work"));
    let job = external::Job {
        store: &store,
        trainer: &t,
        run: uuid::Uuid::nil(),
        iteration: 1,
        objective: training::Objective::Fbc,
        episodes: &episodes,
        at: &collected.at,
        kept: &kept,
        parent: &model_dir,
        out: &out,
        work: &work,
        dylib: &dylib(),
        lineage: serde_json::json!({}),
        served: None,
    };
    let outcome = external::update(job, &mut Default::default())
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Version { .. }), "{outcome:?}");

    let input = work.join("input");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(input.join("train.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rows = external::parquet::read(&input.join("train.parquet")).unwrap();
    assert_eq!(lines.len(), kept.len());
    let mut model = Model::load(&model_dir, &dylib(), Device::Cpu, 1).unwrap();
    let mut replayer = policy::traces::Replayer::new(
        Model::load(&model_dir, &dylib(), Device::Cpu, 1).unwrap(),
        policy::traces::Blobs::Store(store.clone()),
    );
    for ((line, row), &(e, s)) in lines.iter().zip(&rows).zip(&collected.at) {
        let files: Vec<String> = line["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect();
        assert!(
            !files.is_empty(),
            "a vision policy's step shows its screenshot"
        );
        assert_eq!(row.images, files, "the Parquet row names the same files");
        let parts = line["messages"][0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["type"] == "image")
            .count();
        assert_eq!(parts, files.len());
        // The files are the images the policy was shown, pixel for pixel (marks drawn),
        // and they expand to the prompt ids the training set gives.
        let shown = replayer.shown(&episodes[e], s).await.unwrap();
        let images: Vec<image::DynamicImage> = files
            .iter()
            .map(|f| {
                assert!(!Path::new(f).is_absolute() && f.ends_with(".png"), "{f}");
                image::open(input.join(f)).unwrap()
            })
            .collect();
        for (file, was) in images.iter().zip(&shown.images) {
            assert_eq!(file.to_rgb8().as_raw(), was.to_rgb8().as_raw());
        }
        let prompt = expand_images(
            line["prompt_text"].as_str().unwrap(),
            &images,
            model.config(),
        )
        .unwrap();
        let ids: Vec<u32> = line["prompt_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(ids, model.encode(&prompt.text).unwrap());
        assert!(
            ids.len()
                > model
                    .encode(line["prompt_text"].as_str().unwrap())
                    .unwrap()
                    .len()
        );
    }
    // The version over the vision model loads.
    drop(model);
    model = Model::load(&out, &dylib(), Device::Cpu, 1).unwrap();
    assert!(model.has_vision());
}
