//! A training run of a policy served over HTTP, end to end: a real `surfgym serve-policy`
//! process (tiny-vlm, runtime loading on), real Chromium, real Postgres, and a real
//! external trainer process (`tests/external/served_trainer.py`, standard library only).
//! The run's rollouts ask the server for its base model; the trainer gets the selected
//! steps as the requests carried them, loads its update into the server under a new name
//! (`POST /v1/load_lora_adapter`) and returns the name; the run's next episodes ask for
//! that name, and the server answers them with the loaded model. What a trainer or a
//! config gets wrong is refused before anything is published or run. The server also
//! loads a PEFT LoRA directory over its base, and refuses a broken one by tensor.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sqlx::PgPool;
use store::{EpisodeFilter, Store};
use trainloop::external::{self, ExternalTrainer, TrainerChoice};
use trainloop::{data, run, served};
use uuid::Uuid;

const TASKS: [&str; 3] = [
    "miniwob.click-test",
    "miniwob.click-test-2",
    "miniwob.click-button",
];
const BASE: &str = "tiny-base";

fn model() -> PathBuf {
    common::data_dir().join("models/tiny-vlm")
}

/// `surfgym serve-policy` on tiny-vlm, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_policy(load_root: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(["serve-policy", "--name", BASE, "--port", "0", "--model"])
        .arg(model())
        .arg("--load-root")
        .arg(load_root)
        .env("SURFGYM_DATA_DIR", common::data_dir())
        .env("SURFGYM_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("serve-policy exited before it served")
            .unwrap();
        if let Some(rest) = line.split(" at http://").nth(1) {
            let addr = rest.trim_end_matches("/v1/chat/completions");
            break format!("http://{addr}");
        }
    };
    // Keep reading so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, url }
}

fn config(url: &str, load_root: &Path, mode: &str) -> serde_json::Value {
    serde_json::json!({
        "name": "served run",
        "served": {"base_url": url, "model": BASE, "timeout_s": 60},
        "train": {"ids": TASKS},
        "held_out": "seeds",
        "iterations": 1,
        // 24 rollouts: a group with both outcomes (GRPO's signal) is all but certain.
        "rollouts_per_task": 8,
        "group_size": common::TINY_GROUP,
        "curriculum": {"kind": "fixed", "horizon": 2},
        "eval_horizon": 2,
        "eval_rollouts": 2,
        "objective": "grpo",
        "grpo_k": 1.0,
        "policy": {"max_new_tokens": 16},
        "trainer": {
            "kind": "external",
            "command": [common::python(), concat!(env!("CARGO_MANIFEST_DIR"), "/tests/external/served_trainer.py")],
            "returns": "served_model",
            "timeout_s": 300,
            "env": {"SERVED_TRAINER_ROOT": load_root, "SERVED_TRAINER_SOURCE": model(),
                    "SERVED_TRAINER_MODE": mode},
        },
    })
}

/// The served model names the episodes of `campaign` asked for, one per episode.
async fn asked_for(store: &Store, campaign: Uuid) -> Vec<String> {
    let (eps, _) = store
        .list_episodes(&EpisodeFilter::campaign(campaign), 1000, 0)
        .await
        .unwrap();
    assert!(!eps.is_empty(), "campaign {campaign} ran no episode");
    let mut names = Vec::new();
    for e in eps {
        let card = store
            .get_episode(e.id)
            .await
            .unwrap()
            .unwrap()
            .policy
            .expect("a policy card");
        assert_eq!(card.backend, "http");
        names.push(card.model.unwrap());
    }
    names
}

