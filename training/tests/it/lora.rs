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

const PROMPT: &str = common::CLICK_RED;

fn model(dir: &Path) -> Model {
    Model::load(dir, &common::ort_dylib(), inference::Device::Cpu, 1).unwrap()
}

fn samples(m: &mut Model) -> Vec<Sample> {
    common::bc_samples(m, PROMPT, &["click(3)", "click(12)"])
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
    let refusal = |tensors: &std::collections::HashMap<String, candle_core::Tensor>| {
        candle_core::safetensors::save(tensors, &adapter).unwrap();
        Trainer::load(&v1, cfg(Some(LoraConfig::rank(4))), &Device::Cpu)
            .err()
            .unwrap()
            .to_string()
    };
    let e = refusal(&tensors);
    assert!(e.contains(name), "{e}");
    let nan = (kept.ones_like().unwrap() * f64::NAN).unwrap();
    tensors.insert(name.to_string(), nan);
    let e = refusal(&tensors);
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

/// A matrix of the ONNX file, `[in, out]` row-major.
fn onnx_matrix(dir: &Path, name: &str) -> (Vec<f32>, usize, usize) {
    let inits =
        inference::onnx_file::read_initializers(&dir.join("onnx/decoder_model_merged.onnx"))
            .unwrap();
    let i = inits.iter().find(|i| i.name == name).unwrap();
    (i.to_f32().unwrap(), i.dims[0], i.dims[1])
}

fn version_matrix(version: &Path, name: &str) -> Vec<f32> {
    let t =
        candle_core::safetensors::load(version.join("weights.safetensors"), &Device::Cpu).unwrap();
    t[name].flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

#[test]
fn a_lora_version_exports_as_peft_and_loads_back_merged_as_it_ran() {
    let root = tempfile::tempdir().unwrap();
    let base = common::model("tiny-text");
    let mut m = model(&base);
    let s = samples(&mut m);
    let mut t = Trainer::load(&base, cfg(Some(LoraConfig::rank(4))), &Device::Cpu).unwrap();
    t.update(&s, &mut |_, _, _| {}).unwrap();
    let v1 = root.path().join("v1");
    t.publish(&v1, serde_json::json!({})).unwrap();
    let peft = root.path().join("peft");
    let adapter = inference::peft::version_adapter(&v1).unwrap();
    inference::peft::export(&adapter, &base, &peft).unwrap();

    // PEFT's own config, as transformers and vLLM read it.
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(peft.join("adapter_config.json")).unwrap())
            .unwrap();
    assert_eq!(config["peft_type"], "LORA");
    assert_eq!(
        (config["r"].as_u64(), config["lora_alpha"].as_f64()),
        (Some(4), Some(8.0))
    );
    assert_eq!(config["target_modules"].as_array().unwrap().len(), 7);

    // PEFT's merge, W + (alpha / r) · B·A in PyTorch's [out, in] layout, gives the matrices
    // the version ran, once the export's folded 1/√head_dim is taken out of q_proj.
    let tensors =
        candle_core::safetensors::load(peft.join("adapter_model.safetensors"), &Device::Cpu)
            .unwrap();
    let head_dim = t.decoder().config().head_dim as f32;
    for (module, folded) in [
        ("self_attn.q_proj", 1.0 / head_dim.sqrt()),
        ("mlp.up_proj", 1.0),
    ] {
        let name = format!("model.layers.0.{module}.weight_t");
        let (w, inner, outer) = onnx_matrix(&base, &name);
        let key = |ab: &str| format!("base_model.model.model.layers.0.{module}.lora_{ab}.weight");
        let a = &tensors[&key("A")];
        let b = &tensors[&key("B")];
        assert_eq!((a.dims(), b.dims()), (&[4, inner][..], &[outer, 4][..]));
        let delta = (b.matmul(a).unwrap() * 2.0).unwrap(); // alpha / r = 8 / 4
        let delta = delta.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let ran = version_matrix(&v1, &name);
        let mut worst = 0f32;
        for i in 0..inner {
            for o in 0..outer {
                let torch_merged = w[i * outer + o] / folded + delta[o * inner + i];
                worst = worst.max((torch_merged * folded - ran[i * outer + o]).abs());
            }
        }
        assert!(worst <= 1e-5, "{module}: {worst}");
    }

    // Read back over the base, it runs as the version does.
    let p = Prompt::text_only(PROMPT);
    let ids = m.encode("click(12)").unwrap();
    let from_peft = Model::load_peft(
        &base,
        &peft,
        &common::ort_dylib(),
        inference::Device::Cpu,
        1,
    )
    .unwrap()
    .score(&p, &ids)
    .unwrap();
    let from_version = model(&v1).score(&p, &ids).unwrap();
    assert!(max_diff(&from_peft, &from_version) <= 1e-5);

    // A tensor of no projection, or of the wrong shape: refused by name.
    let mut bad = tensors.clone();
    let k = "base_model.model.model.layers.0.mlp.up_proj.lora_B.weight";
    let v = bad.remove(k).unwrap();
    bad.insert(
        "base_model.model.model.layers.0.mlp.sideways.lora_B.weight".into(),
        v.clone(),
    );
    let refusal = |bad: &std::collections::HashMap<String, candle_core::Tensor>| {
        candle_core::safetensors::save(bad, peft.join("adapter_model.safetensors")).unwrap();
        Model::load_peft(
            &base,
            &peft,
            &common::ort_dylib(),
            inference::Device::Cpu,
            1,
        )
        .err()
        .unwrap()
        .to_string()
    };
    let e = refusal(&bad);
    assert!(e.contains("mlp.sideways"), "{e}");
    bad.remove("base_model.model.model.layers.0.mlp.sideways.lora_B.weight");
    bad.insert(k.into(), v.narrow(0, 0, 3).unwrap());
    let e = refusal(&bad);
    assert!(e.contains(k) && e.contains("[3, 4]"), "{e}");
}
