//! Shared set-up: where `scripts/setup-python.sh` put the models and ONNX Runtime.
#![allow(dead_code)]

use std::path::PathBuf;

/// The data directory (`SURFGYM_DATA_DIR`, else the repository's `.surfgym`).
pub fn data_dir() -> PathBuf {
    PathBuf::from(
        std::env::var("SURFGYM_DATA_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../.surfgym").into()),
    )
}

/// A generated model, or a panic that says how to make it.
pub fn model(name: &str) -> PathBuf {
    let dir = data_dir().join("models").join(name);
    assert!(
        dir.join("onnx/decoder_model_merged.onnx").exists(),
        "{} missing: run ./scripts/setup-python.sh",
        dir.display()
    );
    dir
}

/// ONNX Runtime's library (`ORT_DYLIB_PATH`, else the data directory's venv), found as the
/// policy finds it.
pub fn ort_dylib() -> PathBuf {
    inference::find_ort_dylib(&data_dir())
        .expect("ONNX Runtime missing: run ./scripts/setup-python.sh")
}

/// A deterministic pseudo-random sequence (tests need no `rand` seeding subtleties).
pub fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

/// Every parameter of `t`, flattened, by name.
pub fn weights(t: &training::Trainer) -> Vec<(String, Vec<f32>)> {
    t.decoder()
        .params()
        .iter()
        .map(|(k, v)| {
            let flat = v
                .as_tensor()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            (k.clone(), flat)
        })
        .collect()
}

/// The chat-templated request the trainer's tests score.
pub const CLICK_RED: &str =
    "<|im_start|>user\nClick the red button<|im_end|>\n<|im_start|>assistant\n";

/// Behaviour-cloning samples of `actions` after `prompt`, built by the policy's own
/// model `m`.
pub fn bc_samples(
    m: &mut inference::Model,
    prompt: &str,
    actions: &[&str],
) -> Vec<training::Sample> {
    let p = inference::Prompt::text_only(prompt);
    actions
        .iter()
        .map(|c| {
            let ids = m.encode(c).unwrap();
            let t = m.teacher_inputs(&p, &ids).unwrap();
            training::Sample::from_teacher(t, ids, Vec::new(), 1.0)
        })
        .collect()
}
