//! The ONNX policy on the tiny generated Qwen2-VL-layout model (`models/tiny-qwen2vl`: patch
//! rows + `grid_thw` vision encoder, decoder with 3-D M-RoPE `position_ids`) through a real
//! ONNX Runtime session: the `<|image_pad|>` expansion and M-RoPE positions against values
//! computed here, and preprocessing, positions and greedy decoding (which continues at the
//! largest prompt position + 1) against the numpy reference in `scripts/models/qwen2vl_ref.py`,
//! deterministic generation, batched equals unbatched with screenshots of different sizes,
//! log-probabilities that a teacher-forced pass reproduces, and the policy acting on a
//! screenshot. `scripts/setup-python.sh` generates the model and installs ONNX Runtime.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use browser_pool::{Element, Observation, Rect, Screenshot};
use image::{DynamicImage, Rgb, RgbImage};
use inference::GenParams;
use inference::Pixels;
use inference::Prompt;
use inference::config::VisionLayout;
use inference::expand_images;
use inference::qwen2vl;
use policy::onnx::{OnnxBackend, OnnxOptions, prompt};
use policy::{Policy, StepInput};

use crate::common;

use common::data_dir;

fn model_dir() -> PathBuf {
    let dir = data_dir().join("models/tiny-qwen2vl");
    assert!(
        dir.join("onnx/decoder_model_merged.onnx").exists(),
        "tiny Qwen2-VL model missing: run ./scripts/setup-python.sh"
    );
    dir
}

fn options() -> OnnxOptions {
    let dylib = inference::find_ort_dylib(&data_dir())
        .expect("ONNX Runtime: run ./scripts/setup-python.sh");
    let mut o = OnnxOptions::new(model_dir(), dylib);
    o.generation.max_new_tokens = 8;
    o
}

fn screenshot(w: u32, h: u32, shade: u8) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| Rgb([shade, (x % 256) as u8, (y % 256) as u8]));
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

