//! The train-mode decoder computes what ONNX Runtime computes from the same file: logits
//! of the real generated models agree to 1e-4 (fp32), padded batches and M-RoPE included,
//! and its gradients agree with finite differences.

use std::path::Path;

use candle_core::{Device, Tensor};
use ort::session::Session;
use ort::value::Tensor as OrtTensor;
use training::decoder::{Decoder, DecoderConfig, Positions};

use crate::common;

fn session(path: &Path) -> Session {
    // The process's one environment: the trainer tests beside these load models through
    // `inference`, and ONNX Runtime refuses a second.
    let env = inference::model::environment(&common::ort_dylib()).unwrap();
    Session::builder(env)
        .unwrap()
        .commit_from_file(path)
        .unwrap()
}

/// ORT's logits `[batch, seq, vocab]` (flat) and the embeddings it decoded from.
fn ort_logits(
    dir: &Path,
    ids: &[i64],
    mask: &[i64],
    positions: &[i64],
    (batch, len): (usize, usize),
    c: &DecoderConfig,
) -> (Vec<f32>, Vec<f32>) {
    let (kv, head_dim, layers) = (c.kv_heads, c.head_dim, c.layers);
    let mut embed = session(&dir.join("onnx/embed_tokens.onnx"));
    let out = embed
        .run(ort::inputs!["input_ids" => OrtTensor::from_array(([batch, len], ids.to_vec())).unwrap()])
        .unwrap();
    let embeds: Vec<f32> = out[0].try_extract_tensor::<f32>().unwrap().1.to_vec();
    let hidden = embeds.len() / (batch * len);
    let mut decoder = session(&dir.join("onnx/decoder_model_merged.onnx"));
    let mrope = positions.len() == 3 * batch * len;
    let pos_shape: Vec<usize> = if mrope {
        vec![3, batch, len]
    } else {
        vec![batch, len]
    };
    let mut inputs: Vec<(String, ort::value::DynValue)> = vec![
        (
            "inputs_embeds".into(),
            OrtTensor::from_array(([batch, len, hidden], embeds.clone()))
                .unwrap()
                .into_dyn(),
        ),
        (
            "attention_mask".into(),
            OrtTensor::from_array(([batch, len], mask.to_vec()))
                .unwrap()
                .into_dyn(),
        ),
        (
            "position_ids".into(),
            OrtTensor::from_array((pos_shape, positions.to_vec()))
                .unwrap()
                .into_dyn(),
        ),
    ];
    for i in 0..layers {
        for kind in ["key", "value"] {
            inputs.push((
                format!("past_key_values.{i}.{kind}"),
                OrtTensor::<f32>::from_array(([batch, kv, 0, head_dim], Vec::new()))
                    .unwrap()
                    .into_dyn(),
            ));
        }
    }
    let out = decoder.run(inputs).unwrap();
    let logits = out["logits"]
        .try_extract_tensor::<f32>()
        .unwrap()
        .1
        .to_vec();
    (logits, embeds)
}

