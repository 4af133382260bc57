//! LoRA adapters: a fresh adapter changes nothing; an update moves only the adapter, never
//! the base; the published version runs in ONNX Runtime (merged into the initializers)
//! as the trainer computes it, to 1e-4; training goes on from the version's adapter; an
//! adapter of other settings, a full-parameter parent, and a corrupt adapter file are
//! refused naming what is wrong.

use std::path::Path;

use candle_core::Device;
use inference::{Model, Prompt};
use training::lora::{LoraConfig, Projection};
use training::{Sample, TrainConfig, Trainer};

use crate::common;

const PROMPT: &str = "<|im_start|>user\nClick the red button<|im_end|>\n<|im_start|>assistant\n";

fn model(dir: &Path) -> Model {
    Model::load(dir, &common::ort_dylib(), inference::Device::Cpu, 1).unwrap()
}

fn samples(m: &mut Model) -> Vec<Sample> {
    let p = Prompt::text_only(PROMPT);
    ["click(3)", "click(12)"]
        .iter()
        .map(|c| {
            let ids = m.encode(c).unwrap();
            let t = m.teacher_inputs(&p, &ids).unwrap();
            Sample {
                embeds: t.embeds,
                positions: t.positions,
                prompt_len: t.prompt_len,
                response: ids,
                behaviour_logprobs: Vec::new(),
                allowed: t.allowed,
                advantage: 1.0,
            }
        })
        .collect()
}

fn cfg(lora: Option<LoraConfig>) -> TrainConfig {
    let mut c = TrainConfig {
        epochs: 3,
        lora,
        ..TrainConfig::default()
    };
    c.optimizer.lr = 2e-2;
    c
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()))
}

#[test]
fn an_adapter_learns_alone_and_its_version_runs_in_onnx_runtime_as_trained() {
    let root = tempfile::tempdir().unwrap();
    let base = common::model("tiny-text");
    let mut m = model(&base);
    let s = samples(&mut m);
    let p = Prompt::text_only(PROMPT);
    let ids = m.encode("click(3)").unwrap();
    let base_score = m.score(&p, &ids).unwrap();

    let mut t = Trainer::load(&base, cfg(Some(LoraConfig::rank(4))), &Device::Cpu).unwrap();
    let before = common::weights(&t);
    // B starts at zero: a fresh adapter is the base model.
    assert!(max_diff(&t.logprobs(&s[..1]).unwrap()[0], &base_score) <= 1e-4);
    let layers = t.decoder().config().layers;
    assert_eq!(t.decoder().trainable().len(), 2 * 7 * layers);
    let r = t.update(&s, &mut |_, _, _| {}).unwrap();
    assert!(r.last_loss < r.first_loss, "{r:?}");
    assert_eq!(common::weights(&t), before, "the base never moves");
    let v1 = root.path().join("v1");
    t.publish(&v1, serde_json::json!({"test": "lora"})).unwrap();

    // ONNX Runtime runs the merged matrices as the trainer computes base + adapter.
    let ort = model(&v1).score(&p, &ids).unwrap();
    let candle = t.logprobs(&s[..1]).unwrap();
    assert!(
        max_diff(&ort, &candle[0]) <= 1e-4,
        "{}",
        max_diff(&ort, &candle[0])
    );
    assert!(
        max_diff(&ort, &base_score) > 1e-2,
        "the adapter moved nothing"
    );
    let lineage = training::version::read_lineage(&v1).unwrap().unwrap();
    let meta = lineage.adapter.clone().expect("a LoRA version says so");
    assert_eq!(
        (meta.rank, meta.alpha, meta.targets.len()),
        (4, 8.0, 7 * layers)
    );
    assert_eq!(lineage.tensors.as_ref().unwrap(), &meta.targets);

    // Training goes on from the adapter (same outputs), or in full over the merged weights.
    let again = Trainer::load(&v1, cfg(Some(LoraConfig::rank(4))), &Device::Cpu).unwrap();
    assert!(max_diff(&again.logprobs(&s[..1]).unwrap()[0], &candle[0]) <= 1e-5);
    assert_eq!(common::weights(&again), before, "the base stays the base");
    let full = Trainer::load(&v1, cfg(None), &Device::Cpu).unwrap();
    assert!(max_diff(&full.logprobs(&s[..1]).unwrap()[0], &candle[0]) <= 1e-4);

    // Another rank, or an adapter over full-parameter updates: refused, saying why.
    let e = Trainer::load(&v1, cfg(Some(LoraConfig::rank(8))), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("lora") && e.contains("rank-4"), "{e}");
    let mut f = Trainer::load(&base, cfg(None), &Device::Cpu).unwrap();
    f.update(&s, &mut |_, _, _| {}).unwrap();
    let full_v = root.path().join("full");
    f.publish(&full_v, serde_json::json!({})).unwrap();
    let e = Trainer::load(&full_v, cfg(Some(LoraConfig::rank(4))), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("full-parameter"), "{e}");

    // A corrupt adapter: a tensor missing, or not finite, is named.
    let adapter = v1.join("adapter.safetensors");
    let mut tensors = candle_core::safetensors::load(&adapter, &Device::Cpu).unwrap();
    let name = "model.layers.0.mlp.up_proj.weight_t.lora_b";
    let kept = tensors.remove(name).unwrap();
    candle_core::safetensors::save(&tensors, &adapter).unwrap();
    let e = Trainer::load(&v1, cfg(Some(LoraConfig::rank(4))), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(name), "{e}");
    let nan = (kept.ones_like().unwrap() * f64::NAN).unwrap();
    tensors.insert(name.to_string(), nan);
    candle_core::safetensors::save(&tensors, &adapter).unwrap();
    let e = Trainer::load(&v1, cfg(Some(LoraConfig::rank(4))), &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(name) && e.contains("NaN"), "{e}");
}

#[test]
fn an_adapter_on_the_top_layers_only_adapts_them() {
    let base = common::model("tiny-text");
    let mut c = cfg(Some(LoraConfig {
        rank: 2,
        alpha: Some(4.0),
        targets: vec![Projection::QProj, Projection::VProj],
    }));
    c.top_layers = Some(1);
    let t = Trainer::load(&base, c, &Device::Cpu).unwrap();
    let layers = t.decoder().config().layers;
    let names: Vec<String> = t.decoder().trainable().into_keys().collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let top = format!("model.layers.{}.", layers - 1);
    assert!(names.iter().all(|n| n.starts_with(&top)), "{names:?}");
    let bad = Trainer::load(
        &base,
        cfg(Some(LoraConfig {
            rank: 0,
            ..LoraConfig::rank(1)
        })),
        &Device::Cpu,
    );
    assert!(bad.err().unwrap().to_string().contains("lora.rank"));
}