fn input(seed: u64, (w, h): (u32, u32), shade: u8, labels: usize) -> StepInput {
    let obs = Observation {
        url: "http://127.0.0.1:1/".into(),
        title: "Page".into(),
        screenshot: Screenshot {
            bytes: screenshot(w, h, shade),
            mime: "image/png",
            width: w,
            height: h,
            scale: 1.0,
        },
        elements: (1..=labels as u32)
            .map(|n| Element {
                id: n,
                tag: "button".into(),
                role: "button".into(),
                label: format!("Button number {n}"),
                bbox: Rect {
                    x: 10.0 * f64::from(n),
                    y: 20.0 * f64::from(n),
                    width: 80.0,
                    height: 20.0,
                },
                in_viewport: true,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    common::step_input("Press the third button", obs, seed)
}

fn grid(p: &Prompt, i: usize) -> [usize; 3] {
    match &p.images[i] {
        Pixels::Patches(p) => p.grid_thw,
        Pixels::Tiles(_) => panic!("Qwen2-VL images are patch rows"),
    }
}

#[test]
fn screenshots_become_image_pad_tokens_on_an_mrope_grid() {
    let backend = OnnxBackend::load(options()).unwrap();
    assert!(backend.has_vision());
    let model = backend.model();
    let m = model.lock().unwrap();
    assert!(
        m.uses_mrope(),
        "the decoder's position_ids are [3, batch, seq]"
    );
    let image_id = m.config().image_token_id.unwrap();
    assert_eq!(m.encode("<|image_pad|>").unwrap(), [image_id]);
    drop(m);

    // 1280x720 with max_pixels 384²: both sides / 2.5, floored to multiples of 28: 504x280,
    // 36x20 patches, 18x10 merged tokens. 800x600: / 1.804 → 420x308, 15x11 merged.
    for ((w, h), (rows, cols)) in [((1280, 720), (10, 18)), ((800, 600), (11, 15))] {
        let p = backend.prompt_for(&input(1, (w, h), 40, 3)).unwrap();
        assert_eq!(grid(&p, 0), [1, 2 * rows, 2 * cols], "{w}x{h}");
        let m = model.lock().unwrap();
        let ids = m.encode(&p.text).unwrap();
        let start = ids.iter().position(|t| *t == image_id).unwrap();
        let n = ids.iter().filter(|t| **t == image_id).count();
        assert_eq!(
            n,
            rows * cols,
            "{w}x{h}: one <|image_pad|> per merged patch"
        );
        assert!(
            ids[start..start + n].iter().all(|t| *t == image_id),
            "one block"
        );
        assert_eq!(
            m.encode("<|vision_start|>").unwrap()[0],
            ids[start - 1],
            "the block follows <|vision_start|>"
        );
        let pos = m.positions(&p).unwrap();
        assert_eq!(pos.len(), ids.len());
        let s = start as i64;
        for (i, p) in pos.iter().enumerate() {
            let i64i = i as i64;
            let want = if i < start {
                [i64i; 3]
            } else if i < start + n {
                let k = (i - start) as i64;
                [s, s + k / cols as i64, s + k % cols as i64]
            } else {
                // Text after the image resumes at its largest index + 1.
                let after = s + rows.max(cols) as i64 + (i - start - n) as i64;
                [after; 3]
            };
            assert_eq!(*p, want, "{w}x{h}: token {i}");
        }
    }
}

#[test]
fn preprocessing_and_positions_agree_with_the_python_reference() {
    let backend = OnnxBackend::load(options()).unwrap();
    let model = backend.model();
    let m = model.lock().unwrap();
    let cfg = m.config().clone();
    let cfg = &cfg;
    let VisionLayout::Qwen2Vl(q) = &cfg.layout else {
        panic!("tiny-qwen2vl loads as Qwen2-VL: {:?}", cfg.layout)
    };
    let resize: Vec<serde_json::Value> = [(720, 1280), (600, 800), (20, 30), (333, 1000)]
        .iter()
        .map(|&(h, w)| {
            let got = qwen2vl::smart_resize(h, w, 28, q.min_pixels, q.max_pixels).unwrap();
            serde_json::json!([[h, w], [got.0, got.1]])
        })
        .collect();
    // An image already of a valid size (84x56): no resampling, so the rows compare exactly.
    let rgb = RgbImage::from_fn(84, 56, |x, y| {
        Rgb([(x * 3 + y) as u8, (y * 5) as u8, ((x * y) % 251) as u8])
    });
    let patches = qwen2vl::prepare(&DynamicImage::ImageRgb8(rgb.clone()), &cfg.image, q).unwrap();
    // Two images of different grids in one prompt, through the template and the expansion.
    let text = prompt::render(&cfg.chat_template, "Compare these.", 2, true).unwrap();
    let small = DynamicImage::ImageRgb8(RgbImage::from_pixel(30, 20, Rgb([9, 9, 9])));
    let p = expand_images(&text, &[DynamicImage::ImageRgb8(rgb.clone()), small], cfg).unwrap();
    let ids = m.encode(&p.text).unwrap();
    let pos = m.positions(&p).unwrap();
    let prompt_rows: Vec<f32> = p
        .images
        .iter()
        .flat_map(|i| match i {
            Pixels::Patches(p) => p.rows.clone(),
            Pixels::Tiles(_) => Vec::new(),
        })
        .collect();
    let greedy = GenParams {
        max_new_tokens: 6,
        temperature: 0.0,
        top_p: 1.0,
        stop: vec![],
    };
    drop(m);
    let mut m = model.lock().unwrap();
    let out = m.generate(std::slice::from_ref(&p), &greedy, &[0]).unwrap();
    let json = serde_json::json!({
        "prompt_pixel_values": prompt_rows,
        "max_new_tokens": greedy.max_new_tokens,
        "greedy": out[0].tokens,
        "resize": resize,
        "image": {"width": 84, "height": 56, "rgb": rgb.as_raw()},
        "pixel_values": patches.rows,
        "grid_thw": patches.grid_thw,
        "ids": ids,
        "grids": [grid(&p, 0), grid(&p, 1)],
        "positions": (0..3).map(|a| pos.iter().map(|p| p[a]).collect::<Vec<_>>()).collect::<Vec<_>>(),
    });
    let file = std::env::temp_dir().join(format!("surfgym-qwen2vl-{}.json", std::process::id()));
    std::fs::write(&file, json.to_string()).unwrap();
    let python = data_dir().join("venv/bin/python");
    let out = std::process::Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/models/check_model.py"
        ))
        .arg(model_dir())
        .arg("--compare")
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (run ./scripts/setup-python.sh)", python.display()));
    std::fs::remove_file(&file).ok();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.contains("7 passed, 0 failed"), "{report}");
}

