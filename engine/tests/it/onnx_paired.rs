//! Text-only models paired with a tiny vision encoder (`scripts/models/pair_vision.py`), loaded
//! through the path real exports take: the pairing leaves the language model alone (text-only
//! prompts render, decode and score exactly as with the text model, although the tokenizer is
//! now larger than the decoder's vocabulary) and screenshot prompts run, their image reaching the
//! decoder. Always on `tiny-text-vision` (what CI generates); on SmolLM2-135M's pair
//! (`smollm2-135m-vision`, `scripts/setup-python.sh --smollm2`) when asked (`--ignored`).

use std::path::Path;

use browser_pool::{Element, Observation, Rect, Screenshot};
use image::{Rgb, RgbImage};
use inference::GenParams;
use inference::Prompt;
use inference::find_ort_dylib;
use policy::StepInput;
use policy::onnx::{OnnxBackend, OnnxOptions, prompt};

use crate::common;

use common::data_dir;

fn load(dir: &Path) -> OnnxBackend {
    let dylib = find_ort_dylib(&data_dir()).expect("ONNX Runtime: run ./scripts/setup-python.sh");
    OnnxBackend::load(OnnxOptions::new(dir, dylib))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

/// A page with two buttons whose screenshot is filled with `shade`: the prompt text does not
/// depend on the shade, the image does.
fn input(shade: u8) -> StepInput {
    let img = RgbImage::from_fn(640, 360, |x, y| {
        Rgb([shade, (x % 256) as u8, (y % 256) as u8])
    });
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let button = |id: u32, label: &str| Element {
        id,
        tag: "button".into(),
        role: "button".into(),
        label: label.into(),
        bbox: Rect {
            x: 40.0 * f64::from(id),
            y: 30.0,
            width: 80.0,
            height: 24.0,
        },
        in_viewport: true,
        ..Element::default()
    };
    let observation = Observation {
        url: "http://127.0.0.1:1/cart".into(),
        title: "Cart".into(),
        screenshot: Screenshot {
            bytes: png,
            mime: "image/png",
            width: 640,
            height: 360,
            scale: 1.0,
        },
        elements: vec![button(1, "Checkout"), button(2, "Empty cart")],
        ..Default::default()
    };
    common::step_input("Check out the cart", observation, 1)
}

fn check_pair(text_dir: &Path, paired_dir: &Path, max_new_tokens: usize) {
    let text = load(text_dir);
    let paired = load(paired_dir);
    assert!(!text.has_vision(), "{} is text-only", text_dir.display());
    assert!(
        paired.has_vision(),
        "{} reads screenshots",
        paired_dir.display()
    );
    let params = GenParams {
        max_new_tokens,
        temperature: 0.0,
        top_p: 1.0,
        stop: vec![],
    };
    let (text_model, paired_model) = (text.model(), paired.model());
    let image_id;
    {
        let mut tm = text_model.lock().unwrap();
        let mut pm = paired_model.lock().unwrap();
        // The image tokens come after the decoder's vocabulary, which the pair keeps.
        image_id = pm.config().image_token_id.expect("an image token");
        assert_eq!(pm.encode("<image>").unwrap(), vec![image_id]);
        assert_eq!(pm.config().vocab, tm.config().vocab);
        assert!(
            image_id as usize >= pm.config().vocab,
            "<image> {image_id} is past the decoder's {} logits",
            pm.config().vocab
        );
        // A text-only prompt renders as with the text model, as a string or as a text part.
        let question = "What is the capital of France? Answer with one word.";
        let want = prompt::render(&tm.config().chat_template, question, 0, false).unwrap();
        for parts in [false, true] {
            assert_eq!(
                prompt::render(&pm.config().chat_template, question, 0, parts).unwrap(),
                want
            );
        }
        // ... and decodes to the same tokens with the same log-probabilities.
        let p = Prompt {
            rendered: want.clone(),
            text: want,
            images: vec![],
            grammar: None,
        };
        let alone = tm
            .generate(std::slice::from_ref(&p), &params, &[3])
            .unwrap();
        let paired_out = pm
            .generate(std::slice::from_ref(&p), &params, &[3])
            .unwrap();
        assert_eq!(paired_out, alone, "the pairing changed the language model");
        // Scores of a fixed answer too (a generation may end at once).
        let answer = tm.encode("The capital of France is Paris.").unwrap();
        assert_eq!(
            answer,
            pm.encode("The capital of France is Paris.").unwrap()
        );
        let scored = tm.score(&p, &answer).unwrap();
        assert_eq!(pm.score(&p, &answer).unwrap(), scored);
        assert!(
            scored.iter().all(|l| l.is_finite() && *l <= 0.0),
            "{scored:?}"
        );
    }
    // Screenshot (set-of-marks) mode: one image expanded to image_seq_len tokens.
    let shot = paired.prompt_for(&input(30)).unwrap();
    let other = paired.prompt_for(&input(220)).unwrap();
    assert_eq!(shot.text, other.text, "only the screenshot differs");
    let mut pm = paired_model.lock().unwrap();
    let ids = pm.encode(&shot.text).unwrap();
    assert_eq!(
        ids.iter().filter(|t| **t == image_id).count(),
        pm.config().image_seq_len
    );
    let out = pm
        .generate(std::slice::from_ref(&shot), &params, &[5])
        .unwrap();
    let g = &out[0];
    assert!(
        g.tokens.iter().all(|t| (*t as usize) < pm.config().vocab),
        "{:?}",
        g.tokens
    );
    // A teacher-forced pass reproduces the recorded log-probabilities; with another
    // screenshot the same action scores differently, so the image reaches the decoder.
    let scored = pm.score(&shot, &g.tokens).unwrap();
    for (j, (a, b)) in scored.iter().zip(&g.logprobs).enumerate() {
        assert!((a - b).abs() < 1e-3, "token {j}: scored {a}, recorded {b}");
    }
    let action = pm.encode("click(1)").unwrap();
    let scored = pm.score(&shot, &action).unwrap();
    let elsewhere = pm.score(&other, &action).unwrap();
    let moved = scored
        .iter()
        .zip(&elsewhere)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(moved > 1e-4, "another screenshot left the scores unchanged");
}

#[test]
fn the_tiny_pair_keeps_its_language_model_and_reads_screenshots() {
    let models = data_dir().join("models");
    assert!(
        models.join("tiny-text-vision/config.json").exists(),
        "tiny pair missing: run ./scripts/setup-python.sh"
    );
    check_pair(
        &models.join("tiny-text"),
        &models.join("tiny-text-vision"),
        8,
    );
}

#[test]
fn the_python_checks_pass_on_the_tiny_pair() {
    let python = data_dir().join("venv/bin/python");
    let out = std::process::Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/models/check_model.py"
        ))
        .arg(data_dir().join("models/tiny-text-vision"))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (run ./scripts/setup-python.sh)", python.display()));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for check in [
        "PASS decoder is the text model's file",
        "PASS greedy continuation identical to the text model's",
        "PASS multimodal prompt: another image changes the next-token logits",
        "PASS embed_tokens has a row for every tokenizer id",
    ] {
        assert!(report.contains(check), "{check}\n{report}");
    }
    assert!(report.contains(" passed, 0 failed"), "{report}");
}

/// Opt in (`cargo test -p engine --test onnx_paired -- --ignored`) after
/// `scripts/setup-python.sh --smollm2`: CI does not download and convert SmolLM2, and a test
/// that passed without its model would prove nothing.
#[test]
#[ignore = "needs scripts/setup-python.sh --smollm2 (93 MB download, ~760 MB written)"]
fn smollm2_paired_with_the_tiny_vision_encoder() {
    let models = data_dir().join("models");
    let paired = models.join("smollm2-135m-vision");
    assert!(
        paired.join("config.json").exists(),
        "{} not there: run scripts/setup-python.sh --smollm2",
        paired.display()
    );
    check_pair(&models.join("smollm2-135m"), &paired, 6);
}
