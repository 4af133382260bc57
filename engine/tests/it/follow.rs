//! The ONNX policy started on a version link: a promoted version is loaded in the
//! background and runs new episodes, episodes already started keep the version they
//! started on, and a broken version is refused while the one in use keeps serving.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use browser_pool::{Observation, Rect};
use inference::version_link::promote;
use policy::onnx::{self, OnnxOptions};
use policy::{BatchLimits, Policy};
use training::{TrainConfig, Trainer};

fn options() -> OnnxOptions {
    let data = common::data_dir();
    let dylib =
        inference::find_ort_dylib(&data).expect("ONNX Runtime: run ./scripts/setup-python.sh");
    let mut o = OnnxOptions::new(data.join("models/tiny-text"), dylib);
    o.generation.max_new_tokens = 8;
    o.threads = 1;
    o
}

/// A version of `base` (its weights as they are: a version all the same, with its own
/// files and so its own fingerprint).
fn publish(base: &Path, out: &Path) {
    let mut t = Trainer::load(base, TrainConfig::default(), &candle_core::Device::Cpu).unwrap();
    t.publish(out, serde_json::json!({"test": "follow"}))
        .unwrap();
}

fn page() -> Observation {
    Observation {
        url: "http://127.0.0.1:1/".into(),
        title: "Buttons".into(),
        screenshot: common::gradient_screenshot(320, 200, 10),
        elements: vec![common::button(
            1,
            "OK",
            Rect {
                x: 10.0,
                y: 10.0,
                width: 80.0,
                height: 20.0,
            },
        )],
        scroll: common::unscrolled(200.0),
        ..Default::default()
    }
}

/// Waits (bounded generously: loading competes with the rest of the suite) until `done`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_following_policy_runs_promoted_versions_for_new_episodes_only() {
    let tmp = tempfile::tempdir().unwrap();
    let base = options().model_dir;
    let (v1, broken) = (tmp.path().join("v1"), tmp.path().join("broken"));
    publish(&base, &v1);
    publish(&base, &broken);
    let weights = broken.join(training::version::WEIGHTS);
    std::fs::write(&weights, b"not safetensors").unwrap();
    let link = tmp.path().join("current");
    promote(&base, &link).unwrap();

    let limits = BatchLimits {
        max_batch: 2,
        max_wait: Duration::from_millis(5),
    };
    let policy = onnx::following("onnx", &link, options(), limits).unwrap();
    let fingerprint = |dir: &Path| Some(policy::fingerprint(dir).unwrap());
    let started = policy.pinned().unwrap();
    assert_eq!(started.card().fingerprint, fingerprint(&base));
    assert_eq!(policy.card().fingerprint, fingerprint(&base));

    // Promoted: loaded in the background, then new episodes get it.
    promote(&v1, &link).unwrap();
    let _ = policy.pinned();
    let v1c = std::fs::canonicalize(&v1).unwrap();
    until("the promoted version loading", || policy.serving() == v1c).await;
    let newer = policy.pinned().unwrap();
    assert_eq!(newer.card().fingerprint, fingerprint(&v1));
    assert_ne!(fingerprint(&v1), fingerprint(&base));
    // The episode that started before keeps its version, and it still answers.
    assert_eq!(started.card().fingerprint, fingerprint(&base));
    let d = started
        .decide(common::step_input("Click OK", page(), 1))
        .await
        .unwrap();
    assert!(!d.token_ids.is_empty());
    let d = newer
        .decide(common::step_input("Click OK", page(), 1))
        .await
        .unwrap();
    assert!(!d.token_ids.is_empty());

    // A broken version is refused with its reason; v1 keeps serving.
    promote(&broken, &link).unwrap();
    let _ = policy.pinned();
    until("the broken version being refused", || {
        policy.refused().is_some()
    })
    .await;
    let refused = policy.refused().unwrap();
    assert_eq!(refused.dir, std::fs::canonicalize(&broken).unwrap());
    assert!(
        refused.why.contains("weights.safetensors"),
        "{}",
        refused.why
    );
    assert_eq!(policy.serving(), v1c);
    let still = policy.pinned().unwrap();
    assert_eq!(still.card().fingerprint, fingerprint(&v1));
    still
        .decide(common::step_input("Click OK", page(), 2))
        .await
        .unwrap();

    // Moving the link again (back to the base) is picked up.
    promote(&base, &link).unwrap();
    let _ = policy.pinned();
    let basec = std::fs::canonicalize(&base).unwrap();
    until("the base loading again", || policy.serving() == basec).await;
    assert_eq!(policy.refused(), None);
    assert_eq!(
        policy.pinned().unwrap().card().fingerprint,
        fingerprint(&base)
    );
}