#[test]
fn generation_is_deterministic_batched_equals_unbatched_and_logprobs_rescore() {
    let backend = OnnxBackend::load(options()).unwrap();
    // Different screenshot sizes and element lists: different image grids and prompt lengths,
    // so rows are left-padded and their M-RoPE positions differ.
    let ps = [
        backend.prompt_for(&input(1, (1280, 720), 10, 2)).unwrap(),
        backend.prompt_for(&input(2, (800, 600), 200, 9)).unwrap(),
        backend.prompt_for(&input(3, (333, 1000), 90, 5)).unwrap(),
    ];
    let model = backend.model();
    let mut m = model.lock().unwrap();
    let lens: Vec<usize> = ps
        .iter()
        .map(|p| m.encode(&p.text).unwrap().len())
        .collect();
    assert!(
        lens[0] != lens[1] && lens[1] != lens[2],
        "prompt lengths differ: {lens:?}"
    );
    for params in [
        GenParams {
            max_new_tokens: 8,
            temperature: 0.0,
            top_p: 1.0,
            stop: vec![],
        },
        GenParams {
            max_new_tokens: 8,
            temperature: 1.2,
            top_p: 0.95,
            stop: vec![],
        },
    ] {
        let batched = common::assert_batch_invariant(&mut m, &ps, &params, &[11, 22, 33]);
        for (i, p) in ps.iter().enumerate() {
            // A teacher-forced pass (one forward over prompt and output, no cache, positions
            // continuing from the prompt's largest) gives the recorded log-probabilities.
            let g = &batched[i];
            assert!(!g.tokens.is_empty());
            let scored = m.score(p, &g.tokens).unwrap();
            for (j, (a, b)) in scored.iter().zip(&g.logprobs).enumerate() {
                assert!((a - b).abs() < 1e-3, "prompt {i} token {j}: {a} vs {b}");
            }
        }
    }
    // The image matters: the same prompt with another screenshot of the same size (same
    // tokens, same positions) scores the same continuation differently.
    let g = m
        .generate(
            &ps[..1],
            &GenParams {
                max_new_tokens: 4,
                temperature: 0.0,
                top_p: 1.0,
                stop: vec![],
            },
            &[0],
        )
        .unwrap()
        .remove(0);
    drop(m);
    let other = backend.prompt_for(&input(1, (1280, 720), 250, 2)).unwrap();
    assert_eq!(other.text, ps[0].text);
    let mut m = model.lock().unwrap();
    let a = m.score(&ps[0], &g.tokens).unwrap();
    let b = m.score(&other, &g.tokens).unwrap();
    assert!(
        a.iter().zip(&b).any(|(a, b)| (a - b).abs() > 1e-3),
        "{a:?} vs {b:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_acts_on_screenshots_through_the_batching_queue() {
    let backend = Arc::new(OnnxBackend::load(options()).unwrap());
    let policy = policy::Batched::new(
        "onnx-qwen2vl",
        backend.clone(),
        policy::BatchLimits {
            max_batch: 4,
            max_wait: Duration::from_millis(10),
        },
    );
    let inputs: Vec<StepInput> = (0..2)
        .map(|i| input(i, (1280, 720), 60 + 90 * i as u8, 3))
        .collect();
    let decisions =
        futures::future::join_all(inputs.iter().map(|i| policy.decide(i.clone()))).await;
    let model = backend.model();
    for (input, d) in inputs.iter().zip(decisions) {
        let d = d.unwrap();
        assert!(!d.token_logprobs.is_empty());
        let sum: f64 = d.token_logprobs.iter().map(|l| f64::from(*l)).sum();
        assert!((d.logprob.unwrap() - sum).abs() < 1e-6);
        // Greedy: the same prompt alone writes the same text.
        let p = backend.prompt_for(input).unwrap();
        let alone = model
            .lock()
            .unwrap()
            .generate(std::slice::from_ref(&p), &options().generation, &[0])
            .unwrap()
            .remove(0);
        assert_eq!(alone.text, d.raw_output);
        // Random weights write nonsense: an error message for the episode, never a panic.
        if let Err(e) = &d.action {
            assert!(!e.is_empty());
        }
    }
}
