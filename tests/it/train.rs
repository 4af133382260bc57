//! Training from recorded campaigns: steps the ONNX policy took in real MiniWoB++ episodes
//! (real Chromium, real Postgres), replayed from the store or from `surfgym export` JSON
//! Lines, give the trainer exactly the log-probabilities the policy recorded; and
//! `surfgym train step` turns a judged campaign into a policy version the ONNX policy
//! loads, refusing bad input before any work.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engine::CampaignSpec;
use inference::Device;
use inference::Model;
use inference::grammar::Constraint;
use policy::onnx::{self, OnnxBackend, OnnxOptions, PromptConfig};
use policy::output::Grounding;
use policy::traces::{self, Blobs, Replayer, TraceEpisode};
use policy::{BatchLimits, PolicyRegistry};
use sqlx::PgPool;
use store::{Store, TaskFilter};
use training::{Sample, TrainConfig, Trainer};
use uuid::Uuid;

/// Click tasks where a random policy sometimes succeeds (so GRPO's groups have signal).
const TASKS: [&str; 3] = ["click-test", "click-test-2", "click-button"];

fn models() -> PathBuf {
    common::data_dir().join("models")
}

fn dylib() -> PathBuf {
    inference::find_ort_dylib(&common::data_dir())
        .expect("ONNX Runtime: run ./scripts/setup-python.sh")
}

fn options(model: &str, constrained: Option<Constraint>, grounding: Grounding) -> OnnxOptions {
    let mut o = OnnxOptions::new(models().join(model), dylib());
    o.generation.max_new_tokens = 16;
    o.generation.temperature = 1.0;
    o.constrained = constrained;
    o.prompt = PromptConfig {
        grounding,
        ..PromptConfig::default()
    };
    o.threads = 1;
    o
}

fn surfgym(pool: &PgPool, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args(args)
        .env("DATABASE_URL", common::database_url(pool))
        .env("SURFGYM_DATA_DIR", common::data_dir())
        .output()
        .unwrap()
}

