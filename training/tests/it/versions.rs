//! Policy versions round-trip: weights changed in candle and published load into ONNX
//! Runtime over the base graph and give the logits candle gives; the base is untouched;
//! a broken version is refused with an error naming the tensor and the file, and nothing
//! of it is used.

use std::path::{Path, PathBuf};

use candle_core::{Device, Tensor};
use inference::{Model, Prompt};
use training::{Sample, TrainConfig, Trainer};

use crate::common;

fn load(dir: &Path) -> Result<Model, inference::OnnxError> {
    Model::load(dir, &common::ort_dylib(), inference::Device::Cpu, 1)
}

/// The trainer's sample for `prompt` + `continuation`, built by the policy's own model.
fn sample(m: &mut Model, p: &Prompt, continuation: &[u32]) -> Sample {
    let t = m.teacher_inputs(p, continuation).unwrap();
    Sample {
        embeds: t.embeds,
        positions: t.positions,
        prompt_len: t.prompt_len,
        response: continuation.to_vec(),
        behaviour_logprobs: Vec::new(),
        allowed: t.allowed,
        advantage: 1.0,
    }
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

/// A published version of tiny-text whose every weight was moved.
fn perturbed_version(root: &Path) -> (PathBuf, Trainer) {
    let base = common::model("tiny-text");
    let mut trainer = Trainer::load(&base, TrainConfig::default(), &Device::Cpu).unwrap();
    let mut rnd = common::lcg(11);
    for (name, var) in trainer.decoder().params().clone() {
        let noise: Vec<f32> = (0..var.elem_count())
            .map(|_| ((rnd() % 2001) as f32 / 1000.0 - 1.0) * 0.05)
            .collect();
        let noise = Tensor::from_vec(noise, var.dims(), &Device::Cpu).unwrap();
        var.set(&(var.as_tensor() + noise).unwrap()).unwrap();
        assert!(name.starts_with("model.") || name.starts_with("lm_head."));
    }
    let out = root.join("v1");
    trainer
        .publish(&out, serde_json::json!({"test": "perturbed"}))
        .unwrap();
    (out, trainer)
}

#[test]
fn a_published_version_runs_in_onnx_runtime_as_trained_and_leaves_the_base_alone() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = common::model("tiny-text");
    let mut base = load(&base_dir).unwrap();
    let p = Prompt::text_only(common::CLICK_RED);
    let continuation = base.encode("click(3)").unwrap();
    let base_before = base.score(&p, &continuation).unwrap();

    let (version, trainer) = perturbed_version(root.path());
    let mut trained = load(&version).unwrap();
    let ort = trained.score(&p, &continuation).unwrap();
    let candle = trainer
        .logprobs(&[sample(&mut trained, &p, &continuation)])
        .unwrap();
    let d = max_diff(&ort, &candle[0]);
    assert!(d <= 1e-4, "ORT with the version vs candle: {d}");
    // The version really changed the outputs, and the base did not move.
    assert!(
        max_diff(&ort, &base_before) > 1e-2,
        "the version's tensors were not applied"
    );
    let base_after = load(&base_dir).unwrap().score(&p, &continuation).unwrap();
    assert_eq!(base_after, base_before);
    // The lineage names the base and the files are links to it.
    let lineage = training::version::read_lineage(&version).unwrap().unwrap();
    assert_eq!(lineage.base, std::fs::canonicalize(&base_dir).unwrap());
    assert!(
        std::fs::symlink_metadata(version.join("onnx"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // A trainer loading the version goes on from its weights (same log-probabilities).
    let again = Trainer::load(&version, TrainConfig::default(), &Device::Cpu).unwrap();
    let resumed = again
        .logprobs(&[sample(&mut trained, &p, &continuation)])
        .unwrap();
    assert!(max_diff(&resumed[0], &candle[0]) <= 1e-6);
}

fn copy_version(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), target).unwrap();
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

fn rewrite_weights(dir: &Path, edit: impl FnOnce(&mut std::collections::HashMap<String, Tensor>)) {
    let path = dir.join("weights.safetensors");
    let mut t = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    edit(&mut t);
    candle_core::safetensors::save(&t, &path).unwrap();
}

/// A way of breaking a copied version directory.
type Damage = Box<dyn Fn(&Path)>;

#[test]
fn broken_versions_are_refused_naming_the_tensor_and_the_file() {
    let root = tempfile::tempdir().unwrap();
    let (good, _) = perturbed_version(root.path());
    let q = "model.layers.0.self_attn.q_proj.weight_t";
    let cases: Vec<(&str, Damage, Vec<&str>)> = vec![
        (
            "missing",
            Box::new(|d| rewrite_weights(d, |t| drop(t.remove(q)))),
            vec!["no tensor", q, "weights.safetensors"],
        ),
        (
            "shape",
            Box::new(|d| {
                rewrite_weights(d, |t| {
                    t.insert(
                        q.into(),
                        Tensor::zeros((3, 3), candle_core::DType::F32, &Device::Cpu).unwrap(),
                    );
                })
            }),
            vec!["shape", q, "weights.safetensors"],
        ),
        (
            "dtype",
            Box::new(|d| {
                rewrite_weights(d, |t| {
                    let v = t[q].to_dtype(candle_core::DType::F16).unwrap();
                    t.insert(q.into(), v);
                })
            }),
            vec!["F16", q, "weights.safetensors"],
        ),
        (
            "corrupt",
            Box::new(|d| {
                std::fs::write(
                    d.join("weights.safetensors"),
                    b"\x10\0\0\0\0\0\0\0{not json",
                )
                .unwrap()
            }),
            vec!["weights.safetensors", "not a readable safetensors file"],
        ),
        (
            "other base",
            Box::new(|d| {
                let other = common::model("tiny-vlm").join("onnx");
                std::fs::remove_file(d.join("onnx")).unwrap();
                std::os::unix::fs::symlink(other, d.join("onnx")).unwrap();
            }),
            vec!["base decoder", "not the one it was trained on"],
        ),
    ];
    for (name, damage, words) in cases {
        let dir = root.path().join(name.replace(' ', "-"));
        copy_version(&good, &dir);
        damage(&dir);
        let err = load(&dir)
            .err()
            .unwrap_or_else(|| panic!("{name}: the policy loaded a broken version"))
            .to_string();
        for w in &words {
            assert!(err.contains(w), "{name}: {err:?} does not say {w:?}");
        }
        assert!(
            err.contains(&dir.display().to_string()),
            "{name}: {err} names no directory"
        );
        let err = Trainer::load(&dir, TrainConfig::default(), &Device::Cpu)
            .err()
            .unwrap_or_else(|| panic!("{name}: the trainer loaded a broken version"))
            .to_string();
        assert!(err.contains(words[0]), "{name}: trainer said {err:?}");
    }
    // The good version still loads after all that.
    load(&good).unwrap();
}

#[test]
fn a_trainer_kept_in_memory_after_publishing_goes_on_exactly_as_its_version_loaded_back() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = common::model("tiny-text");
    let mut m = load(&base_dir).unwrap();
    let p = Prompt::text_only(common::CLICK_RED);
    let samples: Vec<Sample> = ["click(3)", "click(12)", "answer(\"red\")"]
        .iter()
        .map(|c| {
            let ids = m.encode(c).unwrap();
            sample(&mut m, &p, &ids)
        })
        .collect();
    let cfg = |seed| TrainConfig {
        micro_batch: 2,
        epochs: 2,
        seed,
        ..TrainConfig::default()
    };
    let mut kept = Trainer::load(&base_dir, cfg(1), &Device::Cpu).unwrap();
    kept.update(&samples, &mut |_, _, _| {}).unwrap();
    let v1 = root.path().join("v1");
    kept.publish(&v1, serde_json::json!({"test": "resident"}))
        .unwrap();

    // The next update from memory and from the version read back: the same weights, bit
    // for bit, and the same losses (AdamW's moments and step count included).
    kept.reconfigure(cfg(2)).unwrap();
    let a = kept.update(&samples, &mut |_, _, _| {}).unwrap();
    let mut loaded = Trainer::load(&v1, cfg(2), &Device::Cpu).unwrap();
    let b = loaded.update(&samples, &mut |_, _, _| {}).unwrap();
    assert_eq!(a.losses, b.losses);
    assert_eq!(common::weights(&kept), common::weights(&loaded));
    assert!(a.steps > 0 && a.first_loss.is_finite());

    // The optimiser's settings are part of its state: changing them needs a reload.
    let mut other = cfg(3);
    other.optimizer.lr *= 2.0;
    let e = kept.reconfigure(other).unwrap_err().to_string();
    assert!(e.contains("optimizer"), "{e}");
}

/// The names in a version's weights file.
fn stored_names(version: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        candle_core::safetensors::load(version.join("weights.safetensors"), &Device::Cpu)
            .unwrap()
            .into_keys()
            .collect();
    names.sort();
    names
}

#[test]
fn a_top_layers_version_stores_only_what_moved_and_runs_as_trained() {
    let root = tempfile::tempdir().unwrap();
    let base_dir = common::model("tiny-text");
    let mut m = load(&base_dir).unwrap();
    let p = Prompt::text_only(common::CLICK_RED);
    let ids = m.encode("click(3)").unwrap();
    let samples = vec![sample(&mut m, &p, &ids)];
    let base_score = m.score(&p, &ids).unwrap();
    let cfg = |top_layers| {
        let mut c = TrainConfig {
            epochs: 3,
            top_layers,
            ..TrainConfig::default()
        };
        c.optimizer.lr = 1e-2;
        c
    };
    let mut t = Trainer::load(&base_dir, cfg(Some(1)), &Device::Cpu).unwrap();
    let layers = t.decoder().config().layers;
    assert!(layers >= 2, "tiny-text has {layers} layers");
    t.update(&samples, &mut |_, _, _| {}).unwrap();
    let v1 = root.path().join("v1");
    t.publish(&v1, serde_json::json!({"test": "top"})).unwrap();

    // Only the top layer, the final norm and the head are stored, and listed.
    let top = format!("model.layers.{}.", layers - 1);
    let names = stored_names(&v1);
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(&top) || n == "model.norm.weight" || n == "lm_head.weight_t"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n.starts_with(&top)));
    let lineage = training::version::read_lineage(&v1).unwrap().unwrap();
    assert_eq!(lineage.tensors.as_ref(), Some(&names));

    // ONNX Runtime runs it as the trainer computes it, the lower layers the base's.
    let ort = load(&v1).unwrap().score(&p, &ids).unwrap();
    let candle = t.logprobs(&samples).unwrap();
    assert!(max_diff(&ort, &candle[0]) <= 1e-4);
    assert!(
        max_diff(&ort, &base_score) > 1e-3,
        "the version moved nothing"
    );
    let again = Trainer::load(&v1, cfg(None), &Device::Cpu).unwrap();
    assert!(max_diff(&again.logprobs(&samples).unwrap()[0], &candle[0]) <= 1e-6);

    // Going on from it: the same top layer keeps the same set; every layer stores all.
    let mut more = Trainer::load(&v1, cfg(Some(1)), &Device::Cpu).unwrap();
    more.update(&samples, &mut |_, _, _| {}).unwrap();
    let v2 = root.path().join("v2");
    more.publish(&v2, serde_json::json!({})).unwrap();
    assert_eq!(stored_names(&v2), names);
    let mut all = Trainer::load(&v1, cfg(None), &Device::Cpu).unwrap();
    all.update(&samples, &mut |_, _, _| {}).unwrap();
    let v3 = root.path().join("v3");
    all.publish(&v3, serde_json::json!({})).unwrap();
    assert_eq!(stored_names(&v3).len(), all.decoder().params().len());
    assert_eq!(
        training::version::read_lineage(&v3)
            .unwrap()
            .unwrap()
            .tensors,
        None
    );

    // A listed tensor missing from the file, or a listed name the base lacks: refused.
    let missing = root.path().join("missing");
    copy_version(&v1, &missing);
    rewrite_weights(&missing, |t| {
        t.remove("lm_head.weight_t");
    });
    let e = load(&missing).err().expect("refused").to_string();
    assert!(e.contains("lm_head.weight_t"), "{e}");
    let unknown = root.path().join("unknown");
    copy_version(&v1, &unknown);
    let path = unknown.join("train.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json["tensors"]
        .as_array_mut()
        .unwrap()
        .push("model.layers.99.mlp.up_proj.weight_t".into());
    std::fs::write(&path, json.to_string()).unwrap();
    let e = load(&unknown).err().expect("refused").to_string();
    assert!(e.contains("model.layers.99.mlp.up_proj.weight_t"), "{e}");
}