async fn health(url: &str) -> serde_json::Value {
    reqwest::get(format!("{url}/health"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_served_policy_is_trained_through_its_server_and_the_run_follows_the_new_name(
    pool: PgPool,
) {
    let load_root = tempfile::tempdir().unwrap();
    let server = serve_policy(load_root.path());
    let root = tempfile::tempdir().unwrap();
    let run = common::training_run(
        &pool,
        &config(&server.url, load_root.path(), ""),
        root.path(),
    )
    .await;
    run.execute_to_end(root.path()).await;
    let store = run.engine.store().clone();
    let its = store.run_iterations(run.id).await.unwrap();
    let it = &its[1];
    let samples = it.samples.unwrap();
    assert!(samples > 0, "iteration 1 selected steps: {:?}", it.dropped);
    let name = format!("{}-it1", &run.id.to_string()[..8]);

    // The version: a directory of the run naming what the trainer loaded.
    let v1 = PathBuf::from(it.version.clone().expect("iteration 1 published a version"));
    assert_eq!(v1, run::run_dir(root.path(), run.id).join("v1"));
    assert_eq!(served::name_of(&v1).unwrap(), name);
    let report = it.report.as_ref().unwrap();
    assert_eq!(report["served_model"], name.as_str());
    assert_eq!(report["external"]["samples"], samples);
    assert_eq!(it.loss, Some(0.25), "the trainer's reported loss");
    let lineage: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(v1.join(served::LINEAGE)).unwrap()).unwrap();
    assert_eq!(
        (lineage["served_model"].as_str(), lineage["parent"].as_str()),
        (Some(name.as_str()), Some(BASE))
    );

    // The training set the trainer checked line by line, as the requests carried them.
    let input = external::work_dir(&run::run_dir(root.path(), run.id), 1).join("input");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(input.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["served"]["model"], BASE);
    assert_eq!(manifest["samples"], samples);

    // Who asked for what: the untrained evaluation and the rollouts the base model, the
    // evaluation of iteration 1 the new name, which the server answered with its loaded
    // model (its own request count).
    let eval0 = asked_for(&store, its[0].eval_campaign.unwrap()).await;
    assert!(eval0.iter().all(|n| n == BASE), "{eval0:?}");
    for c in &it.rollout_campaigns {
        let r = asked_for(&store, *c).await;
        assert!(r.iter().all(|n| n == BASE), "{r:?}");
    }
    let eval1 = it.eval_campaign.unwrap();
    let names = asked_for(&store, eval1).await;
    assert!(names.iter().all(|n| *n == name), "{names:?}");
    let steps = store.get_campaign(eval1).await.unwrap().unwrap().steps;
    let h = health(&server.url).await;
    let answered = h["loaded"][&name].as_i64().unwrap_or(0);
    assert!(
        steps > 0 && answered >= steps,
        "the loaded model answered {answered} requests; the evaluation took {steps} steps: {h}"
    );

    // A trainer that returns a name the server does not serve, a name already used, or no
    // name at all: refused, nothing published.
    let episodes = policy::traces::from_campaigns(&store, &it.rollout_campaigns)
        .await
        .unwrap();
    let collected = data::collect_from(&episodes, false, data::Source::Served);
    assert!(
        collected.metas.len() as i32 >= samples,
        "{:?}",
        collected.skipped
    );
    let kept: Vec<(usize, f32)> = (0..collected.metas.len().min(4))
        .map(|i| (i, 1.0))
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let served_cfg = run.cfg.served.clone().unwrap();
    for (mode, iteration, used, want) in [
        ("unloaded", 7, vec![], "does not list"),
        (
            "unloaded",
            1,
            vec![BASE.to_string(), name.clone()],
            "names an earlier version of this run",
        ),
        ("bad_name", 8, vec![], "holds ' '"),
    ] {
        let TrainerChoice::External(t) = serde_json::from_value::<TrainerChoice>(
            config(&server.url, load_root.path(), mode)["trainer"].clone(),
        )
        .unwrap() else {
            unreachable!()
        };
        let t: ExternalTrainer = t;
        let out = scratch.path().join(format!("v-{mode}-{iteration}"));
        let job = external::Job {
            store: &store,
            trainer: &t,
            run: run.id,
            iteration,
            objective: training::Objective::Grpo,
            episodes: &episodes,
            at: &collected.at,
            kept: &kept,
            parent: &v1,
            out: &out,
            work: &scratch.path().join(format!("work-{mode}-{iteration}")),
            dylib: &common::ort_dylib(),
            lineage: serde_json::json!({}),
            served: Some(external::ServedJob {
                cfg: &run.cfg,
                served: &served_cfg,
                used,
            }),
        };
        let e = external::update(job, &mut Default::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{mode}: {e}");
        assert!(!out.exists(), "{mode}: a version was published");
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn a_served_run_is_refused_before_it_starts_when_its_server_does_not_serve_it(pool: PgPool) {
    let load_root = tempfile::tempdir().unwrap();
    let server = serve_policy(load_root.path());
    let (_sites, dir) = common::miniwob_sites().await;
    let engine = common::new_engine(pool, policy::PolicyRegistry::builtin());
    engine
        .register_miniwob(&dir, &_sites.bases()["miniwob"])
        .await
        .unwrap();
    let store = engine.store();
    let create = |cfg: serde_json::Value| async move {
        let cfg = trainloop::RunConfig::parse(&cfg.to_string()).unwrap();
        trainloop::run::create(store, &cfg)
            .await
            .map_err(|e| e.to_string())
    };
    let mut unlisted = config(&server.url, load_root.path(), "");
    unlisted["served"]["model"] = "nope".into();
    let e = create(unlisted).await.unwrap_err();
    assert!(
        e.contains("served.model: the server does not list \"nope\"") && e.contains(BASE),
        "{e}"
    );
    let down = config("http://127.0.0.1:9", load_root.path(), "");
    let e = create(down).await.unwrap_err();
    assert!(
        e.contains("served.base_url: the server does not answer"),
        "{e}"
    );
    assert!(
        store.list_runs().await.unwrap().is_empty(),
        "no run was created"
    );

    // The server's own edge: loading is held to its root, names are checked.
    let client = reqwest::Client::new();
    let load = |body: serde_json::Value| {
        let (client, url) = (&client, &server.url);
        async move {
            let r = client
                .post(format!("{url}/v1/load_lora_adapter"))
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let outside = tempfile::tempdir().unwrap();
    let (status, body) =
        load(serde_json::json!({"lora_name": "x", "lora_path": outside.path()})).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("outside the load root") && body.contains("lora_path"),
        "{body}"
    );
    let inside = load_root.path().join("m");
    copy_dir(&model(), &inside);
    let (status, body) =
        load(serde_json::json!({"lora_name": "two words", "lora_path": inside})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("lora_name"), "{body}");
    let (status, body) = load(serde_json::json!({"lora_name": "m1", "lora_path": inside})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = load(serde_json::json!({"lora_name": "m1", "lora_path": inside})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("already loaded"), "{body}");
    let models: serde_json::Value = reqwest::get(format!("{}/v1/models", server.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, [BASE, "m1"]);
    let r = client
        .post(format!("{}/v1/unload_lora_adapter", server.url))
        .json(&serde_json::json!({"lora_name": "m1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        health(&server.url).await["loaded"]
            .as_object()
            .unwrap()
            .is_empty()
    );

    // A PEFT LoRA directory (as `train export-peft` writes it) goes over the served base.
    let peft = load_root.path().join("peft");
    let name = "model.layers.0.self_attn.v_proj.weight_t";
    let inits =
        inference::onnx_file::read_initializers(&model().join("onnx/decoder_model_merged.onnx"))
            .unwrap();
    let dims = &inits.iter().find(|i| i.name == name).unwrap().dims;
    let (inner, outer, r) = (dims[0], dims[1], 2);
    let adapter = inference::peft::LoraTensors {
        meta: inference::version::AdapterMeta {
            rank: r,
            alpha: 4.0,
            targets: vec![name.into()],
        },
        pairs: [(
            name.to_string(),
            (vec![0.1; inner * r], vec![0.05; r * outer]),
        )]
        .into(),
    };
    inference::peft::export(&adapter, &model(), &peft).unwrap();
    let (status, body) = load(serde_json::json!({"lora_name": "lora1", "lora_path": peft})).await;
    assert_eq!(status, 200, "{body}");
    let r = client
        .post(format!("{}/v1/chat/completions", server.url))
        .json(&serde_json::json!({"model": "lora1", "max_tokens": 4,
            "messages": [{"role": "user", "content": "Click the red button"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    // One whose tensor names no projection of the base is refused by name.
    let broken = load_root.path().join("broken");
    let mut wrong = adapter;
    let (_, pair) = wrong.pairs.pop_first().unwrap();
    let other = name.replace("v_proj", "w_proj");
    wrong.pairs.insert(other.clone(), pair);
    wrong.meta.targets = vec![other];
    inference::peft::export(&wrong, &model(), &broken).unwrap();
    let (status, body) = load(serde_json::json!({"lora_name": "lora2", "lora_path": broken})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("w_proj"), "{body}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