fn check_parity(name: &str, mrope: bool) {
    let dir = common::model(name);
    let device = Device::Cpu;
    let dec = Decoder::load(&dir, &device).unwrap();
    assert_eq!(dec.mrope(), mrope);
    let c = dec.config().clone();
    let (batch, len) = (2, 11);
    let mut rnd = common::lcg(7);
    let vocab = dec.vocab() as u64;
    let ids: Vec<i64> = (0..batch * len).map(|_| (rnd() % vocab) as i64).collect();
    // Row 0 left-padded by 4, row 1 full: padding must not leak into real positions.
    let mut mask = vec![1i64; batch * len];
    mask[..4].fill(0);
    let axes = if mrope { 3 } else { 1 };
    let mut positions = Vec::new();
    for axis in 0..axes {
        for b in 0..batch {
            for t in 0..len {
                let pad = if b == 0 { 4 } else { 0 };
                // Distinct values per axis exercise M-RoPE's section pick.
                positions.push(if t < pad {
                    1
                } else {
                    ((t - pad) * (axis + 1)) as i64
                });
            }
        }
    }
    let (want, embeds) = ort_logits(&dir, &ids, &mask, &positions, (batch, len), &c);
    let embeds = Tensor::from_vec(embeds, (batch, len, c.hidden), &device).unwrap();
    let mask_u8: Vec<u8> = mask.iter().map(|m| *m as u8).collect();
    let got = dec
        .forward(
            &embeds,
            &mask_u8,
            &Positions {
                values: positions,
                mrope,
            },
        )
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert_eq!(got.len(), want.len());
    let v = dec.vocab();
    let mut worst = 0f32;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let (b, t) = (i / v / len, i / v % len);
        if mask[b * len + t] == 0 {
            continue; // padded queries see nothing real; their rows are never read
        }
        worst = worst.max((g - w).abs());
    }
    assert!(worst <= 1e-4, "{name}: max |candle - ORT| = {worst}");
    // Not vacuous: the logits vary across the vocabulary.
    let spread = want.iter().fold(0f32, |m, x| m.max(x.abs()));
    assert!(spread > 1e-2, "{name}: logits all near zero ({spread})");
}

#[test]
fn decoder_logits_equal_onnx_runtime_on_tiny_text() {
    check_parity("tiny-text", false);
}

#[test]
fn decoder_logits_equal_onnx_runtime_on_tiny_vlm() {
    check_parity("tiny-vlm", false);
}

#[test]
fn decoder_logits_equal_onnx_runtime_on_tiny_qwen2vl_with_mrope() {
    check_parity("tiny-qwen2vl", true);
}

#[test]
fn every_parameter_gets_a_gradient_that_finite_differences_confirm() {
    let dir = common::model("tiny-text");
    let device = Device::Cpu;
    let dec = Decoder::load(&dir, &device).unwrap();
    let c = dec.config().clone();
    let (batch, len) = (1, 6);
    let mut rnd = common::lcg(3);
    let embeds: Vec<f32> = (0..batch * len * c.hidden)
        .map(|_| (rnd() % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let embeds = Tensor::from_vec(embeds, (batch, len, c.hidden), &device).unwrap();
    let mask = vec![1u8; len];
    let positions = Positions {
        values: (0..len as i64).collect(),
        mrope: false,
    };
    let loss = |d: &Decoder| {
        let logits = d.forward(&embeds, &mask, &positions).unwrap();
        // A smooth scalar of every position's logits.
        (logits.sqr().unwrap().mean_all().unwrap() * 0.5).unwrap()
    };
    let l = loss(&dec);
    let grads = l.backward().unwrap();
    for (name, var) in dec.params() {
        let g = grads
            .get(var.as_tensor())
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        let norm = g
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(norm > 0.0, "zero gradient for {name}");
    }
    // Finite differences on a few entries of three different kinds of tensor.
    for name in [
        "model.layers.0.input_layernorm.weight",
        "model.layers.1.self_attn.q_proj.weight_t",
        "lm_head.weight_t",
    ] {
        let var = &dec.params()[name];
        let g = grads
            .get(var.as_tensor())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let base = var
            .as_tensor()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        for &i in &[0usize, 7, base.len() - 1] {
            let eps = 1e-2f32;
            let at = |delta: f32| {
                let mut w = base.clone();
                w[i] += delta;
                var.set(&Tensor::from_vec(w, var.dims(), &device).unwrap())
                    .unwrap();
                f64::from(loss(&dec).to_scalar::<f32>().unwrap())
            };
            let numeric = (at(eps) - at(-eps)) / (2.0 * f64::from(eps));
            var.set(&Tensor::from_vec(base.clone(), var.dims(), &device).unwrap())
                .unwrap();
            let analytic = f64::from(g[i]);
            let tol = 2e-3 + 0.05 * analytic.abs().max(numeric.abs());
            assert!(
                (numeric - analytic).abs() <= tol,
                "{name}[{i}]: analytic {analytic} vs numeric {numeric}"
            );
        }
    }
}