async fn campaign(engine: &engine::Engine, policy: &str, rollouts: u32) -> Uuid {
    let id = engine
        .create_campaign(CampaignSpec {
            name: Some(format!("train: {policy}")),
            policy: Some(policy.into()),
            tasks: Some(TaskFilter {
                ids: TASKS.iter().map(|t| format!("miniwob.{t}")).collect(),
                ..Default::default()
            }),
            rollouts_per_task: Some(rollouts),
            max_steps: Some(3),
            max_attempts: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        engine.run_campaign(id).await.unwrap(),
        store::Status::Completed
    );
    id
}

/// Every step of `episodes` replayed as a sample (the advantage does not matter here).
async fn replay(model: &Path, blobs: Blobs, episodes: &[TraceEpisode]) -> Vec<Sample> {
    let model = Model::load(model, &dylib(), Device::Cpu, 1).unwrap();
    let mut r = Replayer::new(model, blobs);
    let mut out = Vec::new();
    for ep in episodes {
        for s in 0..ep.steps.len() {
            let x = r.step(ep, s).await.unwrap();
            out.push(Sample::from_teacher(x.inputs, x.response, x.behaviour, 1.0));
        }
    }
    out
}

/// The trainer's log-probabilities of each sample's stored tokens, against the recorded
/// ones: the largest difference.
fn max_logprob_gap(model: &Path, samples: &[Sample]) -> f32 {
    let trainer = Trainer::load(model, TrainConfig::default(), &candle_core::Device::Cpu).unwrap();
    let lps = trainer.logprobs(samples).unwrap();
    let mut worst = 0f32;
    for (s, lp) in samples.iter().zip(&lps) {
        assert_eq!(lp.len(), s.behaviour_logprobs.len());
        for (a, b) in lp.iter().zip(&s.behaviour_logprobs) {
            worst = worst.max((a - b).abs());
        }
    }
    worst
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn steps_replayed_from_the_store_or_an_export_score_as_the_policy_recorded(pool: PgPool) {
    let (sites, dir) = common::miniwob_sites().await;
    // A vision model drawing marks at MiniWoB's 1.5x screen under constrained decoding
    // with three kinds of action,
    // the M-RoPE model on the grid with reasoning, a text model decoding freely.
    let setups = [
        (
            "vlm",
            "tiny-vlm",
            Some(Constraint::Action),
            Grounding::Marks,
        ),
        (
            "qwen",
            "tiny-qwen2vl",
            Some(Constraint::Reasoned),
            Grounding::Coordinates,
        ),
        ("text", "tiny-text", None, Grounding::Marks),
    ];
    let mut policies = PolicyRegistry::builtin();
    let limits = BatchLimits {
        max_batch: 4,
        max_wait: Duration::from_millis(5),
    };
    for (name, model, constrained, grounding) in setups {
        let mut o = options(model, constrained, grounding);
        if name == "vlm" {
            // A narrowed action set: replay must mask with the set the step was sampled
            // under, or the scores below would differ.
            o.prompt.actions = spaces::ActionSet::only(["click", "type", "press"]).unwrap();
        }
        let (p, _) = onnx::policy(name, o, limits).unwrap();
        policies.register(Arc::new(p));
    }
    let engine = common::new_engine(pool.clone(), policies);
    engine
        .register_miniwob(&dir, &sites.bases()["miniwob"])
        .await
        .unwrap();

    let store: Store = engine.store().clone();
    for (name, model, _, _) in setups {
        let id = campaign(&engine, name, 1).await;
        let episodes = traces::from_campaigns(&store, &[id]).await.unwrap();
        assert_eq!(episodes.len(), TASKS.len(), "{name}");
        let samples = replay(
            &models().join(model),
            Blobs::Store(store.clone()),
            &episodes,
        )
        .await;
        assert!(!samples.is_empty(), "{name}");
        if name != "text" {
            assert!(
                samples.iter().all(|s| s.allowed.is_some()),
                "{name}: the grammar's masks are rebuilt"
            );
        }
        let gap = max_logprob_gap(&models().join(model), &samples);
        assert!(
            gap <= 1e-3,
            "{name}: the trainer's log-probabilities of replayed steps differ from the recorded ones by {gap}"
        );

        if name == "vlm" {
            // The same episodes from an export file and its screenshot files.
            let tmp = tempfile::tempdir().unwrap();
            let file = tmp.path().join("episodes.jsonl");
            let shots = tmp.path().join("shots");
            let out = surfgym(
                &pool,
                &[
                    "export",
                    "--campaign",
                    &id.to_string(),
                    "--out",
                    file.to_str().unwrap(),
                    "--screenshots",
                    shots.to_str().unwrap(),
                ],
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (from_file, errors) = traces::read_jsonl(&file).unwrap();
            assert!(errors.is_empty(), "{errors:?}");
            let blobs = Blobs::Files {
                base: tmp.path().into(),
                dir: Some(shots.clone()),
            };
            let again = replay(&models().join(model), blobs, &from_file).await;
            assert_eq!(again.len(), samples.len());
            for (a, b) in again.iter().zip(&samples) {
                assert_eq!((a.prompt_len, &a.response), (b.prompt_len, &b.response));
                assert_eq!(a.embeds, b.embeds, "the export replays to the same inputs");
            }
            // A screenshot file that is not the one the step names is refused, not used:
            // every file damaged (which one a step reads is not the directory's order).
            for f in std::fs::read_dir(&shots).unwrap() {
                std::fs::write(f.unwrap().path(), b"not an image").unwrap();
            }
            let model = Model::load(&models().join(model), &dylib(), Device::Cpu, 1).unwrap();
            let mut r = Replayer::new(
                model,
                Blobs::Files {
                    base: tmp.path().into(),
                    dir: Some(shots),
                },
            );
            let mut refused = 0;
            for ep in &from_file {
                for s in 0..ep.steps.len() {
                    if let Err(e) = r.step(ep, s).await {
                        assert!(e.to_string().contains("sha256 differs"), "{e}");
                        refused += 1;
                    }
                }
            }
            assert!(refused > 0, "the damaged screenshot was noticed");
        }
    }
}

#[sqlx::test(migrator = "store::MIGRATOR")]
async fn train_step_turns_a_judged_campaign_into_a_version_the_policy_runs(pool: PgPool) {
    let (sites, dir) = common::miniwob_sites().await;
    let base = models().join("tiny-vlm");
    let mut policies = PolicyRegistry::builtin();
    let opts = options("tiny-vlm", Some(Constraint::Action), Grounding::Marks);
    let limits = BatchLimits {
        max_batch: 4,
        max_wait: Duration::from_millis(5),
    };
    let (p, _) = onnx::policy("onnx", opts.clone(), limits).unwrap();
    policies.register(Arc::new(p));
    let engine = common::new_engine(pool.clone(), policies);
    engine
        .register_miniwob(&dir, &sites.bases()["miniwob"])
        .await
        .unwrap();
    // Eight rollouts a task: GRPO's groups are a task's rollouts here, and with four each
    // every task's could end alike (CI saw all three groups flat once).
    let id = campaign(&engine, "onnx", 8).await;
    let (eps, _) = engine
        .store()
        .list_episodes(&store::EpisodeFilter::campaign(id), 100, 0)
        .await
        .unwrap();
    let successes = eps.iter().filter(|e| e.success == Some(true)).count();
    assert!(
        successes > 0 && successes < eps.len(),
        "the untrained policy solves some episodes and fails others ({successes} of {})",
        eps.len()
    );

    let tmp = tempfile::tempdir().unwrap();
    let version = tmp.path().join("v1");
    let (id_s, base_s, v_s) = (
        id.to_string(),
        base.to_str().unwrap().to_string(),
        version.to_str().unwrap().to_string(),
    );
    let link = tmp.path().join("current");
    let link_s = link.to_str().unwrap().to_string();
    let step = |out: &str, objective: &str| {
        surfgym(
            &pool,
            &[
                "train",
                "step",
                "--campaign",
                &id_s,
                "--model",
                &base_s,
                "--out",
                out,
                "--objective",
                objective,
                "--promote",
                &link_s,
            ],
        )
    };
    let out = step(&v_s, "grpo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("grpo:") && stdout.contains("samples/s"),
        "{stdout}"
    );
    assert!(version.join("weights.safetensors").is_file());
    assert_eq!(
        std::fs::canonicalize(&link).unwrap(),
        std::fs::canonicalize(&version).unwrap(),
        "--promote points the version link at the new version"
    );
    let lineage: serde_json::Value =
        serde_json::from_slice(&std::fs::read(version.join("train.json")).unwrap()).unwrap();
    let t = &lineage["training"];
    assert_eq!(t["source"]["campaigns"], serde_json::json!([id]));
    assert_eq!(t["objective"], "grpo");
    let samples = t["samples"].as_u64().unwrap();
    assert!(samples > 0);
    assert_eq!(
        samples + t["dropped"]["flat_group"].as_u64().unwrap(),
        t["steps_trainable"].as_u64().unwrap(),
        "every trainable step is either trained on or counted as dropped"
    );
    assert!(t["report"]["steps"].as_u64().unwrap() >= 1);

    // The version is a model directory the ONNX policy loads, with its own fingerprint.
    let mut v_opts = opts.clone();
    v_opts.model_dir = version.clone();
    OnnxBackend::load(v_opts).unwrap();
    assert_ne!(
        policy::fingerprint(&version).unwrap(),
        policy::fingerprint(&base).unwrap(),
        "stored episodes will say which weights ran"
    );

    // Refused before any work, with what to do.
    let again = step(&v_s, "fbc");
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && err.contains("already exists"),
        "{err}"
    );
    let unknown = Uuid::new_v4().to_string();
    let out = surfgym(
        &pool,
        &[
            "train",
            "step",
            "--campaign",
            &unknown,
            "--model",
            &base_s,
            "--out",
            tmp.path().join("v2").to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no campaign"),
        "{err}"
    );
    assert!(!tmp.path().join("v2").exists());
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(&bad, "\n{\"id\": 3}\n").unwrap();
    let out = surfgym(
        &pool,
        &[
            "train",
            "step",
            "--jsonl",
            bad.to_str().unwrap(),
            "--model",
            &base_s,
            "--out",
            tmp.path().join("v3").to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("line 2"), "{err}");
    assert!(!tmp.path().join("v3").exists());
    // A scripted campaign's steps carry no prompt nor token ids: refused, saying so.
    let scripted = campaign(&engine, "scripted", 1).await.to_string();
    let out = surfgym(
        &pool,
        &[
            "train",
            "step",
            "--campaign",
            &scripted,
            "--model",
            &base_s,
            "--out",
            tmp.path().join("v4").to_str().unwrap(),
            "--objective",
            "fbc",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("can be trained on") && err.contains("onnx policy"),
        "{err}"
    );
    assert!(!tmp.path().join("v4").exists());
}

/// `serve-policy` started on a version link serves each promoted version from the next
/// request on, and keeps serving the one in use when a promoted version is broken.
#[tokio::test]
async fn serve_policy_on_a_version_link_serves_promoted_versions() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let base = models().join("tiny-text");
    let (v1, broken) = (tmp.path().join("v1"), tmp.path().join("broken"));
    for v in [&v1, &broken] {
        let mut t =
            Trainer::load(&base, TrainConfig::default(), &candle_core::Device::Cpu).unwrap();
        t.publish(v, serde_json::json!({"test": "serve-policy"}))
            .unwrap();
    }
    std::fs::write(broken.join(training::version::WEIGHTS), b"garbage").unwrap();
    let link = tmp.path().join("current");
    inference::version_link::promote(&base, &link).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_surfgym"))
        .args([
            "serve-policy",
            "--model",
            link.to_str().unwrap(),
            "--port",
            "0",
        ])
        .env("SURFGYM_DATA_DIR", common::data_dir())
        .env("SURFGYM_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(l);
        }
    });
    let client = reqwest::Client::new();
    let root = || async {
        let v: serde_json::Value = client
            .get(format!("http://{addr}/v1/models"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        std::path::PathBuf::from(v["data"][0]["root"].as_str().unwrap())
    };
    let complete = || async {
        client
            .post(format!("http://{addr}/v1/chat/completions"))
            .json(&serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}))
            .send()
            .await
            .unwrap()
            .status()
    };
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
    assert_eq!(root().await, canon(&base));

    inference::version_link::promote(&v1, &link).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while root().await != canon(&v1) {
        assert!(std::time::Instant::now() < deadline, "v1 was never served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(complete().await.is_success());

    inference::version_link::promote(&broken, &link).unwrap();
    let refused = loop {
        let l = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the broken version is reported");
        if l.contains("cannot be loaded") {
            break l;
        }
    };
    assert!(refused.contains("weights.safetensors"), "{refused}");
    assert_eq!(root().await, canon(&v1), "v1 keeps serving");
    assert!(complete().await.is_success());
    child.kill().unwrap();
    child.wait().unwrap();
}
